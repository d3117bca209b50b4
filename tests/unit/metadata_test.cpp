// The TUF metadata model: parsing rules of each role, round trips, delegated
// path matching, signature thresholds and length/hash checks.
#include "catalog/tuf/metadata.hpp"

#include <cctype>
#include <chrono>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "catalog/canonical_json.hpp"
#include "catalog/crypto/hash.hpp"
#include "catalog/crypto/signing_key.hpp"

namespace catalog::tuf {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

constexpr const char* kExpires = "2030-01-01T00:00:00Z";
constexpr const char* kPubA = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
constexpr const char* kPubB = "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c";
constexpr const char* kSha256 = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

json key_json(const char* pub) {
  return {{"keytype", "ed25519"}, {"scheme", "ed25519"}, {"keyval", {{"public", pub}}}};
}

std::string id_of(const char* pub) {
  auto k = Key::from_json(key_json(pub), "k");
  EXPECT_TRUE(k.has_value());
  return k ? k->keyid() : "";
}

json role(std::vector<std::string> keyids, int threshold = 1) {
  return {{"keyids", keyids}, {"threshold", threshold}};
}

json common(const char* type) {
  return {{"_type", type}, {"spec_version", "1.0.31"}, {"version", 1}, {"expires", kExpires}};
}

json root_json() {
  json j = common("root");
  const std::string a = id_of(kPubA);
  const std::string b = id_of(kPubB);
  j["consistent_snapshot"] = true;
  j["keys"] = {{a, key_json(kPubA)}, {b, key_json(kPubB)}};
  j["roles"] = {{"root", role({a, b}, 2)},
                {"timestamp", role({a})},
                {"snapshot", role({b})},
                {"targets", role({a})}};
  return j;
}

json timestamp_json() {
  json j = common("timestamp");
  j["version"] = 7;
  j["meta"] = {
      {"snapshot.json", {{"version", 3}, {"length", 512}, {"hashes", {{"sha256", kSha256}}}}}};
  return j;
}

json snapshot_json() {
  json j = common("snapshot");
  j["version"] = 3;
  j["meta"] = {
      {"targets.json", {{"version", 2}}},
      {"pkgs.json",
       {{"version", 1}, {"length", 10}, {"hashes", {{"sha256", kSha256}, {"sha512", "ab"}}}}}};
  return j;
}

json targets_json() {
  json j = common("targets");
  j["version"] = 2;
  j["targets"] = {
      {"pkg/a.tar.zst",
       {{"length", 13}, {"hashes", {{"sha256", kSha256}}}, {"custom", {{"ep", {{"name", "x"}}}}}}},
      {"b", {{"length", 0}, {"hashes", {{"sha512", "00"}}}}}};
  j["delegations"] = {{"keys", {{id_of(kPubB), key_json(kPubB)}}},
                      {"roles",
                       {{{"name", "pkgs"},
                         {"keyids", {id_of(kPubB)}},
                         {"threshold", 1},
                         {"terminating", false},
                         {"paths", {"pkg/*", "*.tar.zst"}}},
                        {{"name", "bins"},
                         {"keyids", {id_of(kPubB)}},
                         {"threshold", 1},
                         {"terminating", true},
                         {"path_hash_prefixes", {"00", "8f"}}}}}};
  return j;
}

std::string envelope(const json& signed_json, const json& signatures = json::array()) {
  return json{{"signatures", signatures}, {"signed", signed_json}}.dump(1);
}

template <typename T>
Result<Metadata<T>> parse(const json& signed_json) {
  return parse_metadata<T>(envelope(signed_json));
}

template <typename T>
void expect_rejected(const json& signed_json, Errc code, std::string_view message) {
  auto md = parse<T>(signed_json);
  ASSERT_FALSE(md.has_value()) << "accepted: " << signed_json.dump();
  EXPECT_EQ(md.error().code, code) << errc_name(md.error().code) << ": " << md.error().message;
  EXPECT_THAT(md.error().message, HasSubstr(std::string(message)));
}

template <typename T>
void expect_round_trip(const json& signed_json) {
  auto md = parse<T>(signed_json);
  ASSERT_TRUE(md.has_value()) << md.error().message;
  EXPECT_EQ(md->canonical_signed, canonical_json(signed_json).value_or("x"));
  auto again = canonical_json(to_json(md->signed_));
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(*again, md->canonical_signed);
  // And once more through the parser.
  auto md2 = parse<T>(to_json(md->signed_));
  ASSERT_TRUE(md2.has_value()) << md2.error().message;
  EXPECT_EQ(md2->canonical_signed, md->canonical_signed);
}

// ---- valid documents --------------------------------------------------------

TEST(MetadataParseTest, Root) {
  json j = root_json();
  auto md = parse_metadata<Root>(envelope(
      j, json::array({{{"keyid", "abc"}, {"sig", "00ff"}}, {{"keyid", "d"}, {"sig", ""}}})));
  ASSERT_TRUE(md.has_value()) << md.error().message;
  const Root& r = md->signed_;
  EXPECT_EQ(r.spec_version, "1.0.31");
  EXPECT_EQ(r.version, 1u);
  EXPECT_EQ(r.expires, TimePoint{std::chrono::sys_days{std::chrono::year{2030} / 1 / 1}});
  EXPECT_TRUE(r.consistent_snapshot);
  ASSERT_EQ(r.keys.size(), 2u);
  EXPECT_EQ(r.keys.at(id_of(kPubA)).public_hex, kPubA);
  ASSERT_EQ(r.roles.size(), 4u);
  EXPECT_EQ(r.roles.at("root").threshold, 2u);
  EXPECT_EQ(r.roles.at("root").keyids, (std::vector<std::string>{id_of(kPubA), id_of(kPubB)}));
  EXPECT_EQ(r.roles.at("snapshot").keyids, (std::vector<std::string>{id_of(kPubB)}));
  ASSERT_EQ(md->signatures.size(), 2u);
  EXPECT_EQ(md->signatures[0].keyid, "abc");
  EXPECT_EQ(md->signatures[0].sig, "00ff");
  EXPECT_EQ(md->canonical_signed, canonical_json(j).value());

  // consistent_snapshot is optional and defaults to false.
  j.erase("consistent_snapshot");
  auto no_cs = parse<Root>(j);
  ASSERT_TRUE(no_cs.has_value()) << no_cs.error().message;
  EXPECT_FALSE(no_cs->signed_.consistent_snapshot);
}

TEST(MetadataParseTest, Timestamp) {
  auto md = parse<Timestamp>(timestamp_json());
  ASSERT_TRUE(md.has_value()) << md.error().message;
  EXPECT_EQ(md->signed_.version, 7u);
  EXPECT_EQ(md->signed_.snapshot_meta.version, 3u);
  EXPECT_EQ(md->signed_.snapshot_meta.length, std::optional<std::uint64_t>(512));
  EXPECT_EQ(md->signed_.snapshot_meta.hashes.at("sha256"), kSha256);

  // length and hashes are optional.
  json j = timestamp_json();
  j["meta"]["snapshot.json"] = {{"version", 4}};
  auto bare = parse<Timestamp>(j);
  ASSERT_TRUE(bare.has_value()) << bare.error().message;
  EXPECT_FALSE(bare->signed_.snapshot_meta.length.has_value());
  EXPECT_TRUE(bare->signed_.snapshot_meta.hashes.empty());
}

TEST(MetadataParseTest, Snapshot) {
  auto md = parse<Snapshot>(snapshot_json());
  ASSERT_TRUE(md.has_value()) << md.error().message;
  ASSERT_EQ(md->signed_.meta.size(), 2u);
  EXPECT_EQ(md->signed_.meta.at("targets.json").version, 2u);
  EXPECT_EQ(md->signed_.meta.at("pkgs.json").length, std::optional<std::uint64_t>(10));
  EXPECT_EQ(md->signed_.meta.at("pkgs.json").hashes.size(), 2u);
}

TEST(MetadataParseTest, TargetsWithDelegations) {
  auto md = parse<Targets>(targets_json());
  ASSERT_TRUE(md.has_value()) << md.error().message;
  const Targets& t = md->signed_;
  ASSERT_EQ(t.targets.size(), 2u);
  const TargetFile& a = t.targets.at("pkg/a.tar.zst");
  EXPECT_EQ(a.path, "pkg/a.tar.zst");
  EXPECT_EQ(a.length, 13u);
  EXPECT_EQ(a.hashes.at("sha256"), kSha256);
  EXPECT_EQ(a.custom["ep"]["name"], "x");
  EXPECT_TRUE(t.targets.at("b").custom.is_null());
  ASSERT_TRUE(t.delegations.has_value());
  EXPECT_EQ(t.delegations->keys.size(), 1u);
  ASSERT_EQ(t.delegations->roles.size(), 2u);
  const DelegatedRole& pkgs = t.delegations->roles[0];
  EXPECT_EQ(pkgs.name, "pkgs");  // order kept: it is the priority order
  EXPECT_FALSE(pkgs.terminating);
  ASSERT_TRUE(pkgs.paths.has_value());
  EXPECT_EQ(*pkgs.paths, (std::vector<std::string>{"pkg/*", "*.tar.zst"}));
  EXPECT_FALSE(pkgs.path_hash_prefixes.has_value());
  const DelegatedRole& bins = t.delegations->roles[1];
  EXPECT_EQ(bins.name, "bins");
  EXPECT_TRUE(bins.terminating);
  EXPECT_FALSE(bins.paths.has_value());
  ASSERT_TRUE(bins.path_hash_prefixes.has_value());
  EXPECT_EQ(*bins.path_hash_prefixes, (std::vector<std::string>{"00", "8f"}));

  // Without delegations, and with no targets at all.
  json j = targets_json();
  j.erase("delegations");
  j["targets"] = json::object();
  auto plain = parse<Targets>(j);
  ASSERT_TRUE(plain.has_value()) << plain.error().message;
  EXPECT_FALSE(plain->signed_.delegations.has_value());
  EXPECT_TRUE(plain->signed_.targets.empty());
}

TEST(MetadataParseTest, RoundTripsEveryRole) {
  {
    SCOPED_TRACE("root");
    expect_round_trip<Root>(root_json());
  }
  {
    SCOPED_TRACE("timestamp");
    expect_round_trip<Timestamp>(timestamp_json());
  }
  {
    SCOPED_TRACE("snapshot");
    expect_round_trip<Snapshot>(snapshot_json());
  }
  {
    SCOPED_TRACE("targets");
    expect_round_trip<Targets>(targets_json());
  }
}

TEST(MetadataParseTest, KeepsUnrecognizedFields) {
  const json extra = {{"nested", {1, "two", nullptr, {{"z", true}}}}};
  auto check = [&](json j, auto tag) {
    using T = decltype(tag);
    j["x-extension"] = extra;
    j["_zz"] = "last";
    auto md = parse<T>(j);
    ASSERT_TRUE(md.has_value()) << md.error().message;
    EXPECT_EQ(md->signed_.unrecognized, (json{{"x-extension", extra}, {"_zz", "last"}}));
    EXPECT_THAT(md->canonical_signed,
                HasSubstr(R"("x-extension":{"nested":[1,"two",null,{"z":true}]})"));
    EXPECT_EQ(md->canonical_signed, canonical_json(j).value_or(""));
    // Re-serialising keeps them, so the role can be re-signed without loss.
    EXPECT_EQ(canonical_json(to_json(md->signed_)).value_or(""), md->canonical_signed);
  };
  check(root_json(), Root{});
  check(timestamp_json(), Timestamp{});
  check(snapshot_json(), Snapshot{});
  check(targets_json(), Targets{});
}

TEST(MetadataParseTest, SignaturesCoverTheReceivedSignedObject) {
  // Fields the model does not know, nested anywhere, are part of the signed
  // bytes exactly as received.
  json j = targets_json();
  j["targets"]["b"]["x-note"] = "kept";
  j["delegations"]["roles"][0]["x-role"] = 1;
  auto md = parse<Targets>(j);
  ASSERT_TRUE(md.has_value()) << md.error().message;
  EXPECT_EQ(md->canonical_signed, canonical_json(j).value_or(""));
  EXPECT_THAT(md->canonical_signed, HasSubstr(R"("x-note":"kept")"));
  EXPECT_THAT(md->canonical_signed, HasSubstr(R"("x-role":1)"));
}

TEST(MetadataParseTest, KeysKeepUnrecognizedFields) {
  json j = root_json();
  j["keys"][id_of(kPubA)]["x-owner"] = "ops";
  auto md = parse<Root>(j);
  ASSERT_TRUE(md.has_value()) << md.error().message;
  EXPECT_EQ(md->signed_.keys.at(id_of(kPubA)).unrecognized, (json{{"x-owner", "ops"}}));
  EXPECT_EQ(canonical_json(to_json(md->signed_)).value_or(""), md->canonical_signed);
}

// ---- envelope ---------------------------------------------------------------

TEST(MetadataEnvelopeTest, RejectsBadEnvelopes) {
  struct Case {
    std::string bytes;
    Errc code;
    const char* message;
  };
  const json s = timestamp_json();
  const Case cases[] = {
      {"not json", Errc::malformed, ""},
      {"[]", Errc::malformed, "not a JSON object"},
      {json{{"signed", s}}.dump(), Errc::bad_field, "signatures: missing"},
      {json{{"signatures", json::object()}, {"signed", s}}.dump(), Errc::bad_field,
       "signatures: expected array"},
      {json{{"signatures", json::array()}}.dump(), Errc::bad_field, "signed: missing"},
      {json{{"signatures", json::array()}, {"signed", "x"}}.dump(), Errc::bad_field,
       "signed: expected object"},
      {envelope(s, json::array({{{"keyid", "a"}}})), Errc::bad_field, "signatures[0].sig: missing"},
      {envelope(s, json::array({{{"keyid", "a"}, {"sig", "00"}}, {{"keyid", 1}, {"sig", "00"}}})),
       Errc::bad_field, "signatures[1].keyid: expected string"},
      {envelope(s, json::array({"sig"})), Errc::bad_field, "signatures[0]: expected object"},
  };
  for (const Case& c : cases) {
    auto md = parse_metadata<Timestamp>(c.bytes);
    ASSERT_FALSE(md.has_value()) << c.bytes;
    EXPECT_EQ(md.error().code, c.code) << c.bytes << " -> " << md.error().message;
    EXPECT_THAT(md.error().message, HasSubstr(c.message)) << c.bytes;
  }
}

TEST(MetadataEnvelopeTest, FloatInSignedIsMalformed) {
  json j = timestamp_json();
  j["x-ratio"] = 0.5;
  expect_rejected<Timestamp>(j, Errc::malformed, "floating-point");
}

TEST(MetadataEnvelopeTest, DeepNestingIsMalformed) {
  // Would overflow the stack in the recursive walks over the parsed document.
  json j = timestamp_json();
  j["x-deep"] = "PLACEHOLDER";
  std::string bytes = envelope(j);
  const std::size_t at = bytes.find("\"PLACEHOLDER\"");
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, 13, std::string(100000, '[') + std::string(100000, ']'));
  auto md = parse_metadata<Timestamp>(bytes);
  ASSERT_FALSE(md.has_value());
  EXPECT_EQ(md.error().code, Errc::malformed);
}

