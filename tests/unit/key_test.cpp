// TUF public keys: parsing, key ids, signature checks.
#include "catalog/tuf/key.hpp"

#include <openssl/evp.h>

#include <cctype>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "catalog/crypto/hash.hpp"

namespace catalog::tuf {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

std::string hex(std::string_view raw) {
  return crypto::to_hex(std::span<const unsigned char>(
      reinterpret_cast<const unsigned char*>(raw.data()), raw.size()));
}

// SHA-256 straight from OpenSSL, independent of catalog::crypto::Hasher.
std::string openssl_sha256_hex(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EXPECT_EQ(EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr), 1);
  return crypto::to_hex(std::span<const unsigned char>(md, len));
}

class KeyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto k = crypto::PrivateKey::generate();
    ASSERT_TRUE(k.has_value()) << k.error().message;
    private_.emplace(std::move(*k));
    key_ = Key::from_public(private_->public_key());
  }

  std::string sign_hex(std::string_view message) {
    auto sig = private_->sign(message);
    EXPECT_TRUE(sig.has_value());
    return hex(sig.value_or(""));
  }

  std::optional<crypto::PrivateKey> private_;
  Key key_;
};

TEST_F(KeyTest, FromPublic) {
  EXPECT_EQ(key_.keytype, "ed25519");
  EXPECT_EQ(key_.scheme, "ed25519");
  EXPECT_EQ(key_.public_hex, private_->public_key().hex());
  EXPECT_TRUE(key_.unrecognized.empty());
}

TEST_F(KeyTest, KeyIdIsSha256OfCanonicalJson) {
  // The canonical form written out by hand: keys sorted, no whitespace.
  const std::string canonical = R"({"keytype":"ed25519","keyval":{"public":")" + key_.public_hex +
                                R"("},"scheme":"ed25519"})";
  EXPECT_EQ(key_.keyid(), openssl_sha256_hex(canonical));
  EXPECT_EQ(key_.keyid().size(), 64u);

  // A known key: the RFC 8032 test 1 public key.
  const Key rfc{"ed25519", "ed25519",
                "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", json::object()};
  EXPECT_EQ(rfc.keyid(), openssl_sha256_hex(
                             R"({"keytype":"ed25519","keyval":{"public":"d75a980182b10ab7d54bfed3)"
                             R"(c964073a0ee172f3daa62325af021a68f707511a"},"scheme":"ed25519"})"));
  // Every field feeds the id.
  Key other_scheme = rfc;
  other_scheme.scheme = "ed25519-x";
  EXPECT_NE(other_scheme.keyid(), rfc.keyid());
  Key other_type = rfc;
  other_type.keytype = "rsa";
  EXPECT_NE(other_type.keyid(), rfc.keyid());
}

TEST_F(KeyTest, JsonRoundTrip) {
  const json j = key_.to_json();
  EXPECT_EQ(j, (json{{"keytype", "ed25519"},
                     {"scheme", "ed25519"},
                     {"keyval", {{"public", key_.public_hex}}}}));
  auto back = Key::from_json(j, "keys.x");
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(back->keytype, key_.keytype);
  EXPECT_EQ(back->scheme, key_.scheme);
  EXPECT_EQ(back->public_hex, key_.public_hex);
  EXPECT_EQ(back->keyid(), key_.keyid());
}

TEST_F(KeyTest, FromJsonKeepsUnrecognizedFields) {
  json j = key_.to_json();
  j["x-custom"] = {{"a", 1}};
  j["keyid_hash_algorithms"] = {"sha256", "sha512"};
  auto k = Key::from_json(j, "keys.x");
  ASSERT_TRUE(k.has_value()) << k.error().message;
  EXPECT_EQ(k->unrecognized,
            (json{{"x-custom", {{"a", 1}}}, {"keyid_hash_algorithms", {"sha256", "sha512"}}}));
  EXPECT_EQ(k->to_json(), j);
}

TEST_F(KeyTest, FromJsonAcceptsOtherKeyTypes) {
  // A root may list keys this client cannot use; they parse but never verify.
  const json j = {{"keytype", "rsa"},
                  {"scheme", "rsassa-pss-sha256"},
                  {"keyval", {{"public", "-----BEGIN PUBLIC KEY-----\n..."}}}};
  auto k = Key::from_json(j, "keys.r");
  ASSERT_TRUE(k.has_value()) << k.error().message;
  EXPECT_EQ(k->keytype, "rsa");
  EXPECT_FALSE(k->verify("m", sign_hex("m")));
}

