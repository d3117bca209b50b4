// Private (signing) keys: Ed25519, ECDSA P-256 and RSA in memory, or any of them
// held in a PKCS#11 token, all through OpenSSL 3.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "catalog/crypto/public_key.hpp"
#include "catalog/error.hpp"

namespace catalog::crypto {

// A private key. Move-only; the key material stays in OpenSSL (or in the token).
class PrivateKey {
 public:
  // A fresh key from the OS CSPRNG; RSA keys have 3072 bits.
  static Result<PrivateKey> generate(KeyType type = KeyType::ed25519);
  // PKCS#8 ("BEGIN PRIVATE KEY") or traditional ("BEGIN EC/RSA PRIVATE KEY") PEM
  // of an Ed25519, EC P-256 or RSA (>= 2048 bits) key. Errc::malformed if it is
  // not a PEM private key; Errc::unsupported for other key types, curves and
  // sizes, and for encrypted keys (which are never prompted for).
  static Result<PrivateKey> from_pem(std::string_view pem);
  // A private key in a PKCS#11 token (RFC 7512 URI), through OpenSSL 3's provider
  // interface: Debian's pkcs11-provider, loaded into a library context of this
  // class's own (the process-wide default context is left alone), one context
  // per PKCS#11 module shared by all keys of that module, kept while any of them
  // lives. The module is the URI's `module-path` query attribute, else the
  // provider's own choice (PKCS11_PROVIDER_MODULE, which overrides module-path,
  // else p11-kit's proxy). The PIN must be in the URI (pin-value=, or
  // pin-source=file:PATH): it is never prompted for. A token stays logged in for
  // the process once a key of it loaded (PKCS#11 logins are per application).
  // E.g.
  //   pkcs11:token=T;object=L;type=private?pin-value=1234
  //   pkcs11:token=T;object=L?pin-source=file:/run/pin&module-path=/usr/lib/softhsm/libsofthsm2.so
  // Errc::invalid_argument: not a pkcs11: URI, a bad %-escape, no PIN, a module
  // path OpenSSL's config syntax cannot carry, a URI naming more than one
  // private key; Errc::not_found: the URI names no private key (unknown token
  // or object, wrong PIN, a module or pin-source file that cannot be read);
  // Errc::unsupported: the provider is missing, or the key is of a type or
  // size from_pem refuses.
  static Result<PrivateKey> from_uri(std::string_view uri);
  // True when `text` is a PKCS#11 URI ("pkcs11:..."), which from_uri takes,
  // rather than a PEM file's path.
  static bool is_uri(std::string_view text);

  ~PrivateKey();
  PrivateKey(PrivateKey&&) noexcept;
  PrivateKey& operator=(PrivateKey&&) noexcept;

  KeyType type() const;
  // True for a key held in a PKCS#11 token.
  bool in_token() const;
  // PKCS#8 PEM of the private key; Errc::unsupported for token keys.
  Result<std::string> to_pem() const;
  PublicKey public_key() const;
  // Signature bytes of `message` in the encoding verify() takes (ECDSA: DER;
  // RSA-PSS: salt length 32, as securesystemslib signs). `scheme` must fit
  // type(), else Errc::unsupported; Errc::crypto when OpenSSL or the token
  // fails, or makes a signature that does not verify under public_key().
  Result<std::string> sign(std::string_view message, Scheme scheme) const;
  Result<std::string> sign(std::string_view message) const {
    return sign(message, default_scheme(type()));
  }

 private:
  struct Impl;
  explicit PrivateKey(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace catalog::crypto
