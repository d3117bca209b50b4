// libepbroker_ep.so, the broker as one plugin-EP library, in the real ORT this
// binary links, against a live broker (broker_fixture.hpp): the app registers only
// that library (Env::RegisterExecutionProviderLibrary) and gets test-ep's devices,
// runs ONNX node tests on them with CPU fallback disabled and gets the CPU EP's
// outputs; the lease lives exactly as long as the registration; no daemon, a
// daemon that never answers, an EP too new for this ORT and a bad option each
// leave the app on its own EPs with the reason in ORT's log.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/client-ort/broker_fixture.hpp"
#include "tests/ort/support/ep_registration.hpp"
#include "tests/ort/support/node_test.hpp"
#include "tests/support/temp_dir.hpp"

namespace tests::client_ort {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr const char* kMetaEp = EPBROKER_META_EP_LIBRARY;

// ORT's log, kept for the assertions: the library reports through it.
struct Captured {
  std::mutex mu;
  std::vector<std::string> lines;
};
Captured& captured() {
  static Captured c;
  return c;
}

void ORT_API_CALL keep_log(void* /*param*/, OrtLoggingLevel severity, const char* /*category*/,
                           const char* /*logid*/, const char* /*code_location*/,
                           const char* message) {
  std::lock_guard lock(captured().mu);
  captured().lines.push_back(std::to_string(static_cast<int>(severity)) + " " + message);
}

// This binary's one env (ORT keeps one per process), logging from INFO up into
// captured().
Ort::Env& env() {
  static Ort::Env e(ORT_LOGGING_LEVEL_INFO, "meta-ep-test", keep_log, nullptr);
  return e;
}

// Every captured line that holds `needle`, joined ("" if none); clears the log
// first when asked to.
std::string log_with(const std::string& needle) {
  std::lock_guard lock(captured().mu);
  std::string out;
  for (const auto& l : captured().lines) {
    if (l.find(needle) != std::string::npos) out += l + "\n";
  }
  return out;
}
void clear_log() {
  std::lock_guard lock(captured().mu);
  captured().lines.clear();
}
std::string whole_log() { return log_with(""); }

// Sets an environment variable for one test.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

std::size_t devices_of(const std::string& ep) {
  return tests::ort::ep_devices_for(env(), ep).size();
}

// Whether this process has `file_name` mapped (/proc/self/maps).
bool mapped(const std::string& file_name) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find(file_name) != std::string::npos) return true;
  }
  return false;
}

