// Jobs (monotone progress, final states, single-flight lookup, pruning) and the
// session registry (owner-only release, per-client cap, owner vanishing).
#include <gtest/gtest.h>

#include <thread>

#include "daemon/core/authorizer.hpp"
#include "daemon/core/job.hpp"
#include "daemon/core/session_registry.hpp"

namespace epbrokerd::core {
namespace {

RequestContext ctx(const char* sender, uid_t uid = 1000) { return RequestContext{uid, sender}; }

TEST(JobTest, ProgressIsMonotoneAndFinalStatesStick) {
  std::vector<JobSnapshot> seen;
  JobTable table([&](const JobSnapshot& s) { seen.push_back(s); });
  auto job = table.create(JobKind::install, "test-ep", ctx(":1.1"));
  job->set_state(JobState::downloading);
  job->set_progress(10, 100);
  job->set_progress(5, 100);  // would go backwards: ignored
  job->set_progress(100, 100);
  job->succeed();
  job->fail({Errc::Network, "late"});    // after done: ignored
  job->set_state(JobState::installing);  // after done: ignored
  const auto s = job->snapshot();
  EXPECT_EQ(s.state, JobState::done);
  EXPECT_EQ(s.bytes_done, 100U);
  EXPECT_FALSE(s.error.has_value());
  std::uint64_t last = 0;
  for (const auto& snap : seen) {
    EXPECT_GE(snap.bytes_done, last);
    last = snap.bytes_done;
  }
  EXPECT_EQ(seen.back().state, JobState::done);
}

TEST(JobTest, CancelledFailureIsCancelledState) {
  JobTable table({});
  auto job = table.create(JobKind::refresh, "", ctx(":1.1"));
  job->request_cancel();
  EXPECT_TRUE(job->cancel_requested());
  job->fail({Errc::Cancelled, "cancelled by :1.1"});
  EXPECT_EQ(job->snapshot().state, JobState::cancelled);
}

TEST(JobTableTest, FindsTheActiveInstallOfAPackageOnly) {
  JobTable table({});
  auto a = table.create(JobKind::install, "a", ctx(":1.1"));
  table.create(JobKind::install, "b", ctx(":1.2"));
  EXPECT_EQ(table.find_active(JobKind::install, "a"), a);
  EXPECT_EQ(table.find_active(JobKind::refresh, "a"), nullptr);
  EXPECT_EQ(table.active_count(), 2U);
  EXPECT_EQ(table.active_count_for(":1.1"), 1U);
  a->succeed();
  EXPECT_EQ(table.find_active(JobKind::install, "a"), nullptr);
  EXPECT_EQ(table.find(a->id()), a);
  EXPECT_EQ(table.prune(0), std::vector<std::uint64_t>{a->id()});
  EXPECT_EQ(table.find(a->id()), nullptr);
}

TEST(SessionRegistryTest, OnlyTheOwnerReleasesAndLeasesAreReturned) {
  std::vector<std::string> released;
  SessionRegistry reg(4, [&](const SessionInfo& s) {
    released.insert(released.end(), s.leases.begin(), s.leases.end());
  });
  auto id = reg.open(ctx(":1.5"), {"test-ep/0.1.0"});
  ASSERT_TRUE(id);
  auto other = reg.release(ctx(":1.6"), *id);
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().code, Errc::NotFound);
  EXPECT_TRUE(released.empty());
  ASSERT_TRUE(reg.release(ctx(":1.5"), *id));
  EXPECT_EQ(released, std::vector<std::string>{"test-ep/0.1.0"});
  EXPECT_FALSE(reg.release(ctx(":1.5"), *id));  // twice: gone
}

TEST(SessionRegistryTest, PerClientCapAndOwnerVanishing) {
  int released = 0;
  SessionRegistry reg(2, [&](const SessionInfo&) { ++released; });
  ASSERT_TRUE(reg.open(ctx(":1.7"), {}));
  ASSERT_TRUE(reg.open(ctx(":1.7"), {}));
  auto third = reg.open(ctx(":1.7"), {});
  ASSERT_FALSE(third);
  EXPECT_EQ(third.error().code, Errc::Busy);
  ASSERT_TRUE(reg.open(ctx(":1.8"), {}));  // another client is not affected
  EXPECT_EQ(reg.owner_vanished(":1.7").size(), 2U);
  EXPECT_EQ(released, 2);
  EXPECT_EQ(reg.count(), 1U);
  EXPECT_EQ(reg.count_for(":1.8"), 1U);
}

TEST(UidAuthorizerTest, RootAndListedUidsOnly) {
  UidAuthorizer auth({1234});
  EXPECT_TRUE(auth.check(ctx(":1.1", 0), Action::manage));
  EXPECT_TRUE(auth.check(ctx(":1.1", 1234), Action::install));
  auto no = auth.check(ctx(":1.1", 1000), Action::manage);
  ASSERT_FALSE(no);
  EXPECT_EQ(no.error().code, Errc::NotAuthorized);
  EXPECT_NE(no.error().message.find("org.epbroker.manage"), std::string::npos);
}

}  // namespace
}  // namespace epbrokerd::core
