// Succinct hash-bin delegations (TAP 15, python-tuf's SuccinctRoles): the bin
// arithmetic against vectors python-tuf 7 computed, the strict parse of
// "succinct_roles", and the Updater and TrustedSet trusting a bin only for
// the paths that hash into it, without enumerating the bins.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "catalog/tuf/metadata.hpp"
#include "catalog/tuf/updater.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/unit/mini_tuf_repo.hpp"

namespace catalog::tuf {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::MapFetcher;
using testing::MiniRepo;
using testing::Signer;

SuccinctRoles succinct(std::uint32_t bit_length, std::string prefix) {
  SuccinctRoles s;
  s.keyids = {"k"};
  s.bit_length = bit_length;
  s.name_prefix = std::move(prefix);
  return s;
}

// ---- bins as python-tuf computes them -----------------------------------------

// SuccinctRoles([], 1, bit_length, "bins").get_role_for_target(path), python-tuf
// 7.0.1, for these paths (SHA-256 prefixes e3b0c442 ca978112 3304e584 07882fab
// f7b22603 c76f1405).
const std::vector<std::string> kPaths = {"",
                                         "a",
                                         "test-ep/test-ep-1.0.0.tar.gz",
                                         "vendor/../x y%z \xc3\xa9",
                                         "packages/pkg-1.whl",
                                         "\xd0\xba\xd0\xbb\xd1\x8e\xd1\x87/\xf0\x9f\x9a\x80"};

struct Vector {
  std::uint32_t bit_length;
  std::vector<std::string> bins;
};
const std::vector<Vector> kPythonTufBins = {
    {1, {"bins-1", "bins-1", "bins-0", "bins-0", "bins-1", "bins-1"}},
    {3, {"bins-7", "bins-6", "bins-1", "bins-0", "bins-7", "bins-6"}},
    {4, {"bins-e", "bins-c", "bins-3", "bins-0", "bins-f", "bins-c"}},
    {8, {"bins-e3", "bins-ca", "bins-33", "bins-07", "bins-f7", "bins-c7"}},
    {10, {"bins-38e", "bins-32a", "bins-0cc", "bins-01e", "bins-3de", "bins-31d"}},
    {16, {"bins-e3b0", "bins-ca97", "bins-3304", "bins-0788", "bins-f7b2", "bins-c76f"}},
    {31,
     {"bins-71d86221", "bins-654bc089", "bins-198272c2", "bins-03c417d5", "bins-7bd91301",
      "bins-63b78a02"}},
    {32,
     {"bins-e3b0c442", "bins-ca978112", "bins-3304e584", "bins-07882fab", "bins-f7b22603",
      "bins-c76f1405"}},
};

TEST(SuccinctRolesTest, BinForTargetMatchesPythonTuf) {
  for (const auto& v : kPythonTufBins) {
    const SuccinctRoles s = succinct(v.bit_length, "bins");
    for (std::size_t i = 0; i < kPaths.size(); ++i) {
      const std::uint32_t bin = s.bin_for_target(kPaths[i]);
      EXPECT_EQ(s.bin_name(bin), v.bins[i]) << "bit_length " << v.bit_length << ", path #" << i;
      EXPECT_EQ(s.bin_index(v.bins[i]), bin);
      // The bin's role is trusted for the path, and its neighbour is not.
      EXPECT_TRUE(s.bin(bin).is_delegated_path(kPaths[i]));
      const auto other = static_cast<std::uint32_t>((bin + 1) % s.bin_count());
      EXPECT_FALSE(s.bin(other).is_delegated_path(kPaths[i]));
    }
  }
}

// list(SuccinctRoles([], 1, N, prefix).get_roles()) in python-tuf 7.0.1.
TEST(SuccinctRolesTest, BinNamesMatchPythonTufGetRoles) {
  const SuccinctRoles one = succinct(1, "p");
  EXPECT_EQ(one.bin_count(), 2u);
  EXPECT_EQ(one.bin_name(0), "p-0");
  EXPECT_EQ(one.bin_name(1), "p-1");
  const SuccinctRoles three = succinct(3, "p");
  std::vector<std::string> names;
  for (std::uint32_t i = 0; i < three.bin_count(); ++i) names.push_back(three.bin_name(i));
  EXPECT_THAT(names, ElementsAre("p-0", "p-1", "p-2", "p-3", "p-4", "p-5", "p-6", "p-7"));
  const SuccinctRoles ten = succinct(10, "x.hbd");  // 1024 bins, "x.hbd-000" .. "x.hbd-3ff"
  EXPECT_EQ(ten.bin_count(), 1024u);
  EXPECT_EQ(ten.suffix_width(), 3u);
  EXPECT_EQ(ten.bin_name(0), "x.hbd-000");
  EXPECT_EQ(ten.bin_name(1), "x.hbd-001");
  EXPECT_EQ(ten.bin_name(255), "x.hbd-0ff");
  EXPECT_EQ(ten.bin_name(1023), "x.hbd-3ff");
  const SuccinctRoles all = succinct(32, "b");
  EXPECT_EQ(all.bin_count(), std::uint64_t{1} << 32);
  EXPECT_EQ(all.bin_name(0xffffffffu), "b-ffffffff");
}

TEST(SuccinctRolesTest, BinIndexTakesOnlyTheNamesBinNameMakes) {
  const SuccinctRoles ten = succinct(10, "x.hbd");
  EXPECT_EQ(ten.bin_index("x.hbd-000"), 0u);
  EXPECT_EQ(ten.bin_index("x.hbd-3ff"), 1023u);
  // Out of range (3 hex digits reach 0xfff, 1024 bins stop at 0x3ff), other
  // widths, other prefixes, no dash. Upper case and signs name no bin either
  // (python-tuf's is_delegated_role takes "x.hbd-3FF" through int(s, 16); no
  // bin is ever called that, so the strict reading refuses nothing real).
  for (const char* name : {"x.hbd-400", "x.hbd-fff", "x.hbd-00", "x.hbd-0000", "x.hbd-3FF",
                           "x.hbd-+ff", "x.hbd- ff", "y.hbd-000", "x.hbd000", "x.hbd-", ""}) {
    EXPECT_EQ(ten.bin_index(name), std::nullopt) << name;
  }
  // An empty prefix is a prefix like others: "-00" .. "-ff".
  const SuccinctRoles bare = succinct(8, "");
  EXPECT_EQ(bare.bin_index("-a5"), 0xa5u);
  EXPECT_EQ(bare.bin_name(0xa5), "-a5");
}

TEST(SuccinctRolesTest, BinRoleCarriesTheSharedKeysAndIsNotTerminating) {
  SuccinctRoles s = succinct(8, "bins");
  s.keyids = {"k1", "k2"};
  s.threshold = 2;
  const DelegatedRole bin = s.bin(0x3a);
  EXPECT_EQ(bin.name, "bins-3a");
  EXPECT_THAT(bin.keyids, ElementsAre("k1", "k2"));
  EXPECT_EQ(bin.threshold, 2u);
  EXPECT_FALSE(bin.terminating);  // TAP 15
  EXPECT_FALSE(bin.paths.has_value());
  EXPECT_FALSE(bin.path_hash_prefixes.has_value());
  ASSERT_TRUE(bin.bin.has_value());
  EXPECT_EQ(bin.bin->bit_length, 8u);
  EXPECT_EQ(bin.bin->index, 0x3au);
  EXPECT_EQ(delegation_paths(bin), std::vector<std::string>{"hash:3a"});
  EXPECT_EQ(delegation_paths(succinct(3, "b").bin(5)), std::vector<std::string>{"hash-bits:101"});
}

TEST(SuccinctRolesTest, DelegationsFindAndRolesForTargetNeverEnumerate) {
  Delegations d;
  d.succinct_roles = succinct(32, "bins");  // 2^32 bins: only arithmetic can answer
  auto found = d.find("bins-07882fab");
  ASSERT_TRUE(found.has_value());
  EXPECT_TRUE(found->is_delegated_path(kPaths[3]));
  EXPECT_FALSE(d.find("bins-7882fab").has_value());
  EXPECT_FALSE(d.find("other").has_value());
  auto roles = d.roles_for_target(kPaths[3]);
  ASSERT_EQ(roles.size(), 1u);
  EXPECT_EQ(roles[0].name, "bins-07882fab");
}

// ---- strict parse ----------------------------------------------------------------

json targets_with(json delegations) {
  return {{"_type", "targets"},
          {"spec_version", "1.0.31"},
          {"version", 1},
          {"expires", "2030-01-01T00:00:00Z"},
          {"targets", json::object()},
          {"delegations", std::move(delegations)}};
}

json succinct_json() {
  return {{"keyids", {"k1"}}, {"threshold", 1}, {"bit_length", 8}, {"name_prefix", "bins"}};
}

Result<Targets> parse_targets(const json& signed_json) {
  return role_from_json<Targets>(signed_json);
}

void expect_refused(const json& delegations, std::string_view message) {
  auto t = parse_targets(targets_with(delegations));
  ASSERT_FALSE(t.has_value()) << "accepted: " << delegations.dump();
  EXPECT_EQ(t.error().code, Errc::bad_field) << t.error().message;
  EXPECT_THAT(t.error().message, HasSubstr(std::string(message)));
}

TEST(SuccinctRolesParseTest, ParsesAndRoundTrips) {
  const json signed_json =
      targets_with({{"keys", json::object()}, {"succinct_roles", succinct_json()}});
  auto t = parse_targets(signed_json);
  ASSERT_TRUE(t.has_value()) << t.error().message;
  ASSERT_TRUE(t->delegations.has_value());
  EXPECT_THAT(t->delegations->roles, IsEmpty());
  ASSERT_TRUE(t->delegations->succinct_roles.has_value());
  const SuccinctRoles& s = *t->delegations->succinct_roles;
  EXPECT_THAT(s.keyids, ElementsAre("k1"));
  EXPECT_EQ(s.threshold, 1u);
  EXPECT_EQ(s.bit_length, 8u);
  EXPECT_EQ(s.name_prefix, "bins");
  EXPECT_EQ(canonical_json(to_json(*t)).value(), canonical_json(signed_json).value());
}

TEST(SuccinctRolesParseTest, RefusesBadFieldsNamingThem) {
  const std::string at = "signed.delegations.succinct_roles";
  auto with = [](const char* field, json value) {
    json s = succinct_json();
    if (value.is_discarded()) {
      s.erase(field);
    } else {
      s[field] = std::move(value);
    }
    return json{{"keys", json::object()}, {"succinct_roles", s}};
  };
  const json gone = json(json::value_t::discarded);
  expect_refused(with("bit_length", 0), at + ".bit_length: must be between 1 and 32, got 0");
  expect_refused(with("bit_length", 33), at + ".bit_length: must be between 1 and 32, got 33");
  expect_refused(with("bit_length", -1), at + ".bit_length");
  expect_refused(with("bit_length", "8"), at + ".bit_length");
  expect_refused(with("bit_length", gone), at + ".bit_length: missing");
  expect_refused(with("name_prefix", 7), at + ".name_prefix");
  expect_refused(with("name_prefix", gone), at + ".name_prefix: missing");
  expect_refused(with("threshold", 0), at + ".threshold: must be >= 1");
  expect_refused(with("keyids", json::array({"k", "k"})), at + ".keyids: duplicate");
  expect_refused(with("keyids", gone), at + ".keyids: missing");
  expect_refused({{"keys", json::object()}, {"succinct_roles", json::array()}},
                 at + ": expected object");
}

TEST(SuccinctRolesParseTest, ExactlyOneOfRolesAndSuccinctRoles) {
  const std::string msg = "signed.delegations: exactly one of roles and succinct_roles is required";
  expect_refused({{"keys", json::object()}}, msg);
  expect_refused(
      {{"keys", json::object()}, {"roles", json::array()}, {"succinct_roles", succinct_json()}},
      msg);
  // An empty "roles" list is still the listed form.
  auto t = parse_targets(targets_with({{"keys", json::object()}, {"roles", json::array()}}));
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_FALSE(t->delegations->succinct_roles.has_value());
}

// ---- the updater over a repository with 8 bins -------------------------------------

// bit_length 3, prefix "bins" (python-tuf: pkg/4.bin, pkg/6.bin -> bins-3;
// pkg/1.bin, pkg/19.bin -> bins-5; pkg/0.bin -> bins-7).
class SuccinctUpdaterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    repo_.targets()["delegations"] = {{"keys", {{bins_key_.keyid, bins_key_.key_json}}},
                                      {"succinct_roles",
                                       {{"keyids", {bins_key_.keyid}},
                                        {"threshold", 1},
                                        {"bit_length", 3},
                                        {"name_prefix", "bins"}}}};
    for (int i = 0; i < 8; ++i) repo_.role("bins-" + std::to_string(i), bins_key_);
    repo_.role("bins-3", bins_key_)["targets"]["pkg/4.bin"] = MiniRepo::target("four");
    repo_.role("bins-5", bins_key_)["targets"]["pkg/1.bin"] = MiniRepo::target("one");
  }

  void publish() {
    repo_.publish(fetcher_);
    std::filesystem::create_directories(client_.path() / "meta");
    tests::support::write_file(client_.path() / "meta/root.json", repo_.root_bytes());
  }

  Updater updater(std::uint32_t max_listed_roles = 4096) {
    UpdaterConfig c;
    c.metadata_dir = client_.path() / "meta";
    c.metadata_base_url = MiniRepo::kMeta;
    c.target_base_url = MiniRepo::kTargets;
    c.target_dir = client_.path() / "targets";
    c.now = now_;
    c.retry.attempts = 1;
    c.max_listed_roles = max_listed_roles;
    return Updater(c, fetcher_);
  }

  std::size_t bins_fetched() const {
    std::size_t n = 0;
    for (const auto& url : fetcher_.asked) n += url.find("/1.bins-") != std::string::npos;
    return n;
  }

  const TimePoint now_ = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
  Signer bins_key_ = Signer::make();
  MiniRepo repo_{now_};
  MapFetcher fetcher_;
  tests::support::TempDir client_;
};

