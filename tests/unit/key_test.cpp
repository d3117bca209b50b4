// TUF public keys: parsing, key ids, signature checks.
#include "catalog/tuf/key.hpp"

#include <openssl/evp.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>

#include <cctype>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "catalog/crypto/hash.hpp"
#include "catalog/crypto/signing_key.hpp"
#include "tests/unit/key_vectors.hpp"

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

TEST_F(KeyTest, UnknownKeyTypeMayLackPublicAndRoundTrips) {
  // A sigstore-oidc key as RSTUF's CLI writes it: no keyval.public.
  const json sigstore = {{"keytype", "sigstore-oidc"},
                         {"scheme", "Fulcio"},
                         {"keyval", {{"identity", "v@example.com"}, {"issuer", "https://x"}}},
                         {"x-rstuf-key-name", "v@example.com"}};
  auto k = Key::from_json(sigstore, "keys.s");
  ASSERT_TRUE(k.has_value()) << k.error().message;
  EXPECT_FALSE(k->has_public);
  EXPECT_EQ(k->to_json(), sigstore);
  EXPECT_FALSE(k->verify("m", sign_hex("m")));
  EXPECT_NE(k->identity(), key_.identity());
  // keyval members beside "public" of a known key are kept too.
  json extra = key_.to_json();
  extra["keyval"]["private"] = "";
  auto e = Key::from_json(extra, "keys.e");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->to_json(), extra);
  EXPECT_NE(e->keyid(), key_.keyid());
  EXPECT_EQ(e->identity(), key_.identity());
  EXPECT_TRUE(e->verify("m", sign_hex("m")));
  // Known key types still need keyval.public (the strictness table below).
  for (const char* keytype : {"ed25519", "ecdsa", "ecdsa-sha2-nistp256", "rsa"}) {
    json j = sigstore;
    j["keytype"] = keytype;
    auto r = Key::from_json(j, "keys.s");
    ASSERT_FALSE(r.has_value()) << keytype;
    EXPECT_EQ(r.error().code, Errc::bad_field) << keytype;
  }
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

// ---- other key types (ECDSA P-256, RSA) --------------------------------------

// `hex` with one bit of byte `i` flipped.
std::string flip_bit(std::string_view hex_value, std::size_t i) {
  std::string raw = crypto::from_hex(hex_value).value_or("");
  EXPECT_LT(i, raw.size());
  if (i < raw.size()) raw[i] = static_cast<char>(raw[i] ^ 0x10);
  return hex(raw);
}

// `raw` with one bit of byte `i` flipped.
std::string flip_raw_bit(std::string raw, std::size_t i) {
  raw[i] = static_cast<char>(raw[i] ^ 0x10);
  return raw;
}

// securesystemslib's vectors (key_vectors.hpp), by name.
std::map<std::string, json> sslib_vectors() {
  std::map<std::string, json> out;
  for (const json& v : json::parse(test::kSslibKeyVectors)) out[v["name"]] = v;
  EXPECT_EQ(out.size(), 6u);
  return out;
}

// True when `k` verifies vector `v`'s signature of its message.
bool verifies(const Key& k, const json& v) {
  return k.verify(v["message"].get<std::string>(), v["sig"].get<std::string>());
}

Key vector_key(const json& v) {
  auto k = Key::from_json(v["key"], "vector");
  EXPECT_TRUE(k.has_value()) << v["name"];
  return k.value_or(Key{});
}

TEST(KeyInteropTest, SecuresystemslibSignaturesVerify) {
  for (const auto& [name, v] : sslib_vectors()) {
    SCOPED_TRACE(name + " (" + v["note"].get<std::string>() + ")");
    const Key k = vector_key(v);
    const std::string message = v["message"];
    const std::string sig = v["sig"];
    // Our key id is securesystemslib's.
    if (!v["keyid"].get<std::string>().empty()) {
      EXPECT_EQ(k.keyid(), v["keyid"]);
    }
    ASSERT_TRUE(k.scheme_id().has_value());
    EXPECT_TRUE(k.verify(message, sig));
    std::string upper_sig = sig;
    for (char& c : upper_sig) c = static_cast<char>(std::toupper(c));
    EXPECT_TRUE(k.verify(message, upper_sig));
    // One flipped bit anywhere fails.
    const std::size_t size = sig.size() / 2;
    for (std::size_t i : {std::size_t{0}, std::size_t{5}, size / 2, size - 1}) {
      EXPECT_FALSE(k.verify(message, flip_bit(sig, i))) << "signature byte " << i;
    }
    for (std::size_t i : {std::size_t{0}, message.size() - 1}) {
      EXPECT_FALSE(k.verify(flip_raw_bit(message, i), sig)) << "message byte " << i;
    }
    EXPECT_FALSE(k.verify(message + " ", sig));
  }
}

