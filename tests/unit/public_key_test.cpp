// Public keys (catalog/crypto/public_key): the scheme table, the accepted
// encodings of each type, refusals, and verify()'s contract on bad input.
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "catalog/crypto/hash.hpp"
#include "catalog/crypto/public_key.hpp"
#include "catalog/crypto/signing_key.hpp"

namespace catalog::crypto {
namespace {

// The P-256 generator point G: a valid public key of known coordinates.
constexpr std::string_view kP256GX =
    "6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296";
constexpr std::string_view kP256GY =
    "4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5";

struct PkeyDeleter {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyDeleter>;

// SubjectPublicKeyInfo PEM of `pkey`.
std::string public_pem_of(EVP_PKEY* pkey) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
  EXPECT_EQ(PEM_write_bio_PUBKEY(bio.get(), pkey), 1);
  char* data = nullptr;
  const long len = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(len));
}

// ---- names and the scheme table ---------------------------------------------

TEST(PublicKeyTest, SchemeTable) {
  EXPECT_EQ(key_type_of(Scheme::ed25519), KeyType::ed25519);
  EXPECT_EQ(key_type_of(Scheme::ecdsa_sha2_nistp256), KeyType::ecdsa_p256);
  EXPECT_EQ(key_type_of(Scheme::rsassa_pss_sha256), KeyType::rsa);
  EXPECT_EQ(key_type_of(Scheme::rsa_pkcs1v15_sha256), KeyType::rsa);
  EXPECT_EQ(default_scheme(KeyType::ed25519), Scheme::ed25519);
  EXPECT_EQ(default_scheme(KeyType::ecdsa_p256), Scheme::ecdsa_sha2_nistp256);
  EXPECT_EQ(default_scheme(KeyType::rsa), Scheme::rsassa_pss_sha256);

  for (Scheme s : {Scheme::ed25519, Scheme::ecdsa_sha2_nistp256, Scheme::rsassa_pss_sha256,
                   Scheme::rsa_pkcs1v15_sha256}) {
    EXPECT_EQ(scheme_from_name(scheme_name(s)), s) << scheme_name(s);
  }
  EXPECT_EQ(scheme_name(Scheme::rsa_pkcs1v15_sha256), "rsa-pkcs1v15-sha256");
  EXPECT_EQ(scheme_from_name("RSASSA-PSS-SHA256"), std::nullopt);
  EXPECT_EQ(scheme_from_name("ecdsa-sha2-nistp384"), std::nullopt);
  EXPECT_EQ(scheme_from_name(""), std::nullopt);

  for (KeyType t : {KeyType::ed25519, KeyType::ecdsa_p256, KeyType::rsa}) {
    EXPECT_EQ(key_type_from_name(key_type_name(t)), t) << key_type_name(t);
  }
  EXPECT_EQ(key_type_name(KeyType::ecdsa_p256), "ecdsa");
  EXPECT_EQ(key_type_from_name("ecdsa-sha2-nistp256"), KeyType::ecdsa_p256);
  EXPECT_EQ(key_type_from_name("ED25519"), std::nullopt);
  EXPECT_EQ(key_type_from_name("dsa"), std::nullopt);
}

TEST(PublicKeyTest, VerifyLeavesNoOpenSslErrors) {
  auto key = PrivateKey::generate(KeyType::ecdsa_p256);
  ASSERT_TRUE(key.has_value());
  ERR_clear_error();
  EXPECT_FALSE(verify(key->public_key(), Scheme::ecdsa_sha2_nistp256, "m", "garbage"));
  EXPECT_EQ(ERR_peek_error(), 0u);
  EXPECT_FALSE(verify(PublicKey{KeyType::rsa, "not DER"}, Scheme::rsassa_pss_sha256, "m", "x"));
  EXPECT_EQ(ERR_peek_error(), 0u);
  EXPECT_FALSE(verify(PublicKey{KeyType::ed25519, "short"}, Scheme::ed25519, "m", "x"));
  EXPECT_EQ(ERR_peek_error(), 0u);
}

TEST(PublicKeyTest, KeyOfAnotherTypeUnderATypeNeverVerifies) {
  // A PublicKey whose raw bytes are another type's key (callers can build one).
  auto ec = PrivateKey::generate(KeyType::ecdsa_p256);
  auto rsa = PrivateKey::generate(KeyType::rsa);
  ASSERT_TRUE(ec.has_value() && rsa.has_value());
  const std::string ec_sig = ec->sign("m").value_or("");
  const std::string rsa_sig = rsa->sign("m").value_or("");
  ASSERT_TRUE(verify(ec->public_key(), Scheme::ecdsa_sha2_nistp256, "m", ec_sig));
  EXPECT_FALSE(verify(PublicKey{KeyType::rsa, ec->public_key().raw}, Scheme::ecdsa_sha2_nistp256,
                      "m", ec_sig));
  EXPECT_FALSE(verify(PublicKey{KeyType::ecdsa_p256, rsa->public_key().raw},
                      Scheme::rsassa_pss_sha256, "m", rsa_sig));
  EXPECT_FALSE(verify(PublicKey{KeyType::ecdsa_p256, rsa->public_key().raw},
                      Scheme::ecdsa_sha2_nistp256, "m", rsa_sig));
  const PublicKey mislabelled{KeyType::ecdsa_p256, rsa->public_key().raw};
  EXPECT_FALSE(mislabelled.pem().has_value());
}

// ---- parsing ------------------------------------------------------

TEST(PublicKeyTest, EcdsaPublicKeyForms) {
  // The generator point written four ways is one key.
  const std::string uncompressed = "04" + std::string(kP256GX) + std::string(kP256GY);
  auto a = PublicKey::from_hex(KeyType::ecdsa_p256, uncompressed);
  ASSERT_TRUE(a.has_value()) << a.error().message;
  EXPECT_EQ(a->type, KeyType::ecdsa_p256);
  EXPECT_EQ(a->raw.size(), 91u);
  // G's y is odd: compressed prefix 03.
  auto b = PublicKey::from_hex(KeyType::ecdsa_p256, "03" + std::string(kP256GX));
  ASSERT_TRUE(b.has_value()) << b.error().message;
  EXPECT_EQ(b->raw, a->raw);
  auto c = PublicKey::from_hex(KeyType::ecdsa_p256, a->hex());  // DER SPKI
  ASSERT_TRUE(c.has_value()) << c.error().message;
  EXPECT_EQ(c->raw, a->raw);
  auto d = PublicKey::from_pem(a->pem().value_or(""));
  ASSERT_TRUE(d.has_value()) << d.error().message;
  EXPECT_EQ(d->raw, a->raw);
  // A PEM with a compressed point in its SPKI is the same key as the uncompressed one.
  PkeyPtr ec(EVP_EC_gen("P-256"));
  ASSERT_TRUE(ec);
  const std::string uncompressed_pem = public_pem_of(ec.get());
  ASSERT_EQ(EVP_PKEY_set_utf8_string_param(ec.get(), OSSL_PKEY_PARAM_EC_POINT_CONVERSION_FORMAT,
                                           "compressed"),
            1);
  const std::string compressed_pem = public_pem_of(ec.get());
  ASSERT_LT(compressed_pem.size(), uncompressed_pem.size());
  auto e = PublicKey::from_pem(compressed_pem);
  ASSERT_TRUE(e.has_value()) << e.error().message;
  auto f = PublicKey::from_pem(uncompressed_pem);
  ASSERT_TRUE(f.has_value()) << f.error().message;
  EXPECT_EQ(e->raw, f->raw);
  EXPECT_EQ(e->pem().value_or(""), uncompressed_pem);
}

TEST(PublicKeyTest, EcdsaBadPointsAreMalformed) {
  const std::string gx(kP256GX);
  const std::string gy(kP256GY);
  std::string off_curve = gy;
  off_curve.back() = off_curve.back() == '5' ? '6' : '5';
  for (const std::string& bad : {"04" + gx + off_curve,  // not on the curve
                                 std::string("00"),      // the point at infinity
                                 "04" + gx,              // truncated
                                 "04" + gx + gy + "00",  // too long
                                 "06" + gx + gy,         // hybrid form
                                 "05" + gx,              // no such prefix
                                 std::string(""), std::string("zz")}) {
    auto r = PublicKey::from_hex(KeyType::ecdsa_p256, bad);
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_EQ(r.error().code, Errc::malformed) << bad;
  }
}

TEST(PublicKeyTest, FromHexChecksTheType) {
  auto ed = PrivateKey::generate(KeyType::ed25519);
  auto ec = PrivateKey::generate(KeyType::ecdsa_p256);
  auto rsa = PrivateKey::generate(KeyType::rsa);
  ASSERT_TRUE(ed.has_value() && ec.has_value() && rsa.has_value());
  // Each type from its own hex form.
  EXPECT_EQ(PublicKey::from_hex(KeyType::ed25519, ed->public_key().hex()).value().raw,
            ed->public_key().raw);
  EXPECT_EQ(PublicKey::from_hex(KeyType::rsa, rsa->public_key().hex()).value().raw,
            rsa->public_key().raw);
  // Another type's key is malformed as this type.
  struct Case {
    KeyType as;
    std::string hex;
  };
  for (const Case& c :
       {Case{KeyType::ecdsa_p256, rsa->public_key().hex()},
        Case{KeyType::rsa, ec->public_key().hex()}, Case{KeyType::ed25519, ec->public_key().hex()},
        Case{KeyType::ed25519, ed->public_key().hex().substr(2)},
        Case{KeyType::rsa, ed->public_key().hex()},
        Case{KeyType::rsa, rsa->public_key().hex() + "00"}, Case{KeyType::rsa, "abc"}}) {
    auto r = PublicKey::from_hex(c.as, c.hex);
    ASSERT_FALSE(r.has_value()) << key_type_name(c.as) << " " << c.hex;
    EXPECT_EQ(r.error().code, Errc::malformed) << key_type_name(c.as) << " " << c.hex;
  }
}

}  // namespace
}  // namespace catalog::crypto