// ---- rules common to every role --------------------------------------------

TEST(MetadataRulesTest, TypeMismatch) {
  expect_rejected<Root>(timestamp_json(), Errc::bad_field,
                        "signed._type: expected 'root', got 'timestamp'");
  expect_rejected<Timestamp>(root_json(), Errc::bad_field, "signed._type");
  expect_rejected<Snapshot>(targets_json(), Errc::bad_field, "signed._type");
  expect_rejected<Targets>(snapshot_json(), Errc::bad_field, "signed._type");
  json j = root_json();
  j["_type"] = "Root";
  expect_rejected<Root>(j, Errc::bad_field, "signed._type");
  j.erase("_type");
  expect_rejected<Root>(j, Errc::bad_field, "signed._type: missing");
}

TEST(MetadataRulesTest, SpecVersion) {
  json j = timestamp_json();
  for (const char* ok : {"1.0.0", "1.0.31", "1.99.0"}) {
    j["spec_version"] = ok;
    auto md = parse<Timestamp>(j);
    ASSERT_TRUE(md.has_value()) << ok << ": " << md.error().message;
    EXPECT_EQ(md->signed_.spec_version, ok);
  }
  for (const char* newer : {"2.0.0", "0.9.0", "10.0.0"}) {
    j["spec_version"] = newer;
    expect_rejected<Timestamp>(j, Errc::unsupported, "spec_version");
  }
  for (const char* bad :
       {"x", "", "1", "v1.0.0", ".1.0", "1.garbage", "1.0.", "1.0.0.0", "1..0", "1.0-rc1"}) {
    j["spec_version"] = bad;
    expect_rejected<Timestamp>(j, Errc::bad_field, "signed.spec_version");
  }
  j["spec_version"] = 1;
  expect_rejected<Timestamp>(j, Errc::bad_field, "signed.spec_version: expected string");
}

