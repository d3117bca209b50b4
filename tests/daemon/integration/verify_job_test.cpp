// Verify runs as a job off the bus thread (issue 17, item 4):
//   - while a verification hashes (held at a test-controlled gate: a fanotify
//     permission event on a file of the store, so that the daemon's open() of it
//     waits until the test allows it), other clients' RequestSession are
//     answered, and another caller joins the running verification;
//   - callers other than root start at most one verification per interval and
//     otherwise get the latest result (a store damaged meanwhile still reads as
//     before until root verifies again).
// Also prints RequestSession's latency with no verification, while one is held at
// the gate, and while verifications hash back to back (figures, not asserted).
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/fanotify.h>
#include <unistd.h>

#include <fcntl.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/daemon/integration/fixture.hpp"

namespace tests::daemon {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
constexpr uid_t kNobody = 65534;

// Every open() of one file waits until release() (fanotify FAN_OPEN_PERM; needs
// CAP_SYS_ADMIN). Closing the group (the destructor) lets waiting opens go on.
class OpenGate {
 public:
  explicit OpenGate(const fs::path& file) {
    fd_ = fanotify_init(FAN_CLASS_CONTENT | FAN_CLOEXEC | FAN_NONBLOCK, O_RDONLY | O_LARGEFILE);
    if (fd_ < 0) return;
    if (fanotify_mark(fd_, FAN_MARK_ADD, FAN_OPEN_PERM, AT_FDCWD, file.c_str()) != 0) {
      close(fd_);
      fd_ = -1;
      return;
    }
    reader_ = std::thread([this] { run(); });
  }
  ~OpenGate() {
    release();
    stop_ = true;
    if (reader_.joinable()) reader_.join();
    if (fd_ >= 0) close(fd_);
  }
  bool ok() const { return fd_ >= 0; }
  // Waits until an open() is held at the gate.
  bool wait_held(std::chrono::milliseconds timeout) {
    return wait_until([&] { return held_.load() > 0; }, timeout);
  }
  // Lets every held open() and every later one go on.
  void release() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }

 private:
  void run() {
    alignas(fanotify_event_metadata) char buf[4096];
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 20) <= 0) continue;
      const ssize_t n = read(fd_, buf, sizeof buf);
      if (n <= 0) continue;
      auto* m = reinterpret_cast<fanotify_event_metadata*>(buf);
      ssize_t left = n;
      for (; FAN_EVENT_OK(m, left); m = FAN_EVENT_NEXT(m, left)) {
        if (m->fd < 0) continue;
        if ((m->mask & FAN_OPEN_PERM) != 0) {
          ++held_;
          std::unique_lock lock(mu_);
          cv_.wait(lock, [&] { return open_ || stop_.load(); });
          fanotify_response r{m->fd, FAN_ALLOW};
          (void)!write(fd_, &r, sizeof r);
        }
        close(m->fd);
      }
    }
  }

  int fd_ = -1;
  std::thread reader_;
  std::atomic<bool> stop_{false};
  std::atomic<int> held_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

// The largest payload file of `name`'s installed tree.
fs::path payload_file(const PrivateBus& bus, const std::string& name) {
  fs::path best;
  std::uintmax_t size = 0;
  for (const auto& e : fs::recursive_directory_iterator(bus.store_dir() / name)) {
    if (!e.is_regular_file() || e.path().filename() == ".epbroker-manifest.json") continue;
    if (e.file_size() >= size) {
      size = e.file_size();
      best = e.path();
    }
  }
  return best;
}

// Median and maximum of `n` RequestSession + Release round trips, in microseconds.
std::pair<long, long> session_latency(sdbus::IConnection& conn, int n) {
  BrokerProxy broker(conn);
  std::vector<long> us;
  for (int i = 0; i < n; ++i) {
    const auto t0 = Clock::now();
    const auto [path, providers] = broker.RequestSession({});
    us.push_back(static_cast<long>(
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count()));
    auto session = sdbus::createProxy(conn, kBrokerName, path);
    session->callMethod("Release").onInterface(kSessionInterface);
  }
  std::sort(us.begin(), us.end());
  return {us[us.size() / 2], us.back()};
}

// The Kind "verify" jobs the daemon publishes, with their State.
std::map<std::string, std::string> verify_jobs(sdbus::IConnection& conn) {
  auto proxy = sdbus::createProxy(conn, kBrokerName, kBrokerPath);
  std::map<sdbus::ObjectPath, std::map<std::string, std::map<std::string, sdbus::Variant>>> objects;
  proxy->callMethod("GetManagedObjects")
      .onInterface("org.freedesktop.DBus.ObjectManager")
      .storeResultsTo(objects);
  std::map<std::string, std::string> out;
  for (const auto& [path, interfaces] : objects) {
    auto job = interfaces.find(kJobInterface);
    if (job == interfaces.end() || job->second.at("Kind").get<std::string>() != "verify") continue;
    out[path] = job->second.at("State").get<std::string>();
  }
  return out;
}

class VerifyJobTest : public CatalogTest {
 protected:
  CommandResult busctl_as_nobody(const std::string& method) {
    return bus_->busctl({"call", kBrokerName, kBrokerPath, kBrokerInterface, method}, kNobody);
  }
};

