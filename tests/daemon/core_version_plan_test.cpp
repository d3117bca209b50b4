// The lifecycle's pure decisions (daemon/core/version_plan.hpp): which installed
// version is current, what each version is kept for or that it can go, and which
// version a session gets for an app's ONNX Runtime. Versions compare by value.
#include "daemon/core/version_plan.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace epbrokerd::core {
namespace {

using common::VersionRole;
using ::testing::HasSubstr;

catalog::Version V(std::string_view text) {
  auto v = catalog::parse_version(text);
  EXPECT_TRUE(v.has_value()) << text;
  return v ? *v : catalog::Version{};
}

// An installed, compatible, unleased version needing ORT `ort_min`.
InstalledVersion iv(std::string_view text, std::string_view ort_min = "1.20") {
  auto t = catalog::parse_version_text(text);
  EXPECT_TRUE(t.has_value()) << text;
  InstalledVersion out;
  if (t) out.version = *t;
  out.ort_min = V(ort_min);
  return out;
}

InstalledVersion leased(std::string_view text, std::size_t n) {
  auto v = iv(text);
  v.leases = n;
  return v;
}

InstalledVersion incompatible(std::string_view text) {
  auto v = iv(text);
  v.compatible = false;
  return v;
}

InstalledVersion pinned(std::string_view text) {
  auto v = iv(text);
  v.pinned = true;
  return v;
}

PackageLifecycle lifecycle(std::string current, std::vector<std::string> previous = {}) {
  PackageLifecycle lc;
  lc.current = std::move(current);
  lc.previous = std::move(previous);
  return lc;
}

PlanSettings keep(std::size_t n) {
  PlanSettings s;
  s.keep_versions = n;
  s.now = 1'700'000'000;
  return s;
}

// The plan's entry for `version`; fails the test if there is none.
VersionPlanEntry entry(const PackagePlan& plan, const std::string& version) {
  for (const auto& e : plan.versions) {
    if (e.version == version) return e;
  }
  ADD_FAILURE() << "no plan entry for " << version;
  VersionPlanEntry none;
  none.version = "(missing)";
  none.role = VersionRole::unused;
  return none;
}

std::vector<std::string> order(const PackagePlan& plan) {
  std::vector<std::string> out;
  for (const auto& e : plan.versions) out.push_back(e.version);
  return out;
}

std::string role(const PackagePlan& plan, const std::string& version) {
  return std::string(common::version_role_name(entry(plan, version).role));
}

// ---- current ---------------------------------------------------------------

TEST(VersionPlanCurrentTest, NoLifecycleNewestBySemverValueNotText) {
  // "1.9.0" > "1.10.0" as text; by value 1.10.0 is newer.
  for (const auto& installed :
       {std::vector{iv("1.9.0"), iv("1.10.0")}, std::vector{iv("1.10.0"), iv("1.9.0")}}) {
    const auto plan = plan_package(installed, {}, keep(1));
    EXPECT_EQ(plan.current, "1.10.0");
    EXPECT_EQ(order(plan), (std::vector<std::string>{"1.10.0", "1.9.0"}));
  }
}

TEST(VersionPlanCurrentTest, NoLifecycleNewerMinorWins) {
  for (const auto& installed :
       {std::vector{iv("1.2.0"), iv("1.3.0")}, std::vector{iv("1.3.0"), iv("1.2.0")}}) {
    EXPECT_EQ(plan_package(installed, {}, keep(1)).current, "1.3.0");
  }
}

TEST(VersionPlanCurrentTest, PreReleaseIsBeforeItsRelease) {
  for (const auto& installed :
       {std::vector{iv("1.3.0-rc1"), iv("1.3.0")}, std::vector{iv("1.3.0"), iv("1.3.0-rc1")}}) {
    const auto plan = plan_package(installed, {}, keep(1));
    EXPECT_EQ(plan.current, "1.3.0");
    EXPECT_EQ(order(plan), (std::vector<std::string>{"1.3.0", "1.3.0-rc1"}));
  }
  // A pre-release is still after the release before it.
  EXPECT_EQ(plan_package({iv("1.2.0"), iv("1.3.0-rc1")}, {}, keep(1)).current, "1.3.0-rc1");
}

TEST(VersionPlanCurrentTest, VersionsAreListedNewestFirst) {
  const auto plan =
      plan_package({iv("1.2.0"), iv("1.10.0"), iv("1.9.0"), iv("1.10.1")}, {}, keep(5));
  EXPECT_EQ(order(plan), (std::vector<std::string>{"1.10.1", "1.10.0", "1.9.0", "1.2.0"}));
}

TEST(VersionPlanCurrentTest, NoLifecycleOlderUsableVersionsCountAsPrevious) {
  // A store from before the lifecycle: the older usable ones are rollback
  // candidates, newest first.
  const auto plan = plan_package({iv("1.1.0"), iv("1.2.0"), iv("1.3.0")}, {}, keep(1));
  EXPECT_EQ(plan.current, "1.3.0");
  EXPECT_EQ(role(plan, "1.2.0"), "rollback");
  EXPECT_FALSE(entry(plan, "1.2.0").collect);
  EXPECT_EQ(role(plan, "1.1.0"), "unused");
  EXPECT_TRUE(entry(plan, "1.1.0").collect);
}

TEST(VersionPlanCurrentTest, RecordedUsableCurrentWinsOverNewerVersions) {
  // After a rollback from 1.3.0 to 1.2.0.
  const auto plan =
      plan_package({iv("1.2.0"), iv("1.3.0")}, lifecycle("1.2.0", {"1.3.0"}), keep(1));
  EXPECT_EQ(plan.current, "1.2.0");
  EXPECT_EQ(role(plan, "1.2.0"), "current");
  EXPECT_NE(role(plan, "1.3.0"), "current");
  EXPECT_FALSE(entry(plan, "1.3.0").collect);
}

TEST(VersionPlanCurrentTest, RevokedCurrentFallsBackToNewestUsableNotAboveIt) {
  auto lc = lifecycle("1.3.0", {"1.2.0", "1.1.0"});
  lc.revoked["1.3.0"] = "no trusted catalog lists it";
  const auto plan = plan_package({iv("1.1.0"), iv("1.2.0"), iv("1.3.0"), iv("1.4.0")}, lc, keep(1));
  EXPECT_EQ(plan.current, "1.2.0") << "not the newer 1.4.0";
  EXPECT_EQ(role(plan, "1.3.0"), "revoked");
  EXPECT_EQ(entry(plan, "1.3.0").reason, "no trusted catalog lists it");
}

TEST(VersionPlanCurrentTest, RevokedCurrentWithNothingBelowFallsBackToNewestUsable) {
  auto lc = lifecycle("1.3.0");
  lc.revoked["1.3.0"] = "gone";
  const auto plan = plan_package({iv("1.3.0"), iv("1.4.0")}, lc, keep(1));
  EXPECT_EQ(plan.current, "1.4.0");
}

TEST(VersionPlanCurrentTest, RemovingVersionIsNeverCurrent) {
  auto lc = lifecycle("1.3.0", {"1.2.0"});
  lc.removing = {"1.3.0"};
  auto plan = plan_package({iv("1.2.0"), iv("1.3.0")}, lc, keep(1));
  EXPECT_EQ(plan.current, "1.2.0");
  EXPECT_EQ(role(plan, "1.3.0"), "removing");

  // Nor the newest one when none is recorded.
  PackageLifecycle none;
  none.removing = {"1.3.0"};
  plan = plan_package({iv("1.2.0"), iv("1.3.0")}, none, keep(1));
  EXPECT_EQ(plan.current, "1.2.0");

  // All removing: no current at all.
  none.removing = {"1.2.0", "1.3.0"};
  EXPECT_EQ(plan_package({iv("1.2.0"), iv("1.3.0")}, none, keep(1)).current, "");
}

TEST(VersionPlanCurrentTest, IncompatibleVersionsAreNotUsable) {
  // Newest incompatible, none recorded.
  auto plan = plan_package({iv("1.2.0"), incompatible("1.3.0")}, {}, keep(1));
  EXPECT_EQ(plan.current, "1.2.0");
  EXPECT_NE(role(plan, "1.3.0"), "staged") << "staged needs a usable version";

  // Recorded current no longer compatible (a driver went away).
  plan = plan_package({iv("1.1.0"), iv("1.2.0"), incompatible("1.3.0"), iv("1.4.0")},
                      lifecycle("1.3.0", {"1.2.0"}), keep(1));
  EXPECT_EQ(plan.current, "1.2.0");

  // Nothing compatible: nothing current.
  EXPECT_EQ(plan_package({incompatible("1.2.0")}, {}, keep(1)).current, "");
}

TEST(VersionPlanCurrentTest, NothingInstalledMeansNoCurrent) {
  const auto plan = plan_package({}, lifecycle("1.3.0"), keep(1));
  EXPECT_EQ(plan.current, "");
  EXPECT_TRUE(plan.versions.empty());
}

// ---- roles and collect -----------------------------------------------------

std::vector<InstalledVersion> five() {
  return {iv("1.0.0"), iv("1.1.0"), iv("1.2.0"), iv("1.3.0"), iv("1.4.0")};
}
PackageLifecycle five_lifecycle() {
  return lifecycle("1.4.0", {"1.3.0", "1.2.0", "1.1.0", "1.0.0"});
}

TEST(VersionPlanRolesTest, KeepOneKeepsExactlyOneRollbackVersion) {
  const auto plan = plan_package(five(), five_lifecycle(), keep(1));
  EXPECT_EQ(plan.current, "1.4.0");
  EXPECT_EQ(role(plan, "1.4.0"), "current");
  EXPECT_FALSE(entry(plan, "1.4.0").collect);
  EXPECT_EQ(role(plan, "1.3.0"), "rollback");
  EXPECT_FALSE(entry(plan, "1.3.0").collect);
  for (const char* v : {"1.2.0", "1.1.0", "1.0.0"}) {
    EXPECT_EQ(role(plan, v), "unused") << v;
    EXPECT_TRUE(entry(plan, v).collect) << v;
  }
}

TEST(VersionPlanRolesTest, KeepZeroKeepsNoRollbackVersion) {
  const auto plan = plan_package(five(), five_lifecycle(), keep(0));
  EXPECT_EQ(role(plan, "1.4.0"), "current");
  for (const char* v : {"1.3.0", "1.2.0", "1.1.0", "1.0.0"}) {
    EXPECT_EQ(role(plan, v), "unused") << v;
    EXPECT_TRUE(entry(plan, v).collect) << v;
  }
}

TEST(VersionPlanRolesTest, KeepThreeKeepsThree) {
  const auto plan = plan_package(five(), five_lifecycle(), keep(3));
  for (const char* v : {"1.3.0", "1.2.0", "1.1.0"}) {
    EXPECT_EQ(role(plan, v), "rollback") << v;
    EXPECT_FALSE(entry(plan, v).collect) << v;
  }
  EXPECT_EQ(role(plan, "1.0.0"), "unused");
  EXPECT_TRUE(entry(plan, "1.0.0").collect);
}

TEST(VersionPlanRolesTest, RollbackFollowsPreviousOrderNotVersionOrder) {
  // 1.1.0 was current most recently before 1.4.0 (e.g. a downgrade, then an update).
  const auto plan = plan_package(five(), lifecycle("1.4.0", {"1.1.0", "1.3.0"}), keep(1));
  EXPECT_EQ(role(plan, "1.1.0"), "rollback");
  EXPECT_EQ(role(plan, "1.3.0"), "unused");
  EXPECT_TRUE(entry(plan, "1.3.0").collect);
}

TEST(VersionPlanRolesTest, RollbackSkipsUnusableAndMissingPreviousVersions) {
  // 1.3.0 revoked, 1.2.5 no longer installed: the first usable of previous is 1.2.0.
  auto lc = lifecycle("1.4.0", {"1.3.0", "1.2.5", "1.2.0", "1.1.0", "1.0.0"});
  lc.revoked["1.3.0"] = "revoked";
  const auto plan = plan_package(five(), lc, keep(1));
  EXPECT_EQ(role(plan, "1.3.0"), "revoked");
  EXPECT_EQ(role(plan, "1.2.0"), "rollback");
  EXPECT_FALSE(entry(plan, "1.2.0").collect);
  EXPECT_EQ(role(plan, "1.1.0"), "unused");
  EXPECT_TRUE(entry(plan, "1.1.0").collect);
}

TEST(VersionPlanRolesTest, LeasedUnusedVersionIsLeasedAndNotCollected) {
  auto installed = five();
  installed[0] = leased("1.0.0", 2);
  const auto plan = plan_package(installed, five_lifecycle(), keep(1));
  const auto e = entry(plan, "1.0.0");
  EXPECT_EQ(role(plan, "1.0.0"), "leased");
  EXPECT_EQ(e.leases, 2u);
  EXPECT_FALSE(e.collect);
  EXPECT_TRUE(entry(plan, "1.1.0").collect);
}

TEST(VersionPlanRolesTest, LeasedRollbackVersionKeepsRollbackRole) {
  auto installed = five();
  installed[3] = leased("1.3.0", 1);
  const auto plan = plan_package(installed, five_lifecycle(), keep(1));
  EXPECT_EQ(role(plan, "1.3.0"), "rollback");
  EXPECT_EQ(entry(plan, "1.3.0").leases, 1u);
}

TEST(VersionPlanRolesTest, PinnedVersionIsNeverCollected) {
  auto installed = five();
  installed[0] = pinned("1.0.0");
  auto plan = plan_package(installed, five_lifecycle(), keep(1));
  EXPECT_FALSE(entry(plan, "1.0.0").collect);
  EXPECT_TRUE(entry(plan, "1.1.0").collect);

  // Not even when it is removing or revoked with remove_revoked.
  auto lc = five_lifecycle();
  lc.removing = {"1.0.0"};
  plan = plan_package(installed, lc, keep(1));
  EXPECT_EQ(role(plan, "1.0.0"), "removing");
  EXPECT_FALSE(entry(plan, "1.0.0").collect);

  lc = five_lifecycle();
  lc.revoked["1.0.0"] = "revoked";
  auto s = keep(1);
  s.remove_revoked = true;
  plan = plan_package(installed, lc, s);
  EXPECT_EQ(role(plan, "1.0.0"), "revoked");
  EXPECT_FALSE(entry(plan, "1.0.0").collect);
}

TEST(VersionPlanRolesTest, RevokedIsCollectedOnlyWithRemoveRevokedAndUnleased) {
  auto lc = five_lifecycle();
  lc.revoked["1.1.0"] = "no trusted catalog lists it";
  lc.revoked["1.0.0"] = "no trusted catalog lists it";
  auto installed = five();
  installed[0] = leased("1.0.0", 1);

  auto s = keep(1);
  s.remove_revoked = false;
  auto plan = plan_package(installed, lc, s);
  EXPECT_EQ(role(plan, "1.1.0"), "revoked");
  EXPECT_FALSE(entry(plan, "1.1.0").collect);
  EXPECT_EQ(role(plan, "1.0.0"), "revoked");
  EXPECT_FALSE(entry(plan, "1.0.0").collect);

  s.remove_revoked = true;
  plan = plan_package(installed, lc, s);
  EXPECT_EQ(role(plan, "1.1.0"), "revoked");
  EXPECT_TRUE(entry(plan, "1.1.0").collect);
  EXPECT_EQ(role(plan, "1.0.0"), "revoked");
  EXPECT_FALSE(entry(plan, "1.0.0").collect) << "still leased";
}

TEST(VersionPlanRolesTest, RevokedTakesPrecedenceOverRollback) {
  auto lc = five_lifecycle();
  lc.revoked["1.3.0"] = "revoked";
  auto s = keep(1);
  s.remove_revoked = true;
  const auto plan = plan_package(five(), lc, s);
  EXPECT_EQ(role(plan, "1.3.0"), "revoked");
  EXPECT_TRUE(entry(plan, "1.3.0").collect);
}

TEST(VersionPlanRolesTest, RemovingIsCollectedWhenUnleased) {
  auto lc = five_lifecycle();
  lc.removing = {"1.3.0", "1.2.0"};
  lc.revoked["1.2.0"] = "also revoked";  // removing wins over revoked
  auto installed = five();
  installed[3] = leased("1.3.0", 1);
  const auto plan = plan_package(installed, lc, keep(3));
  EXPECT_EQ(role(plan, "1.3.0"), "removing");
  EXPECT_FALSE(entry(plan, "1.3.0").collect) << "leased";
  EXPECT_EQ(role(plan, "1.2.0"), "removing");
  EXPECT_TRUE(entry(plan, "1.2.0").collect) << "even without remove_revoked";
}

TEST(VersionPlanRolesTest, OlderOrtKeepsAVersionWithinTheWindowOnly) {
  auto s = keep(1);
  s.keep_for_older_ort = std::chrono::days(30);
  const std::int64_t day = 86400;
  auto lc = five_lifecycle();
  lc.older_ort["1.2.0"] = s.now - 10 * day;      // within
  lc.older_ort["1.1.0"] = s.now - 30 * day;      // exactly the window: no longer
  lc.older_ort["1.0.0"] = s.now - 30 * day + 1;  // one second inside
  const auto plan = plan_package(five(), lc, s);
  EXPECT_EQ(role(plan, "1.2.0"), "older_ort");
  EXPECT_FALSE(entry(plan, "1.2.0").collect);
  EXPECT_EQ(role(plan, "1.0.0"), "older_ort");
  EXPECT_FALSE(entry(plan, "1.0.0").collect);
  EXPECT_EQ(role(plan, "1.1.0"), "unused");
  EXPECT_TRUE(entry(plan, "1.1.0").collect);

  // Past the window.
  lc.older_ort["1.2.0"] = s.now - 31 * day;
  const auto later = plan_package(five(), lc, s);
  EXPECT_EQ(role(later, "1.2.0"), "unused");
  EXPECT_TRUE(entry(later, "1.2.0").collect);
}

TEST(VersionPlanRolesTest, RollbackTakesPrecedenceOverOlderOrt) {
  auto s = keep(1);
  auto lc = five_lifecycle();
  lc.older_ort["1.3.0"] = s.now;
  EXPECT_EQ(role(plan_package(five(), lc, s), "1.3.0"), "rollback");
}

TEST(VersionPlanRolesTest, UsableVersionAboveCurrentIsStagedNotCollected) {
  auto installed = five();
  installed.push_back(iv("1.5.0"));
  installed.push_back(iv("1.10.0"));
  const auto plan = plan_package(installed, five_lifecycle(), keep(1));
  EXPECT_EQ(plan.current, "1.4.0");
  for (const char* v : {"1.5.0", "1.10.0"}) {
    EXPECT_EQ(role(plan, v), "staged") << v;
    EXPECT_FALSE(entry(plan, v).collect) << v;
  }
}

TEST(VersionPlanRolesTest, RevokedOrIncompatibleAboveCurrentIsNotStaged) {
  auto installed = five();
  installed.push_back(iv("1.5.0"));
  installed.push_back(incompatible("1.6.0"));
  auto lc = five_lifecycle();
  lc.revoked["1.5.0"] = "revoked";
  const auto plan = plan_package(installed, lc, keep(1));
  EXPECT_EQ(role(plan, "1.5.0"), "revoked");
  EXPECT_NE(role(plan, "1.6.0"), "staged");
  EXPECT_NE(role(plan, "1.6.0"), "current");
}

TEST(VersionPlanRolesTest, CurrentIsNeverCollectedEvenWhenLeasedOrPinned) {
  auto installed = five();
  installed[4] = leased("1.4.0", 3);
  const auto plan = plan_package(installed, five_lifecycle(), keep(0));
  EXPECT_EQ(role(plan, "1.4.0"), "current");
  EXPECT_FALSE(entry(plan, "1.4.0").collect);
  EXPECT_EQ(entry(plan, "1.4.0").leases, 3u);
}

TEST(VersionPlanRolesTest, EveryEntryHasAReason) {
  auto installed = five();
  installed.push_back(iv("1.5.0"));
  installed[0] = leased("1.0.0", 1);
  auto lc = five_lifecycle();
  lc.removing = {"1.1.0"};
  const auto plan = plan_package(installed, lc, keep(1));
  ASSERT_EQ(plan.versions.size(), installed.size());
  for (const auto& e : plan.versions) EXPECT_FALSE(e.reason.empty()) << e.version;
}

// ---- successive updates ----------------------------------------------------

void successive_updates(std::size_t keep_versions) {
  SCOPED_TRACE("keep_versions " + std::to_string(keep_versions));
  std::vector<InstalledVersion> installed;
  PackageLifecycle lc;
  const auto s = keep(keep_versions);
  for (int n = 1; n <= 20; ++n) {
    const std::string version = "1." + std::to_string(n) + ".0";
    installed.push_back(iv(version));
    lc.make_current(version);
    const auto plan = plan_package(installed, lc, s);
    ASSERT_EQ(plan.current, version);
    ASSERT_EQ(plan.versions.size(), installed.size());
    std::erase_if(installed,
                  [&](const InstalledVersion& v) { return entry(plan, v.version.text).collect; });
    EXPECT_LE(installed.size(), keep_versions + 1) << "after round " << n;
  }
  EXPECT_LE(installed.size(), keep_versions + 1);
  EXPECT_EQ(installed.size(), keep_versions + 1) << "current plus keep_versions rollback";
  // The survivors are the newest ones.
  for (const auto& v : installed) {
    EXPECT_GE(v.version.value, V("1." + std::to_string(20 - keep_versions) + ".0"))
        << v.version.text;
  }
}

TEST(VersionPlanUpdatesTest, TwentyUpdatesLeaveAtMostKeepPlusOneTrees) {
  successive_updates(1);
  successive_updates(3);
  successive_updates(0);
}

// ---- grant_version ---------------------------------------------------------

GrantChoice grant(const std::vector<InstalledVersion>& installed, const PackageLifecycle& lc,
                  std::optional<std::string_view> app_ort) {
  const auto plan = plan_package(installed, lc, keep(1));
  std::optional<catalog::Version> ort;
  if (app_ort) ort = V(*app_ort);
  return grant_version(installed, lc, plan, ort);
}

std::vector<InstalledVersion> ort_split() {
  // 1.3.0 needs ORT 1.30, 1.2.0 needs 1.29.
  return {iv("1.2.0", "1.29"), iv("1.3.0", "1.30")};
}

TEST(VersionPlanGrantTest, NoAppOrtGetsCurrent) {
  const auto g = grant(ort_split(), lifecycle("1.3.0", {"1.2.0"}), std::nullopt);
  EXPECT_EQ(g.version, "1.3.0");
  EXPECT_FALSE(g.for_older_ort);
  EXPECT_EQ(g.reason, "");
}

TEST(VersionPlanGrantTest, RecentEnoughOrtGetsCurrent) {
  for (const char* ort : {"1.30", "1.30.0", "1.31.2", "2.0"}) {
    const auto g = grant(ort_split(), lifecycle("1.3.0", {"1.2.0"}), ort);
    EXPECT_EQ(g.version, "1.3.0") << ort;
    EXPECT_FALSE(g.for_older_ort) << ort;
  }
}

TEST(VersionPlanGrantTest, OlderOrtGetsTheOlderVersionItCanLoad) {
  const auto g = grant(ort_split(), lifecycle("1.3.0", {"1.2.0"}), "1.29");
  EXPECT_EQ(g.version, "1.2.0");
  EXPECT_TRUE(g.for_older_ort);
  EXPECT_EQ(g.reason, "");
}

TEST(VersionPlanGrantTest, NewestEligibleOlderVersionIsChosen) {
  std::vector installed{iv("1.1.0", "1.28"), iv("1.2.0", "1.29"), iv("1.2.1", "1.29"),
                        iv("1.3.0", "1.30")};
  const auto g = grant(installed, lifecycle("1.3.0"), "1.29.5");
  EXPECT_EQ(g.version, "1.2.1");
  EXPECT_TRUE(g.for_older_ort);
}

TEST(VersionPlanGrantTest, OrtComparedByValueNotText) {
  // "1.9" > "1.10" as text: an app with ORT 1.9 cannot load a version needing 1.10.
  std::vector installed{iv("1.2.0", "1.9"), iv("1.3.0", "1.10")};
  const auto g = grant(installed, lifecycle("1.3.0"), "1.9");
  EXPECT_EQ(g.version, "1.2.0");
  EXPECT_TRUE(g.for_older_ort);
}

TEST(VersionPlanGrantTest, OrtTooOldForAllGetsNoneWithAReason) {
  const auto g = grant(ort_split(), lifecycle("1.3.0", {"1.2.0"}), "1.28");
  EXPECT_EQ(g.version, "");
  EXPECT_FALSE(g.for_older_ort);
  EXPECT_THAT(g.reason, HasSubstr("needs ONNX Runtime"));
}

TEST(VersionPlanGrantTest, NeverAboveCurrent) {
  // A staged 1.4.0 that the app's ORT could load is not granted.
  auto installed = ort_split();
  installed.push_back(iv("1.4.0", "1.20"));
  const auto lc = lifecycle("1.3.0", {"1.2.0"});
  ASSERT_EQ(plan_package(installed, lc, keep(1)).current, "1.3.0");
  auto g = grant(installed, lc, "1.29");
  EXPECT_EQ(g.version, "1.2.0");
  g = grant(installed, lc, "1.25");
  EXPECT_EQ(g.version, "") << "1.4.0 is staged, not granted";
  EXPECT_THAT(g.reason, HasSubstr("needs ONNX Runtime"));
}

TEST(VersionPlanGrantTest, NeverAboveCurrentAfterRollback) {
  // Rolled back to 1.2.0; 1.3.0 remains installed and loadable by every ORT.
  std::vector installed{iv("1.2.0", "1.30"), iv("1.3.0", "1.20")};
  const auto lc = lifecycle("1.2.0", {"1.3.0"});
  auto g = grant(installed, lc, std::nullopt);
  EXPECT_EQ(g.version, "1.2.0");
  g = grant(installed, lc, "1.25");
  EXPECT_EQ(g.version, "");
}

TEST(VersionPlanGrantTest, RevokedRemovingAndIncompatibleAreNeverGranted) {
  std::vector installed{iv("1.0.0", "1.27"), iv("1.1.0", "1.28"), iv("1.2.0", "1.29"),
                        iv("1.3.0", "1.30")};
  auto lc = lifecycle("1.3.0", {"1.2.0", "1.1.0", "1.0.0"});

  lc.revoked["1.2.0"] = "revoked";
  EXPECT_EQ(grant(installed, lc, "1.29").version, "1.1.0");

  lc.removing = {"1.1.0"};
  EXPECT_EQ(grant(installed, lc, "1.29").version, "1.0.0");

  installed[0].compatible = false;
  auto g = grant(installed, lc, "1.29");
  EXPECT_EQ(g.version, "");
  EXPECT_THAT(g.reason, HasSubstr("needs ONNX Runtime"));
}

TEST(VersionPlanGrantTest, RevokedCurrentGrantsTheFallback) {
  auto lc = lifecycle("1.3.0", {"1.2.0"});
  lc.revoked["1.3.0"] = "revoked";
  const auto g = grant(ort_split(), lc, std::nullopt);
  EXPECT_EQ(g.version, "1.2.0");
  EXPECT_FALSE(g.for_older_ort) << "1.2.0 is the plan's current";
  EXPECT_EQ(grant(ort_split(), lc, "1.29").version, "1.2.0");
}

TEST(VersionPlanGrantTest, NoUsableVersionGrantsNothing) {
  auto lc = lifecycle("1.3.0", {"1.2.0"});
  lc.revoked["1.3.0"] = "revoked";
  lc.removing = {"1.2.0"};
  for (const std::optional<std::string_view> ort :
       {std::optional<std::string_view>{}, std::optional<std::string_view>{"1.30"}}) {
    const auto g = grant(ort_split(), lc, ort);
    EXPECT_EQ(g.version, "");
    EXPECT_FALSE(g.for_older_ort);
    EXPECT_FALSE(g.reason.empty());
  }
  const auto none = grant({}, {}, std::nullopt);
  EXPECT_EQ(none.version, "");
  EXPECT_FALSE(none.reason.empty());
}

}  // namespace
}  // namespace epbrokerd::core
