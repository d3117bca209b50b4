// Bus activation of epbrokerd on a private dbus-daemon: the first call starts it,
// ListDevices over the live system and over the recorded machine trees, idle exit
// and re-activation; the sanitizer settings reach the activated daemon.
#include <gtest/gtest.h>
#include <sys/utsname.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "tests/daemon/integration/fixture.hpp"
#include "tests/daemon/integration/proc_stats.hpp"

namespace tests::daemon {
namespace {

namespace fs = std::filesystem;

std::string machine_arch() {
  utsname u{};
  uname(&u);
  return u.machine;
}

TEST_F(BrokerTest, FirstCallActivatesTheDaemonAndListsLiveDevices) {
  start({}, /*with_catalog=*/false);
  EXPECT_FALSE(bus_->broker_running());
  EXPECT_TRUE(bus_->daemon_pids().empty());

  const Dicts devices = broker_->ListDevices();  // activates
  ASSERT_FALSE(devices.empty());
  EXPECT_EQ(str(devices[0], "id"), "cpu0");
  EXPECT_EQ(str(devices[0], "type"), "cpu");
  EXPECT_EQ(str(devices[0], "arch"), machine_arch());
  for (const auto& d : devices) {
    const std::string type = str(d, "type");
    EXPECT_TRUE(type == "cpu" || type == "gpu" || type == "npu") << type;
  }

  EXPECT_TRUE(bus_->broker_running());
  const auto pid = bus_->broker_pid();
  ASSERT_TRUE(pid.has_value());
  EXPECT_EQ(bus_->daemon_pids(), std::vector<pid_t>{*pid});
  EXPECT_EQ(broker_->Version(), EPBROKER_EXPECTED_VERSION);
  EXPECT_EQ(broker_->DaemonState(), "idle");
  EXPECT_EQ(broker_->CatalogRevision(), 0U);  // no refresh yet
  EXPECT_EQ(broker_->ListProviders().size(), 0U);
}

// ---- recorded machines (tests/data/sysfs/*) -----------------------------------------

struct ExpectedDevice {
  std::string id;
  std::string type;
  std::string vendor;
  std::string driver;
};

const std::map<std::string, std::vector<ExpectedDevice>>& expected_machines() {
  static const std::map<std::string, std::vector<ExpectedDevice>> m = {
      {"intel-laptop",
       {{"cpu0", "cpu", "Intel", ""},
        {"gpu0", "gpu", "Intel", "i915"},
        {"npu0", "npu", "Intel", "intel_vpu"}}},
      {"nvidia-workstation",
       {{"cpu0", "cpu", "Intel", ""},
        {"gpu0", "gpu", "0x1a03", "ast"},
        {"gpu1", "gpu", "NVIDIA", "nvidia"}}},
      {"amd-apu",
       {{"cpu0", "cpu", "AMD", ""},
        {"gpu0", "gpu", "AMD", "amdgpu"},
        {"npu0", "npu", "AMD", "amdxdna"}}},
      {"cpu-server", {{"cpu0", "cpu", "AMD", ""}, {"cpu1", "cpu", "AMD", ""}}},
      {"nvidia-h100-vm", {{"cpu0", "cpu", "Intel", ""}, {"gpu0", "gpu", "NVIDIA", "nvidia"}}},
  };
  return m;
}

fs::path machines_dir() { return fs::path(EPBROKER_INTEGRATION_SOURCE_DIR) / "tests/data/sysfs"; }

// Every recorded machine with both a sys/ and a proc/ tree.
std::vector<std::string> recorded_machines() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(machines_dir(), ec)) {
    if (fs::is_directory(e.path() / "sys") && fs::is_directory(e.path() / "proc")) {
      out.push_back(e.path().filename().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

class RecordedMachineTest : public BrokerTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(RecordedMachineTest, ListDevicesReportsTheFixtureTree) {
  const fs::path machine = machines_dir() / GetParam();
  PrivateBusOptions o;
  o.sysfs_root = machine / "sys";
  o.procfs_root = machine / "proc";
  start(o, /*with_catalog=*/false);

  const Dicts devices = broker_->ListDevices();
  ASSERT_FALSE(devices.empty());
  EXPECT_EQ(str(devices[0], "id"), "cpu0");
  EXPECT_EQ(str(devices[0], "type"), "cpu");
  auto it = expected_machines().find(GetParam());
  if (it == expected_machines().end()) return;  // a new tree: its shape is not known here
  ASSERT_EQ(devices.size(), it->second.size());
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const auto& want = it->second[i];
    SCOPED_TRACE(want.id);
    EXPECT_EQ(str(devices[i], "id"), want.id);
    EXPECT_EQ(str(devices[i], "type"), want.type);
    EXPECT_EQ(str(devices[i], "vendor"), want.vendor);
    EXPECT_EQ(str(devices[i], "driver"), want.driver);
    if (want.type == "cpu") {
      EXPECT_FALSE(strs(devices[i], "isa").empty());
    } else {
      EXPECT_FALSE(str(devices[i], "bus_path").empty());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Machines, RecordedMachineTest, ::testing::ValuesIn(recorded_machines()),
                         [](const auto& p) {
                           std::string name = p.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(RecordedMachineTest);

TEST_F(BrokerTest, NvidiaDriverVersionAndNameComeThroughTheBus) {
  const fs::path machine = machines_dir() / "nvidia-workstation";
  if (!fs::is_directory(machine / "sys")) GTEST_SKIP() << "no nvidia-workstation tree";
  PrivateBusOptions o;
  o.sysfs_root = machine / "sys";
  o.procfs_root = machine / "proc";
  start(o, /*with_catalog=*/false);
  auto gpu = find_named(broker_->ListDevices(), "NVIDIA H100 PCIe");
  ASSERT_TRUE(gpu.has_value());
  EXPECT_EQ(str(*gpu, "driver_version"), "580.65.06");
  EXPECT_EQ(str(*gpu, "bus_path"), "0000:65:00.0");
  EXPECT_EQ(gpu->at("vendor_id").get<std::uint16_t>(), 0x10de);
  EXPECT_EQ(gpu->at("device_id").get<std::uint16_t>(), 0x2331);
  EXPECT_TRUE(gpu->at("discrete").get<bool>());
}

// ---- idle exit ----------------------------------------------------------------------

TEST_F(BrokerTest, ExitsWhenIdleAndIsActivatedAgainByTheNextCall) {
  PrivateBusOptions o;
  o.idle_timeout_sec = 2;
  start(o, /*with_catalog=*/false);

  ASSERT_FALSE(broker_->ListDevices().empty());
  const auto first = bus_->broker_pid();
  ASSERT_TRUE(first.has_value());

  // Gone from the bus within a few ticks of the timeout, then gone altogether.
  ASSERT_TRUE(wait_until([&] { return !bus_->broker_running(); }, 15s)) << "never went idle";
  // The very next call activates a fresh instance, even while the old one may still
  // be finishing (it released the name first).
  const Dicts devices = broker_->ListDevices();
  EXPECT_FALSE(devices.empty());
  const auto second = bus_->broker_pid();
  ASSERT_TRUE(second.has_value());
  EXPECT_NE(*second, *first);
  EXPECT_TRUE(wait_until([&] { return bus_->daemon_pids() == std::vector<pid_t>{*second}; }, 10s));
}

TEST_F(BrokerTest, DoesNotExitWhileASessionIsHeld) {
  PrivateBusOptions o;
  o.idle_timeout_sec = 2;
  start(o, /*with_catalog=*/false);
  const auto [session, providers] = broker_->RequestSession({});
  EXPECT_EQ(broker_->DaemonState(), "busy");
  const auto pid = bus_->broker_pid();
  // Twice the idle timeout and more: still serving.
  EXPECT_FALSE(wait_until([&] { return !bus_->broker_running(); }, 5s));
  EXPECT_EQ(bus_->broker_pid(), pid);

  auto proxy = sdbus::createProxy(*conn_, kBrokerName, session);
  proxy->callMethod("Release").onInterface(kSessionInterface);
  EXPECT_TRUE(wait_until([&] { return !bus_->broker_running(); }, 15s));
}

// ---- the sanitizer build --------------------------------------------------------------

// The value of the variable `name` in /proc/PID/environ, if it is set there.
std::optional<std::string> environ_of(pid_t pid, const std::string& name) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  for (std::string entry; std::getline(in, entry, '\0');) {
    if (entry.starts_with(name + "=")) return entry.substr(name.size() + 1);
  }
  return std::nullopt;
}

// scripts/test-asan.sh makes every finding fatal and has each process write its
// report to a file it checks after ctest: that holds for epbrokerd only if the
// private dbus-daemon hands the test's environment on to the daemon it activates
// (a finding would otherwise reach only bus.log, and LeakSanitizer would not know
// its suppressions). In a sanitized build the daemon must be instrumented too.
TEST_F(BrokerTest, ActivatedDaemonGetsTheSanitizerSettingsOfTheTest) {
  std::vector<std::string> names;
  for (const char* name : {"ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS"}) {
    if (std::getenv(name) != nullptr) names.emplace_back(name);
  }
#ifndef __SANITIZE_ADDRESS__
  if (names.empty()) GTEST_SKIP() << "not a sanitizer run (no ASAN_OPTIONS etc. set)";
#endif
  start({}, /*with_catalog=*/false);
  ASSERT_FALSE(broker_->ListDevices().empty());  // activates
  const auto pid = bus_->broker_pid();
  ASSERT_TRUE(pid.has_value());
  for (const auto& name : names) {
    EXPECT_EQ(environ_of(*pid, name), std::optional<std::string>(std::getenv(name.c_str())))
        << name;
  }
#ifdef __SANITIZE_ADDRESS__
  EXPECT_TRUE(under_asan(*pid)) << "this test is built with ASan, epbrokerd is not";
#endif
}

}  // namespace
}  // namespace tests::daemon
