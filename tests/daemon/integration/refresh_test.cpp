// Automatic catalog refresh (daemon.refresh_interval_sec): a daemon that never
// refreshed does so by itself on its first start; one activated again within the
// interval does not (the last refresh is read back from the state dir).
#include <gtest/gtest.h>

#include <string>

#include "tests/daemon/integration/fixture.hpp"

namespace tests::daemon {
namespace {

using namespace std::chrono_literals;

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

TEST_F(CatalogTest, RefreshesByItselfWhenDueAndNotAgainWithinTheInterval) {
  PrivateBusOptions o;
  o.refresh_interval_sec = 3600;
  o.idle_timeout_sec = 1;
  start(o);

  // 1. First activation: no refresh ever, so one starts without RefreshCatalog (the
  // log's "catalog refresh due" below says it was the daemon's own; whether this first
  // call is answered before or after it ends is a race, so it is not asserted).
  ASSERT_TRUE(wait_until([&] { return broker_->CatalogRevision() > 0; }, 20s)) << bus_->log();
  EXPECT_EQ(str(provider(kTestEp), "state"), "available");
  EXPECT_EQ(count(bus_->log(), "catalog refresh due"), 1u);

  // 2. Idle exit, then a new instance: the catalog is an hour fresh, no refresh.
  ASSERT_TRUE(wait_until([&] { return !bus_->broker_running(); }, 15s)) << "never went idle";
  ASSERT_TRUE(bus_->wait_daemons_gone(10s));
  const auto revision = broker_->CatalogRevision();  // activates the second instance
  EXPECT_GT(revision, 0u);
  ASSERT_TRUE(wait_until([&] { return !bus_->broker_running(); }, 15s)) << "never went idle";
  EXPECT_EQ(count(bus_->log(), "catalog refresh due"), 1u) << bus_->log();
}

TEST_F(CatalogTest, NoAutomaticRefreshWhenTheIntervalIsZero) {
  PrivateBusOptions o;  // refresh_interval_sec = 0
  start(o);
  EXPECT_EQ(broker_->CatalogRevision(), 0u);
  // The daemon has answered (it is running); the main loop ran its first round.
  ASSERT_TRUE(wait_until([&] { return broker_->DaemonState() == "idle"; }, 5s));
  EXPECT_EQ(broker_->CatalogRevision(), 0u);
  EXPECT_EQ(count(bus_->log(), "catalog refresh due"), 0u);
}

}  // namespace
}  // namespace tests::daemon
