#include "catalog/crypto/evp_key.hpp"

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>

#include <array>
#include <map>
#include <mutex>

namespace catalog::crypto::detail {
namespace {

constexpr int kMinRsaBits = 2048;

// DER SubjectPublicKeyInfo { id-ecPublicKey, namedCurve prime256v1 } up to the
// point, for an uncompressed (65-byte) and a compressed (33-byte) point.
constexpr std::string_view kP256Uncompressed(
    "\x30\x59\x30\x13\x06\x07\x2a\x86\x48\xce\x3d\x02\x01\x06\x08\x2a\x86\x48\xce\x3d\x03"
    "\x01\x07\x03\x42\x00",
    26);
constexpr std::string_view kP256Compressed(
    "\x30\x39\x30\x13\x06\x07\x2a\x86\x48\xce\x3d\x02\x01\x06\x08\x2a\x86\x48\xce\x3d\x03"
    "\x01\x07\x03\x22\x00",
    26);

// DER SubjectPublicKeyInfo of `pkey` (its public half); empty on failure.
// (Written into our own buffer: no OPENSSL_free, one libcrypto function less
// for epbrokerd's lazy stubs.)
std::string spki_der(const EVP_PKEY* pkey) {
  const int len = i2d_PUBKEY(pkey, nullptr);
  if (len <= 0) return {};
  std::string out(static_cast<std::size_t>(len), '\0');
  auto* p = reinterpret_cast<unsigned char*>(out.data());
  if (i2d_PUBKEY(pkey, &p) != len) return {};
  return out;
}

// The SEC1 point of a named-curve P-256 SubjectPublicKeyInfo; empty when `der`
// is not one (another curve, explicit parameters, another key type).
std::string_view p256_point_of(std::string_view der) {
  if (der.size() == kP256Uncompressed.size() + 65 && der.starts_with(kP256Uncompressed)) {
    return der.substr(kP256Uncompressed.size());
  }
  if (der.size() == kP256Compressed.size() + 33 && der.starts_with(kP256Compressed)) {
    return der.substr(kP256Compressed.size());
  }
  return {};
}

}  // namespace

std::string openssl_error() {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "unknown OpenSSL error";
  std::array<char, 256> buf{};
  ERR_error_string_n(e, buf.data(), buf.size());
  return buf.data();
}

std::string bio_contents(BIO* bio) {
  char* data = nullptr;
  const long len = BIO_get_mem_data(bio, &data);
  if (len <= 0 || data == nullptr) return {};
  return std::string(data, static_cast<std::size_t>(len));
}

Result<PkeyPtr> pkey_from_spki(std::string_view der) {
  // OpenSSL 3.0 decodes a SubjectPublicKeyInfo in about a millisecond (its
  // decoder framework), several times what a verification costs, and a
  // refresh checks the same few keys over and over. Decoded keys are kept by
  // their DER (at most kCached; then the cache starts over): an EVP_PKEY is
  // reference counted and may verify in several threads at once.
  // The cache is never destroyed: at exit its keys stay referenced (not
  // leaks) and are not freed after OpenSSL's own clean-up.
  constexpr std::size_t kCached = 256;
  static std::mutex mutex;
  static auto& cache = *new std::map<std::string, EVP_PKEY*, std::less<>>;
  std::lock_guard lock(mutex);
  if (auto it = cache.find(der); it != cache.end() && EVP_PKEY_up_ref(it->second) == 1) {
    return PkeyPtr(it->second);
  }
  const unsigned char* p = as_uchar(der);
  PkeyPtr pkey(d2i_PUBKEY(nullptr, &p, static_cast<long>(der.size())));
  if (!pkey || p != as_uchar(der) + der.size()) {
    ERR_clear_error();
    return fail(Errc::malformed, "not a DER SubjectPublicKeyInfo");
  }
  if (cache.size() >= kCached) {
    for (auto& [_, cached] : cache) EVP_PKEY_free(cached);
    cache.clear();
  }
  if (EVP_PKEY_up_ref(pkey.get()) == 1) cache.emplace(std::string(der), pkey.get());
  return pkey;
}

Result<PublicKey> ec_p256_from_point(std::string_view point) {
  // 1. Only the two point encodings TUF keys use: not the point at infinity
  //    (one 0x00 byte) and not the hybrid form.
  const bool uncompressed = point.size() == 65 && point[0] == '\x04';
  const bool compressed = point.size() == 33 && (point[0] == '\x02' || point[0] == '\x03');
  if (!uncompressed && !compressed) return fail(Errc::malformed, "not a P-256 SEC1 point");
  // 2. As a SubjectPublicKeyInfo, which OpenSSL decodes only for a point on the curve.
  const std::string spki =
      std::string(uncompressed ? kP256Uncompressed : kP256Compressed) + std::string(point);
  auto pkey = pkey_from_spki(spki);
  if (!pkey) return fail(Errc::malformed, "not a point on P-256");
  if (uncompressed) return PublicKey{KeyType::ecdsa_p256, spki};
  // 3. The canonical form has the uncompressed point.
  if (EVP_PKEY_set_utf8_string_param(pkey->get(), OSSL_PKEY_PARAM_EC_POINT_CONVERSION_FORMAT,
                                     "uncompressed") != 1) {
    return fail(Errc::crypto, "cannot decompress the P-256 point: " + openssl_error());
  }
  std::string der = spki_der(pkey->get());
  if (der.size() != kP256Uncompressed.size() + 65 || !der.starts_with(kP256Uncompressed)) {
    ERR_clear_error();
    return fail(Errc::crypto, "cannot decompress the P-256 point");
  }
  return PublicKey{KeyType::ecdsa_p256, std::move(der)};
}

Result<PublicKey> public_key_of(const EVP_PKEY* source) {
  // 1. Through DER into the default library context: a provider's key (a token's)
  //    is encoded by its provider or exported to the default one.
  const std::string der = spki_der(source);
  if (der.empty()) return fail(Errc::crypto, "cannot encode the public key: " + openssl_error());
  auto parsed = pkey_from_spki(der);
  if (!parsed) return std::unexpected(parsed.error());
  EVP_PKEY* pkey = parsed->get();
  // 2. One canonical encoding per key type.
  switch (EVP_PKEY_get_id(pkey)) {
    case EVP_PKEY_ED25519: {
      std::array<unsigned char, 32> buf{};
      std::size_t len = buf.size();
      if (EVP_PKEY_get_raw_public_key(pkey, buf.data(), &len) != 1 || len != buf.size()) {
        return fail(Errc::malformed, "bad Ed25519 public key: " + openssl_error());
      }
      return PublicKey{KeyType::ed25519,
                       std::string(reinterpret_cast<const char*>(buf.data()), len)};
    }
    case EVP_PKEY_EC: {
      const std::string_view point = p256_point_of(der);
      if (point.empty()) {
        return fail(Errc::unsupported, "EC key not on the named curve P-256 (the only one)");
      }
      return ec_p256_from_point(point);
    }
    case EVP_PKEY_RSA: {
      const int bits = EVP_PKEY_get_bits(pkey);
      if (bits < kMinRsaBits) {
        return fail(Errc::unsupported,
                    "RSA key of " + std::to_string(bits) + " bits (at least 2048 are needed)");
      }
      return PublicKey{KeyType::rsa, der};
    }
    default:
      return fail(Errc::unsupported, "key type not supported (Ed25519, ECDSA P-256 and RSA are)");
  }
}

Result<PkeyPtr> pkey_of(const PublicKey& key) {
  switch (key.type) {
    case KeyType::ed25519: {
      if (key.raw.size() != 32) return fail(Errc::malformed, "Ed25519 public key is not 32 bytes");
      PkeyPtr pkey(EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr, as_uchar(key.raw),
                                               key.raw.size()));
      if (!pkey) return fail(Errc::malformed, "bad Ed25519 public key: " + openssl_error());
      return pkey;
    }
    case KeyType::ecdsa_p256: {
      // Canonical form only (what every PublicKey of ours holds).
      if (key.raw.size() != kP256Uncompressed.size() + 65 ||
          !key.raw.starts_with(kP256Uncompressed)) {
        return fail(Errc::malformed, "not a P-256 public key");
      }
      return pkey_from_spki(key.raw);
    }
    case KeyType::rsa: {
      auto pkey = pkey_from_spki(key.raw);
      if (!pkey) return pkey;
      if (EVP_PKEY_get_id(pkey->get()) != EVP_PKEY_RSA ||
          EVP_PKEY_get_bits(pkey->get()) < kMinRsaBits) {
        return fail(Errc::malformed, "not an RSA public key of at least 2048 bits");
      }
      return pkey;
    }
  }
  return fail(Errc::malformed, "unknown key type");
}

bool set_rsa_padding(EVP_PKEY_CTX* pctx, Scheme scheme, bool signing) {
  switch (scheme) {
    case Scheme::rsassa_pss_sha256:
      // MGF1 takes the signature's digest (SHA-256) unless set otherwise.
      return EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) == 1 &&
             EVP_PKEY_CTX_set_rsa_pss_saltlen(
                 pctx, signing ? RSA_PSS_SALTLEN_DIGEST : RSA_PSS_SALTLEN_AUTO) == 1;
    case Scheme::rsa_pkcs1v15_sha256:
      return EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PADDING) == 1;
    case Scheme::ed25519:
    case Scheme::ecdsa_sha2_nistp256:
      return true;
  }
  return false;
}

const EVP_MD* digest_of(Scheme scheme) {
  return scheme == Scheme::ed25519 ? nullptr : EVP_sha256();
}

}  // namespace catalog::crypto::detail