TEST_F(SuccinctUpdaterTest, GetTargetinfoLoadsOnlyTheOneBin) {
  publish();
  auto u = updater();
  auto info = u.get_targetinfo("pkg/4.bin");
  ASSERT_TRUE(info.has_value()) << info.error().message;
  EXPECT_EQ(info->length, 4u);
  EXPECT_EQ(fetcher_.count("repo:/metadata/1.bins-3.json"), 1u);
  EXPECT_EQ(bins_fetched(), 1u);
  EXPECT_TRUE(std::filesystem::is_regular_file(client_.path() / "meta/bins-3.json"));
  // A path of bin 7 that no bin lists: bin 7 asked, nothing else.
  auto none = u.get_targetinfo("pkg/0.bin");
  ASSERT_FALSE(none.has_value());
  EXPECT_EQ(none.error().code, Errc::not_found);
  EXPECT_EQ(fetcher_.count("repo:/metadata/1.bins-7.json"), 1u);
  EXPECT_EQ(bins_fetched(), 2u);
}

// Bin 5 is trusted for the paths of bin 5 only: a path of bin 3 that bin 5
// lists is looked for in bin 3 and not found, and no listing shows it.
TEST_F(SuccinctUpdaterTest, ATargetOfBin3ListedByBin5IsRefused) {
  repo_.role("bins-5", bins_key_)["targets"]["pkg/6.bin"] = MiniRepo::target("six, from bin 5");
  publish();
  auto u = updater();
  auto info = u.get_targetinfo("pkg/6.bin");
  ASSERT_FALSE(info.has_value());
  EXPECT_EQ(info.error().code, Errc::not_found) << info.error().message;
  EXPECT_EQ(fetcher_.count("repo:/metadata/1.bins-5.json"), 0u);
  auto listing = u.list_targets();
  ASSERT_TRUE(listing.has_value()) << listing.error().message;
  std::vector<std::string> paths;
  for (const auto& t : listing->targets) paths.push_back(t.path);
  EXPECT_THAT(paths, ::testing::UnorderedElementsAre("pkg/4.bin", "pkg/1.bin"));
  EXPECT_THAT(listing->failed, IsEmpty());
  EXPECT_THAT(listing->withheld, IsEmpty());
}

