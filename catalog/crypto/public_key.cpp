#include "catalog/crypto/public_key.hpp"

#include <openssl/err.h>
#include <openssl/pem.h>

#include <map>
#include <mutex>
#include <span>

#include "catalog/crypto/evp_key.hpp"
#include "catalog/crypto/hash.hpp"

namespace catalog::crypto {

using detail::as_uchar;

KeyType key_type_of(Scheme scheme) {
  switch (scheme) {
    case Scheme::ed25519:
      return KeyType::ed25519;
    case Scheme::ecdsa_sha2_nistp256:
      return KeyType::ecdsa_p256;
    case Scheme::rsassa_pss_sha256:
    case Scheme::rsa_pkcs1v15_sha256:
      return KeyType::rsa;
  }
  return KeyType::ed25519;
}

Scheme default_scheme(KeyType type) {
  switch (type) {
    case KeyType::ed25519:
      return Scheme::ed25519;
    case KeyType::ecdsa_p256:
      return Scheme::ecdsa_sha2_nistp256;
    case KeyType::rsa:
      return Scheme::rsassa_pss_sha256;
  }
  return Scheme::ed25519;
}

std::string_view key_type_name(KeyType type) {
  switch (type) {
    case KeyType::ed25519:
      return "ed25519";
    case KeyType::ecdsa_p256:
      return "ecdsa";
    case KeyType::rsa:
      return "rsa";
  }
  return "";
}

std::string_view scheme_name(Scheme scheme) {
  switch (scheme) {
    case Scheme::ed25519:
      return "ed25519";
    case Scheme::ecdsa_sha2_nistp256:
      return "ecdsa-sha2-nistp256";
    case Scheme::rsassa_pss_sha256:
      return "rsassa-pss-sha256";
    case Scheme::rsa_pkcs1v15_sha256:
      return "rsa-pkcs1v15-sha256";
  }
  return "";
}

std::optional<KeyType> key_type_from_name(std::string_view name) {
  if (name == "ed25519") return KeyType::ed25519;
  if (name == "ecdsa" || name == "ecdsa-sha2-nistp256") return KeyType::ecdsa_p256;
  if (name == "rsa") return KeyType::rsa;
  return std::nullopt;
}

std::optional<Scheme> scheme_from_name(std::string_view name) {
  for (Scheme s : {Scheme::ed25519, Scheme::ecdsa_sha2_nistp256, Scheme::rsassa_pss_sha256,
                   Scheme::rsa_pkcs1v15_sha256}) {
    if (name == scheme_name(s)) return s;
  }
  return std::nullopt;
}

std::string PublicKey::hex() const {
  return to_hex(std::span<const unsigned char>(as_uchar(raw), raw.size()));
}

Result<std::string> PublicKey::pem() const {
  auto pkey = detail::pkey_of(*this);
  if (!pkey) return std::unexpected(pkey.error());
  detail::BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PUBKEY(bio.get(), pkey->get()) != 1) {
    return fail(Errc::crypto, "PEM encoding failed: " + detail::openssl_error());
  }
  return detail::bio_contents(bio.get());
}

Result<PublicKey> PublicKey::from_pem(std::string_view pem) {
  if (pem.size() > 64 * 1024) return fail(Errc::malformed, "PEM too large");
  // Keys in metadata are read again for every signature and identity check;
  // decoding costs about a millisecond (OpenSSL 3.0), so what decoded is kept
  // (at most kCached texts; then the cache starts over).
  constexpr std::size_t kCached = 256;
  static std::mutex mutex;
  static std::map<std::string, PublicKey, std::less<>> cache;
  {
    std::lock_guard lock(mutex);
    if (auto it = cache.find(pem); it != cache.end()) return it->second;
  }
  auto key = decode_pem(pem);
  if (key) {
    std::lock_guard lock(mutex);
    if (cache.size() >= kCached) cache.clear();
    cache.emplace(std::string(pem), *key);
  }
  return key;
}

Result<PublicKey> PublicKey::decode_pem(std::string_view pem) {
  detail::BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) return fail(Errc::crypto, detail::openssl_error());
  detail::PkeyPtr pkey(PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr));
  if (!pkey) {
    ERR_clear_error();
    return fail(Errc::malformed, "not a PEM public key (SubjectPublicKeyInfo)");
  }
  return detail::public_key_of(pkey.get());
}

Result<PublicKey> PublicKey::from_hex(KeyType type, std::string_view hex) {
  auto bytes = crypto::from_hex(hex);
  if (!bytes) return fail(Errc::malformed, "public key is not hex");
  return from_bytes(type, *bytes);
}

Result<PublicKey> PublicKey::from_bytes(KeyType type, std::string_view bytes) {
  switch (type) {
    case KeyType::ed25519: {
      PublicKey key{KeyType::ed25519, std::string(bytes)};
      auto pkey = detail::pkey_of(key);
      if (!pkey) return std::unexpected(pkey.error());
      return key;
    }
    case KeyType::ecdsa_p256:
    case KeyType::rsa: {
      // 1. A bare SEC1 point (ECDSA only); its first byte never starts a DER SEQUENCE.
      if (type == KeyType::ecdsa_p256 && !bytes.empty() && bytes[0] != '\x30') {
        return detail::ec_p256_from_point(bytes);
      }
      // 2. A DER SubjectPublicKeyInfo, which must hold a key of `type`.
      auto pkey = detail::pkey_from_spki(bytes);
      if (!pkey) return std::unexpected(pkey.error());
      auto key = detail::public_key_of(pkey->get());
      if (!key) return key;
      if (key->type != type) {
        return fail(Errc::malformed,
                    "the public key is not of type " + std::string(key_type_name(type)));
      }
      return key;
    }
  }
  return fail(Errc::malformed, "unknown key type");
}

bool verify(const PublicKey& key, Scheme scheme, std::string_view message,
            std::string_view signature) {
  // Whatever happens below, the caller's error queue is left empty.
  struct ClearErrors {
    ~ClearErrors() { ERR_clear_error(); }
  } clear_errors;
  // 1. The scheme must be one for this key; Ed25519 signatures are 64 bytes.
  if (key_type_of(scheme) != key.type) return false;
  if (scheme == Scheme::ed25519 && signature.size() != 64) return false;
  auto pkey = detail::pkey_of(key);
  if (!pkey) return false;
  // 2. Hash-and-verify with the scheme's digest and padding.
  detail::MdCtxPtr ctx(EVP_MD_CTX_new());
  EVP_PKEY_CTX* pctx = nullptr;
  if (!ctx || EVP_DigestVerifyInit(ctx.get(), &pctx, detail::digest_of(scheme), nullptr,
                                   pkey->get()) != 1) {
    return false;
  }
  if (!detail::set_rsa_padding(pctx, scheme, /*signing=*/false)) return false;
  return EVP_DigestVerify(ctx.get(), as_uchar(signature), signature.size(), as_uchar(message),
                          message.size()) == 1;
}

}  // namespace catalog::crypto
