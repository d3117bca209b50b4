// Duplicates in TUF metadata (issue 17 item 7), each an attack on a threshold
// or on what a document means:
//   - one key listed under two key ids counts once toward a threshold;
//   - a `signatures` array naming one key id twice refuses the whole file;
//   - a JSON object with a key twice, at any depth, refuses the whole file
//     (client: TrustedSet; publisher: Repository::load).
#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "catalog/canonical_json.hpp"
#include "catalog/crypto/hash.hpp"
#include "catalog/tuf/metadata.hpp"
#include "catalog/tuf/repository.hpp"
#include "catalog/tuf/trusted_set.hpp"
#include "tests/support/temp_dir.hpp"

namespace catalog::tuf {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

const TimePoint kNow{std::chrono::sys_days{std::chrono::year{2030} / 1 / 1}};
const TimePoint kSoon = kNow + 1h;

#define EXPECT_REFUSED(expr, errc, text)                                                          \
  do {                                                                                            \
    const auto& r_ = (expr);                                                                      \
    ASSERT_FALSE(r_.has_value()) << #expr << " was accepted";                                     \
    EXPECT_EQ(r_.error().code, errc) << errc_name(r_.error().code) << ": " << r_.error().message; \
    EXPECT_THAT(r_.error().message, HasSubstr(text));                                             \
  } while (0)

#define ASSERT_OK(expr)                                                 \
  do {                                                                  \
    const auto& r_ = (expr);                                            \
    ASSERT_TRUE(r_.has_value()) << #expr << ": " << r_.error().message; \
  } while (0)

std::string hex(std::string_view raw) {
  return crypto::to_hex(std::span<const unsigned char>(
      reinterpret_cast<const unsigned char*>(raw.data()), raw.size()));
}

std::string upper(std::string s) {
  for (char& c : s) {
    if (c >= 'a' && c <= 'f') c = static_cast<char>(c - 'a' + 'A');
  }
  return s;
}

// `text` with `insertion` put right after the first occurrence of `after`.
std::string insert_after(std::string text, std::string_view after, std::string_view insertion) {
  const std::size_t at = text.find(after);
  EXPECT_NE(at, std::string::npos) << after;
  if (at == std::string::npos) return text;
  text.insert(at + after.size(), insertion);
  return text;
}

class TufDuplicatesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto r = Repository::create(kNow);
    ASSERT_OK(r);
    repo_.emplace(std::move(*r));
    // Publishing sets the expiries (nothing is kept of what it writes).
    ASSERT_OK(repo_->publish(
        [](const std::string&, const std::string&) -> Result<void> { return {}; }, kNow));
    root_id_ = repo_->root.roles.at("root").keyids.at(0);
  }

  std::string sign(const std::string& role) const {
    auto b = repo_->sign_role(role);
    EXPECT_TRUE(b.has_value()) << role << ": " << b.error().message;
    return b.value_or("");
  }

  // The signature `keyid`'s private key makes over `bytes`' signed object.
  json signature(const std::string& bytes, const std::string& keyid,
                 const std::string& as_keyid) const {
    auto doc = parse_json(bytes);
    EXPECT_TRUE(doc.has_value());
    const std::string canon = canonical_json(doc.value_or(json())["signed"]).value_or("");
    auto sig = repo_->signing_keys().at(keyid).sign(canon);
    EXPECT_TRUE(sig.has_value());
    return {{"keyid", as_keyid}, {"sig", hex(sig.value_or(""))}};
  }

  // `bytes` with its signatures replaced by `sigs`.
  static std::string with_signatures(const std::string& bytes, const json& sigs) {
    json doc = parse_json(bytes).value_or(json::object());
    doc["signatures"] = sigs;
    return doc.dump(1);
  }

  // Lists the root key a second time, as `alias_id` -> `alias`, and makes the
  // root role {root key, alias} with threshold 2. Returns the signed root with
  // the root key's signature under both ids.
  std::string root_with_alias(const std::string& alias_id, const Key& alias) {
    repo_->root.keys[alias_id] = alias;
    Role& role = repo_->root.roles.at("root");
    role.keyids = {root_id_, alias_id};
    role.threshold = 2;
    const std::string bytes = sign("root");
    return with_signatures(bytes, json::array({signature(bytes, root_id_, root_id_),
                                               signature(bytes, root_id_, alias_id)}));
  }

  const Key& root_key() const { return repo_->root.keys.at(root_id_); }

  std::optional<Repository> repo_;
  std::string root_id_;
};

// ---- one key under two key ids ---------------------------------------------

TEST_F(TufDuplicatesTest, KeyUnderASecondKeyIdMadeByAnExtraFieldCountsOnce) {
  // An unrecognised field gives the same key a second, honest-looking key id
  // (the SHA-256 of its canonical JSON).
  Key alias = root_key();
  alias.unrecognized["x-alias"] = "second listing";
  ASSERT_NE(alias.keyid(), root_id_);
  EXPECT_EQ(alias.identity(), root_key().identity());
  EXPECT_REFUSED(TrustedSet::create(root_with_alias(alias.keyid(), alias), kSoon),
                 Errc::bad_signature, "root: 1 of 2 required signatures are valid");
}

