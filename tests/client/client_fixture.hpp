// The fixture of the libepbroker and epbrokerctl tests: the daemon integration
// fixture (tests/daemon/integration: a private bus that activates the built
// epbrokerd, a signed catalog on loopback) plus helpers for the client side.
#pragma once

#include <gtest/gtest.h>

#include <functional>
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
  // The daemon reports progress in 1/256 steps, so such a download shows no
  // bytes for hours: download_started() tells that it is under way.
  void serve_targets_slowly() {
    std::string targets = catalog_->targets_url();
    const std::string tail = "/targets/";
    ASSERT_TRUE(targets.ends_with(tail)) << targets;
    targets.replace(targets.size() - tail.size(), tail.size(), "/__slow__/targets/");
    bus_->add_remote("test", catalog_->metadata_url(), targets, catalog_->trusted_root());
  }

  // Whether the daemon has asked for package `name`'s file (the fault server
  // logs a request before it answers; the slow answer's first byte follows).
  bool download_started(const std::string& name) const {
    const std::string file = catalog_->target(name).target_path;
    const std::string suffix = file.substr(file.rfind('/') + 1);  // "<name>-<version>.tar.zst"
    return !catalog_->fault_server().requests(suffix).empty();
  }
};

// The Error `body` throws (Errc::protocol with a note if it throws none).
inline epbroker::Error error_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const epbroker::Error& e) {
    return e;
  }
  return epbroker::Error(epbroker::Errc::protocol, "no error thrown");
}

// The built binaries and files (compile definitions).
std::string epbrokerctl_path();
std::string session_holder_path();

}  // namespace tests::client
