// Private keys of every supported type (catalog/crypto/signing_key) and their
// signatures over OpenSSL: RFC 8032 vectors, round trips, PEM, refusals.
// public_key_test.cpp covers public key parsing and encodings.
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "catalog/crypto/hash.hpp"
#include "catalog/crypto/signing_key.hpp"

namespace catalog::crypto {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// RFC 8032 section 7.1, TEST 1 (empty message) and TEST 2 (one byte 0x72).
constexpr std::string_view kSecret1 =
    "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";
constexpr std::string_view kPublic1 =
    "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
constexpr std::string_view kSignature1 =
    "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155"
    "5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b";
constexpr std::string_view kSecret2 =
    "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb";
constexpr std::string_view kPublic2 =
    "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c";
constexpr std::string_view kSignature2 =
    "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da"
    "085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00";

struct PkeyDeleter {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct BioDeleter {
  void operator()(BIO* p) const { BIO_free(p); }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyDeleter>;
using BioPtr = std::unique_ptr<BIO, BioDeleter>;

std::string unhex(std::string_view hex) {
  auto r = from_hex(hex);
  EXPECT_TRUE(r.has_value()) << hex;
  return r.value_or("");
}

std::string hex(std::string_view raw) {
  return to_hex(std::span<const unsigned char>(reinterpret_cast<const unsigned char*>(raw.data()),
                                               raw.size()));
}

// PEM of `pkey`: PKCS#8 if `is_private`, SubjectPublicKeyInfo otherwise;
// `traditional` writes "BEGIN EC/RSA PRIVATE KEY" instead of PKCS#8.
std::string pem_of(EVP_PKEY* pkey, bool is_private = true, bool traditional = false) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  EXPECT_TRUE(bio);
  if (!bio) return "";
  int ok = 0;
  if (!is_private) {
    ok = PEM_write_bio_PUBKEY(bio.get(), pkey);
  } else if (traditional) {
    ok = PEM_write_bio_PrivateKey_traditional(bio.get(), pkey, nullptr, nullptr, 0, nullptr,
                                              nullptr);
  } else {
    ok = PEM_write_bio_PrivateKey(bio.get(), pkey, nullptr, nullptr, 0, nullptr, nullptr);
  }
  EXPECT_EQ(ok, 1);
  char* data = nullptr;
  const long len = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(len));
}

std::string pem_from_raw_secret(std::string_view secret_hex) {
  const std::string raw = unhex(secret_hex);
  PkeyPtr pkey(EVP_PKEY_new_raw_private_key(
      EVP_PKEY_ED25519, nullptr, reinterpret_cast<const unsigned char*>(raw.data()), raw.size()));
  EXPECT_TRUE(pkey);
  return pkey ? pem_of(pkey.get()) : "";
}

Result<PrivateKey> key_from_secret(std::string_view secret_hex) {
  return PrivateKey::from_pem(pem_from_raw_secret(secret_hex));
}

bool verify_ed(std::string_view raw, std::string_view message, std::string_view sig) {
  return verify(PublicKey{KeyType::ed25519, std::string(raw)}, Scheme::ed25519, message, sig);
}

// ---- Ed25519: RFC 8032 -------------------------------------------------------

TEST(CryptoKeysTest, Rfc8032Vector1) {
  auto key = key_from_secret(kSecret1);
  ASSERT_TRUE(key.has_value()) << key.error().message;
  EXPECT_EQ(key->type(), KeyType::ed25519);
  EXPECT_FALSE(key->in_token());
  EXPECT_EQ(key->public_key().hex(), kPublic1);
  EXPECT_EQ(key->public_key().raw, unhex(kPublic1));
  auto sig = key->sign("");
  ASSERT_TRUE(sig.has_value()) << sig.error().message;
  EXPECT_EQ(hex(*sig), kSignature1);
  EXPECT_TRUE(verify_ed(unhex(kPublic1), "", unhex(kSignature1)));
}

TEST(CryptoKeysTest, Rfc8032Vector2) {
  auto key = key_from_secret(kSecret2);
  ASSERT_TRUE(key.has_value()) << key.error().message;
  EXPECT_EQ(key->public_key().hex(), kPublic2);
  auto sig = key->sign("\x72");
  ASSERT_TRUE(sig.has_value()) << sig.error().message;
  EXPECT_EQ(hex(*sig), kSignature2);
  EXPECT_TRUE(verify_ed(unhex(kPublic2), "\x72", unhex(kSignature2)));
  // A valid signature under one key is not valid under another.
  EXPECT_FALSE(verify_ed(unhex(kPublic1), "\x72", unhex(kSignature2)));
  EXPECT_FALSE(verify_ed(unhex(kPublic2), "", unhex(kSignature1)));
}

TEST(CryptoKeysTest, Ed25519WrongSizesFail) {
  const std::string pub = unhex(kPublic1);
  const std::string sig = unhex(kSignature1);
  ASSERT_TRUE(verify_ed(pub, "", sig));
  EXPECT_FALSE(verify_ed(pub.substr(0, 31), "", sig));
  EXPECT_FALSE(verify_ed(pub + '\0', "", sig));
  EXPECT_FALSE(verify_ed("", "", sig));
  EXPECT_FALSE(verify_ed(pub, "", sig.substr(0, 63)));
  EXPECT_FALSE(verify_ed(pub, "", sig + '\0'));
  EXPECT_FALSE(verify_ed(pub, "", ""));
  EXPECT_FALSE(verify_ed(pub, "", sig + sig));
}

TEST(CryptoKeysTest, MovedKeyStillSigns) {
  auto a = key_from_secret(kSecret1);
  ASSERT_TRUE(a.has_value());
  PrivateKey b(std::move(*a));
  EXPECT_EQ(b.public_key().hex(), kPublic1);
  auto c = PrivateKey::generate(KeyType::ecdsa_p256);
  ASSERT_TRUE(c.has_value());
  *c = std::move(b);
  EXPECT_EQ(c->type(), KeyType::ed25519);
  EXPECT_EQ(c->public_key().hex(), kPublic1);
  EXPECT_EQ(hex(c->sign("").value_or("")), kSignature1);
}

// ---- every key type: round trips ----------------------------------------------

class EveryKeyType : public ::testing::TestWithParam<KeyType> {
 protected:
  // Keys are made once per type: RSA-3072 generation takes a while.
  static const PrivateKey& key(KeyType type) {
    static std::map<KeyType, PrivateKey> keys;
    auto it = keys.find(type);
    if (it == keys.end()) {
      auto k = PrivateKey::generate(type);
      EXPECT_TRUE(k.has_value()) << k.error().message;
      if (!k) std::abort();
      it = keys.emplace(type, std::move(*k)).first;
    }
    return it->second;
  }
  const PrivateKey& key() const { return key(GetParam()); }
};

// The schemes of a key type.
std::vector<Scheme> schemes_of(KeyType type) {
  switch (type) {
    case KeyType::ed25519:
      return {Scheme::ed25519};
    case KeyType::ecdsa_p256:
      return {Scheme::ecdsa_sha2_nistp256};
    case KeyType::rsa:
      return {Scheme::rsassa_pss_sha256, Scheme::rsa_pkcs1v15_sha256};
  }
  return {};
}

constexpr Scheme kAllSchemes[] = {Scheme::ed25519, Scheme::ecdsa_sha2_nistp256,
                                  Scheme::rsassa_pss_sha256, Scheme::rsa_pkcs1v15_sha256};

TEST_P(EveryKeyType, GeneratedKeyHasTheType) {
  EXPECT_EQ(key().type(), GetParam());
  const PublicKey pub = key().public_key();
  EXPECT_EQ(pub.type, GetParam());
  switch (GetParam()) {
    case KeyType::ed25519:
      EXPECT_EQ(pub.raw.size(), 32u);
      break;
    case KeyType::ecdsa_p256:
      EXPECT_EQ(pub.raw.size(), 91u);  // named-curve SPKI, uncompressed point
      break;
    case KeyType::rsa: {
      auto parsed = PublicKey::from_pem(pub.pem().value_or(""));
      ASSERT_TRUE(parsed.has_value());
      const unsigned char* p = reinterpret_cast<const unsigned char*>(pub.raw.data());
      PkeyPtr pkey(d2i_PUBKEY(nullptr, &p, static_cast<long>(pub.raw.size())));
      ASSERT_TRUE(pkey);
      EXPECT_EQ(EVP_PKEY_get_bits(pkey.get()), 3072);
      break;
    }
  }
  // Two generated keys differ.
  auto other = PrivateKey::generate(GetParam());
  ASSERT_TRUE(other.has_value());
  EXPECT_NE(other->public_key().raw, pub.raw);
}

TEST_P(EveryKeyType, SignVerifyRoundTrip) {
  const std::string message = std::string("canonical bytes\0with a NUL", 26);
  for (Scheme scheme : schemes_of(GetParam())) {
    SCOPED_TRACE(scheme_name(scheme));
    auto sig = key().sign(message, scheme);
    ASSERT_TRUE(sig.has_value()) << sig.error().message;
    EXPECT_TRUE(verify(key().public_key(), scheme, message, *sig));
    EXPECT_TRUE(verify(key().public_key(), scheme, "", key().sign("", scheme).value_or("")));
  }
  // sign(message) uses the default scheme.
  auto sig = key().sign(message);
  ASSERT_TRUE(sig.has_value());
  EXPECT_TRUE(verify(key().public_key(), default_scheme(GetParam()), message, *sig));
}

TEST_P(EveryKeyType, TamperedMessageOrSignatureFails) {
  for (Scheme scheme : schemes_of(GetParam())) {
    SCOPED_TRACE(scheme_name(scheme));
    auto sig = key().sign("hello world", scheme);
    ASSERT_TRUE(sig.has_value());
    const PublicKey pub = key().public_key();
    ASSERT_TRUE(verify(pub, scheme, "hello world", *sig));
    EXPECT_FALSE(verify(pub, scheme, "hello worle", *sig));
    EXPECT_FALSE(verify(pub, scheme, "hello world ", *sig));
    EXPECT_FALSE(verify(pub, scheme, "", *sig));
    for (std::size_t i : {std::size_t{0}, sig->size() / 2, sig->size() - 1}) {
      std::string bad = *sig;
      bad[i] = static_cast<char>(bad[i] ^ 0x01);
      EXPECT_FALSE(verify(pub, scheme, "hello world", bad)) << "byte " << i;
    }
    EXPECT_FALSE(verify(pub, scheme, "hello world", sig->substr(0, sig->size() - 1)));
    EXPECT_FALSE(verify(pub, scheme, "hello world", *sig + '\0'));
    EXPECT_FALSE(verify(pub, scheme, "hello world", ""));
    // Another key of the type does not verify it.
    auto other = PrivateKey::generate(GetParam());
    ASSERT_TRUE(other.has_value());
    EXPECT_FALSE(verify(other->public_key(), scheme, "hello world", *sig));
  }
}

TEST_P(EveryKeyType, WrongSchemeFails) {
  const PublicKey pub = key().public_key();
  for (Scheme signed_with : schemes_of(GetParam())) {
    auto sig = key().sign("m", signed_with);
    ASSERT_TRUE(sig.has_value());
    for (Scheme other : kAllSchemes) {
      if (other == signed_with) continue;
      EXPECT_FALSE(verify(pub, other, "m", *sig))
          << scheme_name(signed_with) << " checked as " << scheme_name(other);
    }
  }
  // Signing with a scheme of another key type is refused.
  for (Scheme other : kAllSchemes) {
    if (key_type_of(other) == GetParam()) continue;
    auto sig = key().sign("m", other);
    ASSERT_FALSE(sig.has_value()) << scheme_name(other);
    EXPECT_EQ(sig.error().code, Errc::unsupported);
  }
}

TEST_P(EveryKeyType, PrivatePemRoundTrip) {
  auto pem = key().to_pem();
  ASSERT_TRUE(pem.has_value()) << pem.error().message;
  EXPECT_THAT(*pem, StartsWith("-----BEGIN PRIVATE KEY-----\n"));
  EXPECT_THAT(*pem, HasSubstr("-----END PRIVATE KEY-----"));
  auto back = PrivateKey::from_pem(*pem);
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(back->type(), GetParam());
  EXPECT_EQ(back->public_key().raw, key().public_key().raw);
  EXPECT_EQ(back->to_pem().value_or(""), *pem);
  // The reloaded key's signatures verify under the original public key.
  for (Scheme scheme : schemes_of(GetParam())) {
    EXPECT_TRUE(verify(key().public_key(), scheme, "m", back->sign("m", scheme).value_or("")));
  }
}

TEST_P(EveryKeyType, PublicPemRoundTrip) {
  const PublicKey pub = key().public_key();
  auto pem = pub.pem();
  ASSERT_TRUE(pem.has_value()) << pem.error().message;
  // pyca/cryptography's layout: 64-column base64 lines, final newline.
  EXPECT_THAT(*pem, StartsWith("-----BEGIN PUBLIC KEY-----\n"));
  EXPECT_THAT(*pem, EndsWith("\n-----END PUBLIC KEY-----\n"));
  const std::size_t first_nl = pem->find('\n');
  const std::size_t second_nl = pem->find('\n', first_nl + 1);
  if (GetParam() != KeyType::ed25519) {
    EXPECT_EQ(second_nl - first_nl - 1, 64u);
  }
  auto back = PublicKey::from_pem(*pem);
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(back->type, pub.type);
  EXPECT_EQ(back->raw, pub.raw);
  // The hex of the canonical form parses back too.
  auto from_hex = PublicKey::from_hex(pub.type, pub.hex());
  ASSERT_TRUE(from_hex.has_value()) << from_hex.error().message;
  EXPECT_EQ(from_hex->raw, pub.raw);
}

INSTANTIATE_TEST_SUITE_P(Types, EveryKeyType,
                         ::testing::Values(KeyType::ed25519, KeyType::ecdsa_p256, KeyType::rsa),
                         [](const ::testing::TestParamInfo<KeyType>& type) {
                           return std::string(key_type_name(type.param));
                         });

// ---- signature encodings --------------------------------------------------------

TEST(CryptoKeysTest, EcdsaSignaturesAreDerAndOnlyDerVerifies) {
  auto key = PrivateKey::generate(KeyType::ecdsa_p256);
  ASSERT_TRUE(key.has_value());
  auto sig = key->sign("m");
  ASSERT_TRUE(sig.has_value());
  // 1. DER SEQUENCE {r, s}: parses whole.
  const unsigned char* p = reinterpret_cast<const unsigned char*>(sig->data());
  ECDSA_SIG* parsed = d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(sig->size()));
  ASSERT_NE(parsed, nullptr);
  EXPECT_EQ(p, reinterpret_cast<const unsigned char*>(sig->data()) + sig->size());
  // 2. The same r and s as raw r||s (64 bytes) do not verify: DER only.
  unsigned char rs[64] = {};
  ASSERT_EQ(BN_bn2binpad(ECDSA_SIG_get0_r(parsed), rs, 32), 32);
  ASSERT_EQ(BN_bn2binpad(ECDSA_SIG_get0_s(parsed), rs + 32, 32), 32);
  ECDSA_SIG_free(parsed);
  const PublicKey pub = key->public_key();
  ASSERT_TRUE(verify(pub, Scheme::ecdsa_sha2_nistp256, "m", *sig));
  EXPECT_FALSE(
      verify(pub, Scheme::ecdsa_sha2_nistp256, "m", std::string(reinterpret_cast<char*>(rs), 64)));
  // 3. DER with trailing bytes, or a longer length encoding, is not DER.
  EXPECT_FALSE(verify(pub, Scheme::ecdsa_sha2_nistp256, "m", *sig + std::string(1, '\0')));
}

