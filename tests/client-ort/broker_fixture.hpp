// A live broker for the ORT glue tests: a signed catalog served on loopback with
//
//   test-ep      0.1.0   the real test-ep package (EPBROKER_TEST_EP_PACKAGE; ort_min 1.29.0)
//   onnxruntime  1.30.0  the shared-runtime package (EPBROKER_ORT_RUNTIME_PACKAGE, kind runtime)
//   future-ep    0.1.0   test-ep's library again, with ort_min 99.0.0: no ORT can register it
//
// and a private dbus-daemon that activates the built epbrokerd (see
// tests/daemon/integration/private_bus.hpp). Refreshing and installing need root
// (the daemon's policy without polkit): BrokerTest skips otherwise.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>

#include "epbroker/client.hpp"
#include "tests/daemon/integration/private_bus.hpp"
#include "tests/support/http_server.hpp"
#include "tests/support/temp_dir.hpp"

namespace tests::client_ort {

inline constexpr const char* kTestEp = "test-ep";
inline constexpr const char* kTestEpName = "EpbrokerTestEp";
inline constexpr const char* kRuntime = "onnxruntime";
inline constexpr const char* kFutureEp = "future-ep";

// The catalog above, signed and served (throws std::runtime_error on failure).
class GlueCatalog {
 public:
  GlueCatalog();
  void add_to(tests::daemon::PrivateBus& bus) const;

 private:
  support::TempDir tmp_;
  std::unique_ptr<support::HttpServer> server_;
};

class BrokerTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // A client of the private bus, the catalog refreshed.
  epbroker::Client& client() { return *client_; }
  const std::string& bus_address() const { return bus_->address(); }
  // ensure_ready(name), failing the test on error.
  void install(const std::string& name);

  std::unique_ptr<GlueCatalog> catalog_;
  std::unique_ptr<tests::daemon::PrivateBus> bus_;
  std::unique_ptr<epbroker::Client> client_;
};

}  // namespace tests::client_ort
