// Attacks by delegated roles through the daemon (issue 17): a role trusted for
// other paths claiming a package name (item 1: a name binds to its path namespace
// "NAME/"), and a delegated role whose metadata breaks (item 6: it affects only
// the packages under its paths, never hands them to a later role, and the job
// names it). The repository is a HostileRepo with delegations, on remote "vendor".
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "catalog/atomic_file.hpp"
#include "catalog/canonical_json.hpp"
#include "tests/daemon/integration/attack_fixture.hpp"

namespace tests::daemon {
namespace {

namespace fs = std::filesystem;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

class DelegationAttackTest : public AttackFixture {
 protected:
  // Every served file's request count is what the python server logged.
  bool requested(const std::string& served) const {
    return !repo_->server().requests(fs::path(served).filename()).empty();
  }

  // The served metadata file of delegated `role` as the latest snapshot names it.
  std::string served_role_file(const std::string& role) {
    return "metadata/" + std::to_string(repo_->repo.delegated.at(role).version) + "." + role +
           ".json";
  }

  // Serves `role`'s latest metadata with its signature broken (the bytes
  // otherwise as published; snapshot pins only versions, so the file reaches the
  // signature check). Returns the honest bytes.
  std::string break_signature(const std::string& role) {
    const std::string rel = served_role_file(role);
    const std::string honest = repo_->read(rel);
    auto doc = catalog::parse_json(honest).value();
    std::string sig = doc["signatures"][0]["sig"].get<std::string>();
    sig[0] = sig[0] == '0' ? '1' : '0';
    doc["signatures"][0]["sig"] = sig;
    repo_->write(rel, doc.dump(1));
    return honest;
  }
};

// Issue 17, item 1. vendor-a is delegated vendor-a/* only. It publishes, under
// its own paths, "sc-ep" 9.0.0 (a name the targets role publishes at 1.0.0) and
// "ghost-ep" (a name nobody else has). Neither claim is installable: sc-ep stays
// the genuine 1.0.0 (listed, installed, the claim never downloaded), ghost-ep is
// shown "refused" with the target that claimed it, EnsureProvider(ghost-ep) finds
// nothing, the log names both, and vendor-a's own package works. The same after a
// restart (the catalog cache is read back and checked again).
TEST_F(DelegationAttackTest, ADelegatedRoleCannotTakeOverAnotherPackageName) {
  start_repo();
  repo_->delegate("vendor-a", {"vendor-a/*"});
  const std::string claim = repo_->add_package_as("vendor-a", "vendor-a", kScEp, "9.0.0");
  repo_->add_package_as("vendor-a", "vendor-a", "ghost-ep", "1.0.0");
  repo_->add_package_as("vendor-a", "vendor-a", "vendor-a", "1.0.0");
  repo_->publish();
  refresh();  // refusing a claim does not fail the refresh

  const auto check_rows = [&] {
    const auto lines = provider_lines(*broker_);
    EXPECT_THAT(lines, Contains(HasSubstr("sc-ep 1.0.0 ")));
    EXPECT_THAT(lines, Not(Contains(HasSubstr("sc-ep 9.0.0"))));
    EXPECT_THAT(lines, Contains("ghost-ep 1.0.0 refused vendor"));
    EXPECT_THAT(lines, Contains(::testing::StartsWith("vendor-a 1.0.0 ")));
    EXPECT_EQ(std::count_if(lines.begin(), lines.end(),
                            [](const std::string& l) { return l.starts_with("sc-ep "); }),
              1);
    const Dict ghost = provider("ghost-ep");
    EXPECT_THAT(str(ghost, "reason"), HasSubstr("vendor-a/ghost-ep-1.0.0.tar.zst"));
    EXPECT_THAT(str(ghost, "reason"), HasSubstr("'ghost-ep'"));
    EXPECT_FALSE(ghost.contains("library_path"));
  };
  check_rows();
  EXPECT_THAT(bus_->log(), HasSubstr("refused target vendor-a/sc-ep-9.0.0.tar.zst claiming "
                                     "package name sc-ep"));
  EXPECT_THAT(bus_->log(), HasSubstr("refused target vendor-a/ghost-ep-1.0.0.tar.zst"));

  install(kScEp);
  EXPECT_EQ(str(provider(kScEp), "version"), "1.0.0");
  EXPECT_EQ(str(provider(kScEp), "state"), "ready");
  EXPECT_EQ(entries_of(bus_->store_dir() / kScEp), std::vector<std::string>{"1.0.0"});
  EXPECT_FALSE(requested(claim)) << "vendor-a's sc-ep was downloaded";
  EXPECT_EQ(error_name_of([&] { (void)broker_->EnsureProvider("ghost-ep"); }),
            "org.epbroker.Error.NotFound");
  EXPECT_THAT(entries_of(bus_->store_dir()), Not(Contains("ghost-ep")));
  install("vendor-a");  // what vendor-a is trusted for still works

  restart_daemon(*bus_);
  check_rows();
  EXPECT_EQ(str(provider(kScEp), "version"), "1.0.0");
}

// The catalog cache an older daemon wrote lists a claim that breaks the binding
// (as that daemon accepted it): read back at start, it is refused, not offered.
TEST_F(DelegationAttackTest, AClaimInTheCatalogCacheIsRefusedAtStart) {
  start_repo();
  refresh();
  const fs::path cache = bus_->state_dir() / "remotes" / kRemote / "catalog.json";
  auto doc = catalog::parse_json(support::read_file(cache)).value();
  nlohmann::json forged;
  for (const auto& e : doc["entries"]) {
    if (e["custom"]["epbroker"]["name"] == kScEp) forged = e;
  }
  ASSERT_FALSE(forged.is_null());
  forged["target_path"] = "vendor-a/sc-ep-9.0.0.tar.zst";
  forged["custom"]["epbroker"]["version"] = "9.0.0";
  doc["entries"].push_back(forged);
  forged["target_path"] = "vendor-a/ghost-ep-1.0.0.tar.zst";
  forged["custom"]["epbroker"]["name"] = "ghost-ep";
  forged["custom"]["epbroker"]["version"] = "1.0.0";
  forged["custom"]["epbroker"]["library"] = "lib/libghost-ep.so";
  doc["entries"].push_back(forged);
  restart_daemon(*bus_);  // stopped before the file changes: the next start reads it
  ASSERT_TRUE(catalog::atomic_write_file(cache, doc.dump(1)));

  const auto lines = provider_lines(*broker_);
  EXPECT_THAT(lines, Contains("sc-ep 1.0.0 available vendor"));
  EXPECT_THAT(lines, Not(Contains(HasSubstr("sc-ep 9.0.0"))));
  EXPECT_THAT(lines, Contains("ghost-ep 1.0.0 refused vendor"));
  EXPECT_THAT(bus_->log(), HasSubstr("catalog cache: remote vendor: refused target "
                                     "vendor-a/sc-ep-9.0.0.tar.zst claiming package name sc-ep"));
  install(kScEp);
  EXPECT_EQ(str(provider(kScEp), "version"), "1.0.0");
}

// Issue 17, item 6. vendor-a (vendor-a/*), vendor-b (vendor-b/*) and catchall
// (*/*, after them) are delegated; vendor-b 1.0.0 is installed. Then a new state:
// sc-ep 2.0.0 (targets), vendor-a 2.0.0, vendor-b 2.0.0, and catchall lists the
// same path vendor-b/vendor-b-2.0.0.tar.zst as its own "vendor-b 9.0.0" (vendor-b,
// ahead in the search, wins it while it verifies). vendor-b's new metadata has a
// broken signature: the refresh job fails naming the remote and vendor-b; sc-ep,
// vendor-a and catchall's misc are updated; vendor-b keeps its previous entry
// (1.0.0: not withdrawn, so not revoked; not replaced by its own unverified 2.0.0,
// nor by catchall's 9.0.0 at a path vendor-b was delegated first). Honest again,
// vendor-b's 2.0.0 shows.
TEST_F(DelegationAttackTest, AFailingDelegatedRoleAffectsOnlyItsOwnPackages) {
  start_repo();
  repo_->repo.pin_hashes = false;  // snapshot pins versions only: the signature is checked
  repo_->delegate("vendor-a", {"vendor-a/*"});
  repo_->delegate("vendor-b", {"vendor-b/*"});
  repo_->delegate("catchall", {"*/*"});
  repo_->add_package_as("vendor-a", "vendor-a", "vendor-a", "1.0.0");
  repo_->add_package_as("vendor-b", "vendor-b", "vendor-b", "1.0.0");
  repo_->add_package_as("catchall", "misc", "misc", "1.0.0");
  repo_->publish();
  refresh();
  install("vendor-b");
  EXPECT_EQ(str(provider("vendor-b"), "state"), "ready");

  repo_->add_package(kScEp, "2.0.0", 8 << 10);
  repo_->add_package_as("vendor-a", "vendor-a", "vendor-a", "2.0.0");
  repo_->add_package_as("vendor-b", "vendor-b", "vendor-b", "2.0.0");
  const std::string takeover = repo_->add_package_as("catchall", "vendor-b", "vendor-b", "9.0.0",
                                                     64 << 10, "vendor-b-2.0.0.tar.zst");
  repo_->add_package_as("catchall", "misc", "misc", "2.0.0");
  repo_->publish();
  const std::string honest = break_signature("vendor-b");

  const JobEnd end = finish_job(*conn_, broker_->RefreshCatalog());
  std::cout << "refresh: " << end.error << ": " << end.message << "\n";
  EXPECT_EQ(end.state, "failed");
  EXPECT_EQ(end.error, "org.epbroker.Error.VerificationFailed") << end.message;
  EXPECT_THAT(end.message, HasSubstr("remote vendor: delegated role vendor-b (paths vendor-b/*)"));
  EXPECT_THAT(end.message, HasSubstr("bad_signature"));
  EXPECT_THAT(bus_->log(), HasSubstr("delegated role vendor-b"));

  const auto lines = provider_lines(*broker_);
  EXPECT_THAT(lines, Contains("sc-ep 2.0.0 available vendor"));
  EXPECT_THAT(lines, Contains("vendor-a 2.0.0 available vendor"));
  EXPECT_THAT(lines, Contains("misc 2.0.0 available vendor"));
  EXPECT_THAT(lines, Contains("vendor-b 1.0.0 ready vendor"));
  const Dict b = provider("vendor-b");
  EXPECT_EQ(str(b, "update_available"), "");  // neither its 2.0.0 nor catchall's 9.0.0
  EXPECT_FALSE(requested(takeover));
  // Installs of the others go on; vendor-b's own needs its role.
  install("vendor-a");
  EXPECT_EQ(str(provider("vendor-a"), "version"), "2.0.0");

  // Honest again: vendor-b's new version shows, the job succeeds.
  repo_->write(served_role_file("vendor-b"), honest);
  refresh();
  EXPECT_EQ(str(provider("vendor-b"), "update_available"), "2.0.0");
  EXPECT_THAT(provider_lines(*broker_), Not(Contains(HasSubstr("vendor-b 9.0.0"))));
}

// The same with vendor-b failing before any refresh listed it: nothing of
// vendor-b is listed (there is no previous entry to keep), the rest is.
TEST_F(DelegationAttackTest, AFailingRoleOnTheFirstRefreshHidesOnlyItsPackages) {
  start_repo();
  repo_->repo.pin_hashes = false;
  repo_->delegate("vendor-a", {"vendor-a/*"});
  repo_->delegate("vendor-b", {"vendor-b/*"});
  repo_->add_package_as("vendor-a", "vendor-a", "vendor-a", "1.0.0");
  repo_->add_package_as("vendor-b", "vendor-b", "vendor-b", "1.0.0");
  repo_->publish();
  break_signature("vendor-b");

  const JobEnd end = finish_job(*conn_, broker_->RefreshCatalog());
  EXPECT_EQ(end.state, "failed");
  EXPECT_THAT(end.message, HasSubstr("delegated role vendor-b"));
  const auto lines = provider_lines(*broker_);
  EXPECT_THAT(lines, Contains("vendor-a 1.0.0 available vendor"));
  EXPECT_THAT(lines, Contains("sc-ep 1.0.0 available vendor"));
  EXPECT_THAT(lines, Not(Contains(HasSubstr("vendor-b"))));
  install("vendor-a");
}

}  // namespace
}  // namespace tests::daemon
