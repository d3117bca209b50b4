// Cancelling a C API wait (epbroker_cancel) while a download stays in progress: from
// another thread, and from a real signal handler that interrupts the waiting thread.
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "epbroker/epbroker.h"
#include "tests/client/c_api_fixture.hpp"

namespace tests::client {
namespace {

namespace fs = std::filesystem;

using capi::last_error;

// The states the progress callback saw; `user` is a std::vector<epbroker_job_state>.
void record_state(const epbroker_progress* p, void* user) {
  static_cast<std::vector<epbroker_job_state>*>(user)->push_back(epbroker_progress_state(p));
}

// What the signal handler cancels (lock-free atomics: async-signal-safe).
std::atomic<epbroker_cancel*> g_cancel{nullptr};
std::atomic<int> g_handled{0};
static_assert(std::atomic<epbroker_cancel*>::is_always_lock_free);
static_assert(std::atomic<int>::is_always_lock_free);

void on_signal(int) {
  epbroker_cancel_trigger(g_cancel.load());
  g_handled.store(1);
}

class CApiCancelTest : public ClientTest {
 protected:
  struct Deleter {
    void operator()(epbroker_client* c) const { epbroker_client_free(c); }
    void operator()(epbroker_cancel* c) const { epbroker_cancel_free(c); }
  };

  // A client of a daemon whose package downloads never finish, with a fresh catalog.
  std::unique_ptr<epbroker_client, Deleter> slow_client() {
    start();
    serve_targets_slowly();
    epbroker_client* c = nullptr;
    EXPECT_EQ(epbroker_client_new(address().c_str(), &c), EPBROKER_OK) << last_error();
    EXPECT_EQ(epbroker_refresh(c, nullptr, nullptr, nullptr, nullptr), EPBROKER_OK) << last_error();
    return std::unique_ptr<epbroker_client, Deleter>(c);
  }

  // Checks what a cancelled ensure_ready of kBulkEp leaves: nothing installed.
  void expect_nothing_installed(epbroker_client* c, const std::vector<epbroker_job_state>& seen) {
    ASSERT_FALSE(seen.empty());
    EXPECT_EQ(seen.back(), EPBROKER_JOB_CANCELLED);
    EXPECT_FALSE(fs::exists(bus_->store_dir() / kBulkEp));
    epbroker_provider_list* list = nullptr;
    ASSERT_EQ(epbroker_providers(c, &list), EPBROKER_OK) << last_error();
    for (size_t i = 0; i < epbroker_provider_list_size(list); ++i) {
      const auto* p = epbroker_provider_list_get(list, i);
      if (std::string(epbroker_provider_name(p)) == kBulkEp) {
        EXPECT_EQ(epbroker_provider_state_of(p), EPBROKER_PROVIDER_AVAILABLE);
      }
    }
    epbroker_provider_list_free(list);
  }
};

TEST_F(CApiCancelTest, FromAnotherThread) {
  auto c = slow_client();
  ASSERT_TRUE(c);
  std::unique_ptr<epbroker_cancel, Deleter> cancel(epbroker_cancel_new());
  ASSERT_TRUE(cancel);

  std::atomic<bool> started{false};
  std::thread canceller([&] {
    started = daemon::wait_until([&] { return download_started(kBulkEp); }, 60s);
    epbroker_cancel_trigger(cancel.get());
  });
  std::vector<epbroker_job_state> seen;
  epbroker_provider* out = nullptr;
  const auto status =
      epbroker_ensure_ready(c.get(), kBulkEp, record_state, &seen, cancel.get(), &out);
  canceller.join();
  EXPECT_TRUE(started) << "the daemon never asked for the package";
  EXPECT_EQ(status, EPBROKER_ERR_CANCELLED) << last_error();
  EXPECT_EQ(out, nullptr);
  EXPECT_NE(std::find(seen.begin(), seen.end(), EPBROKER_JOB_DOWNLOADING), seen.end());
  expect_nothing_installed(c.get(), seen);

  // Triggered before the call: cancelled at once, nothing started.
  EXPECT_EQ(epbroker_ensure_ready(c.get(), kTestEp, nullptr, nullptr, cancel.get(), nullptr),
            EPBROKER_ERR_CANCELLED);
  EXPECT_EQ(epbroker_refresh(c.get(), nullptr, nullptr, cancel.get(), nullptr),
            EPBROKER_ERR_CANCELLED);
}

TEST_F(CApiCancelTest, FromASignalHandler) {
  auto c = slow_client();
  ASSERT_TRUE(c);
  std::unique_ptr<epbroker_cancel, Deleter> cancel(epbroker_cancel_new());
  ASSERT_TRUE(cancel);
  g_cancel = cancel.get();
  g_handled = 0;

  // SIGUSR1's handler cancels, as a Ctrl-C handler would; no SA_RESTART.
  struct sigaction action = {};
  struct sigaction previous = {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  ASSERT_EQ(sigaction(SIGUSR1, &action, &previous), 0);

  // The signal goes to this (the waiting) thread once the download is under way.
  const pthread_t waiter = pthread_self();
  std::atomic<bool> started{false};
  std::thread signaller([&] {
    started = daemon::wait_until([&] { return download_started(kBulkEp); }, 60s);
    pthread_kill(waiter, SIGUSR1);
  });
  std::vector<epbroker_job_state> seen;
  const auto status =
      epbroker_ensure_ready(c.get(), kBulkEp, record_state, &seen, cancel.get(), nullptr);
  signaller.join();
  sigaction(SIGUSR1, &previous, nullptr);
  g_cancel = nullptr;

  EXPECT_TRUE(started) << "the daemon never asked for the package";
  EXPECT_EQ(g_handled.load(), 1) << "the handler did not run";
  EXPECT_EQ(epbroker_cancel_is_triggered(cancel.get()), 1);
  EXPECT_EQ(status, EPBROKER_ERR_CANCELLED) << last_error();
  EXPECT_STREQ(epbroker_status_name(status), "Cancelled");
  expect_nothing_installed(c.get(), seen);
}

}  // namespace
}  // namespace tests::client
