// The daemon never loads EP code: after installs, a lease and Verify, no file of the
// test's tree (store, staging, cache, state) is mapped into epbrokerd
// (/proc/PID/maps), while the EP library the session hands out exists and is a
// shared object the daemon could have mapped. And it never opens a path a client
// sends: every string argument, set to the path of a canary (inotify watches it).
#include <gtest/gtest.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <fstream>
#include <functional>
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

// Events inotify has queued on `fd` (non-blocking), as "mask name" lines.
std::vector<std::string> drain_events(int fd) {
  std::vector<std::string> out;
  alignas(inotify_event) char buf[4096];
  while (true) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    for (ssize_t at = 0; at < n;) {
      const auto* ev = reinterpret_cast<const inotify_event*>(buf + at);
      out.push_back(std::to_string(ev->mask) + " " + (ev->len > 0 ? ev->name : "(dir)"));
      at += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
    }
  }
  return out;
}

TEST_F(CatalogTest, DaemonOpensNoPathAClientSends) {
  start();
  refresh();
  install(kTestEp);
  const fs::path dir = bus_->root() / "canary";
  fs::create_directories(dir);
  const fs::path canary = dir / "canary.so";
  std::ofstream(canary) << "not a library";
  const int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_GE(inotify_add_watch(fd, dir.c_str(), IN_OPEN | IN_ACCESS | IN_ATTRIB), 0);
  // The watch can fail the test: an open and a read of the canary are seen.
  {
    std::ifstream in(canary);
    std::string word;
    in >> word;
  }
  ASSERT_FALSE(drain_events(fd).empty());

  // Every string the bus API takes, set to paths of the canary and its directory.
  const std::vector<std::string> paths{canary.string(), dir.string(),
                                       "../../../../../../.." + canary.string(),
                                       "file://" + canary.string(), "canary.so"};
  std::map<std::string, int> outcomes;  // error name ("" for none) -> calls
  auto call = [&](const std::function<void()>& f) { ++outcomes[error_name_of(f)]; };
  for (const auto& p : paths) {
    call([&] { broker_->EnsureProvider(p); });
    call([&] { broker_->RemoveProvider(p); });
    for (const char* key : {"policy", "ort_version"}) {
      std::map<std::string, sdbus::Variant> opts;
      opts.emplace(key, sdbus::Variant(p));
      call([&] { broker_->RequestSession(opts); });
    }
    std::map<std::string, sdbus::Variant> opts;
    opts.emplace("providers", sdbus::Variant(std::vector<std::string>{p}));
    opts.emplace("download", sdbus::Variant(true));
    call([&] { broker_->RequestSession(opts); });
    std::map<std::string, sdbus::Variant> keyed;
    keyed.emplace(p, sdbus::Variant(p));
    call([&] { broker_->RequestSession(keyed); });
  }
  // Refused as invalid or unknown, or (a session naming no package it knows)
  // granted with nothing in it; each answered before the next call, so the daemon
  // has done all it will do with those strings.
  EXPECT_GE(outcomes["org.epbroker.Error.InvalidArgument"], static_cast<int>(paths.size()) * 4);
  for (const auto& [name, n] : outcomes) {
    EXPECT_TRUE(name.empty() || name == "org.epbroker.Error.InvalidArgument" ||
                name == "org.epbroker.Error.NotFound")
        << n << " call(s) answered " << name;
  }
  EXPECT_FALSE(broker_->ListProviders().empty());
  const auto events = drain_events(fd);
  EXPECT_TRUE(events.empty()) << "the canary was touched: " << events.front();
  close(fd);
}

}  // namespace
}  // namespace tests::daemon
