// epbrokerd stopped in the middle of an install: SIGTERM during a (slow) download
// cancels the job, exits 0 and leaves the store as it was; SIGKILL during the
// download or during extraction leaves nothing that the next start does not clean
// up. Either way the next instance (activated by the next call) installs the same
// package, and every installed tree verifies.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/daemon/integration/fixture.hpp"

namespace tests::daemon {
namespace {

namespace fs = std::filesystem;

// Waits for `pid` to end and reaps it (the test process is the subreaper of the
// daemons its bus starts). Returns its exit status, 128 + N if killed by signal N,
// -1 if it did not end within `timeout`.
int wait_exit(pid_t pid, std::chrono::milliseconds timeout) {
  int code = -1;
  wait_until(
      [&] {
        int status = 0;
        if (waitpid(pid, &status, WNOHANG) != pid) return false;
        code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        return true;
      },
      timeout);
  return code;
}

std::vector<std::string> entries_of(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) out.push_back(e.path().filename());
  return out;
}

class StopTest : public CatalogTest {
 protected:
  fs::path staging() const { return bus_->state_dir() / "staging"; }

  // The remote "test" with its targets served slowly (80 KiB/s: bulk-ep takes about
  // a minute), or as usual. Read when the daemon next starts.
  void use_slow_targets(bool slow) {
    if (slow) {
      bus_->add_remote("test", catalog_->metadata_url(),
                       catalog_->fault_server().url("__trickle__/targets/"),
                       catalog_->trusted_root());
    } else {
      catalog_->add_to(*bus_);
    }
  }

  // Stops the running daemon with SIGTERM (it must exit 0); the next call activates
  // a new one, which reads the configuration again.
  void stop_daemon() {
    const auto pid = bus_->broker_pid();
    ASSERT_TRUE(pid.has_value());
    ASSERT_EQ(kill(*pid, SIGTERM), 0);
    EXPECT_EQ(wait_exit(*pid, 20s), 0) << "epbrokerd did not exit 0 on SIGTERM";
  }

  // test-ep installed (a tree that must survive what follows), then the daemon
  // restarted with the slow targets.
  void install_test_ep_then_slow_down() {
    refresh();
    install(kTestEp);
    use_slow_targets(true);
    stop_daemon();
  }

  // Starts installing bulk-ep and waits until its download has begun.
  std::string start_slow_install(JobLog& log) {
    const std::string job = broker_->EnsureProvider(kBulkEp);
    const bool downloading = wait_until(
        [&] {
          for (const auto& e : log.events(job)) {
            if (e.bytes_done && *e.bytes_done > 0) return true;
          }
          return false;
        },
        30s);
    EXPECT_TRUE(downloading) << "the download of " << kBulkEp << " never started";
    return job;
  }

