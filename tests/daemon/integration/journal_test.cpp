// A journal an admin can filter (issue 18, item 4), on a private bus, where the
// daemon logs to stderr with its journal fields appended as NAME=value:
//   - job lines (started, done, failed) carry EPBROKER_JOB, EPBROKER_JOB_KIND,
//     EPBROKER_PACKAGE, EPBROKER_VERSION, EPBROKER_REMOTE and the caller's uid
//     (EPBROKER_CALLER_UID);
//   - an install, an (automatic) update and a removal carry their MESSAGE_IDs, and
//     so do a remote's failed refresh and a package failing verification (a
//     tampered download; an installed file changed on disk), with their fields;
//   - org.freedesktop.LogControl1 at /org/freedesktop/LogControl1: root sets
//     LogLevel (a debug line appears) and LogTarget (null: nothing appears); other
//     users read but are refused; bad values are refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "daemon/log/message_ids.hpp"
#include "tests/daemon/integration/fake_polkit.hpp"
#include "tests/daemon/integration/fixture.hpp"
#include "tests/support/http_server.hpp"
#include "tests/support/temp_dir.hpp"

namespace tests::daemon {
namespace {

namespace fs = std::filesystem;
using namespace epbrokerd;
constexpr uid_t kNobody = 65534;
constexpr const char* kLogControlPath = "/org/freedesktop/LogControl1";
constexpr const char* kLogControl = "org.freedesktop.LogControl1";

// The lines of `text` that contain `what`.
std::vector<std::string> lines_with(const std::string& text, const std::string& what) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    if (line.find(what) != std::string::npos) out.push_back(line);
    start = end + 1;
  }
  return out;
}

std::size_t count(const std::string& text, const std::string& what) {
  return lines_with(text, what).size();
}

// The one line of the daemon's log containing `what` (a test failure unless one).
std::string line_with(const PrivateBus& bus, const std::string& what) {
  const auto found = lines_with(bus.log(), what);
  EXPECT_EQ(found.size(), 1U) << "lines with '" << what << "':\n" << bus.log();
  return found.empty() ? std::string() : found.front();
}

// Expects `line` to carry every NAME=value of `fields` (as the console writes
// them: space-separated after the text).
void expect_fields(const std::string& line, const std::vector<std::string>& fields) {
  for (const auto& f : fields) {
    EXPECT_NE((line + " ").find(" " + f + " "), std::string::npos) << f << " missing in: " << line;
  }
}

// "/org/epbroker/Broker1/job/7" -> "7".
std::string job_id(const std::string& path) { return path.substr(path.rfind('/') + 1); }

class JournalTest : public CatalogTest {
 protected:
  std::string version(const char* name) const { return catalog_->target(name).version; }
  // The job path of `busctl call ... EnsureProvider s NAME` as `uid`.
  std::string ensure_as(uid_t uid, const char* name) {
    const auto r = bus_->busctl(
        {"call", kBrokerName, kBrokerPath, kBrokerInterface, "EnsureProvider", "s", name}, uid);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    // o "/org/epbroker/Broker1/job/N"
    const auto q = r.out.find('"');
    return q == std::string::npos ? std::string() : r.out.substr(q + 1, r.out.rfind('"') - q - 1);
  }
};

