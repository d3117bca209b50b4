// The fixture of the libepbroker and epbrokerctl tests: the daemon integration
// fixture (tests/daemon/integration: a private bus that activates the built
// epbrokerd, a signed catalog on loopback) plus helpers for the client side.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "epbroker/client.hpp"
#include "tests/daemon/integration/fixture.hpp"

namespace tests::client {

using namespace std::chrono_literals;
using tests::daemon::CatalogTest;
using tests::daemon::kBulkEp;
using tests::daemon::kForeignEp;
using tests::daemon::kTestEp;

class ClientTest : public CatalogTest {
 protected:
  // A client of this test's bus.
  epbroker::Client client() const { return epbroker::Client(epbroker::ClientOptions{address()}); }
  const std::string& address() const { return bus_->address(); }

  // After start(): serve the catalog's targets through the HTTP server's
  // /__slow__/ path (1 byte per second, no length), so a download stays in
  // progress until cancelled. Takes effect when the daemon starts (first call).
  void serve_targets_slowly() {
    std::string targets = catalog_->targets_url();
    const std::string tail = "/targets/";
    ASSERT_TRUE(targets.ends_with(tail)) << targets;
    targets.replace(targets.size() - tail.size(), tail.size(), "/__slow__/targets/");
    bus_->add_remote("test", catalog_->metadata_url(), targets, catalog_->trusted_root());
  }
};

// The built binaries and files (compile definitions).
std::string epbrokerctl_path();
std::string session_holder_path();

}  // namespace tests::client