TEST(MetadataRulesTest, Version) {
  json j = snapshot_json();
  j["version"] = 0;
  expect_rejected<Snapshot>(j, Errc::bad_field, "signed.version: must be >= 1");
  j["version"] = -1;
  expect_rejected<Snapshot>(j, Errc::bad_field, "signed.version");
  j["version"] = "1";
  expect_rejected<Snapshot>(j, Errc::bad_field, "signed.version");
  j.erase("version");
  expect_rejected<Snapshot>(j, Errc::bad_field, "signed.version: missing");
  j["version"] = std::numeric_limits<std::uint64_t>::max();
  auto md = parse<Snapshot>(j);
  ASSERT_TRUE(md.has_value()) << md.error().message;
  EXPECT_EQ(md->signed_.version, std::numeric_limits<std::uint64_t>::max());
}

TEST(MetadataRulesTest, ExpiresFormats) {
  json j = targets_json();
  for (const char* bad : {"2030-13-01T00:00:00Z",
                          "2030-00-01T00:00:00Z",
                          "2030-02-30T00:00:00Z",
                          "2030-02-29T00:00:00Z",
                          "2030-04-31T00:00:00Z",
                          "2030-01-00T00:00:00Z",
                          "2030-01-01T00:00:00",
                          "2030-01-01t00:00:00Z",
                          "2030-01-01T00:00:00z",
                          "2030-01-01T00:00:00+0000",
                          "2030-01-01T00:00:00+24:00",
                          "2030-01-01T00:00:00+00:60",
                          "2030-01-01T00:00:00+00:00Z",
                          "2030-01-01T00:00:00.Z",
                          "2030-01-01T00:00:00.1234567890Z",
                          "2030-01-01T00:00:00.5",
                          "2030-01-01T00:00:00,5Z",
                          "2030-01-01 00:00:00Z",
                          "2030-1-01T00:00:00Z",
                          "2030-01-01T24:00:00Z",
                          "2030-01-01T00:60:00Z",
                          "2030-01-01T00:00:60Z",
                          "+030-01-01T00:00:00Z",
                          "2030-01-01T0-:00:00Z",
                          "",
                          "2030-01-01"}) {
    j["expires"] = bad;
    expect_rejected<Targets>(j, Errc::bad_field, "signed.expires");
    auto direct = parse_expires(bad);
    ASSERT_FALSE(direct.has_value()) << bad;
    EXPECT_EQ(direct.error().code, Errc::bad_field);
  }
  j["expires"] = 1893456000;
  expect_rejected<Targets>(j, Errc::bad_field, "signed.expires");
}

