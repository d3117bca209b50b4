// A remote that fails, seen by the daemon on a private bus (issue 17, items 9 and 10):
//   - activating the daemon again and again does not ask a failing remote again at
//     each start: the automatic refresh backs off, and the backoff outlives the
//     instance (state/refresh.json); an admin's RefreshCatalog still runs, and its
//     success ends the backoff;
//   - what a failed job shows every bus client (ErrorMessage) carries no byte the
//     remote served (the journal has them);
//   - a redirect to a host the remote does not list is refused before that host
//     is asked, and named by its origin only.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "tests/daemon/integration/fixture.hpp"
#include "tests/daemon/integration/hostile_repo.hpp"
#include "tests/support/http_server.hpp"
#include "tests/support/temp_dir.hpp"

namespace tests::daemon {
namespace {

using namespace std::chrono_literals;

constexpr const char* kSecret = "AKIA-internal-9f3c";

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

bool contains(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

class RemoteFailuresTest : public CatalogTest {
 protected:
  // Points remote "test" at `metadata` and `targets` (the catalog's trusted root),
  // with `extra` lines, and one fetch round (no retries: fewer requests to count).
  void use_remote(const std::string& metadata, const std::string& targets,
                  const std::string& extra = "") {
    bus_->add_remote("test", metadata, targets, catalog_->trusted_root());
    std::ofstream(bus_->config_dir() / "remotes.d/test.conf", std::ios::app) << extra;
  }
  void one_fetch_round() {
    std::ofstream(bus_->config_dir() / "epbroker.conf", std::ios::app) << "fetch_attempts = 1\n";
  }
  std::string error_message(const std::string& job) {
    return job_property(*conn_, job, "ErrorMessage").get<std::string>();
  }
  std::string refresh_json() const {
    std::ifstream in(bus_->state_dir() / "refresh.json");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  support::TempDir served_;
  support::HttpServer failing_{served_.path()};
};

// Item 10. Every bus client can activate the daemon (a property read is enough),
// and each start used to refresh at once while the last refresh had failed.
TEST_F(RemoteFailuresTest, AFailingRemoteIsNotAskedAgainAtEachActivation) {
  PrivateBusOptions o;
  o.refresh_interval_sec = 3600;
  o.idle_timeout_sec = 1;
  start(o);
  use_remote(failing_.url("__status__/500/metadata/"), failing_.url("__status__/500/targets/"));
  one_fetch_round();

  // 1. First activation: never refreshed, so one starts; it fails; the daemon
  //    leaves when idle (so the refresh job has ended).
  EXPECT_EQ(broker_->CatalogRevision(), 0u);
  ASSERT_TRUE(wait_until([&] { return !bus_->broker_running(); }, 20s)) << "never went idle";
  ASSERT_TRUE(bus_->wait_daemons_gone(10s));
  const std::size_t asked = failing_.requests().size();
  ASSERT_GT(asked, 0u) << "the first instance did not refresh";
  EXPECT_EQ(count(bus_->log(), "catalog refresh due"), 1u) << bus_->log();
  EXPECT_TRUE(contains(refresh_json(), "\"failures\": 1")) << refresh_json();

  // 2. Activated again, twice: within the backoff, nothing is asked of the remote.
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(broker_->CatalogRevision(), 0u);
    ASSERT_TRUE(wait_until([&] { return broker_->DaemonState() == "idle"; }, 5s));
    ASSERT_TRUE(wait_until([&] { return !bus_->broker_running(); }, 15s)) << "never went idle";
    ASSERT_TRUE(bus_->wait_daemons_gone(10s));
  }
  EXPECT_EQ(failing_.requests().size(), asked) << bus_->log();
  EXPECT_EQ(count(bus_->log(), "catalog refresh due"), 1u) << bus_->log();
  EXPECT_TRUE(contains(bus_->log(), "automatic catalog refresh: 1 in a row not successful"))
      << bus_->log();

  // 3. The remote is healthy again. An admin's RefreshCatalog runs at once (no
  //    backoff for it) and its success ends the backoff.
  catalog_->add_to(*bus_);
  refresh();
  ASSERT_TRUE(wait_until([&] { return contains(refresh_json(), "\"failures\": 0"); }, 10s))
      << refresh_json() << bus_->log();
  EXPECT_GT(broker_->CatalogRevision(), 0u);
}

// Item 9: bytes a remote served, quoted by the check they failed, are not shown to
// bus clients; the journal has them. Also: an error page's body is never quoted.
TEST_F(RemoteFailuresTest, AFailedJobShowsNoServedBytesToBusClients) {
  start();
  one_fetch_round();
  // The next root (2.root.json) as an internal service might answer: JSON whose
  // duplicate key the parser names.
  const std::string page = std::string("{\"") + kSecret + "\": 1, \"" + kSecret + "\": 2}";
  support::write_file(served_ / "m/2.root.json", page);
  support::write_file(served_ / "m/timestamp.json", page);

  use_remote(failing_.url("m/"), failing_.url("t/"));
  std::string job = broker_->RefreshCatalog();
  ASSERT_EQ(wait_job(*conn_, job), "failed");
  std::string shown = error_message(job);
  EXPECT_EQ(job_property(*conn_, job, "Error").get<std::string>(),
            "org.epbroker.Error.VerificationFailed");
  EXPECT_TRUE(contains(shown, "remote test: ")) << shown;
  EXPECT_TRUE(contains(shown, "duplicate key")) << shown;
  EXPECT_FALSE(contains(shown, kSecret)) << shown;
  ASSERT_TRUE(wait_until([&] { return contains(bus_->log(), kSecret); }, 5s))
      << "not in the journal either:\n"
      << bus_->log();

  // The same bytes as the body of a 500: not shown (nor read).
  use_remote(failing_.url("__status_file__/500/m/"), failing_.url("t/"));
  restart_daemon(*bus_);
  job = broker_->RefreshCatalog();
  ASSERT_EQ(wait_job(*conn_, job), "failed");
  shown = error_message(job);
  EXPECT_EQ(job_property(*conn_, job, "Error").get<std::string>(), "org.epbroker.Error.Network");
  EXPECT_TRUE(contains(shown, "HTTP status 500")) << shown;
  EXPECT_FALSE(contains(shown, kSecret)) << shown;
}

// Item 9: a remote's server redirecting the daemon to another host (one on the
// daemon's network, say) is refused unless the remote lists that host.
TEST_F(RemoteFailuresTest, ARedirectToAnUnlistedHostIsRefusedBeforeItIsAsked) {
  start();
  one_fetch_round();
  support::HttpServer other(catalog_->repo_dir(), {.bind = "127.0.0.2"});
  const std::string origin = "http://127.0.0.2:" + std::to_string(other.port());
  // Every metadata file redirects to the same file on the other host (the target
  // has no trailing '/': the configuration adds one, the file name follows).
  const std::string metadata =
      failing_.url("__redirect__/" + support::url_encode(other.url("metadata")));
  use_remote(metadata, catalog_->targets_url());
  const std::string job = broker_->RefreshCatalog();
  ASSERT_EQ(wait_job(*conn_, job), "failed");
  EXPECT_EQ(job_property(*conn_, job, "Error").get<std::string>(), "org.epbroker.Error.Network");
  EXPECT_TRUE(contains(error_message(job), "redirect to " + origin + " refused"))
      << error_message(job);
  EXPECT_TRUE(other.requests().empty()) << "the unlisted host was asked";

  // Listed: the same redirects are followed, and the refresh verifies what it got.
  use_remote(metadata, catalog_->targets_url(),
             "redirect_hosts = 127.0.0.2:" + std::to_string(other.port()) + "\n");
  restart_daemon(*bus_);
  refresh();
  EXPECT_FALSE(other.requests().empty());
}

}  // namespace
}  // namespace tests::daemon