TEST_F(KeyTest, FromJsonIsStrictAndNamesTheField) {
  const json good = key_.to_json();
  struct Case {
    const char* what;
    json doc;
    const char* message;
  };
  auto without = [&](const char* field) {
    json j = good;
    j.erase(field);
    return j;
  };
  auto with = [&](const json& patch) {
    json j = good;
    j.merge_patch(patch);
    return j;
  };
  const Case cases[] = {
      {"not an object", json::array({1, 2}), "signed.keys.abc: expected object"},
      {"string", json("ed25519"), "signed.keys.abc: expected object"},
      {"missing keytype", without("keytype"), "signed.keys.abc.keytype: missing"},
      {"missing scheme", without("scheme"), "signed.keys.abc.scheme: missing"},
      {"missing keyval", without("keyval"), "signed.keys.abc.keyval: missing"},
      {"numeric keytype", with({{"keytype", 1}}), "signed.keys.abc.keytype: expected string"},
      {"array scheme", with({{"scheme", json::array()}}),
       "signed.keys.abc.scheme: expected string"},
      {"keyval string", with({{"keyval", "abc"}}), "signed.keys.abc.keyval: expected object"},
      {"keyval without public", with({{"keyval", {{"public", nullptr}, {"private", "x"}}}}),
       "signed.keys.abc.keyval.public: missing"},
      {"non-string public", with({{"keyval", {{"public", 42}}}}),
       "signed.keys.abc.keyval.public: expected string"},
      {"array public", with({{"keyval", {{"public", {"ab"}}}}}),
       "signed.keys.abc.keyval.public: expected string"},
  };
  for (const Case& c : cases) {
    auto k = Key::from_json(c.doc, "signed.keys.abc");
    ASSERT_FALSE(k.has_value()) << c.what;
    EXPECT_EQ(k.error().code, Errc::bad_field) << c.what;
    EXPECT_THAT(k.error().message, HasSubstr(c.message)) << c.what;
  }
}

TEST_F(KeyTest, VerifiesValidSignature) {
  EXPECT_TRUE(key_.verify("message", sign_hex("message")));
  EXPECT_TRUE(key_.verify("", sign_hex("")));
}

TEST_F(KeyTest, RejectsWrongMessageOrSignature) {
  const std::string sig = sign_hex("message");
  EXPECT_FALSE(key_.verify("messagE", sig));
  std::string flipped = sig;
  flipped[10] = flipped[10] == '0' ? '1' : '0';
  EXPECT_FALSE(key_.verify("message", flipped));
  EXPECT_FALSE(key_.verify("message", ""));
  EXPECT_FALSE(key_.verify("message", sig.substr(0, 126)));
  // Another key's valid signature does not verify under this key.
  auto other = crypto::PrivateKey::generate();
  ASSERT_TRUE(other.has_value());
  EXPECT_FALSE(key_.verify("message", hex(other->sign("message").value_or(""))));
}

TEST_F(KeyTest, OtherKeyTypeNeverVerifies) {
  const std::string sig = sign_hex("message");
  ASSERT_TRUE(key_.verify("message", sig));
  Key rsa = key_;
  rsa.keytype = "rsa";
  EXPECT_FALSE(rsa.verify("message", sig));
  Key scheme = key_;
  scheme.scheme = "rsassa-pss-sha256";
  EXPECT_FALSE(scheme.verify("message", sig));
  Key upper = key_;
  upper.keytype = "ED25519";
  EXPECT_FALSE(upper.verify("message", sig));
}

TEST_F(KeyTest, BadHexNeverVerifies) {
  const std::string sig = sign_hex("message");
  ASSERT_TRUE(key_.verify("message", sig));
  std::string bad_sig = sig;
  bad_sig[0] = 'g';
  EXPECT_FALSE(key_.verify("message", bad_sig));
  EXPECT_FALSE(key_.verify("message", sig + "0"));  // odd length

  Key bad_pub = key_;
  bad_pub.public_hex[0] = 'z';
  EXPECT_FALSE(bad_pub.verify("message", sig));
  Key odd_pub = key_;
  odd_pub.public_hex.pop_back();
  EXPECT_FALSE(odd_pub.verify("message", sig));
  Key short_pub = key_;
  short_pub.public_hex.resize(62);
  EXPECT_FALSE(short_pub.verify("message", sig));
  // Upper-case hex is still hex.
  Key upper_pub = key_;
  for (char& c : upper_pub.public_hex) c = static_cast<char>(std::toupper(c));
  EXPECT_TRUE(upper_pub.verify("message", sig));
}

}  // namespace
}  // namespace catalog::tuf