// Bin 3 signed by another key than succinct_roles names: its own paths fail
// with bad_signature; the other bins still list.
TEST_F(SuccinctUpdaterTest, ABinSignedByAnotherKeyIsRefused) {
  const Signer intruder = Signer::make();
  repo_.role("bins-3", intruder);
  publish();
  auto u = updater();
  auto info = u.get_targetinfo("pkg/4.bin");
  ASSERT_FALSE(info.has_value());
  EXPECT_EQ(info.error().code, Errc::bad_signature) << info.error().message;
  auto listing = u.list_targets();
  ASSERT_TRUE(listing.has_value()) << listing.error().message;
  ASSERT_EQ(listing->failed.size(), 1u);
  EXPECT_EQ(listing->failed[0].name, "bins-3");
  EXPECT_EQ(listing->failed[0].delegator, "targets");
  EXPECT_THAT(listing->failed[0].paths, ElementsAre("hash-bits:011"));
  EXPECT_EQ(listing->failed[0].error.code, Errc::bad_signature);
  ASSERT_EQ(listing->targets.size(), 1u);
  EXPECT_EQ(listing->targets[0].path, "pkg/1.bin");
  EXPECT_EQ(u.withheld_by("pkg/6.bin").value(), std::optional<std::string>("bins-3"));
  EXPECT_EQ(u.withheld_by("pkg/19.bin").value(), std::nullopt);
}

