// Internal to catalog/crypto: OpenSSL handles and the EVP_PKEY <-> PublicKey
// conversions shared by public_key.cpp, signing_key.cpp and pkcs11_store.cpp.
#pragma once

#include <openssl/bio.h>
#include <openssl/evp.h>

#include <memory>
#include <string>
#include <string_view>

#include "catalog/crypto/public_key.hpp"
#include "catalog/error.hpp"

namespace catalog::crypto::detail {

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

// The first error on the thread's OpenSSL error queue as text ("unknown OpenSSL
// error" when empty); the queue is emptied.
std::string openssl_error();

inline const unsigned char* as_uchar(std::string_view s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}

// The contents of a memory BIO.
std::string bio_contents(BIO* bio);

// The canonical PublicKey of `pkey`, which may be private and may live in another
// provider (a PKCS#11 token) as long as OpenSSL can encode its public half.
// Errc::unsupported for other key types, EC curves other than P-256 and RSA
// under 2048 bits; Errc::crypto when the public half cannot be had.
Result<PublicKey> public_key_of(const EVP_PKEY* pkey);

// The canonical P-256 PublicKey of a SEC1 point (65 bytes 04||X||Y or 33 bytes
// 02/03||X); Errc::malformed when it is not a point on the curve.
// (The code here sticks to few libcrypto functions: epbrokerd loads libcrypto
// lazily, through one stub per function in daemon/lazylib/crypto.cpp.)
Result<PublicKey> ec_p256_from_point(std::string_view point);

// The key a whole DER SubjectPublicKeyInfo holds, in the default library
// context; Errc::malformed when `der` is not exactly one.
Result<PkeyPtr> pkey_from_spki(std::string_view der);

// An EVP_PKEY in the default library context for `key`; Errc::malformed when
// key.raw is not a well-formed key of key.type (size and curve included).
Result<PkeyPtr> pkey_of(const PublicKey& key);

// Sets the RSA padding that `scheme` needs on a signing or verifying context
// (PSS: salt length = digest length when signing, as securesystemslib does;
// any when verifying; MGF1 left to its default, the SHA-256 of the signature).
// True for non-RSA schemes.
bool set_rsa_padding(EVP_PKEY_CTX* pctx, Scheme scheme, bool signing);

// The digest `scheme` hashes with (nullptr for Ed25519, which hashes internally).
const EVP_MD* digest_of(Scheme scheme);

}  // namespace catalog::crypto::detail