TEST_F(JournalTest, InstallUpdateAndRemoveCarryTheirFieldsAndMessageIds) {
  start();
  FakePolkit polkit(*bus_, FakePolkit::Mode::grant);  // nobody may install
  refresh();

  // 1. Nobody installs test-ep (polkit grants it): the job's lines and the event.
  const std::string job = ensure_as(kNobody, kTestEp);
  ASSERT_EQ(wait_job(*conn_, job), "done");
  const std::vector<std::string> job_fields = {
      "EPBROKER_JOB=" + job_id(job), "EPBROKER_JOB_KIND=install",
      "EPBROKER_PACKAGE=test-ep",    "EPBROKER_VERSION=" + version(kTestEp),
      "EPBROKER_REMOTE=test",        "EPBROKER_CALLER_UID=65534"};
  expect_fields(line_with(*bus_, "job " + job_id(job) + ": install test-ep started"), job_fields);
  expect_fields(line_with(*bus_, "job " + job_id(job) + ": install test-ep done"), job_fields);
  auto fields = job_fields;
  fields.push_back("MESSAGE_ID=" + std::string(log::kMessageInstalled));
  expect_fields(line_with(*bus_, "history: install test-ep"), fields);

  // 2. A newer version: the refresh's automatic update (the daemon's own: uid 0).
  catalog_->publish_version(kTestEp, "0.2.0");
  refresh();
  ASSERT_TRUE(wait_until([&] { return count(bus_->log(), "history: update test-ep") > 0; }, 60s))
      << bus_->log();
  const std::string update = line_with(*bus_, "history: update test-ep");
  expect_fields(update,
                {"MESSAGE_ID=" + std::string(log::kMessageUpdated), "EPBROKER_PACKAGE=test-ep",
                 "EPBROKER_VERSION=0.2.0", "EPBROKER_FROM_VERSION=" + version(kTestEp),
                 "EPBROKER_REMOTE=test", "EPBROKER_JOB_KIND=install", "EPBROKER_CALLER_UID=0"});
  EXPECT_NE(update.find(" EPBROKER_JOB="), std::string::npos) << update;

  // 3. Root removes it.
  broker_->RemoveProvider(kTestEp);
  expect_fields(line_with(*bus_, "history: remove test-ep"),
                {"MESSAGE_ID=" + std::string(log::kMessageRemoved), "EPBROKER_PACKAGE=test-ep",
                 "EPBROKER_VERSION=0.2.0", "EPBROKER_CALLER_UID=0"});
  // Other history lines carry no MESSAGE_ID (the gc the removal caused).
  for (const auto& l : lines_with(bus_->log(), "history: gc ")) {
    EXPECT_EQ(l.find("MESSAGE_ID="), std::string::npos) << l;
  }
}

TEST_F(JournalTest, FailedRefreshesAndVerificationsCarryTheirMessageIds) {
  start();
  support::TempDir served;
  support::HttpServer failing(served.path());
  bus_->add_remote("broken", failing.url("__status__/500/metadata/"),
                   failing.url("__status__/500/targets/"), catalog_->trusted_root());
  std::ofstream(bus_->config_dir() / "epbroker.conf", std::ios::app) << "fetch_attempts = 1\n";

  // 1. A refresh: remote test succeeds, remote broken fails (the job fails).
  const std::string refresh_job = broker_->RefreshCatalog();
  EXPECT_EQ(wait_job(*conn_, refresh_job), "failed");
  expect_fields(line_with(*bus_, "refresh: remote broken failed"),
                {"MESSAGE_ID=" + std::string(log::kMessageRefreshFailed), "EPBROKER_REMOTE=broken",
                 "EPBROKER_ERROR=Network", "EPBROKER_JOB=" + job_id(refresh_job),
                 "EPBROKER_JOB_KIND=refresh", "EPBROKER_CALLER_UID=0"});
  EXPECT_EQ(count(bus_->log(), "refresh: remote test failed"), 0U);

  // 2. A download that is not what the catalog signed (same length, one byte
  //    changed): the install job fails verification.
  std::size_t tampered = 0;
  for (const auto& e : fs::recursive_directory_iterator(catalog_->repo_dir() / "targets")) {
    if (!e.is_regular_file() || e.path().filename().string().find("bulk-ep") == std::string::npos) {
      continue;
    }
    std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(100);
    const char c = static_cast<char>(f.get());
    f.seekp(100);
    f.put(static_cast<char>(c ^ 0x5a));
    ++tampered;
  }
  ASSERT_GT(tampered, 0U);
  const std::string install_job = broker_->EnsureProvider(kBulkEp);
  EXPECT_EQ(wait_job(*conn_, install_job), "failed");
  expect_fields(line_with(*bus_, "job " + job_id(install_job) + ": install bulk-ep failed"),
                {"MESSAGE_ID=" + std::string(log::kMessageVerificationFailed),
                 "EPBROKER_ERROR=VerificationFailed", "EPBROKER_PACKAGE=bulk-ep",
                 "EPBROKER_VERSION=" + version(kBulkEp), "EPBROKER_REMOTE=test",
                 "EPBROKER_JOB=" + job_id(install_job), "EPBROKER_JOB_KIND=install"});

  // 3. An installed file changed on disk: the verify job finds it.
  install(kTestEp);
  fs::path file;
  for (const auto& e : fs::recursive_directory_iterator(bus_->store_dir() / kTestEp)) {
    if (e.is_regular_file() && e.path().filename() != ".epbroker-manifest.json") file = e.path();
  }
  ASSERT_FALSE(file.empty());
  fs::permissions(file, fs::perms::owner_write, fs::perm_options::add);
  std::ofstream(file, std::ios::app) << "damage";
  const auto found = broker_->Verify();
  ASSERT_EQ(found.size(), 1U);
  EXPECT_FALSE(found[0].at("ok").get<bool>());
  const std::string damaged =
      line_with(*bus_, "verify: test-ep " + version(kTestEp) + " is damaged");
  expect_fields(damaged, {"MESSAGE_ID=" + std::string(log::kMessageVerificationFailed),
                          "EPBROKER_PACKAGE=test-ep", "EPBROKER_VERSION=" + version(kTestEp),
                          "EPBROKER_JOB_KIND=verify", "EPBROKER_CALLER_UID=0"});
  EXPECT_NE(damaged.find(" EPBROKER_JOB="), std::string::npos) << damaged;
}

