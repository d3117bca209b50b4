// Updater::list_targets() and withheld_by() (issue 17, item 6): one failing
// delegated role does not freeze the listing of the others, and never hands its
// paths to a role later in the search.
//
// The repository (catalog::tuf::Repository, on disk) is served through a
// FaultFetcher over a DirFetcher: a role "fails" by its metadata file being
// served as other bytes (refused against snapshot's hashes) or not at all.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "catalog/atomic_file.hpp"
#include "catalog/canonical_json.hpp"
#include "catalog/crypto/hash.hpp"
#include "catalog/crypto/signing_key.hpp"
#include "catalog/tuf/dir_fetcher.hpp"
#include "catalog/tuf/repository.hpp"
#include "catalog/tuf/updater.hpp"
#include "tests/support/fault_fetcher.hpp"
#include "tests/support/temp_dir.hpp"

namespace catalog::tuf {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using tests::support::FaultFetcher;
using tests::support::TempDir;

crypto::PrivateKey new_key() { return crypto::PrivateKey::generate().value(); }

std::set<std::string> paths_of(const std::vector<TargetFile>& targets) {
  std::set<std::string> out;
  for (const auto& t : targets) out.insert(t.path);
  return out;
}

class UpdaterListingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    repo_.emplace(Repository::create(t0_).value());
    ASSERT_TRUE(repo_->add_target("top/a", "top a"));
  }

  // Publishes and trusts version 1 of root (the first call only).
  void publish() {
    ASSERT_TRUE(repo_->publish(directory_writer(server_.path()), t0_));
    if (!std::filesystem::exists(client_.path() / "meta/root.json")) {
      std::filesystem::create_directories(client_.path() / "meta");
      ASSERT_TRUE(
          atomic_write_file(client_.path() / "meta/root.json",
                            tests::support::read_file(server_.path() / "metadata/1.root.json")));
    }
  }

  Updater updater() {
    UpdaterConfig c;
    c.metadata_dir = client_.path() / "meta";
    c.metadata_base_url = "repo:/metadata/";
    c.target_base_url = "repo:/targets/";
    c.target_dir = client_.path() / "targets";
    c.now = t0_;
    c.retry.attempts = 1;
    c.cancel = [this] { return cancel_; };
    return Updater(c, fetcher_);
  }

  // vendor-a (vendor-a/*) and vendor-b (vendor-b/*), one target each.
  void two_vendors() {
    ASSERT_TRUE(repo_->add_delegation("vendor-a", {"vendor-a/*"}, new_key()));
    ASSERT_TRUE(repo_->add_delegation("vendor-b", {"vendor-b/*"}, new_key()));
    ASSERT_TRUE(repo_->add_target("vendor-a/x", "a x", nullptr, "vendor-a"));
    ASSERT_TRUE(repo_->add_target("vendor-b/y", "b y", nullptr, "vendor-b"));
    publish();
  }

  // `role`'s metadata served as bytes its pinned hashes refuse, and the copy an
  // earlier update of this client persisted forgotten (else it would do).
  void break_role(const std::string& role) {
    fetcher_.serve("." + role + ".json", "{}");
    std::filesystem::remove(client_.path() / "meta" / (role + ".json"));
  }

  const TimePoint t0_ = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
  TempDir server_;
  TempDir client_;
  DirFetcher dir_fetcher_{"repo:/", server_.path()};
  FaultFetcher fetcher_{dir_fetcher_};
  std::optional<Repository> repo_;
  bool cancel_ = false;
};

TEST_F(UpdaterListingTest, HonestRepositoryListsEverythingAndFailsNothing) {
  two_vendors();
  auto u = updater();
  auto listing = u.list_targets();
  ASSERT_TRUE(listing) << listing.error().message;
  EXPECT_EQ(paths_of(listing->targets),
            (std::set<std::string>{"top/a", "vendor-a/x", "vendor-b/y"}));
  EXPECT_THAT(listing->failed, IsEmpty());
  EXPECT_THAT(listing->withheld, IsEmpty());
  EXPECT_EQ(u.withheld_by("vendor-b/y").value(), std::nullopt);
}

