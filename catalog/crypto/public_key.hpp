// Public keys of the TUF key types (Ed25519, ECDSA P-256, RSA) and signature
// checks over OpenSSL 3 EVP, with signatures encoded as securesystemslib writes them.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "catalog/error.hpp"

namespace catalog::crypto {

enum class KeyType { ed25519, ecdsa_p256, rsa };
enum class Scheme { ed25519, ecdsa_sha2_nistp256, rsassa_pss_sha256, rsa_pkcs1v15_sha256 };

// The key type a scheme needs.
KeyType key_type_of(Scheme scheme);
// The scheme securesystemslib picks for a key type: ed25519, ecdsa-sha2-nistp256,
// rsassa-pss-sha256.
Scheme default_scheme(KeyType type);

// TUF names: "ed25519", "ecdsa", "rsa" (the keytype field) and "ed25519",
// "ecdsa-sha2-nistp256", "rsassa-pss-sha256", "rsa-pkcs1v15-sha256" (the scheme
// field). The parsers take exactly those names (case-sensitive); anything else
// is nullopt. key_type_from_name also takes "ecdsa-sha2-nistp256", the older
// keytype of ECDSA keys.
std::string_view key_type_name(KeyType type);
std::string_view scheme_name(Scheme scheme);
std::optional<KeyType> key_type_from_name(std::string_view name);
std::optional<Scheme> scheme_from_name(std::string_view name);

// A public key in one canonical encoding per key, so that equal keys compare
// equal (`raw`) however they were written: every PublicKey the functions below
// return is well formed and of a supported size and curve.
struct PublicKey {
  KeyType type = KeyType::ed25519;
  // ed25519: the 32 raw bytes; ecdsa: DER SubjectPublicKeyInfo, named curve P-256,
  // uncompressed point (91 bytes); rsa: DER SubjectPublicKeyInfo (rsaEncryption).
  std::string raw;

  // Lower-case hex of raw (the keyval form of Ed25519 TUF keys).
  std::string hex() const;
  // "-----BEGIN PUBLIC KEY-----" SubjectPublicKeyInfo PEM with 64-column lines
  // and a final newline, as pyca/cryptography writes it (all types).
  // Errc::malformed when raw is not a valid key of `type`.
  Result<std::string> pem() const;

  // SubjectPublicKeyInfo PEM of any supported type. Errc::malformed when it is
  // not such a PEM; Errc::unsupported for RSA keys under 2048 bits, EC curves
  // other than P-256 and other key types.
  static Result<PublicKey> from_pem(std::string_view pem);
  // Hex (either case) of: ed25519: the 32 raw bytes; ecdsa: a SEC1 point
  // (uncompressed 04||X||Y or compressed 02/03||X) or a DER SubjectPublicKeyInfo;
  // rsa: a DER SubjectPublicKeyInfo. Errc::malformed when it is none of those
  // (or a key of another type); Errc::unsupported as for from_pem.
  static Result<PublicKey> from_hex(KeyType type, std::string_view hex);
  // As from_hex, from the bytes themselves.
  static Result<PublicKey> from_bytes(KeyType type, std::string_view bytes);

 private:
  // from_pem without its cache of decoded texts.
  static Result<PublicKey> decode_pem(std::string_view pem);
};

// True only when `signature` is valid for `message` under `key` with `scheme`;
// false when the scheme's key type is not key.type or the key is not well formed.
// Signature encodings (bytes; callers hex-decode): ed25519 raw 64 bytes; ECDSA
// DER SEQUENCE {r, s} over SHA-256 (only DER: securesystemslib, go-tuf and
// sigstore's root-signing all write DER); RSA-PSS SHA-256 with MGF1-SHA-256 and
// any salt length; RSA PKCS#1 v1.5 SHA-256. Never throws; leaves the calling
// thread's OpenSSL error queue empty.
bool verify(const PublicKey& key, Scheme scheme, std::string_view message,
            std::string_view signature);

}  // namespace catalog::crypto