class LogControlTest : public CatalogTest {
 protected:
  CommandResult get(const char* property, std::optional<uid_t> uid = std::nullopt) {
    return bus_->busctl({"get-property", kBrokerName, kLogControlPath, kLogControl, property}, uid);
  }
  CommandResult set(const char* property, const std::string& value,
                    std::optional<uid_t> uid = std::nullopt) {
    return bus_->busctl(
        {"set-property", kBrokerName, kLogControlPath, kLogControl, property, "s", value}, uid);
  }
  // Opens and releases a session: a debug line "session N: opened by ...".
  void session() {
    const auto [path, providers] = broker_->RequestSession({});
    auto proxy = sdbus::createProxy(*conn_, kBrokerName, path);
    proxy->callMethod("Release").onInterface(kSessionInterface);
  }
};

TEST_F(LogControlTest, RootSetsTheLevelAndTheTargetOthersOnlyRead) {
  PrivateBusOptions options;
  options.log_level = "info";
  start(std::move(options));
  session();  // activates the daemon, at info: no debug line
  EXPECT_EQ(count(bus_->log(), ": opened by"), 0U) << bus_->log();

  // 1. Anyone reads.
  EXPECT_EQ(get("LogLevel", kNobody).out, "s \"info\"\n");
  EXPECT_EQ(get("LogTarget", kNobody).out, "s \"console\"\n");
  EXPECT_EQ(get("SyslogIdentifier", kNobody).out, "s \"epbrokerd\"\n");

  // 2. Nobody may not set.
  auto r = set("LogLevel", "debug", kNobody);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("only root may set LogControl1.LogLevel"), std::string::npos) << r.err;
  r = set("LogTarget", "null", kNobody);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(get("LogLevel").out, "s \"info\"\n");
  EXPECT_EQ(get("LogTarget").out, "s \"console\"\n");
  session();
  EXPECT_EQ(count(bus_->log(), ": opened by"), 0U);

  // 3. Root sets debug (systemctl service-log-level epbrokerd debug): debug lines.
  r = set("LogLevel", "debug");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(get("LogLevel").out, "s \"debug\"\n");
  EXPECT_EQ(count(bus_->log(), "log level set to debug by"), 1U);
  session();
  EXPECT_EQ(count(bus_->log(), ": opened by"), 1U) << bus_->log();

  // 4. Values outside the interface's names are refused; syslog's other names map.
  r = set("LogLevel", "verbose");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("not one of"), std::string::npos) << r.err;
  EXPECT_EQ(set("LogLevel", "notice").exit_code, 0);
  EXPECT_EQ(get("LogLevel").out, "s \"info\"\n");
  EXPECT_EQ(set("LogLevel", "debug").exit_code, 0);
  EXPECT_NE(set("LogTarget", "kmsg").exit_code, 0);

  // 5. Target null: nothing is written; console again: lines again.
  ASSERT_EQ(set("LogTarget", "null").exit_code, 0);
  EXPECT_EQ(get("LogTarget").out, "s \"null\"\n");
  session();
  EXPECT_EQ(count(bus_->log(), ": opened by"), 1U);
  ASSERT_EQ(set("LogTarget", "console").exit_code, 0);
  session();
  EXPECT_EQ(count(bus_->log(), ": opened by"), 2U);
  // "auto" is the journal under systemd; here stderr is a file: console.
  ASSERT_EQ(set("LogTarget", "auto").exit_code, 0);
  EXPECT_EQ(get("LogTarget").out, "s \"console\"\n");
}

}  // namespace
}  // namespace tests::daemon