TEST(KeyInteropTest, SecuresystemslibSignaturesFailUnderAnotherScheme) {
  auto vectors = sslib_vectors();
  for (const char* name : {"rsassa-pss-sha256", "rsa-pkcs1v15-sha256", "ecdsa", "ed25519"}) {
    SCOPED_TRACE(name);
    const json& v = vectors.at(name);
    Key k = vector_key(v);
    ASSERT_TRUE(verifies(k, v));
    for (const char* scheme :
         {"rsassa-pss-sha256", "rsa-pkcs1v15-sha256", "ecdsa-sha2-nistp256", "ed25519"}) {
      if (k.scheme == scheme) continue;
      Key other = k;
      other.scheme = scheme;
      EXPECT_FALSE(verifies(other, v)) << scheme;
    }
  }
}

TEST(KeyInteropTest, FromPublicWritesWhatSecuresystemslibWrites) {
  auto vectors = sslib_vectors();
  for (const char* name : {"ed25519", "ecdsa", "rsassa-pss-sha256", "rsa-pkcs1v15-sha256"}) {
    SCOPED_TRACE(name);
    const json& v = vectors.at(name);
    auto pub = vector_key(v).public_key();
    ASSERT_TRUE(pub.has_value()) << pub.error().message;
    // The same JSON, byte for byte (PEM layout included), hence the same key id.
    const Key written = Key::from_public(*pub, *vector_key(v).scheme_id());
    EXPECT_EQ(written.to_json(), v["key"]);
    EXPECT_EQ(written.keyid(), v["keyid"]);
  }
  // The default scheme of each type is securesystemslib's.
  for (const char* name : {"ed25519", "ecdsa", "rsassa-pss-sha256"}) {
    const json& v = vectors.at(name);
    EXPECT_EQ(Key::from_public(vector_key(v).public_key().value()).to_json(), v["key"]) << name;
  }
}

TEST(KeyInteropTest, SigstoreHexFormIsTheSameKey) {
  auto vectors = sslib_vectors();
  const Key pem_form = vector_key(vectors.at("ecdsa"));
  const Key hex_form = vector_key(vectors.at("ecdsa-hex"));
  ASSERT_EQ(hex_form.keytype, "ecdsa-sha2-nistp256");
  ASSERT_EQ(hex_form.public_hex.substr(0, 2), "04");
  EXPECT_TRUE(verifies(hex_form, vectors.at("ecdsa-hex")));
  // A securesystemslib signature verifies under the hex form, and the other way.
  EXPECT_TRUE(verifies(hex_form, vectors.at("ecdsa")));
  EXPECT_TRUE(verifies(pem_form, vectors.at("ecdsa-hex")));
  EXPECT_EQ(hex_form.public_key().value().raw, pem_form.public_key().value().raw);
  EXPECT_EQ(hex_form.identity(), pem_form.identity());
  EXPECT_NE(hex_form.keyid(), pem_form.keyid());
}