// vendor-b's metadata is refused: vendor-a's and top-level targets are still
// listed; vendor-b is named with its paths and error; vendor-b/y is unknown
// (withheld_by names vendor-b), not "not found".
TEST_F(UpdaterListingTest, AFailingRoleLeavesTheOthersListed) {
  two_vendors();
  break_role("vendor-b");
  auto u = updater();
  auto listing = u.list_targets();
  ASSERT_TRUE(listing) << listing.error().message;
  EXPECT_EQ(paths_of(listing->targets), (std::set<std::string>{"top/a", "vendor-a/x"}));
  ASSERT_EQ(listing->failed.size(), 1u);
  EXPECT_EQ(listing->failed[0].name, "vendor-b");
  EXPECT_EQ(listing->failed[0].delegator, "targets");
  EXPECT_THAT(listing->failed[0].paths, ElementsAre("vendor-b/*"));
  EXPECT_NE(listing->failed[0].error.code, Errc::not_found);
  EXPECT_EQ(u.withheld_by("vendor-b/y").value(), std::optional<std::string>("vendor-b"));
  EXPECT_EQ(u.withheld_by("vendor-a/x").value(), std::nullopt);
  EXPECT_EQ(u.withheld_by("elsewhere/z").value(), std::nullopt);  // no role covers it
  // The strict forms still fail, with the role's error (never not_found).
  auto one = u.get_targetinfo("vendor-b/y");
  ASSERT_FALSE(one);
  EXPECT_EQ(one.error().code, listing->failed[0].error.code);
  auto all = u.all_targets();
  ASSERT_FALSE(all);
  EXPECT_EQ(all.error().code, listing->failed[0].error.code);
  // Asked once in this update, however often it was needed.
  EXPECT_EQ(fetcher_.requests(".vendor-b.json"), 1u);
}

TEST_F(UpdaterListingTest, AnUnreachableRoleIsAFailedRoleToo) {
  two_vendors();
  fetcher_.fail_with(".vendor-a.json", Errc::network);
  auto u = updater();
  auto listing = u.list_targets();
  ASSERT_TRUE(listing) << listing.error().message;
  EXPECT_EQ(paths_of(listing->targets), (std::set<std::string>{"top/a", "vendor-b/y"}));
  ASSERT_EQ(listing->failed.size(), 1u);
  EXPECT_EQ(listing->failed[0].name, "vendor-a");
  EXPECT_EQ(listing->failed[0].error.code, Errc::network);
}

// TUF priority: "first" and "second" are both delegated shared/*, first ahead.
// With first failing, second's shared/z must NOT be listed (an attacker who can
// break first would otherwise hand first's paths to second): it is withheld.
TEST_F(UpdaterListingTest, AFailedRoleWithholdsItsPathsFromLaterRoles) {
  ASSERT_TRUE(repo_->add_delegation("first", {"shared/*"}, new_key()));
  ASSERT_TRUE(repo_->add_delegation("second", {"shared/*"}, new_key()));
  ASSERT_TRUE(repo_->add_target("shared/other", "o", nullptr, "first"));
  ASSERT_TRUE(repo_->add_target("shared/z", "second's z", nullptr, "second"));
  publish();
  {
    // Control: honest, second's shared/z is listed.
    auto u = updater();
    auto listing = u.list_targets();
    ASSERT_TRUE(listing) << listing.error().message;
    EXPECT_TRUE(paths_of(listing->targets).contains("shared/z"));
  }
  break_role("first");
  auto u = updater();
  auto listing = u.list_targets();
  ASSERT_TRUE(listing) << listing.error().message;
  EXPECT_EQ(paths_of(listing->targets), (std::set<std::string>{"top/a"}));
  EXPECT_EQ(listing->withheld, (std::map<std::string, std::string>{{"shared/z", "first"}}));
  ASSERT_EQ(listing->failed.size(), 1u);
  EXPECT_EQ(listing->failed[0].name, "first");
  EXPECT_EQ(u.withheld_by("shared/z").value(), std::optional<std::string>("first"));
  EXPECT_FALSE(u.get_targetinfo("shared/z"));
}

