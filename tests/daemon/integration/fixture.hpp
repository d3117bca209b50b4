// The GoogleTest fixture shared by the daemon integration tests: a TestCatalog
// served on loopback, a PrivateBus whose configuration names it, and one client
// connection with a Broker1 proxy. Nothing is activated until the first call.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <iostream>
#include <memory>

#include "tests/daemon/integration/broker_client.hpp"
#include "tests/daemon/integration/private_bus.hpp"
#include "tests/daemon/integration/test_catalog.hpp"

namespace tests::daemon {

class BrokerTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (HasFailure() && bus_) std::cerr << "---- bus.log ----\n" << bus_->log() << "----\n";
    broker_.reset();
    conn_.reset();
    bus_.reset();
    catalog_.reset();
  }

  // Starts the bus (and the catalog when `with_catalog`, unless the test made
  // its own in catalog_); the daemon is not running.
  void start(PrivateBusOptions options = {}, bool with_catalog = true) {
    if (with_catalog && !catalog_) catalog_ = std::make_unique<TestCatalog>();
    bus_ = std::make_unique<PrivateBus>(std::move(options));
    if (catalog_) catalog_->add_to(*bus_);
    conn_ = bus_->connect();
    broker_ = std::make_unique<BrokerProxy>(*conn_);
  }

  // RefreshCatalog, waited for; fails the test unless it ends "done".
  void refresh() {
    const std::string job = broker_->RefreshCatalog();
    ASSERT_EQ(wait_job(*conn_, job), "done")
        << job_property(*conn_, job, "ErrorMessage").get<std::string>();
  }

  // EnsureProvider(name), waited for; fails the test unless it ends "done".
  void install(const std::string& name) {
    const std::string job = broker_->EnsureProvider(name);
    ASSERT_EQ(wait_job(*conn_, job), "done")
        << job_property(*conn_, job, "ErrorMessage").get<std::string>();
  }

  // The provider `name` as ListProviders reports it now.
  Dict provider(const std::string& name) {
    auto p = find_named(broker_->ListProviders(), name);
    if (!p) {
      ADD_FAILURE() << "ListProviders has no " << name;
      return {};
    }
    return *p;
  }

  std::unique_ptr<TestCatalog> catalog_;
  std::unique_ptr<PrivateBus> bus_;
  std::unique_ptr<sdbus::IConnection> conn_;
  std::unique_ptr<BrokerProxy> broker_;
};

// For tests that refresh, install or remove: the daemon's authorizer (UidAuthorizer
// until polkit) lets only root do that.
class CatalogTest : public BrokerTest {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "only root may refresh, install and remove";
  }
};

}  // namespace tests::daemon