TEST_F(VerifyJobTest, SessionsAreServedWhileAVerificationHashes) {
  start();
  refresh();
  install(kTestEp);
  install(kBulkEp);
  const fs::path gated = payload_file(*bus_, kBulkEp);
  ASSERT_FALSE(gated.empty());
  auto other = bus_->connect();
  const auto idle = session_latency(*other, 20);

  std::optional<OpenGate> gate;
  gate.emplace(gated);
  if (!gate->ok()) GTEST_SKIP() << "fanotify permission events unavailable: " << strerror(errno);

  // 1. Verify (root: a new verification), answered when it ends: asynchronously.
  std::atomic<bool> verified{false};
  Dicts results;
  std::string verify_error;
  auto caller = sdbus::createProxy(*conn_, kBrokerName, kBrokerPath);
  auto pending = caller->callMethodAsync("Verify")
                     .onInterface(kBrokerInterface)
                     .withTimeout(120s)
                     .uponReplyInvoke([&](const sdbus::Error* e, Dicts r) {
                       if (e != nullptr) verify_error = e->getName() + ": " + e->getMessage();
                       results = std::move(r);
                       verified = true;
                     });
  ASSERT_TRUE(gate->wait_held(20s)) << "the verification never opened " << gated;

  // 2. Held at the gate: another client's RequestSession is answered, and the
  //    verification is still running (its job verifying, Verify unanswered).
  BrokerProxy broker2(*other);
  auto [session, providers] = broker2.RequestSession({});
  EXPECT_FALSE(session.empty());
  EXPECT_FALSE(verified.load()) << "Verify was answered before the gate opened";
  const auto jobs = verify_jobs(*other);
  ASSERT_EQ(jobs.size(), 1U);
  const std::string job = jobs.begin()->first;
  EXPECT_EQ(jobs.begin()->second, "verifying");
  // Its progress: over the installed payload bytes, bulk-ep's not done yet.
  const std::uint64_t total = u64(provider(kBulkEp), "size") + u64(provider(kTestEp), "size");
  EXPECT_EQ(job_property(*other, job, "BytesTotal").get<std::uint64_t>(), total);
  EXPECT_LT(job_property(*other, job, "BytesDone").get<std::uint64_t>(), total);
  // Another caller (not root, no new verification allowed or not) joins it.
  const auto joined =
      bus_->busctl({"call", kBrokerName, kBrokerPath, kBrokerInterface, "StartVerify"}, kNobody);
  EXPECT_EQ(joined.out, "o \"" + job + "\"\n") << joined.err;
  const auto held = session_latency(*other, 20);

  // 3. The gate opens: the verification ends, Verify answers with every version.
  gate->release();
  ASSERT_TRUE(wait_until([&] { return verified.load(); }, 60s));
  EXPECT_TRUE(verify_error.empty()) << verify_error;
  EXPECT_EQ(results.size(), 2U);
  for (const auto& r : results) EXPECT_TRUE(r.at("ok").get<bool>()) << str(r, "problem");
  EXPECT_EQ(wait_job(*conn_, job), "done");
  EXPECT_EQ(job_property(*other, job, "BytesDone").get<std::uint64_t>(), total);
  gate.reset();

  // Figures: while verifications hash back to back (root's start a new one each).
  std::atomic<bool> stop{false};
  std::atomic<int> runs{0};
  std::thread hasher([&] {
    auto conn = bus_->connect();
    BrokerProxy b(*conn);
    while (!stop) {
      (void)b.Verify();
      ++runs;
    }
  });
  ASSERT_TRUE(wait_until([&] { return runs.load() > 0; }, 30s));
  const auto hashing = session_latency(*other, 20);
  stop = true;
  hasher.join();
  std::cout << "[ figures ] RequestSession + Release, median / max over 20: no verification "
            << idle.first << " / " << idle.second << " us; a verification held at the gate "
            << held.first << " / " << held.second << " us; verifications of " << total
            << " bytes hashing back to back (" << runs.load() << " ran) " << hashing.first << " / "
            << hashing.second << " us\n";
}

TEST_F(VerifyJobTest, CallersOtherThanRootGetTheLatestResult) {
  start();
  refresh();
  install(kTestEp);

  // 1. Nobody's first Verify starts one (none ran yet): the store is intact.
  auto r = busctl_as_nobody("Verify");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"ok\" b true"), std::string::npos) << r.out;

  // 2. The store is damaged; nobody's next Verify, within the interval, gets the
  //    latest result (intact), not a new verification.
  const fs::path file = payload_file(*bus_, kTestEp);
  ASSERT_FALSE(file.empty());
  std::ofstream(file, std::ios::app) << "damage";
  r = busctl_as_nobody("Verify");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"ok\" b true"), std::string::npos) << "a new verification ran: " << r.out;
  // The same through StartVerify: a job done at once, whose results are that run's.
  r = busctl_as_nobody("StartVerify");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string job = r.out.substr(3, r.out.size() - 5);  // o "PATH"\n
  EXPECT_EQ(job_property(*conn_, job, "State").get<std::string>(), "done");

  // 3. Root verifies at any time: the damage is found ...
  const Dicts found = broker_->Verify();
  ASSERT_EQ(found.size(), 1U);
  EXPECT_FALSE(found[0].at("ok").get<bool>());
  EXPECT_NE(str(found[0], "problem").find("size"), std::string::npos) << str(found[0], "problem");
  // ... and is the latest result nobody gets from then on.
  r = busctl_as_nobody("Verify");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"ok\" b false"), std::string::npos) << r.out;
  // VerifyResults of nobody's earlier job still says what that run found.
  auto [finished, earlier] = broker_->VerifyResults(sdbus::ObjectPath(job));
  EXPECT_GT(finished, 0U);
  ASSERT_EQ(earlier.size(), 1U);
  EXPECT_TRUE(earlier[0].at("ok").get<bool>());
}

}  // namespace
}  // namespace tests::daemon