TEST(MetadataRulesTest, ParseAndFormatExpires) {
  using std::chrono::sys_days;
  using std::chrono::year;
  struct Case {
    const char* text;
    TimePoint t;
  };
  const Case cases[] = {
      {"1970-01-01T00:00:00Z", TimePoint{}},
      {"2030-01-01T00:00:00Z", TimePoint{sys_days{year{2030} / 1 / 1}}},
      {"2028-02-29T23:59:59Z", TimePoint{sys_days{year{2028} / 2 / 29}} + 23h + 59min + 59s},
      {"2000-02-29T12:34:56Z", TimePoint{sys_days{year{2000} / 2 / 29}} + 12h + 34min + 56s},
      {"9999-12-31T23:59:59Z", TimePoint{sys_days{year{9999} / 12 / 31}} + 23h + 59min + 59s},
      // Years before 1000 keep 4 digits (tests/fuzz/tuf_metadata found "507-..."),
      // so what format_expires() writes parses back; also before 1970.
      {"0507-04-01T00:00:00Z", TimePoint{sys_days{year{507} / 4 / 1}}},
      {"0000-01-01T00:00:00Z", TimePoint{sys_days{year{0} / 1 / 1}}},
      {"1969-12-31T23:59:59Z", TimePoint{} - 1s},
  };
  for (const Case& c : cases) {
    auto t = parse_expires(c.text);
    ASSERT_TRUE(t.has_value()) << c.text;
    EXPECT_EQ(*t, c.t) << c.text;
    EXPECT_EQ(format_expires(c.t), c.text);
  }
}