TEST(CryptoKeysTest, RsaPssSignsWithDigestSaltAndVerifiesAnySalt) {
  auto key = PrivateKey::generate(KeyType::rsa);
  ASSERT_TRUE(key.has_value());
  auto sig = key->sign("m", Scheme::rsassa_pss_sha256);
  ASSERT_TRUE(sig.has_value());
  const std::string der = key->public_key().raw;
  const unsigned char* p = reinterpret_cast<const unsigned char*>(der.data());
  PkeyPtr pkey(d2i_PUBKEY(nullptr, &p, static_cast<long>(der.size())));
  ASSERT_TRUE(pkey);
  // The signature has a 32-byte salt, as securesystemslib's signatures do: a
  // verifier that insists on salt length 32 takes it, one that insists on 20 does not.
  auto check_with_salt = [&](int salt) {
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
    EVP_PKEY_CTX* pctx = nullptr;
    EXPECT_EQ(EVP_DigestVerifyInit(ctx.get(), &pctx, EVP_sha256(), nullptr, pkey.get()), 1);
    EXPECT_EQ(EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING), 1);
    EXPECT_EQ(EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, salt), 1);
    const int rc = EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(sig->data()),
                                    sig->size(), reinterpret_cast<const unsigned char*>("m"), 1);
    ERR_clear_error();
    return rc == 1;
  };
  EXPECT_TRUE(check_with_salt(32));
  EXPECT_FALSE(check_with_salt(20));
  // PKCS#1 v1.5 is deterministic; PSS is not.
  EXPECT_EQ(key->sign("m", Scheme::rsa_pkcs1v15_sha256).value_or("a"),
            key->sign("m", Scheme::rsa_pkcs1v15_sha256).value_or("b"));
  EXPECT_NE(key->sign("m", Scheme::rsassa_pss_sha256).value_or("a"), *sig);
}