TEST(KeyTypesTest, GeneratedKeysOfEveryTypeVerify) {
  struct Case {
    crypto::KeyType type;
    crypto::Scheme scheme;
    const char* keytype;
    const char* scheme_name;
  };
  for (const Case& c :
       {Case{crypto::KeyType::ed25519, crypto::Scheme::ed25519, "ed25519", "ed25519"},
        Case{crypto::KeyType::ecdsa_p256, crypto::Scheme::ecdsa_sha2_nistp256, "ecdsa",
             "ecdsa-sha2-nistp256"},
        Case{crypto::KeyType::rsa, crypto::Scheme::rsassa_pss_sha256, "rsa", "rsassa-pss-sha256"},
        Case{crypto::KeyType::rsa, crypto::Scheme::rsa_pkcs1v15_sha256, "rsa",
             "rsa-pkcs1v15-sha256"}}) {
    SCOPED_TRACE(c.scheme_name);
    auto priv = crypto::PrivateKey::generate(c.type);
    ASSERT_TRUE(priv.has_value()) << priv.error().message;
    const Key k = Key::from_public(priv->public_key(), c.scheme);
    EXPECT_EQ(k.keytype, c.keytype);
    EXPECT_EQ(k.scheme, c.scheme_name);
    EXPECT_EQ(k.public_hex.starts_with("-----BEGIN PUBLIC KEY-----\n"),
              c.type != crypto::KeyType::ed25519);
    EXPECT_EQ(k.scheme_id(), c.scheme);
    const std::string sig = hex(priv->sign("message", c.scheme).value_or(""));
    EXPECT_TRUE(k.verify("message", sig));
    EXPECT_FALSE(k.verify("messagE", sig));
    EXPECT_FALSE(k.verify("message", flip_bit(sig, 7)));
    // Through JSON and back.
    auto back = Key::from_json(json::parse(k.to_json().dump()), "keys.x");
    ASSERT_TRUE(back.has_value());
    EXPECT_TRUE(back->verify("message", sig));
    EXPECT_EQ(back->keyid(), k.keyid());
  }
}

// PEM text re-wrapped at `width` columns, with `eol` line ends.
std::string rewrap_pem(const std::string& pem, std::size_t width, const std::string& eol) {
  const std::string begin = "-----BEGIN PUBLIC KEY-----\n";
  const std::string end = "-----END PUBLIC KEY-----\n";
  std::string body = pem.substr(begin.size(), pem.size() - begin.size() - end.size());
  std::erase(body, '\n');
  std::string out = "-----BEGIN PUBLIC KEY-----" + eol;
  for (std::size_t i = 0; i < body.size(); i += width) out += body.substr(i, width) + eol;
  return out + "-----END PUBLIC KEY-----" + eol;
}

TEST(KeyTypesTest, IdentityIgnoresHowTheKeyIsWritten) {
  auto priv = crypto::PrivateKey::generate(crypto::KeyType::ecdsa_p256);
  ASSERT_TRUE(priv.has_value());
  const crypto::PublicKey pub = priv->public_key();
  const std::string sig = hex(priv->sign("m").value_or(""));
  const Key pem = Key::from_public(pub);
  const std::string point_hex = pub.hex().substr(pub.hex().size() - 130);  // 04||X||Y
  ASSERT_EQ(point_hex.substr(0, 2), "04");
  const Key forms[] = {
      Key{"ecdsa", "ecdsa-sha2-nistp256", rewrap_pem(pem.public_hex, 40, "\n"), json::object()},
      Key{"ecdsa", "ecdsa-sha2-nistp256", rewrap_pem(pem.public_hex, 64, "\r\n"), json::object()},
      Key{"ecdsa", "ecdsa-sha2-nistp256", pub.hex(), json::object()},  // hex DER SPKI
      Key{"ecdsa", "ecdsa-sha2-nistp256", point_hex, json::object()},
      Key{"ecdsa-sha2-nistp256", "ecdsa-sha2-nistp256", point_hex, json::object()},
      Key{"ecdsa-sha2-nistp256", "ecdsa-sha2-nistp256", pem.public_hex, json::object()},
  };
  for (const Key& k : forms) {
    EXPECT_TRUE(k.verify("m", sig)) << k.public_hex;
    EXPECT_EQ(k.identity(), pem.identity()) << k.public_hex;
    EXPECT_NE(k.keyid(), pem.keyid()) << k.public_hex;
  }
  // One RSA key under its two schemes is one key.
  auto rsa = crypto::PrivateKey::generate(crypto::KeyType::rsa);
  ASSERT_TRUE(rsa.has_value());
  const Key pss = Key::from_public(rsa->public_key());
  const Key v15 = Key::from_public(rsa->public_key(), crypto::Scheme::rsa_pkcs1v15_sha256);
  EXPECT_EQ(pss.identity(), v15.identity());
  EXPECT_NE(pss.keyid(), v15.keyid());
  // Different keys differ; an unparseable key is its text.
  auto other = crypto::PrivateKey::generate(crypto::KeyType::ecdsa_p256);
  ASSERT_TRUE(other.has_value());
  EXPECT_NE(Key::from_public(other->public_key()).identity(), pem.identity());
  EXPECT_NE(pss.identity(), pem.identity());
  Key broken = pem;
  broken.public_hex.insert(30, "!");
  EXPECT_NE(broken.identity(), pem.identity());
  Key broken_twin = broken;
  broken_twin.unrecognized["x"] = 1;
  EXPECT_EQ(broken_twin.identity(), broken.identity());
}