// Polls `done` every 20 ms for up to 30 s.
template <typename F>
bool eventually(F done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// The broker's catalog and daemon, EPBROKER_BUS_ADDRESS naming its bus (the
// fixture already points EPBROKER_STORE_DIR at its store).
class MetaEpTest : public BrokerTest {
 protected:
  void SetUp() override {
    BrokerTest::SetUp();
    if (IsSkipped()) return;
    bus_env_ = std::make_unique<ScopedEnv>("EPBROKER_BUS_ADDRESS", bus_address());
    clear_log();
  }
  void TearDown() override {
    bus_env_.reset();
    BrokerTest::TearDown();
  }
  std::unique_ptr<ScopedEnv> bus_env_;
};

// (1) One registration line: every node of each node test runs on test-ep, and
// the outputs equal both the reference and the CPU EP's.
TEST_F(MetaEpTest, NodeTestsRunOnTheBrokeredEpAloneAndMatchTheCpuEp) {
  install(kTestEp);
  tests::ort::ScopedPlugin plugin(env(), "epbroker", kMetaEp);
  const auto devices = tests::ort::ep_devices_for(env(), kTestEpName);
  ASSERT_EQ(devices.size(), 1U) << whole_log();
  // ORT names the library it loaded: the broker's, which forwarded test-ep's factory.
  EXPECT_EQ(fs::canonical(devices[0].EpMetadata().GetValue("library_path")),
            fs::canonical(kMetaEp));
  EXPECT_THAT(log_with("forwarding test-ep 0.1.0"), HasSubstr(bus_->store_dir().string()));

  const auto cases = tests::ort::test_ep_node_cases();
  ASSERT_EQ(cases.size(), 14U);
  for (const auto& dir : cases) {
    SCOPED_TRACE(dir);
    // Against ONNX's reference outputs, CPU fallback disabled (use_ep).
    const auto r = tests::ort::run_case(env(), dir, tests::ort::use_ep(env(), kTestEpName));
    EXPECT_TRUE(r.passed) << r.message;
    // Against the CPU EP, data set by data set.
    const auto tc = tests::ort::load_test_case(dir);
    ASSERT_TRUE(tc.has_value()) << tc.error();
    Ort::SessionOptions cpu_options;
    Ort::SessionOptions ep_options;
    tests::ort::use_ep(env(), kTestEpName)(ep_options);
    Ort::Session cpu(env(), tc->model().c_str(), cpu_options);
    Ort::Session ep(env(), tc->model().c_str(), ep_options);
    for (const auto& ds : tc->data_sets) {
      const auto want = tests::ort::run_session(cpu, ds.inputs);
      const auto got = tests::ort::run_session(ep, ds.inputs);
      ASSERT_TRUE(want.has_value()) << want.error();
      ASSERT_TRUE(got.has_value()) << got.error();
      EXPECT_EQ(tests::ort::compare_outputs(*want, *got), std::nullopt);
    }
  }
}

// (2) The lease: a removal waits while the library is registered; unregistering
// hands test-ep's factory back to test-ep (which ORT no longer maps) and ends the
// lease, and the deferred removal completes.
TEST_F(MetaEpTest, RemovalWaitsWhileRegisteredAndUnregisteringReleasesTheLease) {
  install(kTestEp);
  std::string library;
  {
    tests::ort::ScopedPlugin plugin(env(), "epbroker", kMetaEp);
    ASSERT_EQ(devices_of(kTestEpName), 1U) << whole_log();
    EXPECT_EQ(client().status().sessions, 1U);
    for (const auto& p : client().providers()) {
      if (p.name == kTestEp) library = p.library_path;
    }
    ASSERT_FALSE(library.empty());
    EXPECT_TRUE(mapped("libepbroker_test_ep.so"));
    client().remove(kTestEp);
    // Deferred: the files stay while the registration leases them.
    EXPECT_TRUE(fs::exists(library));
    bool removing = false;
    for (const auto& p : client().providers()) {
      for (const auto& v : p.versions) removing |= p.name == kTestEp && v.role == "removing";
    }
    EXPECT_TRUE(removing);
  }  // UnregisterExecutionProviderLibrary
  EXPECT_EQ(devices_of(kTestEpName), 0U);
  EXPECT_FALSE(mapped("libepbroker_test_ep.so"));
  EXPECT_TRUE(eventually([&] { return client().status().sessions == 0; }));
  EXPECT_TRUE(eventually([&] { return !fs::exists(library); })) << library;
}

// (3) An EP whose ort_min is newer than this ORT is skipped, with the reason.
TEST_F(MetaEpTest, EpNeedingANewerOrtIsSkippedWithTheReason) {
  install(kFutureEp);
  const ScopedEnv only("EPBROKER_EP_PROVIDERS", kFutureEp);
  tests::ort::ScopedPlugin plugin(env(), "epbroker", kMetaEp);
  EXPECT_EQ(devices_of(kTestEpName), 0U);
  const std::string line = log_with("skipped future-ep (ort_too_old)");
  EXPECT_THAT(line, HasSubstr("needs ONNX Runtime >= 99.0.0"));
  EXPECT_THAT(line, HasSubstr(Ort::GetVersionString()));
  EXPECT_EQ(line.substr(0, 1), std::to_string(ORT_LOGGING_LEVEL_WARNING)) << line;
  // Nothing usable: no lease is kept.
  EXPECT_TRUE(eventually([&] { return client().status().sessions == 0; }));
}

// (4) A policy and a package list through the environment; a bad value is
// refused by name and nothing is registered.
TEST_F(MetaEpTest, OptionsComeFromTheEnvironmentAndABadOneIsNamed) {
  install(kTestEp);
  {
    const ScopedEnv policy("EPBROKER_EP_POLICY", "prefer_cpu");
    const ScopedEnv only("EPBROKER_EP_PROVIDERS", kTestEp);
    tests::ort::ScopedPlugin plugin(env(), "epbroker", kMetaEp);
    EXPECT_EQ(devices_of(kTestEpName), 1U) << whole_log();
  }
  clear_log();
  {
    const ScopedEnv policy("EPBROKER_EP_POLICY", "fastest");
    tests::ort::ScopedPlugin plugin(env(), "epbroker", kMetaEp);
    EXPECT_EQ(devices_of(kTestEpName), 0U);
    EXPECT_THAT(log_with("EPBROKER_EP_POLICY='fastest' is not a policy"), HasSubstr("prefer_gpu"));
  }
  clear_log();
  {
    const ScopedEnv only("EPBROKER_EP_PROVIDERS", "test-ep, no-such-ep");
    tests::ort::ScopedPlugin plugin(env(), "epbroker", kMetaEp);
    EXPECT_EQ(devices_of(kTestEpName), 0U);
    EXPECT_THAT(log_with("EPBROKER_EP_PROVIDERS='test-ep, no-such-ep' is not"),
                HasSubstr("no spaces"));
  }
  clear_log();
  {
    // A name no catalog offers is named; the others still come.
    const ScopedEnv only("EPBROKER_EP_PROVIDERS", "test-ep,no-such-ep");
    tests::ort::ScopedPlugin plugin(env(), "epbroker", kMetaEp);
    EXPECT_EQ(devices_of(kTestEpName), 1U) << whole_log();
    EXPECT_THAT(log_with("names no-such-ep"), HasSubstr("which no catalog offers"));
  }
  EXPECT_TRUE(eventually([&] { return client().status().sessions == 0; }));
}

// (5) With EPBROKER_EP_INSTALL=1 a missing provider is installed first.
TEST_F(MetaEpTest, InstallsWhatIsMissingWhenAsked) {
  const ScopedEnv install_env("EPBROKER_EP_INSTALL", "1");
  const ScopedEnv only("EPBROKER_EP_PROVIDERS", kTestEp);
  tests::ort::ScopedPlugin plugin(env(), "epbroker", kMetaEp);
  EXPECT_EQ(devices_of(kTestEpName), 1U) << whole_log();
}

// Without it, a provider that is not installed is only named.
TEST_F(MetaEpTest, WithoutInstallAMissingProviderIsNamed) {
  const ScopedEnv only("EPBROKER_EP_PROVIDERS", kTestEp);
  tests::ort::ScopedPlugin plugin(env(), "epbroker", kMetaEp);
  EXPECT_EQ(devices_of(kTestEpName), 0U);
  EXPECT_THAT(log_with("skipped test-ep (not_ready)"), HasSubstr("not installed"));
}

// An app with nothing but ORT's CPU EP left still runs.
void expect_cpu_still_runs() {
  const auto r = tests::ort::run_case(env(), tests::ort::test_ep_node_cases().front());
  EXPECT_TRUE(r.passed) << r.message;
}

// (6) No daemon: zero factories, a warning, and the app runs on the CPU EP.
TEST(MetaEpNoBrokerTest, NoDaemonLeavesTheCpuEpAndAWarning) {
  support::TempDir tmp;
  const ScopedEnv bus("EPBROKER_BUS_ADDRESS", "unix:path=" + (tmp / "no-bus").string());
  clear_log();
  tests::ort::ScopedPlugin plugin(env(), "epbroker", kMetaEp);
  EXPECT_EQ(devices_of(kTestEpName), 0U);
  const std::string line = log_with("no brokered execution providers");
  EXPECT_THAT(line, HasSubstr("ONNX Runtime's own execution providers remain"));
  EXPECT_EQ(line.substr(0, 1), std::to_string(ORT_LOGGING_LEVEL_WARNING)) << line;
  expect_cpu_still_runs();
}

// (7) A daemon that never answers (a socket that accepts and stays silent) is
// bounded by EPBROKER_EP_TIMEOUT_MS.
TEST(MetaEpNoBrokerTest, SilentDaemonIsBoundedByTheTimeout) {
  support::TempDir tmp;
  const std::string sock = (tmp / "silent").string();
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(sock.size(), sizeof addr.sun_path);
  std::copy(sock.begin(), sock.end(), addr.sun_path);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 4), 0);
  const ScopedEnv bus("EPBROKER_BUS_ADDRESS", "unix:path=" + sock);
  const ScopedEnv timeout("EPBROKER_EP_TIMEOUT_MS", "300");
  clear_log();
  {
    tests::ort::ScopedPlugin plugin(env(), "epbroker", kMetaEp);
    EXPECT_EQ(devices_of(kTestEpName), 0U);
    EXPECT_THAT(log_with("no brokered execution providers"),
                HasSubstr("did not answer within 300 ms (EPBROKER_EP_TIMEOUT_MS)"));
  }
  expect_cpu_still_runs();
  ::close(fd);  // the abandoned conversation ends on its own thread
}

}  // namespace
}  // namespace tests::client_ort