// ---- parsing: refusals -------------------------------------------------------------

TEST(CryptoKeysTest, PrivateKeyFromPemTakesTraditionalPem) {
  PkeyPtr ec(EVP_EC_gen("P-256"));
  PkeyPtr rsa(EVP_RSA_gen(2048));
  ASSERT_TRUE(ec && rsa);
  const std::string ec_pem = pem_of(ec.get(), true, /*traditional=*/true);
  const std::string rsa_pem = pem_of(rsa.get(), true, /*traditional=*/true);
  ASSERT_THAT(ec_pem, StartsWith("-----BEGIN EC PRIVATE KEY-----"));
  ASSERT_THAT(rsa_pem, StartsWith("-----BEGIN RSA PRIVATE KEY-----"));
  auto a = PrivateKey::from_pem(ec_pem);
  ASSERT_TRUE(a.has_value()) << a.error().message;
  EXPECT_EQ(a->type(), KeyType::ecdsa_p256);
  auto b = PrivateKey::from_pem(rsa_pem);
  ASSERT_TRUE(b.has_value()) << b.error().message;
  EXPECT_EQ(b->type(), KeyType::rsa);
  EXPECT_EQ(b->public_key().raw,
            PublicKey::from_pem(pem_of(rsa.get(), /*is_private=*/false)).value().raw);
}