// A role listed earlier than the failed one still answers for its paths.
TEST_F(UpdaterListingTest, ARoleAheadOfTheFailedOneStillAnswers) {
  ASSERT_TRUE(repo_->add_delegation("first", {"shared/*"}, new_key()));
  ASSERT_TRUE(repo_->add_delegation("second", {"shared/*"}, new_key()));
  ASSERT_TRUE(repo_->add_target("shared/z", "first's z", nullptr, "first"));
  ASSERT_TRUE(repo_->add_target("shared/w", "second's w", nullptr, "second"));
  publish();
  break_role("second");
  auto u = updater();
  auto listing = u.list_targets();
  ASSERT_TRUE(listing) << listing.error().message;
  EXPECT_EQ(paths_of(listing->targets), (std::set<std::string>{"top/a", "shared/z"}));
  EXPECT_EQ(u.withheld_by("shared/z").value(), std::nullopt);
  EXPECT_EQ(u.withheld_by("shared/w").value(), std::optional<std::string>("second"));
}

// A role delegated under a failed one cannot even be seen: its paths are
// withheld by the failed parent, and it is not asked for.
TEST_F(UpdaterListingTest, RolesUnderAFailedRoleAreWithheldByIt) {
  // vendor-a (vendor-a/*) delegates "sub" (vendor-a/*), signed here by hand:
  // Repository writes only roles the top-level targets delegate.
  ASSERT_TRUE(repo_->add_delegation("vendor-a", {"vendor-a/*"}, new_key()));
  ASSERT_TRUE(repo_->add_target("vendor-a/x", "a x", nullptr, "vendor-a"));
  const crypto::PrivateKey sub_key = new_key();
  const Key sub_pub = Key::from_public(sub_key.public_key());
  Targets sub;
  sub.expires = t0_ + std::chrono::days{30};
  sub.targets["vendor-a/deep"].path = "vendor-a/deep";
  sub.targets["vendor-a/deep"].length = 4;
  sub.targets["vendor-a/deep"].hashes["sha256"] = crypto::sha256_hex("deep");
  const nlohmann::json sub_signed = to_json(sub);
  const std::string canon = canonical_json(sub_signed).value();
  const std::string sig = sub_key.sign(canon).value();
  const std::string sub_bytes = nlohmann::json{
      {"signatures",
       {{{"keyid", sub_pub.keyid()},
         {"sig", crypto::to_hex(std::span<const unsigned char>(
                     reinterpret_cast<const unsigned char*>(sig.data()), sig.size()))}}}},
      {"signed", sub_signed}}.dump();
  std::filesystem::create_directories(server_.path() / "metadata");
  ASSERT_TRUE(atomic_write_file(server_.path() / "metadata/1.sub.json", sub_bytes));
  Delegations d;
  d.keys.emplace(sub_pub.keyid(), sub_pub);
  DelegatedRole role;
  role.name = "sub";
  role.keyids = {sub_pub.keyid()};
  role.paths = std::vector<std::string>{"vendor-a/*"};
  d.roles.push_back(role);
  repo_->delegated.at("vendor-a").delegations = d;
  repo_->snapshot.meta["sub.json"] =
      MetaFile{1, sub_bytes.size(), {{"sha256", crypto::sha256_hex(sub_bytes)}}};
  publish();
  {
    auto u = updater();
    auto listing = u.list_targets();
    ASSERT_TRUE(listing) << listing.error().message;
    ASSERT_TRUE(paths_of(listing->targets).contains("vendor-a/deep"));  // control
  }
  fetcher_.reset_log();
  break_role("vendor-a");
  auto u = updater();
  auto listing = u.list_targets();
  ASSERT_TRUE(listing) << listing.error().message;
  EXPECT_EQ(paths_of(listing->targets), (std::set<std::string>{"top/a"}));
  ASSERT_EQ(listing->failed.size(), 1u);
  EXPECT_EQ(listing->failed[0].name, "vendor-a");
  EXPECT_EQ(u.withheld_by("vendor-a/deep").value(), std::optional<std::string>("vendor-a"));
  EXPECT_EQ(fetcher_.requests(".sub.json"), 0u);
}

// Cancel is not a role's failure: the listing stops.
TEST_F(UpdaterListingTest, CancelStopsTheListing) {
  two_vendors();
  auto u = updater();
  ASSERT_TRUE(u.refresh());
  cancel_ = true;
  auto listing = u.list_targets();
  ASSERT_FALSE(listing);
  EXPECT_EQ(listing.error().code, Errc::cancelled);
}

}  // namespace
}  // namespace catalog::tuf