TEST_F(TufDuplicatesTest, KeyUnderAnArbitraryKeyIdWithUpperCaseHexCountsOnce) {
  // Key ids are names (nothing makes them the key's hash), and hex decodes
  // either case: "AB.." is the same Ed25519 key as "ab..".
  Key alias = root_key();
  alias.public_hex = upper(alias.public_hex);
  ASSERT_NE(alias.public_hex, root_key().public_hex);
  const std::string alias_id(64, 'a');
  EXPECT_REFUSED(TrustedSet::create(root_with_alias(alias_id, alias), kSoon), Errc::bad_signature,
                 "root: 1 of 2 required signatures are valid");
}

TEST_F(TufDuplicatesTest, TwoDistinctKeysStillMeetThresholdTwo) {
  // Control: the same document shape with a second key of its own is accepted.
  auto second = crypto::PrivateKey::generate();
  ASSERT_OK(second);
  const Key key_b = Key::from_public(second->public_key());
  const std::string id_b = key_b.keyid();
  repo_->add_signing_key(std::move(*second));
  repo_->root.keys[id_b] = key_b;
  Role& role = repo_->root.roles.at("root");
  role.keyids = {root_id_, id_b};
  role.threshold = 2;
  ASSERT_OK(TrustedSet::create(sign("root"), kSoon));
}

TEST_F(TufDuplicatesTest, DelegatedRoleListingOneKeyTwiceCountsItOnce) {
  // The same rule where a targets role delegates (its own `keys`).
  auto key = crypto::PrivateKey::generate();
  ASSERT_OK(key);
  const Key pub = Key::from_public(key->public_key());
  Key alias = pub;
  alias.unrecognized["x-alias"] = true;
  Targets t;
  t.expires = kNow + 24h;
  DelegatedRole d;
  d.name = "vendor";
  d.keyids = {pub.keyid(), alias.keyid()};
  d.threshold = 2;
  d.paths = std::vector<std::string>{"vendor/*"};
  t.delegations = Delegations{{{pub.keyid(), pub}, {alias.keyid(), alias}}, {d}};
  // Through the parser, as a client receives it.
  auto md =
      parse_metadata<Targets>(json{{"signatures", json::array()}, {"signed", to_json(t)}}.dump());
  ASSERT_OK(md);
  const Delegations& got = *md->signed_.delegations;
  const std::string message = R"({"_type":"targets"})";
  auto raw = key->sign(message);
  ASSERT_OK(raw);
  const std::vector<Signature> sigs = {{pub.keyid(), hex(*raw)}, {alias.keyid(), hex(*raw)}};
  EXPECT_REFUSED(verify_threshold("vendor", got.roles.at(0), got.keys, message, sigs),
                 Errc::bad_signature, "vendor: 1 of 2 required signatures are valid");
}

// ---- one key id twice in `signatures` --------------------------------------

TEST_F(TufDuplicatesTest, SignaturesNamingOneKeyIdTwiceAreRefused) {
  const std::string root = sign("root");
  ASSERT_OK(TrustedSet::create(root, kSoon));
  const json good = signature(root, root_id_, root_id_);
  EXPECT_REFUSED(TrustedSet::create(with_signatures(root, json::array({good, good})), kSoon),
                 Errc::bad_field, "signatures[1].keyid: duplicate keyid '" + root_id_ + "'");
  // A bad one beside the good one: still refused (not "one of them counts").
  json bad = good;
  bad["sig"] = std::string(128, '0');
  EXPECT_REFUSED(TrustedSet::create(with_signatures(root, json::array({bad, good})), kSoon),
                 Errc::bad_field, "duplicate keyid");
  json other = bad;
  other["keyid"] = std::string(64, 'f');
  EXPECT_REFUSED(parse_metadata<Root>(with_signatures(root, json::array({good, other, good}))),
                 Errc::bad_field, "signatures[2].keyid: duplicate keyid");
}

TEST_F(TufDuplicatesTest, ADuplicatedSignatureDoesNotMeetThresholdTwo) {
  auto second = crypto::PrivateKey::generate();
  ASSERT_OK(second);
  const Key key_b = Key::from_public(second->public_key());
  repo_->root.keys[key_b.keyid()] = key_b;
  Role& role = repo_->root.roles.at("root");
  role.keyids = {root_id_, key_b.keyid()};
  role.threshold = 2;
  const std::string root = sign("root");  // only the root key can sign
  const json good = signature(root, root_id_, root_id_);
  EXPECT_REFUSED(TrustedSet::create(with_signatures(root, json::array({good, good})), kSoon),
                 Errc::bad_field, "duplicate keyid");
}

// ---- duplicate JSON object keys ---------------------------------------------