TEST(CryptoKeysTest, UnsupportedKeysAreRefused) {
  PkeyPtr rsa1024(EVP_RSA_gen(1024));
  PkeyPtr p384(EVP_EC_gen("P-384"));
  PkeyPtr k256(EVP_EC_gen("secp256k1"));
  PkeyPtr ed448(EVP_PKEY_Q_keygen(nullptr, nullptr, "ED448"));
  PkeyPtr x25519(EVP_PKEY_Q_keygen(nullptr, nullptr, "X25519"));
  ASSERT_TRUE(rsa1024 && p384 && k256 && ed448 && x25519);
  for (EVP_PKEY* pkey : {rsa1024.get(), p384.get(), k256.get(), ed448.get(), x25519.get()}) {
    const std::string what = EVP_PKEY_get0_type_name(pkey);
    auto priv = PrivateKey::from_pem(pem_of(pkey));
    ASSERT_FALSE(priv.has_value()) << what;
    EXPECT_EQ(priv.error().code, Errc::unsupported) << what << ": " << priv.error().message;
    auto pub = PublicKey::from_pem(pem_of(pkey, /*is_private=*/false));
    ASSERT_FALSE(pub.has_value()) << what;
    EXPECT_EQ(pub.error().code, Errc::unsupported) << what << ": " << pub.error().message;
  }
  EXPECT_THAT(PublicKey::from_pem(pem_of(rsa1024.get(), false)).error().message,
              HasSubstr("1024 bits"));
  EXPECT_THAT(PublicKey::from_pem(pem_of(p384.get(), false)).error().message, HasSubstr("P-256"));
  // The DER SPKI of a P-384 key, as hex of an ECDSA key, is unsupported too.
  unsigned char* der = nullptr;
  const int len = i2d_PUBKEY(p384.get(), &der);
  ASSERT_GT(len, 0);
  const std::string der_hex =
      hex(std::string_view(reinterpret_cast<const char*>(der), static_cast<std::size_t>(len)));
  OPENSSL_free(der);
  auto r = PublicKey::from_hex(KeyType::ecdsa_p256, der_hex);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Errc::unsupported);
}