// sigstore's root-signing roots v1-v3 (tests/data/tuf-real), written by go-tuf.
TEST(MetadataRulesTest, ExpiresInOtherRfc3339FormsIsReadAsUtcWithoutFraction) {
  using std::chrono::sys_days;
  using std::chrono::year;
  const std::pair<const char*, TimePoint> cases[] = {
      {"2021-12-18T13:28:12.99008-06:00",
       TimePoint{sys_days{year{2021} / 12 / 18}} + 19h + 28min + 12s},
      {"2022-05-11T19:09:02.663975009Z",
       TimePoint{sys_days{year{2022} / 5 / 11}} + 19h + 9min + 2s},
      {"2030-01-01T00:00:00+00:00", TimePoint{sys_days{year{2030} / 1 / 1}}},
      {"2030-01-01T01:30:00+01:30", TimePoint{sys_days{year{2030} / 1 / 1}}},
      {"2029-12-31T23:59:59.9Z", TimePoint{sys_days{year{2029} / 12 / 31}} + 23h + 59min + 59s},
  };
  for (const auto& [text, want] : cases) {
    auto t = parse_expires(text);
    ASSERT_TRUE(t.has_value()) << text;
    EXPECT_EQ(*t, want) << text;
  }
}

TEST(MetadataRulesTest, IsExpiredAtTheInstant) {
  Common c;
  c.expires = TimePoint{std::chrono::sys_days{std::chrono::year{2030} / 1 / 1}};
  EXPECT_FALSE(c.is_expired(c.expires - 1s));
  EXPECT_TRUE(c.is_expired(c.expires));
  EXPECT_TRUE(c.is_expired(c.expires + 1s));
}

// ---- root -------------------------------------------------------------------

TEST(MetadataRulesTest, RootThresholdZero) {
  json j = root_json();
  j["roles"]["targets"]["threshold"] = 0;
  expect_rejected<Root>(j, Errc::bad_field, "signed.roles.targets.threshold: must be >= 1");
  j["roles"]["targets"]["threshold"] = -1;
  expect_rejected<Root>(j, Errc::bad_field, "signed.roles.targets.threshold");
}

TEST(MetadataRulesTest, RootDuplicateKeyIds) {
  json j = root_json();
  j["roles"]["root"]["keyids"] = {id_of(kPubA), id_of(kPubB), id_of(kPubA)};
  expect_rejected<Root>(j, Errc::bad_field, "signed.roles.root.keyids: duplicate entry");
}

TEST(MetadataRulesTest, RootMissingRole) {
  for (const char* name : {"root", "timestamp", "snapshot", "targets"}) {
    json j = root_json();
    j["roles"].erase(name);
    expect_rejected<Root>(j, Errc::bad_field, std::string("signed.roles.") + name + ": missing");
  }
}

TEST(MetadataRulesTest, RootExtraRole) {
  json j = root_json();
  j["roles"]["mirror"] = role({id_of(kPubA)});
  expect_rejected<Root>(j, Errc::bad_field, "signed.roles.mirror: not a top-level role");
}

TEST(MetadataRulesTest, RootBadKeysAndRoles) {
  json j = root_json();
  j["keys"][id_of(kPubA)].erase("keyval");
  expect_rejected<Root>(j, Errc::bad_field, "signed.keys." + id_of(kPubA) + ".keyval: missing");
  j = root_json();
  j["roles"]["root"]["keyids"] = "abc";
  expect_rejected<Root>(j, Errc::bad_field, "signed.roles.root.keyids: expected array");
  j["roles"]["root"]["keyids"] = {"a", 1};
  expect_rejected<Root>(j, Errc::bad_field, "signed.roles.root.keyids[1]: expected string");
  j = root_json();
  j["consistent_snapshot"] = "yes";
  expect_rejected<Root>(j, Errc::bad_field, "signed.consistent_snapshot: expected boolean");
  j = root_json();
  j.erase("keys");
  expect_rejected<Root>(j, Errc::bad_field, "signed.keys: missing");
}

// ---- timestamp / snapshot ---------------------------------------------------

TEST(MetadataRulesTest, TimestampWithoutSnapshotMeta) {
  json j = timestamp_json();
  j["meta"] = {{"snapshot.json.bak", {{"version", 1}}}};
  expect_rejected<Timestamp>(j, Errc::bad_field, "signed.meta.snapshot.json: missing");
  j["meta"] = json::object();
  expect_rejected<Timestamp>(j, Errc::bad_field, "signed.meta.snapshot.json: missing");
  j.erase("meta");
  expect_rejected<Timestamp>(j, Errc::bad_field, "signed.meta: missing");
}

TEST(MetadataRulesTest, SnapshotWithoutTargetsMeta) {
  json j = snapshot_json();
  j["meta"].erase("targets.json");
  expect_rejected<Snapshot>(j, Errc::bad_field, "signed.meta.targets.json: missing");
}

TEST(MetadataRulesTest, MetaFileRules) {
  json j = timestamp_json();
  j["meta"]["snapshot.json"]["hashes"] = json::object();
  expect_rejected<Timestamp>(j, Errc::bad_field,
                             "signed.meta.snapshot.json.hashes: expected non-empty object");
  j["meta"]["snapshot.json"]["hashes"] = {{"sha256", 5}};
  expect_rejected<Timestamp>(j, Errc::bad_field,
                             "signed.meta.snapshot.json.hashes.sha256: expected string");
  j = timestamp_json();
  j["meta"]["snapshot.json"]["length"] = -1;
  expect_rejected<Timestamp>(j, Errc::bad_field, "signed.meta.snapshot.json.length");
  j = timestamp_json();
  j["meta"]["snapshot.json"]["version"] = 0;
  expect_rejected<Timestamp>(j, Errc::bad_field, "signed.meta.snapshot.json.version");
  j = snapshot_json();
  j["meta"]["pkgs.json"]["hashes"] = json::object();
  expect_rejected<Snapshot>(j, Errc::bad_field, "signed.meta.pkgs.json.hashes");
  j = snapshot_json();
  j["meta"]["pkgs.json"]["length"] = -10;
  expect_rejected<Snapshot>(j, Errc::bad_field, "signed.meta.pkgs.json.length");
}

