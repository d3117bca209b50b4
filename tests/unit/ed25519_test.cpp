// Ed25519 keys and signatures (RFC 8032) over OpenSSL.
#include "catalog/crypto/ed25519.hpp"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "catalog/crypto/hash.hpp"

namespace catalog::crypto {
namespace {

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

// PKCS#8 PEM of `pkey` (private if `is_private`, SubjectPublicKeyInfo otherwise).
std::string pem_of(EVP_PKEY* pkey, bool is_private = true) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  EXPECT_TRUE(bio);
  if (!bio) return "";
  const int ok =
      is_private ? PEM_write_bio_PrivateKey(bio.get(), pkey, nullptr, nullptr, 0, nullptr, nullptr)
                 : PEM_write_bio_PUBKEY(bio.get(), pkey);
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

TEST(Ed25519Test, Rfc8032Vector1) {
  auto key = key_from_secret(kSecret1);
  ASSERT_TRUE(key.has_value()) << key.error().message;
  EXPECT_EQ(key->public_key().hex(), kPublic1);
  EXPECT_EQ(key->public_key().raw, unhex(kPublic1));
  auto sig = key->sign("");
  ASSERT_TRUE(sig.has_value()) << sig.error().message;
  EXPECT_EQ(hex(*sig), kSignature1);
  EXPECT_TRUE(verify_ed25519(unhex(kPublic1), "", unhex(kSignature1)));
}

TEST(Ed25519Test, Rfc8032Vector2) {
  auto key = key_from_secret(kSecret2);
  ASSERT_TRUE(key.has_value()) << key.error().message;
  EXPECT_EQ(key->public_key().hex(), kPublic2);
  auto sig = key->sign("\x72");
  ASSERT_TRUE(sig.has_value()) << sig.error().message;
  EXPECT_EQ(hex(*sig), kSignature2);
  EXPECT_TRUE(verify_ed25519(unhex(kPublic2), "\x72", unhex(kSignature2)));
  // A valid signature under one key is not valid under another.
  EXPECT_FALSE(verify_ed25519(unhex(kPublic1), "\x72", unhex(kSignature2)));
  EXPECT_FALSE(verify_ed25519(unhex(kPublic2), "", unhex(kSignature1)));
}

TEST(Ed25519Test, SignVerifyRoundTrip) {
  auto generated = PrivateKey::generate();
  ASSERT_TRUE(generated.has_value()) << generated.error().message;
  const PrivateKey& key = *generated;
  const PublicKey pub = key.public_key();
  EXPECT_EQ(pub.raw.size(), 32u);
  EXPECT_EQ(pub.hex().size(), 64u);
  const std::string message = std::string("canonical bytes\0with a NUL", 26);
  auto sig = key.sign(message);
  ASSERT_TRUE(sig.has_value()) << sig.error().message;
  EXPECT_EQ(sig->size(), 64u);
  EXPECT_TRUE(verify_ed25519(pub.raw, message, *sig));
  // Ed25519 is deterministic.
  EXPECT_EQ(key.sign(message).value_or(""), *sig);
  // Two generated keys differ.
  auto other = PrivateKey::generate();
  ASSERT_TRUE(other.has_value());
  EXPECT_NE(other->public_key().raw, pub.raw);
}

TEST(Ed25519Test, TamperedMessageFails) {
  auto generated = PrivateKey::generate();
  ASSERT_TRUE(generated.has_value()) << generated.error().message;
  const PrivateKey& key = *generated;
  const std::string message = "hello world";
  auto sig = key.sign(message);
  ASSERT_TRUE(sig.has_value());
  ASSERT_TRUE(verify_ed25519(key.public_key().raw, message, *sig));
  EXPECT_FALSE(verify_ed25519(key.public_key().raw, "hello worle", *sig));
  EXPECT_FALSE(verify_ed25519(key.public_key().raw, "hello world ", *sig));
  EXPECT_FALSE(verify_ed25519(key.public_key().raw, "", *sig));
}

TEST(Ed25519Test, TamperedSignatureFails) {
  auto generated = PrivateKey::generate();
  ASSERT_TRUE(generated.has_value()) << generated.error().message;
  const PrivateKey& key = *generated;
  auto sig = key.sign("message");
  ASSERT_TRUE(sig.has_value());
  for (std::size_t i : {std::size_t{0}, std::size_t{31}, std::size_t{32}, std::size_t{63}}) {
    std::string bad = *sig;
    bad[i] = static_cast<char>(bad[i] ^ 0x01);
    EXPECT_FALSE(verify_ed25519(key.public_key().raw, "message", bad)) << "byte " << i;
  }
  std::string bad_key = key.public_key().raw;
  bad_key[0] = static_cast<char>(bad_key[0] ^ 0x01);
  EXPECT_FALSE(verify_ed25519(bad_key, "message", *sig));
  EXPECT_FALSE(verify_ed25519(key.public_key().raw, "message", std::string(64, '\0')));
}

TEST(Ed25519Test, WrongSizesFail) {
  const std::string pub = unhex(kPublic1);
  const std::string sig = unhex(kSignature1);
  ASSERT_TRUE(verify_ed25519(pub, "", sig));
  EXPECT_FALSE(verify_ed25519(pub.substr(0, 31), "", sig));
  EXPECT_FALSE(verify_ed25519(pub + '\0', "", sig));
  EXPECT_FALSE(verify_ed25519("", "", sig));
  EXPECT_FALSE(verify_ed25519(pub, "", sig.substr(0, 63)));
  EXPECT_FALSE(verify_ed25519(pub, "", sig + '\0'));
  EXPECT_FALSE(verify_ed25519(pub, "", ""));
  EXPECT_FALSE(verify_ed25519(pub, "", sig + sig));
}

TEST(Ed25519Test, PemRoundTrip) {
  auto generated = PrivateKey::generate();
  ASSERT_TRUE(generated.has_value()) << generated.error().message;
  const PrivateKey& key = *generated;
  auto pem = key.to_pem();
  ASSERT_TRUE(pem.has_value()) << pem.error().message;
  EXPECT_THAT(*pem, StartsWith("-----BEGIN PRIVATE KEY-----\n"));
  EXPECT_THAT(*pem, HasSubstr("-----END PRIVATE KEY-----"));
  auto back = PrivateKey::from_pem(*pem);
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(back->public_key().raw, key.public_key().raw);
  EXPECT_EQ(back->to_pem().value_or(""), *pem);
  // The reloaded key makes the same signatures.
  EXPECT_EQ(back->sign("m").value_or("a"), key.sign("m").value_or("b"));

  // The RFC key survives a round trip too, byte for byte.
  const std::string rfc_pem = pem_from_raw_secret(kSecret1);
  auto rfc_key = PrivateKey::from_pem(rfc_pem);
  ASSERT_TRUE(rfc_key.has_value());
  EXPECT_EQ(rfc_key->to_pem().value_or(""), rfc_pem);
}

TEST(Ed25519Test, MovedKeyStillSigns) {
  auto a = key_from_secret(kSecret1);
  ASSERT_TRUE(a.has_value());
  PrivateKey b(std::move(*a));
  EXPECT_EQ(b.public_key().hex(), kPublic1);
  auto c = PrivateKey::generate();
  ASSERT_TRUE(c.has_value());
  *c = std::move(b);
  EXPECT_EQ(c->public_key().hex(), kPublic1);
  EXPECT_EQ(hex(c->sign("").value_or("")), kSignature1);
}

TEST(Ed25519Test, NonPemIsMalformed) {
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
}

TEST(Ed25519Test, OtherKeyTypesAreUnsupported) {
  PkeyPtr rsa(EVP_RSA_gen(2048));
  ASSERT_TRUE(rsa);
  PkeyPtr ec(EVP_EC_gen("P-256"));
  ASSERT_TRUE(ec);
  PkeyPtr ed448(EVP_PKEY_Q_keygen(nullptr, nullptr, "ED448"));
  ASSERT_TRUE(ed448);
  PkeyPtr x25519(EVP_PKEY_Q_keygen(nullptr, nullptr, "X25519"));
  ASSERT_TRUE(x25519);
  for (EVP_PKEY* pkey : {rsa.get(), ec.get(), ed448.get(), x25519.get()}) {
    const std::string pem = pem_of(pkey);
    ASSERT_THAT(pem, StartsWith("-----BEGIN PRIVATE KEY-----"));
    auto r = PrivateKey::from_pem(pem);
    ASSERT_FALSE(r.has_value()) << EVP_PKEY_get0_type_name(pkey);
    EXPECT_EQ(r.error().code, Errc::unsupported) << EVP_PKEY_get0_type_name(pkey);
    EXPECT_THAT(r.error().message, HasSubstr("not Ed25519"));
  }
}

}  // namespace
}  // namespace catalog::crypto