TEST_F(SuccinctUpdaterTest, ListingLoadsEveryBinOnce) {
  publish();
  auto u = updater();
  auto listing = u.list_targets();
  ASSERT_TRUE(listing.has_value()) << listing.error().message;
  EXPECT_EQ(listing->targets.size(), 2u);
  EXPECT_EQ(bins_fetched(), 8u);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(fetcher_.count("repo:/metadata/1.bins-" + std::to_string(i) + ".json"), 1u) << i;
  }
}

// 8 bins but room for 1 + 4 roles: the delegation fails as a whole, every
// path under it is withheld, and the search says the same (not not_found).
TEST_F(SuccinctUpdaterTest, ListingCapRefusesASuccinctDelegationAsAWhole) {
  publish();
  auto u = updater(5);
  auto listing = u.list_targets();
  ASSERT_TRUE(listing.has_value()) << listing.error().message;
  EXPECT_THAT(listing->targets, IsEmpty());
  ASSERT_EQ(listing->failed.size(), 1u);
  EXPECT_EQ(listing->failed[0].name, "bins-0..bins-7");
  EXPECT_EQ(listing->failed[0].delegator, "targets");
  EXPECT_THAT(listing->failed[0].paths, ElementsAre("hash:*"));
  EXPECT_EQ(listing->failed[0].error.code, Errc::too_many);
  EXPECT_EQ(bins_fetched(), 0u);
  EXPECT_EQ(u.withheld_by("pkg/4.bin").value(), std::optional<std::string>("bins-3"));
  auto info = u.get_targetinfo("pkg/1.bin");
  ASSERT_FALSE(info.has_value());
  EXPECT_EQ(info.error().code, Errc::too_many);
}