// ---- targets ----------------------------------------------------------------

TEST(MetadataRulesTest, TargetFileRules) {
  json j = targets_json();
  j["targets"]["b"]["hashes"] = json::object();
  expect_rejected<Targets>(j, Errc::bad_field,
                           "signed.targets.b.hashes: expected non-empty object");
  j["targets"]["b"].erase("hashes");
  expect_rejected<Targets>(j, Errc::bad_field, "signed.targets.b.hashes: missing");
  j = targets_json();
  j["targets"]["b"]["length"] = -1;
  expect_rejected<Targets>(j, Errc::bad_field, "signed.targets.b.length");
  j["targets"]["b"].erase("length");
  expect_rejected<Targets>(j, Errc::bad_field, "signed.targets.b.length: missing");
  j = targets_json();
  j["targets"]["b"]["custom"] = "text";
  expect_rejected<Targets>(j, Errc::bad_field, "signed.targets.b.custom: expected object");
  j = targets_json();
  j["targets"][""] = j["targets"]["b"];
  expect_rejected<Targets>(j, Errc::bad_field, "empty target path");
}

TEST(MetadataRulesTest, DelegationWithBothPathKinds) {
  json j = targets_json();
  j["delegations"]["roles"][0]["path_hash_prefixes"] = {"ab"};
  expect_rejected<Targets>(j, Errc::bad_field,
                           "exactly one of paths and path_hash_prefixes is required");
}

TEST(MetadataRulesTest, DelegationWithNeitherPathKind) {
  json j = targets_json();
  j["delegations"]["roles"][1].erase("path_hash_prefixes");
  expect_rejected<Targets>(j, Errc::bad_field,
                           "signed.delegations.roles[1]: exactly one of paths and "
                           "path_hash_prefixes is required");
}

TEST(MetadataRulesTest, DelegationDuplicateRoleNames) {
  json j = targets_json();
  j["delegations"]["roles"][1]["name"] = "pkgs";
  expect_rejected<Targets>(j, Errc::bad_field,
                           "signed.delegations.roles[1].name: duplicate role name 'pkgs'");
}

TEST(MetadataRulesTest, DelegationReservedOrUnsafeNames) {
  // Other names are data (quoted where they become URLs or file names:
  // tests/unit/tuf_role_names_test.cpp).
  for (const char* name : {"root", "timestamp", "snapshot", "targets", ""}) {
    json j = targets_json();
    j["delegations"]["roles"][0]["name"] = name;
    expect_rejected<Targets>(
        j, Errc::bad_field,
        std::string("signed.delegations.roles[0].name: invalid role name '") + name + "'");
  }
}

TEST(MetadataRulesTest, DelegationFieldRules) {
  json j = targets_json();
  j["delegations"]["roles"][0]["threshold"] = 0;
  expect_rejected<Targets>(j, Errc::bad_field, "signed.delegations.roles[0].threshold");
  j = targets_json();
  j["delegations"]["roles"][0]["keyids"] = {"k", "k"};
  expect_rejected<Targets>(j, Errc::bad_field, "signed.delegations.roles[0].keyids: duplicate");
  j = targets_json();
  j["delegations"]["roles"][0].erase("terminating");
  expect_rejected<Targets>(j, Errc::bad_field, "signed.delegations.roles[0].terminating: missing");
  j = targets_json();
  j["delegations"]["roles"][0]["paths"] = {"ok", 3};
  expect_rejected<Targets>(j, Errc::bad_field,
                           "signed.delegations.roles[0].paths[1]: expected string");
  j = targets_json();
  j["delegations"].erase("keys");
  expect_rejected<Targets>(j, Errc::bad_field, "signed.delegations.keys: missing");
  j = targets_json();
  j["delegations"]["roles"] = json::object();
  expect_rejected<Targets>(j, Errc::bad_field, "signed.delegations.roles: expected array");
}

// ---- delegated paths --------------------------------------------------------

DelegatedRole with_paths(std::vector<std::string> paths) {
  DelegatedRole r;
  r.name = "r";
  r.paths = std::move(paths);
  return r;
}

TEST(DelegatedPathTest, WildcardDoesNotCrossSegments) {
  const DelegatedRole r = with_paths({"*.tar.zst"});
  EXPECT_TRUE(r.is_delegated_path("a.tar.zst"));
  EXPECT_TRUE(r.is_delegated_path(".tar.zst"));
  EXPECT_FALSE(r.is_delegated_path("dir/a.tar.zst"));
  EXPECT_FALSE(r.is_delegated_path("a.tar.zstd"));
  EXPECT_FALSE(r.is_delegated_path("a.tar.gz"));
}

