// NetworkManager's Metered (daemon/dbus/metered) against a stand-in
// NetworkManager on the private bus: network_metered() and metered_probe() on
// their own, then the daemon's automatic updates, which wait while the
// connection is metered (issue 16).
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>

#include "common/wire.hpp"
#include "daemon/dbus/metered.hpp"
#include "tests/daemon/integration/fixture.hpp"

namespace tests::daemon {
namespace {

using Clock = std::chrono::steady_clock;

// Owns org.freedesktop.NetworkManager on the private bus and exports its Metered.
class StandInNetworkManager {
 public:
  StandInNetworkManager(const PrivateBus& bus, std::uint32_t metered) : metered_(metered) {
    conn_ = bus.connect();
    object_ = sdbus::createObject(*conn_, epbrokerd::dbus::kNetworkManagerPath);
    object_->registerProperty("Metered")
        .onInterface(epbrokerd::dbus::kNetworkManagerInterface)
        .withGetter([this] { return metered_.load(); });
    object_->finishRegistration();
    conn_->requestName(epbrokerd::dbus::kNetworkManagerName);
  }
  void set(std::uint32_t metered) { metered_ = metered; }

 private:
  std::atomic<std::uint32_t> metered_;
  std::unique_ptr<sdbus::IConnection> conn_;
  std::unique_ptr<sdbus::IObject> object_;  // destroyed before conn_
};

TEST_F(BrokerTest, MeteredFollowsNetworkManager) {
  start({}, /*with_catalog=*/false);
  // No event loop on the caller's connection, as in the daemon's probe.
  auto caller = sdbus::createSessionBusConnectionWithAddress(bus_->address());
  const auto probe = epbrokerd::dbus::metered_probe(bus_->address());
  // No NetworkManager: not metered.
  EXPECT_FALSE(epbrokerd::dbus::network_metered(*caller));
  EXPECT_FALSE(probe());
  EXPECT_FALSE(epbrokerd::dbus::metered_probe("unix:path=/nonexistent/bus")());

  StandInNetworkManager nm(*bus_, 0);
  // NM_METERED: 0 unknown, 1 yes, 2 no, 3 guess-yes, 4 guess-no; others unknown.
  const std::vector<std::pair<std::uint32_t, bool>> cases = {
      {0, false}, {1, true}, {2, false}, {3, true}, {4, false}, {5, false}, {1, true}};
  for (const auto& [value, want] : cases) {
    SCOPED_TRACE("Metered=" + std::to_string(value));
    nm.set(value);
    EXPECT_EQ(epbrokerd::dbus::network_metered(*caller), want);
    EXPECT_EQ(probe(), want);
  }
}

TEST_F(BrokerTest, MeteredIsFalseWhenNetworkManagerMisbehaves) {
  start({}, /*with_catalog=*/false);
  auto caller = sdbus::createSessionBusConnectionWithAddress(bus_->address());
  {
    // The name, but not the object.
    auto conn = bus_->connect();
    conn->requestName(epbrokerd::dbus::kNetworkManagerName);
    EXPECT_FALSE(epbrokerd::dbus::network_metered(*caller));
    conn->releaseName(epbrokerd::dbus::kNetworkManagerName);
  }
  {
    // Metered of another type.
    auto conn = bus_->connect();
    auto object = sdbus::createObject(*conn, epbrokerd::dbus::kNetworkManagerPath);
    object->registerProperty("Metered")
        .onInterface(epbrokerd::dbus::kNetworkManagerInterface)
        .withGetter([] { return std::string("yes"); });
    object->finishRegistration();
    conn->requestName(epbrokerd::dbus::kNetworkManagerName);
    EXPECT_FALSE(epbrokerd::dbus::network_metered(*caller));
    conn->releaseName(epbrokerd::dbus::kNetworkManagerName);
  }
  {
    // The name, never answering (no event loop on its connection): the call
    // times out (400 ms), so the answer comes long before D-Bus's default of 25 s:
    // 5 s leaves room for a loaded machine under ASan.
    auto conn = sdbus::createSessionBusConnectionWithAddress(bus_->address());
    conn->requestName(epbrokerd::dbus::kNetworkManagerName);
    const auto t0 = Clock::now();
    EXPECT_FALSE(epbrokerd::dbus::network_metered(*caller));
    EXPECT_LT(Clock::now() - t0, 5s);
    conn->releaseName(epbrokerd::dbus::kNetworkManagerName);
  }
}

TEST_F(CatalogTest, AutomaticUpdatesWaitWhileMetered) {
  start();
  // Automatic updates install (the default, said here so that it stays tested).
  std::ofstream(bus_->config_dir() / "epbroker.conf", std::ios::app) << "auto_update = install\n";
  StandInNetworkManager nm(*bus_, 1);  // metered
  refresh();
  install(kTestEp);
  const std::string old_version = str(provider(kTestEp), common::key::version);
  const std::string new_version = "9.0.0";
  catalog_->publish_version(kTestEp, new_version);
  // Metered: the refresh sees the new version and leaves it.
  refresh();
  auto p = provider(kTestEp);
  EXPECT_EQ(str(p, common::key::version), old_version);
  EXPECT_EQ(str(p, common::key::update_available), new_version);
  EXPECT_NE(bus_->log().find("the connection is metered"), std::string::npos);
  // An admin's update is not held back: its dry run would move the package.
  const auto changes = broker_->Update({kTestEp}, {{common::key::dry_run, sdbus::Variant(true)}});
  ASSERT_EQ(changes.size(), 1U);
  EXPECT_EQ(str(changes[0], common::key::to), new_version);
  // Not metered any more (guess-no): the next refresh installs it.
  nm.set(4);
  refresh();
  EXPECT_TRUE(
      wait_until([&] { return str(provider(kTestEp), common::key::version) == new_version; }, 60s))
      << str(provider(kTestEp), common::key::version);
}

}  // namespace
}  // namespace tests::daemon
