// OpenSSL libcrypto's functions that epbrokerd calls (hashing, Ed25519 for TUF
// signatures), loaded on first use (lazy_library.hpp). Each definition must
// match OpenSSL's headers exactly, which the compiler checks.
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <cstdarg>
#include <cstring>

#include "daemon/lazylib/lazy_library.hpp"

namespace {

epbrokerd::lazylib::LazyLibrary& crypto_lib() {
  static epbrokerd::lazylib::LazyLibrary lib(EPBROKERD_SONAME_CRYPTO);
  return lib;
}

}  // namespace

#define EPBROKERD_REAL(fn) \
  static const auto real = epbrokerd::lazylib::resolve<decltype(&::fn)>(crypto_lib(), #fn)
#include "daemon/lazylib/stub_macros.hpp"  // after EPBROKERD_REAL

extern "C" {

EPBROKERD_STUB0(const EVP_MD*, EVP_sha256)
EPBROKERD_STUB0(const EVP_MD*, EVP_sha512)
EPBROKERD_STUB0(EVP_MD_CTX*, EVP_MD_CTX_new)
EPBROKERD_STUB1(void, EVP_MD_CTX_free, EVP_MD_CTX*)
EPBROKERD_STUB3(int, EVP_DigestInit_ex, EVP_MD_CTX*, const EVP_MD*, ENGINE*)
EPBROKERD_STUB3(int, EVP_DigestUpdate, EVP_MD_CTX*, const void*, size_t)
EPBROKERD_STUB3(int, EVP_DigestFinal_ex, EVP_MD_CTX*, unsigned char*, unsigned int*)
EPBROKERD_STUB5(int, EVP_DigestSignInit, EVP_MD_CTX*, EVP_PKEY_CTX**, const EVP_MD*, ENGINE*,
                EVP_PKEY*)
EPBROKERD_STUB5(int, EVP_DigestSign, EVP_MD_CTX*, unsigned char*, size_t*, const unsigned char*,
                size_t)
EPBROKERD_STUB5(int, EVP_DigestVerifyInit, EVP_MD_CTX*, EVP_PKEY_CTX**, const EVP_MD*, ENGINE*,
                EVP_PKEY*)
EPBROKERD_STUB5(int, EVP_DigestVerify, EVP_MD_CTX*, const unsigned char*, size_t,
                const unsigned char*, size_t)
EPBROKERD_STUB1(void, EVP_PKEY_free, EVP_PKEY*)
EPBROKERD_STUB1(int, EVP_PKEY_get_id, const EVP_PKEY*)
EPBROKERD_STUB3(int, EVP_PKEY_get_raw_public_key, const EVP_PKEY*, unsigned char*, size_t*)
EPBROKERD_STUB4(EVP_PKEY*, EVP_PKEY_new_raw_public_key, int, ENGINE*, const unsigned char*, size_t)
// ECDSA P-256 and RSA public keys (catalog/crypto/public_key.cpp).
EPBROKERD_STUB2(int, EVP_PKEY_CTX_set_rsa_padding, EVP_PKEY_CTX*, int)
EPBROKERD_STUB2(int, EVP_PKEY_CTX_set_rsa_pss_saltlen, EVP_PKEY_CTX*, int)
EPBROKERD_STUB1(int, EVP_PKEY_get_bits, const EVP_PKEY*)
EPBROKERD_STUB3(int, EVP_PKEY_set_utf8_string_param, EVP_PKEY*, const char*, const char*)
EPBROKERD_STUB4(EVP_PKEY*, PEM_read_bio_PUBKEY, BIO*, EVP_PKEY**, pem_password_cb*, void*)
EPBROKERD_STUB2(int, PEM_write_bio_PUBKEY, BIO*, const EVP_PKEY*)
EPBROKERD_STUB3(EVP_PKEY*, d2i_PUBKEY, EVP_PKEY**, const unsigned char**, long)
EPBROKERD_STUB2(int, i2d_PUBKEY, const EVP_PKEY*, unsigned char**)
EPBROKERD_STUB1(int, EVP_PKEY_up_ref, EVP_PKEY*)

// The variadic arguments depend on the key type (EVP_PKEY_Q_keygen(3)): "RSA"
// takes the size in bits (size_t), "EC" the curve name; the others none.
EVP_PKEY* EVP_PKEY_Q_keygen(OSSL_LIB_CTX* libctx, const char* propq, const char* type, ...) {
  EPBROKERD_REAL(EVP_PKEY_Q_keygen);
  va_list args;
  va_start(args, type);
  EVP_PKEY* key = nullptr;
  if (std::strcmp(type, "RSA") == 0) {
    key = real(libctx, propq, type, va_arg(args, size_t));
  } else if (std::strcmp(type, "EC") == 0) {
    key = real(libctx, propq, type, va_arg(args, char*));
  } else {
    key = real(libctx, propq, type);
  }
  va_end(args);
  return key;
}

EPBROKERD_STUB0(const BIO_METHOD*, BIO_s_mem)
EPBROKERD_STUB1(BIO*, BIO_new, const BIO_METHOD*)
EPBROKERD_STUB2(BIO*, BIO_new_mem_buf, const void*, int)
EPBROKERD_STUB4(long, BIO_ctrl, BIO*, int, long, void*)
EPBROKERD_STUB1(int, BIO_free, BIO*)
EPBROKERD_STUB4(EVP_PKEY*, PEM_read_bio_PrivateKey, BIO*, EVP_PKEY**, pem_password_cb*, void*)
EPBROKERD_STUB7(int, PEM_write_bio_PrivateKey, BIO*, const EVP_PKEY*, const EVP_CIPHER*,
                const unsigned char*, int, pem_password_cb*, void*)

EPBROKERD_STUB0(unsigned long, ERR_get_error)
EPBROKERD_STUB3(void, ERR_error_string_n, unsigned long, char*, size_t)

EPBROKERD_STUB0(void, ERR_clear_error)

}  // extern "C"