TEST(DelegatedPathTest, DirectoryWildcard) {
  const DelegatedRole r = with_paths({"dir/*"});
  EXPECT_TRUE(r.is_delegated_path("dir/x"));
  EXPECT_TRUE(r.is_delegated_path("dir/x.tar.zst"));
  EXPECT_FALSE(r.is_delegated_path("dir/x/y"));
  EXPECT_FALSE(r.is_delegated_path("dir"));
  EXPECT_FALSE(r.is_delegated_path("other/x"));
  EXPECT_FALSE(r.is_delegated_path("x"));
  const DelegatedRole nested = with_paths({"*/*/file"});
  EXPECT_TRUE(nested.is_delegated_path("a/b/file"));
  EXPECT_FALSE(nested.is_delegated_path("a/file"));
  EXPECT_FALSE(nested.is_delegated_path("a/b/c/file"));
}

TEST(DelegatedPathTest, QuestionMarkAndBrackets) {
  const DelegatedRole q = with_paths({"a?c"});
  EXPECT_TRUE(q.is_delegated_path("abc"));
  EXPECT_TRUE(q.is_delegated_path("axc"));
  EXPECT_FALSE(q.is_delegated_path("ac"));
  EXPECT_FALSE(q.is_delegated_path("abbc"));
  EXPECT_FALSE(q.is_delegated_path("a/c"));

  const DelegatedRole b = with_paths({"[ab]x"});
  EXPECT_TRUE(b.is_delegated_path("ax"));
  EXPECT_TRUE(b.is_delegated_path("bx"));
  EXPECT_FALSE(b.is_delegated_path("cx"));
  EXPECT_FALSE(b.is_delegated_path("abx"));

  const DelegatedRole neg = with_paths({"[!ab]x"});
  EXPECT_TRUE(neg.is_delegated_path("cx"));
  EXPECT_FALSE(neg.is_delegated_path("ax"));
}

TEST(DelegatedPathTest, ExactAndMultiplePatterns) {
  const DelegatedRole r = with_paths({"pkg/exact.bin", "other/*"});
  EXPECT_TRUE(r.is_delegated_path("pkg/exact.bin"));
  EXPECT_TRUE(r.is_delegated_path("other/y"));
  EXPECT_FALSE(r.is_delegated_path("pkg/exact.bin2"));
  EXPECT_FALSE(r.is_delegated_path("pkg/other.bin"));
  EXPECT_FALSE(with_paths({}).is_delegated_path("anything"));
}

TEST(DelegatedPathTest, PathHashPrefixes) {
  const std::string path = "pkg/a.tar.zst";
  const std::string h = crypto::sha256_hex(path);
  DelegatedRole r;
  r.name = "bins";
  r.path_hash_prefixes = std::vector<std::string>{h.substr(0, 2)};
  EXPECT_TRUE(r.is_delegated_path(path));
  r.path_hash_prefixes = std::vector<std::string>{h.substr(0, 5)};
  EXPECT_TRUE(r.is_delegated_path(path));
  r.path_hash_prefixes = std::vector<std::string>{h};
  EXPECT_TRUE(r.is_delegated_path(path));
  // Flip the first hex digit: no longer a prefix.
  std::string wrong = h.substr(0, 2);
  wrong[0] = wrong[0] == '0' ? '1' : '0';
  r.path_hash_prefixes = std::vector<std::string>{wrong};
  EXPECT_FALSE(r.is_delegated_path(path));
  // Any one prefix is enough.
  r.path_hash_prefixes = std::vector<std::string>{wrong, h.substr(0, 3)};
  EXPECT_TRUE(r.is_delegated_path(path));
  // Another path is delegated only if its own hash has the prefix.
  const std::string other = "pkg/b.tar.zst";
  ASSERT_FALSE(crypto::sha256_hex(other).starts_with(h.substr(0, 3)));
  EXPECT_FALSE(r.is_delegated_path(other));
  // Neither list set: nothing is delegated.
  DelegatedRole none;
  EXPECT_FALSE(none.is_delegated_path(path));
}

// ---- signature thresholds ---------------------------------------------------

class ThresholdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 3; ++i) {
      auto k = crypto::PrivateKey::generate();
      ASSERT_TRUE(k.has_value());
      Key pub = Key::from_public(k->public_key());
      ids_.push_back(pub.keyid());
      keys_.emplace(pub.keyid(), pub);
      private_.push_back(std::move(*k));
    }
    role_.keyids = {ids_[0], ids_[1]};
  }

  Signature sign(std::size_t i, std::string_view message) const {
    auto sig = private_[i].sign(message);
    EXPECT_TRUE(sig.has_value());
    const std::string raw = sig.value_or("");
    return Signature{ids_[i], crypto::to_hex(std::span<const unsigned char>(
                                  reinterpret_cast<const unsigned char*>(raw.data()), raw.size()))};
  }

  Result<void> verify(std::uint64_t threshold, const std::vector<Signature>& sigs) {
    role_.threshold = threshold;
    return verify_threshold("snapshot", role_, keys_, message_, sigs);
  }

  static void expect_bad(const Result<void>& r, std::string_view count) {
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code, Errc::bad_signature);
    EXPECT_THAT(r.error().message, HasSubstr("snapshot: "));
    EXPECT_THAT(r.error().message, HasSubstr(std::string(count)));
  }

  std::vector<crypto::PrivateKey> private_;
  std::vector<std::string> ids_;
  KeyMap keys_;
  Role role_;
  const std::string message_ = R"({"_type":"snapshot"})";
};