  // Every installed version verifies, and nothing is left in staging/.
  void expect_store_clean() {
    for (const auto& r : broker_->Verify()) {
      EXPECT_TRUE(r.at("ok").get<bool>())
          << str(r, "name") << " " << str(r, "version") << ": " << str(r, "problem");
    }
    EXPECT_EQ(entries_of(staging()), std::vector<std::string>{});
  }
};

TEST_F(StopTest, SigtermDuringADownloadCancelsItExitsZeroAndTheNextInstanceInstalls) {
  start();
  install_test_ep_then_slow_down();
  JobLog log(*conn_);
  const std::string job = start_slow_install(log);
  const auto pid = bus_->broker_pid();
  ASSERT_TRUE(pid.has_value());

  ASSERT_EQ(kill(*pid, SIGTERM), 0);
  EXPECT_EQ(wait_exit(*pid, 20s), 0) << "epbrokerd did not exit 0 on SIGTERM mid-download";
  // The job was told, while the daemon still owned the name.
  const auto finished = log.finished(job);
  ASSERT_TRUE(finished.has_value()) << "no Finished for the cancelled job";
  EXPECT_EQ(*finished->state, "cancelled");
  EXPECT_EQ(finished->error, "org.epbroker.Error.Cancelled");
  // Nothing of bulk-ep in the store, nothing half-made anywhere.
  EXPECT_FALSE(fs::exists(bus_->store_dir() / kBulkEp));
  EXPECT_EQ(entries_of(staging()), std::vector<std::string>{});

  // The next call activates a new instance, which installs it (from the usual server).
  use_slow_targets(false);
  EXPECT_EQ(str(provider(kBulkEp), "state"), "available");
  install(kBulkEp);
  EXPECT_EQ(str(provider(kBulkEp), "state"), "ready");
  expect_store_clean();

  const std::string text = bus_->log();
  EXPECT_NE(text.find("SIGTERM received: stopping"), std::string::npos) << text;
  EXPECT_NE(text.find("cancelling 1 running job(s)"), std::string::npos);
  EXPECT_NE(text.find("install bulk-ep cancelled"), std::string::npos);
  EXPECT_NE(text.find("install bulk-ep done"), std::string::npos);
}

TEST_F(StopTest, SigkillDuringADownloadLeavesNothingBehind) {
  start();
  install_test_ep_then_slow_down();
  JobLog log(*conn_);
  start_slow_install(log);
  const auto pid = bus_->broker_pid();
  ASSERT_TRUE(pid.has_value());
  ASSERT_EQ(kill(*pid, SIGKILL), 0);
  EXPECT_EQ(wait_exit(*pid, 10s), 128 + SIGKILL);

  use_slow_targets(false);
  install(kBulkEp);  // activates a new instance
  expect_store_clean();
  EXPECT_EQ(str(provider(kTestEp), "state"), "ready");
}

// SIGKILL the moment the store creates its work directory in staging/ (seen with
// inotify), so the kill lands while the package is being extracted and sealed
// there: the commit helper doing it and the daemon, both (a power cut). After a
// restart: no staging leftovers, every tree verifies, and the install, repeated,
// completes.
TEST_F(StopTest, SigkillDuringExtractionIsRecoveredByTheNextStart) {
  start();
  refresh();
  install(kTestEp);
  const auto pid = bus_->broker_pid();
  ASSERT_TRUE(pid.has_value());
  const int inotify = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  ASSERT_GE(inotify, 0);
  ASSERT_GE(inotify_add_watch(inotify, staging().c_str(), IN_CREATE | IN_ONLYDIR), 0);

  const std::string job = broker_->EnsureProvider(kBulkEp);
  bool killed = false;
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (!killed && std::chrono::steady_clock::now() < deadline) {
    pollfd fd{inotify, POLLIN, 0};
    if (poll(&fd, 1, 100) <= 0) continue;
    alignas(inotify_event) char buf[4096];
    const ssize_t got = read(inotify, buf, sizeof buf);
    for (ssize_t at = 0; at < got && !killed;) {
      const auto* ev = reinterpret_cast<const inotify_event*>(buf + at);
      if (ev->len > 0 && std::string(ev->name).starts_with("install-")) {
        // The extraction runs in epbroker-commit, the daemon's child here: that child
        // only (PPid), not the helpers of tests running beside this one. The daemon
        // is stopped first, so that it starts no other child meanwhile.
        kill(*pid, SIGSTOP);
        for (const auto& p : fs::directory_iterator("/proc")) {
          std::ifstream comm(p.path() / "comm");
          std::string name;
          if (!std::getline(comm, name) || name != "epbroker-commit") continue;
          std::ifstream status(p.path() / "status");
          for (std::string line; std::getline(status, line);) {
            if (line.starts_with("PPid:") && std::stol(line.substr(5)) == *pid) {
              kill(std::stoi(p.path().filename().string()), SIGKILL);
            }
          }
        }
        kill(*pid, SIGKILL);
        killed = true;
      }
      at += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
    }
  }
  close(inotify);
  ASSERT_TRUE(killed) << "the store never began the install in staging/";
  EXPECT_EQ(wait_exit(*pid, 10s), 128 + SIGKILL);
  // What the kill left: the work directory (at least).
  EXPECT_FALSE(entries_of(staging()).empty());

  // Restart (the next call activates): staging emptied, trees intact; bulk-ep either
  // committed before the kill or not there at all, never half.
  const std::string state = str(provider(kBulkEp), "state");
  EXPECT_TRUE(state == "ready" || state == "available") << state;
  expect_store_clean();
  if (state == "available") {
    EXPECT_FALSE(fs::exists(bus_->store_dir() / kBulkEp));
  }
  install(kBulkEp);
  EXPECT_EQ(str(provider(kBulkEp), "state"), "ready");
  expect_store_clean();
}

}  // namespace
}  // namespace tests::daemon