// Exactly enough room: 1 + 8.
TEST_F(SuccinctUpdaterTest, ListingCapOfExactlyAllRolesListsAll) {
  publish();
  auto u = updater(9);
  auto listing = u.list_targets();
  ASSERT_TRUE(listing.has_value()) << listing.error().message;
  EXPECT_EQ(listing->targets.size(), 2u);
  EXPECT_THAT(listing->failed, IsEmpty());
}

// Bins are not terminating (TAP 15; python-tuf 7 differs, see
// SuccinctRoles::kTerminating): when "hashed" (pkg/*, bins under it) has no
// answer in the path's bin, the search goes on to "fallback" (pkg/*).
TEST(SuccinctSearchTest, BinsAreNotTerminating) {
  const TimePoint now = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
  const Signer key = Signer::make();
  MiniRepo repo(now);
  json listed = json::array();
  for (const char* name : {"hashed", "fallback"}) {
    listed.push_back({{"name", name},
                      {"keyids", {key.keyid}},
                      {"threshold", 1},
                      {"terminating", false},
                      {"paths", {"pkg/*"}}});
  }
  repo.targets()["delegations"] = {{"keys", {{key.keyid, key.key_json}}}, {"roles", listed}};
  repo.role("hashed", key)["delegations"] = {
      {"keys", {{key.keyid, key.key_json}}},
      {"succinct_roles",
       {{"keyids", {key.keyid}}, {"threshold", 1}, {"bit_length", 1}, {"name_prefix", "b"}}}};
  repo.role("b-0", key)["targets"]["pkg/4.bin"] = MiniRepo::target("from bin b-0");
  repo.role("b-1", key);
  repo.role("fallback", key)["targets"]["pkg/4.bin"] = MiniRepo::target("from fallback");
  repo.role("fallback", key)["targets"]["pkg/0.bin"] = MiniRepo::target("fallback only");
  MapFetcher fetcher;
  repo.publish(fetcher);
  tests::support::TempDir client;
  std::filesystem::create_directories(client.path() / "meta");
  tests::support::write_file(client.path() / "meta/root.json", repo.root_bytes());
  UpdaterConfig c;
  c.metadata_dir = client.path() / "meta";
  c.metadata_base_url = MiniRepo::kMeta;
  c.target_base_url = MiniRepo::kTargets;
  c.now = now;
  c.retry.attempts = 1;
  Updater u(c, fetcher);
  // pkg/4.bin (SHA-256 75ea..., bin b-0) is in its bin: the bin answers first.
  auto four = u.get_targetinfo("pkg/4.bin");
  ASSERT_TRUE(four.has_value()) << four.error().message;
  EXPECT_EQ(four->length, std::string("from bin b-0").size());
  // pkg/0.bin (f083..., bin b-1, empty) is not: fallback answers.
  auto zero = u.get_targetinfo("pkg/0.bin");
  ASSERT_TRUE(zero.has_value()) << zero.error().message;
  EXPECT_EQ(zero->length, std::string("fallback only").size());
  EXPECT_EQ(fetcher.count(std::string(MiniRepo::kMeta) + "1.b-1.json"), 1u);
}

}  // namespace
}  // namespace catalog::tuf
