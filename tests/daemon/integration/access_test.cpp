// What the daemon refuses: malformed arguments (org.epbroker.Error.InvalidArgument)
// and privileged calls from an unprivileged uid (org.epbroker.Error.NotAuthorized),
// the caller's identity coming from the bus credentials. And what an unprivileged
// uid cannot do with what it may: its session's lease cannot block an admin's
// RemoveProvider (new sessions lose the package at once; the leased files go
// when the lease ends).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "tests/daemon/integration/fixture.hpp"

namespace tests::daemon {
namespace {

namespace fs = std::filesystem;

const std::string kInvalid = "org.epbroker.Error.InvalidArgument";
const std::string kNotAuthorized = "org.epbroker.Error.NotAuthorized";
constexpr uid_t kNobody = 65534;

using Options = std::map<std::string, sdbus::Variant>;

// bus_client ADDRESS args... as uid = gid = `uid`, no supplementary groups.
CommandResult run_as(uid_t uid, const fs::path& client, const std::string& address,
                     std::vector<std::string> args) {
  std::vector<std::string> argv = {"setpriv",
                                   "--reuid=" + std::to_string(uid),
                                   "--regid=" + std::to_string(uid),
                                   "--clear-groups",
                                   client.string(),
                                   address};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command(argv);
}

TEST_F(CatalogTest, MalformedArgumentsAreInvalidArgument) {
  start();
  refresh();
  const std::vector<std::string> bad_names = {
      "", "Bad Name", "UPPER", "../etc/passwd", "-leading-dash", "a/b", std::string(65, 'a')};
  for (const auto& name : bad_names) {
    SCOPED_TRACE("name '" + name + "'");
    EXPECT_EQ(error_name_of([&] { broker_->EnsureProvider(name); }), kInvalid);
    EXPECT_EQ(error_name_of([&] { broker_->RemoveProvider(name); }), kInvalid);
  }
  const std::vector<std::pair<std::string, Options>> bad_options = {
      {"unknown key", {{"bogus", sdbus::Variant(std::string("x"))}}},
      {"download as string", {{"download", sdbus::Variant(std::string("yes"))}}},
      {"policy as int", {{"policy", sdbus::Variant(std::int32_t{1})}}},
      {"providers as string", {{"providers", sdbus::Variant(std::string(kTestEp))}}},
      {"unknown policy", {{"policy", sdbus::Variant(std::string("fastest"))}}},
      {"bad ort_version", {{"ort_version", sdbus::Variant(std::string("one.two"))}}},
      {"bad provider name",
       {{"providers", sdbus::Variant(std::vector<std::string>{"Not A Name"})}}},
      {"long policy", {{"policy", sdbus::Variant(std::string(4096, 'p'))}}},
  };
  for (const auto& [what, opts] : bad_options) {
    SCOPED_TRACE(what);
    EXPECT_EQ(error_name_of([&] { broker_->RequestSession(opts); }), kInvalid);
  }
  // Nothing was left behind, and the daemon still serves.
  EXPECT_EQ(broker_->DaemonState(), "idle");
  EXPECT_FALSE(broker_->ListDevices().empty());
  EXPECT_EQ(bus_->daemon_pids().size(), 1U);
}

TEST_F(CatalogTest, UnprivilegedCallerMayReadAndLeaseButNotInstallOrManage) {
  start();
  refresh();
  install(kTestEp);

  const fs::path client = client_for_others(*bus_);
  auto as_nobody = [&](std::vector<std::string> args) {
    return run_as(kNobody, client, bus_->address(), std::move(args));
  };

  // Reading and sessions are open to everyone.
  auto r = as_nobody({"call", "ListProviders"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "ok 3\n");
  r = as_nobody({"call", "ListDevices"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;

  // Installing, removing and refreshing are not.
  for (const auto& call : std::vector<std::vector<std::string>>{{"call", "EnsureProvider", kBulkEp},
                                                                {"call", "EnsureProvider", kTestEp},
                                                                {"call", "RemoveProvider", kTestEp},
                                                                {"call", "RefreshCatalog"}}) {
    SCOPED_TRACE(call[1]);
    r = as_nobody(call);
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_TRUE(r.out.starts_with("error " + kNotAuthorized + ": uid 65534")) << r.out << r.err;
  }
  // busctl as uid 65534 says the same.
  const auto b = bus_->busctl(
      {"call", kBrokerName, kBrokerPath, kBrokerInterface, "RemoveProvider", "s", kTestEp},
      kNobody);
  EXPECT_NE(b.exit_code, 0);
  EXPECT_NE(b.err.find("may not perform org.epbroker.manage"), std::string::npos) << b.err;

  // Nothing changed.
  const Dict installed = provider(kTestEp);
  EXPECT_EQ(str(installed, "state"), "ready");
  EXPECT_EQ(str(provider(kBulkEp), "state"), "available");
  const std::string version = str(installed, "version");
  const fs::path library = str(installed, "library_path");
  const fs::path tree = bus_->store_dir() / kTestEp / version;
  EXPECT_EQ(leases_of(installed, version), 0U);

  // A session of uid 65534's client, which we (root, another client) cannot release
  // either, ends with its process.
  Child holder = start_child({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                              client.string(), bus_->address(), "session", kTestEp});
  const auto line = holder.read_line(30s);
  ASSERT_TRUE(line && line->starts_with("session ")) << line.value_or("(nothing)");
  EXPECT_EQ(holder.read_line(10s).value_or(""), "provider test-ep ready");
  EXPECT_EQ(holder.read_line(10s).value_or(""), "holding");
  const std::string session = line->substr(8);
  EXPECT_EQ(leases_of(provider(kTestEp), version), 1U);
  EXPECT_EQ(error_name_of([&] {
              sdbus::createProxy(*conn_, kBrokerName, session)
                  ->callMethod("Release")
                  .onInterface(kSessionInterface);
            }),
            "org.epbroker.Error.NotFound");
  EXPECT_EQ(leases_of(provider(kTestEp), version), 1U);

  // Its lease does not block root's removal: done at once for new sessions, while
  // the leased files stay for uid 65534's session.
  EXPECT_EQ(error_name_of([&] { broker_->RemoveProvider(kTestEp); }), "");
  EXPECT_EQ(str(provider(kTestEp), "state"), "available");
  EXPECT_EQ(leases_of(provider(kTestEp), version), 1U);
  EXPECT_TRUE(fs::is_regular_file(library)) << library;
  const auto [fresh, offered] =
      broker_->RequestSession({{"providers", sdbus::Variant(std::vector<std::string>{kTestEp})}});
  ASSERT_EQ(offered.size(), 1U);
  EXPECT_NE(str(offered[0], "state"), "ready");
  EXPECT_FALSE(offered[0].contains("library_path"));
  sdbus::createProxy(*conn_, kBrokerName, fresh)
      ->callMethod("Release")
      .onInterface(kSessionInterface);

  // The session ends with its process, and the files with its lease.
  holder.kill_and_wait(SIGKILL);
  EXPECT_TRUE(wait_until([&] { return !fs::exists(tree); }, 10s)) << tree << " still there";
  EXPECT_EQ(leases_of(provider(kTestEp), version), std::nullopt);
}

TEST_F(CatalogTest, InstallGroupMembersMayInstallAndManageWithoutPolkit) {
  // nobody's primary group is nogroup (gid 65534): a member, by the fallback rules.
  PrivateBusOptions o;
  o.install_group = "nogroup";
  start(o);
  refresh();
  const fs::path client = client_for_others(*bus_);

  auto r = run_as(kNobody, client, bus_->address(), {"call", "EnsureProvider", kTestEp});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  ASSERT_TRUE(r.out.starts_with("ok /org/epbroker/Broker1/job/")) << r.out;
  const std::string job = r.out.substr(3, r.out.size() - 4);
  EXPECT_EQ(wait_job(*conn_, job), "done");
  EXPECT_EQ(str(provider(kTestEp), "state"), "ready");
  r = run_as(kNobody, client, bus_->address(), {"call", "RefreshCatalog"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;

  // Not a member (uid 1, "daemon" on Debian): refused.
  r = run_as(1, client, bus_->address(), {"call", "RemoveProvider", kTestEp});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(r.out.starts_with("error " + kNotAuthorized + ": uid 1 ")) << r.out;

  r = run_as(kNobody, client, bus_->address(), {"call", "RemoveProvider", kTestEp});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(str(provider(kTestEp), "state"), "available");
  EXPECT_NE(bus_->log().find("members of group 'nogroup' may install or manage"),
            std::string::npos);
}

}  // namespace
}  // namespace tests::daemon