TEST(ParseJsonDuplicateKeyTest, RefusedAtAnyDepthNamingTheKey) {
  for (const std::string_view text :
       {R"({"a": 1, "a": 1})", R"({"x": {"y": [{"z": 1, "z": 2}]}})", R"([{"k": {}, "k": {}}])",
        R"({"a": {"b": 1}, "c": {"b": 2, "d": 3, "b": 2}})"}) {
    auto r = parse_json(text);
    ASSERT_FALSE(r.has_value()) << text;
    EXPECT_EQ(r.error().code, Errc::malformed) << text;
    EXPECT_THAT(r.error().message, HasSubstr("duplicate key")) << text;
  }
  EXPECT_THAT(parse_json(R"({"x": {"zz": 1, "zz": 2}})", "my file").error().message,
              HasSubstr(R"(my file JSON has a duplicate key "zz")"));
  // The same key in sibling or nested objects is not a duplicate.
  ASSERT_OK(parse_json(R"({"a": {"a": 1}, "b": {"a": 2}, "c": [{"a": 3}, {"a": 4}]})"));
}

TEST_F(TufDuplicatesTest, DuplicateVersionThatWouldChangeTheMeaningIsRefused) {
  // Signed as version 2; a reader that takes the first "version" sees 1.
  repo_->root.version = 2;
  const std::string root = sign("root");
  auto honest = TrustedSet::create(root, kSoon);
  ASSERT_OK(honest);
  EXPECT_EQ(honest->root().signed_.version, 2u);
  const std::string ambiguous = insert_after(root, R"("signed": {)", R"("version": 1,)");
  EXPECT_REFUSED(TrustedSet::create(ambiguous, kSoon), Errc::malformed,
                 R"(root metadata JSON has a duplicate key "version")");
}

TEST_F(TufDuplicatesTest, DuplicateKeysAnywhereInMetadataAreRefused) {
  const std::string root = sign("root");
  const std::string key_entry = repo_->root.keys.at(root_id_).to_json().dump();
  const std::string sigs = parse_json(root)->at("signatures").dump();
  struct Case {
    std::string bytes;
    std::string key;
  };
  const Case cases[] = {
      // Two "signed" objects: the signatures cover one, the reader may use the other.
      {insert_after(root, "{", R"("signed": {"_type": "root"},)"), "signed"},
      {insert_after(root, "{", R"("signatures": )" + sigs + ","), "signatures"},
      // One key id twice in "keys": which key is it?
      {insert_after(root, R"("keys": {)", "\"" + root_id_ + "\": " + key_entry + ","), root_id_},
      {insert_after(root, R"("keyval": {)", R"("public": "00",)"), "public"},
      {insert_after(root, R"("root": {)", R"("threshold": 0,)"), "threshold"},
      {insert_after(root, R"("signatures": [)", "\n  {\"keyid\": \"a\", \"keyid\": \"b\"},"),
       "keyid"},
  };
  for (const Case& c : cases) {
    EXPECT_REFUSED(parse_metadata<Root>(c.bytes), Errc::malformed,
                   "root metadata JSON has a duplicate key \"" + c.key + "\"");
    EXPECT_REFUSED(TrustedSet::create(c.bytes, kSoon), Errc::malformed, "duplicate key");
  }
}

TEST_F(TufDuplicatesTest, TrustedSetRefusesDuplicateKeysInEveryRole) {
  const std::string root = sign("root");
  auto ts = TrustedSet::create(root, kSoon);
  ASSERT_OK(ts);
  repo_->root.version = 2;
  EXPECT_REFUSED(ts->update_root(insert_after(sign("root"), R"("signed": {)", R"("version": 3,)")),
                 Errc::malformed, "root metadata JSON has a duplicate key \"version\"");
  const std::string timestamp = sign("timestamp");
  EXPECT_REFUSED(ts->update_timestamp(insert_after(timestamp, R"("meta": {)",
                                                   R"("snapshot.json": {"version": 1},)")),
                 Errc::malformed, "timestamp metadata JSON has a duplicate key \"snapshot.json\"");
  // The honest bytes still go through after the refusals.
  ASSERT_OK(ts->update_timestamp(timestamp));
}

TEST(RepositoryLoadDuplicateKeyTest, PublisherRefusesAmbiguousMetadataOnDisk) {
  tests::support::TempDir dir;
  auto repo = Repository::create(kNow);
  ASSERT_OK(repo);
  ASSERT_OK(repo->publish(directory_writer(dir.path()), kNow));
  ASSERT_OK(Repository::load(dir.path()));
  const auto ts_path = dir / "metadata/timestamp.json";
  const std::string ts = tests::support::read_file(ts_path);
  tests::support::write_file(ts_path, insert_after(ts, R"("signed": {)", R"("version": 99,)"));
  EXPECT_REFUSED(Repository::load(dir.path()), Errc::malformed,
                 "timestamp metadata JSON has a duplicate key \"version\"");
}

}  // namespace
}  // namespace catalog::tuf