TEST(KeyTypesTest, UnsupportedPairsNeverVerify) {
  auto priv = crypto::PrivateKey::generate(crypto::KeyType::ecdsa_p256);
  ASSERT_TRUE(priv.has_value());
  const Key good = Key::from_public(priv->public_key());
  const std::string sig = hex(priv->sign("m").value_or(""));
  ASSERT_TRUE(good.verify("m", sig));
  const std::pair<const char*, const char*> pairs[] = {
      {"ecdsa", "ecdsa-sha2-nistp384"}, {"ecdsa-sha2-nistp384", "ecdsa-sha2-nistp256"},
      {"rsa", "ecdsa-sha2-nistp256"},   {"ECDSA", "ecdsa-sha2-nistp256"},
      {"ecdsa", "ECDSA-SHA2-NISTP256"}, {"ed25519", "ecdsa-sha2-nistp256"},
      {"ecdsa", "rsassa-pss-sha256"},   {"sphincs", "sphincs-shake-128s"}};
  for (const auto& [keytype, scheme] : pairs) {
    Key k = good;
    k.keytype = keytype;
    k.scheme = scheme;
    EXPECT_EQ(k.scheme_id(), std::nullopt) << keytype << "/" << scheme;
    EXPECT_FALSE(k.verify("m", sig)) << keytype << "/" << scheme;
    auto pub = k.public_key();
    ASSERT_FALSE(pub.has_value());
    EXPECT_EQ(pub.error().code, Errc::unsupported);
  }
}

TEST(KeyTypesTest, PublicKeyErrorsAreTyped) {
  auto rsa = crypto::PrivateKey::generate(crypto::KeyType::rsa);
  ASSERT_TRUE(rsa.has_value());
  // An RSA PEM under an ECDSA keytype, or a broken PEM: malformed.
  Key mislabelled = Key::from_public(rsa->public_key());
  mislabelled.keytype = "ecdsa";
  mislabelled.scheme = "ecdsa-sha2-nistp256";
  ASSERT_FALSE(mislabelled.public_key().has_value());
  EXPECT_EQ(mislabelled.public_key().error().code, Errc::malformed);
  Key broken = Key::from_public(rsa->public_key());
  broken.public_hex.resize(100);
  ASSERT_FALSE(broken.public_key().has_value());
  EXPECT_EQ(broken.public_key().error().code, Errc::malformed);
  EXPECT_FALSE(broken.verify("m", hex(rsa->sign("m").value_or(""))));
  // A 1024-bit RSA key: unsupported, and never verifies.
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> small(EVP_RSA_gen(1024), EVP_PKEY_free);
  ASSERT_TRUE(small);
  unsigned char* der = nullptr;
  const int len = i2d_PUBKEY(small.get(), &der);
  ASSERT_GT(len, 0);
  const Key weak{"rsa", "rsassa-pss-sha256",
                 hex(std::string_view(reinterpret_cast<char*>(der), static_cast<std::size_t>(len))),
                 json::object()};
  OPENSSL_free(der);
  ASSERT_FALSE(weak.public_key().has_value());
  EXPECT_EQ(weak.public_key().error().code, Errc::unsupported);
}

}  // namespace
}  // namespace catalog::tuf
