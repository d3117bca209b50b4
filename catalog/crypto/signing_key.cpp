#include "catalog/crypto/signing_key.hpp"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <vector>

#include "catalog/crypto/evp_key.hpp"
#include "catalog/crypto/pkcs11_store.hpp"

namespace catalog::crypto {

using detail::as_uchar;

struct PrivateKey::Impl {
  std::shared_ptr<OSSL_LIB_CTX> libctx;  // token keys only; outlives `pkey`
  detail::PkeyPtr pkey;
  PublicKey pub;
};

namespace {

// A PrivateKey's parts from a key OpenSSL holds: its public key must be of a
// supported type (from_pem's rules).
Result<PublicKey> checked_public(const EVP_PKEY* pkey, std::string_view what) {
  auto pub = detail::public_key_of(pkey);
  if (!pub) return fail(pub.error().code, std::string(what) + ": " + pub.error().message);
  return pub;
}

// The digest to fetch from the key's own library context for `scheme`.
const char* digest_name(Scheme scheme) {
  const EVP_MD* md = detail::digest_of(scheme);
  return md == nullptr ? nullptr : EVP_MD_get0_name(md);
}

// "BEGIN ENCRYPTED PRIVATE KEY" (PKCS#8) or a traditional PEM's
// "Proc-Type: 4,ENCRYPTED" header.
bool looks_encrypted(std::string_view pem) {
  return pem.find("-----BEGIN ENCRYPTED PRIVATE KEY-----") != std::string_view::npos ||
         pem.find("Proc-Type: 4,ENCRYPTED") != std::string_view::npos;
}

}  // namespace

PrivateKey::PrivateKey(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PrivateKey::~PrivateKey() = default;
PrivateKey::PrivateKey(PrivateKey&&) noexcept = default;
PrivateKey& PrivateKey::operator=(PrivateKey&&) noexcept = default;

Result<PrivateKey> PrivateKey::generate(KeyType type) {
  EVP_PKEY* raw = nullptr;
  switch (type) {
    case KeyType::ed25519:
      raw = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
      break;
    case KeyType::ecdsa_p256:
      raw = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
      break;
    case KeyType::rsa:
      raw = EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", static_cast<std::size_t>(3072));
      break;
  }
  detail::PkeyPtr pkey(raw);
  if (!pkey) {
    return fail(Errc::crypto, std::string(key_type_name(type)) +
                                  " key generation failed: " + detail::openssl_error());
  }
  auto pub = checked_public(pkey.get(), "generated key");
  if (!pub) return std::unexpected(pub.error());
  auto impl = std::make_unique<Impl>();
  impl->pkey = std::move(pkey);
  impl->pub = std::move(*pub);
  return PrivateKey(std::move(impl));
}

Result<PrivateKey> PrivateKey::from_pem(std::string_view pem) {
  if (pem.size() > 64 * 1024) return fail(Errc::malformed, "PEM too large");
  if (looks_encrypted(pem)) {
    return fail(Errc::unsupported, "encrypted private keys are not supported (decrypt it first)");
  }
  detail::BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) return fail(Errc::crypto, detail::openssl_error());
  // A password callback that supplies none: an encrypted key fails instead of
  // OpenSSL prompting on the terminal.
  auto no_password = [](char*, int, int, void*) -> int { return 0; };
  detail::PkeyPtr pkey(PEM_read_bio_PrivateKey(bio.get(), nullptr, no_password, nullptr));
  if (!pkey) {
    ERR_clear_error();
    return fail(Errc::malformed, "not a PEM private key");
  }
  auto pub = checked_public(pkey.get(), "private key");
  if (!pub) return std::unexpected(pub.error());
  auto impl = std::make_unique<Impl>();
  impl->pkey = std::move(pkey);
  impl->pub = std::move(*pub);
  return PrivateKey(std::move(impl));
}

bool PrivateKey::is_uri(std::string_view text) { return text.starts_with("pkcs11:"); }

Result<PrivateKey> PrivateKey::from_uri(std::string_view uri) {
  auto token_key = detail::load_token_key(uri);
  if (!token_key) return std::unexpected(token_key.error());
  auto pub = checked_public(token_key->pkey.get(), "token key");
  if (!pub) return std::unexpected(pub.error());
  auto impl = std::make_unique<Impl>();
  impl->libctx = std::move(token_key->libctx);
  impl->pkey = std::move(token_key->pkey);
  impl->pub = std::move(*pub);
  return PrivateKey(std::move(impl));
}

KeyType PrivateKey::type() const { return impl_->pub.type; }

bool PrivateKey::in_token() const { return impl_->libctx != nullptr; }

Result<std::string> PrivateKey::to_pem() const {
  if (in_token()) return fail(Errc::unsupported, "a token's private key cannot be exported");
  detail::BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PrivateKey(bio.get(), impl_->pkey.get(), nullptr, nullptr, 0, nullptr,
                                       nullptr) != 1) {
    return fail(Errc::crypto, "PEM encoding failed: " + detail::openssl_error());
  }
  return detail::bio_contents(bio.get());
}

PublicKey PrivateKey::public_key() const { return impl_->pub; }

Result<std::string> PrivateKey::sign(std::string_view message, Scheme scheme) const {
  // 1. The scheme must be one for this key.
  if (key_type_of(scheme) != type()) {
    return fail(Errc::unsupported, "scheme " + std::string(scheme_name(scheme)) +
                                       " does not fit a " + std::string(key_type_name(type())) +
                                       " key");
  }
  // 2. Hash-and-sign in the key's own library context (the token's provider for
  //    token keys), with the scheme's digest and padding.
  detail::MdCtxPtr ctx(EVP_MD_CTX_new());
  EVP_PKEY_CTX* pctx = nullptr;
  const int max_size = EVP_PKEY_get_size(impl_->pkey.get());
  if (!ctx || max_size <= 0 ||
      EVP_DigestSignInit_ex(ctx.get(), &pctx, digest_name(scheme), impl_->libctx.get(), nullptr,
                            impl_->pkey.get(), nullptr) != 1 ||
      !detail::set_rsa_padding(pctx, scheme, /*signing=*/true) ||
      // A token's provider is told MGF1-SHA-256 explicitly, not left to its default.
      (scheme == Scheme::rsassa_pss_sha256 &&
       EVP_PKEY_CTX_set_rsa_mgf1_md_name(pctx, "SHA256", nullptr) != 1)) {
    return fail(Errc::crypto, std::string(scheme_name(scheme)) +
                                  " signing setup failed: " + detail::openssl_error());
  }
  std::vector<unsigned char> sig(static_cast<std::size_t>(max_size));
  std::size_t len = sig.size();
  if (EVP_DigestSign(ctx.get(), sig.data(), &len, as_uchar(message), message.size()) != 1) {
    return fail(Errc::crypto,
                std::string(scheme_name(scheme)) + " signing failed: " + detail::openssl_error());
  }
  std::string out(reinterpret_cast<const char*>(sig.data()), len);
  // 3. Never hand out a signature that does not verify (a token that writes raw
  //    r||s instead of DER, a faulty device).
  if (!verify(impl_->pub, scheme, message, out)) {
    return fail(Errc::crypto,
                std::string(scheme_name(scheme)) + " signature does not verify under the key");
  }
  return out;
}

}  // namespace catalog::crypto
