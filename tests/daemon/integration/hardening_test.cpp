// The daemon never loads EP code: after installs, a lease and Verify, no file of the
// test's tree (store, staging, cache, state) is mapped into epbrokerd
// (/proc/PID/maps), while the EP library the session hands out exists and is a
// shared object the daemon could have mapped.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "tests/daemon/integration/fixture.hpp"

namespace tests::daemon {
namespace {

namespace fs = std::filesystem;

// The file paths mapped into `pid` (the sixth column of /proc/PID/maps).
std::vector<std::string> mapped_files(pid_t pid) {
  std::vector<std::string> out;
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  for (std::string line; std::getline(maps, line);) {
    const auto slash = line.find('/');
    if (slash != std::string::npos) out.push_back(line.substr(slash));
  }
  return out;
}

TEST_F(CatalogTest, DaemonMapsNoFileOfTheStoreAfterInstallsLeasesAndVerify) {
  start();
  refresh();
  install(kTestEp);
  install(kBulkEp);
  std::map<std::string, sdbus::Variant> opts;
  opts.emplace("providers", sdbus::Variant(std::vector<std::string>{kTestEp}));
  opts.emplace("ort_version", sdbus::Variant(std::string("1.30.0")));
  const auto [session, providers] = broker_->RequestSession(opts);
  ASSERT_EQ(providers.size(), 1U);
  const fs::path library = str(providers[0], "library_path");
  ASSERT_TRUE(fs::is_regular_file(library)) << library;
  const Dicts verify = broker_->Verify();
  ASSERT_EQ(verify.size(), 2U);
  for (const auto& v : verify) EXPECT_TRUE(v.at("ok").get<bool>()) << str(v, "name");

  const auto pid = bus_->broker_pid();
  ASSERT_TRUE(pid.has_value());
  const auto files = mapped_files(*pid);
  // The check can fail: the daemon's own binary and libraries are there.
  ASSERT_FALSE(files.empty());
  bool saw_libc = false;
  for (const auto& f : files) {
    if (f.find("libc.so") != std::string::npos) saw_libc = true;
    EXPECT_FALSE(f.starts_with(fs::canonical(bus_->root()).string())) << "epbrokerd maps " << f;
    EXPECT_NE(f, fs::canonical(library).string()) << "epbrokerd maps the EP library";
  }
  EXPECT_TRUE(saw_libc);
}

}  // namespace
}  // namespace tests::daemon