TEST(CryptoKeysTest, EncryptedPrivateKeyIsRefusedWithoutPrompting) {
  PkeyPtr ec(EVP_EC_gen("P-256"));
  ASSERT_TRUE(ec);
  BioPtr bio(BIO_new(BIO_s_mem()));
  char pass[] = "secret";
  ASSERT_EQ(PEM_write_bio_PKCS8PrivateKey(bio.get(), ec.get(), EVP_aes_256_cbc(), pass, 6, nullptr,
                                          nullptr),
            1);
  char* data = nullptr;
  const long len = BIO_get_mem_data(bio.get(), &data);
  const std::string pem(data, static_cast<std::size_t>(len));
  ASSERT_THAT(pem, StartsWith("-----BEGIN ENCRYPTED PRIVATE KEY-----"));
  auto r = PrivateKey::from_pem(pem);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Errc::unsupported);
  EXPECT_THAT(r.error().message, HasSubstr("encrypted"));
}

TEST(CryptoKeysTest, NonPemIsMalformed) {
  const std::string good = pem_from_raw_secret(kSecret1);
  const std::string pub_raw = unhex(kPublic1);
  PkeyPtr pub_only(EVP_PKEY_new_raw_public_key(
      EVP_PKEY_ED25519, nullptr, reinterpret_cast<const unsigned char*>(pub_raw.data()),
      pub_raw.size()));
  ASSERT_TRUE(pub_only);
  const std::string public_pem = pem_of(pub_only.get(), /*is_private=*/false);
  ASSERT_THAT(public_pem, StartsWith("-----BEGIN PUBLIC KEY-----"));
  for (const std::string& bad :
       {std::string(), std::string("hello"), std::string(kSecret1),
        std::string("-----BEGIN PRIVATE KEY-----\n-----END PRIVATE KEY-----\n"),
        good.substr(0, good.size() / 2), public_pem, std::string(70 * 1024, 'A')}) {
    auto r = PrivateKey::from_pem(bad);
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_EQ(r.error().code, Errc::malformed) << bad;
  }
  // And the other way: a private key PEM is not a public key PEM.
  for (const std::string& bad :
       {std::string(), std::string("hello"), good, good.substr(0, good.size() / 2),
        std::string("-----BEGIN PUBLIC KEY-----\n-----END PUBLIC KEY-----\n"),
        std::string(70 * 1024, 'A')}) {
    auto r = PublicKey::from_pem(bad);
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_EQ(r.error().code, Errc::malformed) << bad;
  }
  ASSERT_TRUE(PublicKey::from_pem(public_pem).has_value());
  EXPECT_EQ(PublicKey::from_pem(public_pem)->hex(), kPublic1);
}

}  // namespace
}  // namespace catalog::crypto