TEST_F(ThresholdTest, Met) {
  EXPECT_TRUE(verify(1, {sign(0, message_)}));
  EXPECT_TRUE(verify(1, {sign(1, message_)}));
  EXPECT_TRUE(verify(2, {sign(0, message_), sign(1, message_)}));
  EXPECT_TRUE(verify(2, {sign(1, message_), sign(0, message_)}));
}

TEST_F(ThresholdTest, NotMet) {
  expect_bad(verify(2, {sign(0, message_)}), "1 of 2");
  expect_bad(verify(1, {}), "0 of 1");
}

TEST_F(ThresholdTest, SameKeyCountsOnce) {
  // Two distinct-looking signatures are impossible with Ed25519 (deterministic),
  // so repeat the same one; a duplicate must not count twice.
  const Signature s = sign(0, message_);
  expect_bad(verify(2, {s, s}), "1 of 2");
  expect_bad(verify(2, {s, s, s}), "1 of 2");
}

TEST_F(ThresholdTest, KeyOutsideRoleDoesNotCount) {
  // Key 2 is known (in the key map) but not listed by the role.
  expect_bad(verify(1, {sign(2, message_)}), "0 of 1");
  expect_bad(verify(2, {sign(0, message_), sign(2, message_)}), "1 of 2");
  // A signature relabelled with a listed key id does not verify under that key.
  Signature relabelled = sign(2, message_);
  relabelled.keyid = ids_[1];
  expect_bad(verify(2, {sign(0, message_), relabelled}), "1 of 2");
}

TEST_F(ThresholdTest, KeyListedButUnknownDoesNotCount) {
  keys_.erase(ids_[1]);
  expect_bad(verify(2, {sign(0, message_), sign(1, message_)}), "1 of 2");
}

TEST_F(ThresholdTest, InvalidSignatureDoesNotCount) {
  expect_bad(verify(1, {sign(0, "other message")}), "0 of 1");
  Signature garbage{ids_[0], "zz"};
  expect_bad(verify(1, {garbage}), "0 of 1");
  Signature flipped = sign(1, message_);
  flipped.sig[0] = flipped.sig[0] == 'a' ? 'b' : 'a';
  expect_bad(verify(2, {sign(0, message_), flipped}), "1 of 2");
  // A bad signature first does not hide a good one by the same key.
  EXPECT_TRUE(verify(2, {sign(0, message_), flipped, sign(1, message_)}));
}

TEST_F(ThresholdTest, NonEd25519KeyDoesNotCount) {
  keys_.at(ids_[0]).keytype = "rsa";
  expect_bad(verify(1, {sign(0, message_)}), "0 of 1");
}

// ---- length and hashes ------------------------------------------------------

TEST(LengthAndHashesTest, Matches) {
  const std::map<std::string, std::string> hashes = {
      {"sha256", crypto::sha256_hex("abc")},
      {"sha512",
       "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a"
       "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f"}};
  EXPECT_TRUE(verify_length_and_hashes("f", "abc", 3, hashes));
  EXPECT_TRUE(verify_length_and_hashes("f", "abc", std::nullopt, hashes));
  EXPECT_TRUE(verify_length_and_hashes("f", "abc", 3, {}));
  EXPECT_TRUE(verify_length_and_hashes("f", "abc", std::nullopt, {}));
}

TEST(LengthAndHashesTest, LengthMismatch) {
  for (std::uint64_t len : {std::uint64_t{2}, std::uint64_t{4}, std::uint64_t{0}}) {
    auto r = verify_length_and_hashes("snapshot", "abc", len, {{"sha256", kSha256}});
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code, Errc::length_mismatch);
    EXPECT_THAT(r.error().message,
                HasSubstr("snapshot: length 3, expected " + std::to_string(len)));
  }
}

TEST(LengthAndHashesTest, HashMismatch) {
  auto r = verify_length_and_hashes("targets", "abd", 3, {{"sha256", kSha256}});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Errc::hash_mismatch);
  EXPECT_THAT(r.error().message, HasSubstr("targets: sha256 mismatch"));
  // Every listed hash must match, not just one.
  auto partial =
      verify_length_and_hashes("targets", "abc", 3, {{"sha256", kSha256}, {"sha512", "00"}});
  ASSERT_FALSE(partial.has_value());
  EXPECT_EQ(partial.error().code, Errc::hash_mismatch);
  EXPECT_THAT(partial.error().message, HasSubstr("sha512 mismatch"));
  // Hex digests are compared as written (lower case, as TUF writes them).
  std::string upper = kSha256;
  for (char& c : upper) c = static_cast<char>(std::toupper(c));
  EXPECT_FALSE(verify_length_and_hashes("targets", "abc", 3, {{"sha256", upper}}));
}

TEST(LengthAndHashesTest, UnknownAlgorithm) {
  auto r = verify_length_and_hashes("targets", "abc", 3, {{"md5", "900150983cd24fb0"}});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Errc::hash_mismatch);
  EXPECT_THAT(r.error().message, HasSubstr("unsupported hash algorithm 'md5'"));
  // Like python-tuf, an unknown algorithm fails even next to a good known one.
  auto mixed =
      verify_length_and_hashes("targets", "abc", 3, {{"sha256", kSha256}, {"blake2b", "00"}});
  ASSERT_FALSE(mixed.has_value());
  EXPECT_EQ(mixed.error().code, Errc::hash_mismatch);
}

}  // namespace
}  // namespace catalog::tuf
