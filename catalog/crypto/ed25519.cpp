#include "catalog/crypto/ed25519.hpp"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <span>

#include "catalog/crypto/hash.hpp"

namespace catalog::crypto {
namespace {

struct PkeyDeleter {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct MdCtxDeleter {
  void operator()(EVP_MD_CTX* p) const { EVP_MD_CTX_free(p); }
};
struct BioDeleter {
  void operator()(BIO* p) const { BIO_free(p); }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyDeleter>;
using MdCtxPtr = std::unique_ptr<EVP_MD_CTX, MdCtxDeleter>;
using BioPtr = std::unique_ptr<BIO, BioDeleter>;

std::string openssl_error() {
  unsigned long e = ERR_get_error();
  if (e == 0) return "unknown OpenSSL error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  ERR_clear_error();
  return buf;
}

const unsigned char* as_uchar(std::string_view s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}

}  // namespace

std::string PublicKey::hex() const {
  return to_hex(std::span<const unsigned char>(as_uchar(raw), raw.size()));
}

struct PrivateKey::Impl {
  PkeyPtr pkey;
};

PrivateKey::PrivateKey(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PrivateKey::~PrivateKey() = default;
PrivateKey::PrivateKey(PrivateKey&&) noexcept = default;
PrivateKey& PrivateKey::operator=(PrivateKey&&) noexcept = default;

Result<PrivateKey> PrivateKey::generate() {
  PkeyPtr pkey(EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"));
  if (!pkey) return fail(Errc::crypto, "Ed25519 key generation failed: " + openssl_error());
  auto impl = std::make_unique<Impl>();
  impl->pkey = std::move(pkey);
  return PrivateKey(std::move(impl));
}

Result<PrivateKey> PrivateKey::from_pem(std::string_view pem) {
  if (pem.size() > 64 * 1024) return fail(Errc::malformed, "PEM too large");
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) return fail(Errc::crypto, openssl_error());
  // A password callback that supplies none: an encrypted key fails instead of
  // OpenSSL prompting on the terminal.
  auto no_password = [](char*, int, int, void*) -> int { return 0; };
  PkeyPtr pkey(PEM_read_bio_PrivateKey(bio.get(), nullptr, no_password, nullptr));
  if (!pkey) {
    ERR_clear_error();
    return fail(Errc::malformed, "not a PEM private key");
  }
  if (EVP_PKEY_get_id(pkey.get()) != EVP_PKEY_ED25519) {
    return fail(Errc::unsupported, "private key is not Ed25519");
  }
  auto impl = std::make_unique<Impl>();
  impl->pkey = std::move(pkey);
  return PrivateKey(std::move(impl));
}

Result<std::string> PrivateKey::to_pem() const {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PrivateKey(bio.get(), impl_->pkey.get(), nullptr, nullptr, 0, nullptr,
                                       nullptr) != 1) {
    return fail(Errc::crypto, "PEM encoding failed: " + openssl_error());
  }
  char* data = nullptr;
  long len = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(len));
}

PublicKey PrivateKey::public_key() const {
  unsigned char buf[32];
  std::size_t len = sizeof buf;
  // Cannot fail for a valid Ed25519 key, which is all this class holds.
  EVP_PKEY_get_raw_public_key(impl_->pkey.get(), buf, &len);
  return PublicKey{std::string(reinterpret_cast<const char*>(buf), len)};
}

Result<std::string> PrivateKey::sign(std::string_view message) const {
  MdCtxPtr ctx(EVP_MD_CTX_new());
  unsigned char sig[64];
  std::size_t siglen = sizeof sig;
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, impl_->pkey.get()) != 1 ||
      EVP_DigestSign(ctx.get(), sig, &siglen, as_uchar(message), message.size()) != 1) {
    return fail(Errc::crypto, "Ed25519 signing failed: " + openssl_error());
  }
  return std::string(reinterpret_cast<const char*>(sig), siglen);
}

bool verify_ed25519(std::string_view public_raw, std::string_view message,
                    std::string_view signature) {
  if (public_raw.size() != 32 || signature.size() != 64) return false;
  PkeyPtr pkey(EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr, as_uchar(public_raw),
                                           public_raw.size()));
  if (!pkey) {
    ERR_clear_error();
    return false;
  }
  MdCtxPtr ctx(EVP_MD_CTX_new());
  if (!ctx || EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, pkey.get()) != 1) {
    ERR_clear_error();
    return false;
  }
  int rc = EVP_DigestVerify(ctx.get(), as_uchar(signature), signature.size(), as_uchar(message),
                            message.size());
  ERR_clear_error();
  return rc == 1;
}

}  // namespace catalog::crypto
