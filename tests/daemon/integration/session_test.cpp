// Sessions through the bus: RequestSession's providers, the lease they hold
// (ListProviders' versions[].leases; RemoveProvider takes effect for new sessions
// at once, the leased files go with the last lease), Release, a session ending when
// its owner leaves the bus (killed with SIGKILL), and a session another client can
// neither release nor read; leases of a running app kept across a daemon restart.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "tests/daemon/integration/fixture.hpp"

namespace tests::daemon {
namespace {

namespace fs = std::filesystem;

const std::string kNotFound = "org.epbroker.Error.NotFound";
// An ended session answers NotFound until its object is removed (promptly, but
// asynchronously), then the bus answers UnknownObject: both mean "gone".
bool is_gone(const std::string& error_name) {
  return error_name == kNotFound || error_name == "org.freedesktop.DBus.Error.UnknownObject";
}

void release(sdbus::IConnection& conn, const std::string& session) {
  auto proxy = sdbus::createProxy(conn, kBrokerName, session);
  proxy->callMethod("Release").onInterface(kSessionInterface);
}

using Interfaces = std::map<std::string, std::map<std::string, sdbus::Variant>>;

// What GetManagedObjects lists for `session` as seen by `conn` (nullopt: not listed).
std::optional<Interfaces> listed(sdbus::IConnection& conn, const std::string& session) {
  auto proxy = sdbus::createProxy(conn, kBrokerName, kBrokerPath);
  std::map<sdbus::ObjectPath, Interfaces> objects;
  proxy->callMethod("GetManagedObjects")
      .onInterface("org.freedesktop.DBus.ObjectManager")
      .storeResultsTo(objects);
  auto it = objects.find(sdbus::ObjectPath(session));
  if (it == objects.end()) return std::nullopt;
  return it->second;
}

// Properties.GetAll of Session1 on `session`, called by `conn`.
std::map<std::string, sdbus::Variant> all_properties(sdbus::IConnection& conn,
                                                     const std::string& session) {
  auto proxy = sdbus::createProxy(conn, kBrokerName, session);
  std::map<std::string, sdbus::Variant> all;
  proxy->callMethod("GetAll")
      .onInterface("org.freedesktop.DBus.Properties")
      .withArguments(std::string(kSessionInterface))
      .storeResultsTo(all);
  return all;
}

TEST_F(CatalogTest, SessionLeasesProvidersUntilReleased) {
  start();
  refresh();
  install(kTestEp);

  std::map<std::string, sdbus::Variant> opts;
  opts.emplace("providers", sdbus::Variant(std::vector<std::string>{kTestEp}));
  opts.emplace("policy", sdbus::Variant(std::string("prefer_cpu")));
  opts.emplace("ort_version", sdbus::Variant(std::string("1.30.0")));
  const auto [session, providers] = broker_->RequestSession(opts);
  EXPECT_TRUE(session.starts_with(std::string(kBrokerPath) + "/session/")) << session;
  ASSERT_EQ(providers.size(), 1U);
  const Dict& p = providers[0];
  EXPECT_EQ(str(p, "name"), kTestEp);
  EXPECT_EQ(str(p, "state"), "ready");
  const std::string version = str(p, "version");
  const fs::path tree = bus_->store_dir() / kTestEp / version;
  EXPECT_EQ(strs(p, "ep_names"), std::vector<std::string>{"EpbrokerTestEp"});
  const fs::path library = str(p, "library_path");
  EXPECT_TRUE(fs::is_regular_file(library)) << library;
  EXPECT_TRUE(library.string().starts_with(tree.string() + "/")) << library;
  EXPECT_FALSE(strs(p, "devices").empty());
  // Listed by the ObjectManager (registered before any next call of ours), with
  // nothing to read: what it leases was told in the reply alone.
  const auto entry = listed(*conn_, session);
  ASSERT_TRUE(entry.has_value()) << session << " not listed by GetManagedObjects";
  ASSERT_TRUE(entry->contains(kSessionInterface));
  EXPECT_TRUE(entry->at(kSessionInterface).empty());
  EXPECT_EQ(broker_->DaemonState(), "busy");

  // Leased: the granted version counts this one session.
  EXPECT_EQ(leases_of(provider(kTestEp), version), 1U);

  // Removed while leased: gone for new sessions at once, but the leased files stay.
  broker_->RemoveProvider(kTestEp);
  EXPECT_TRUE(fs::is_regular_file(library));
  const Dict removed = provider(kTestEp);
  EXPECT_EQ(str(removed, "state"), "available");
  EXPECT_EQ(role_of(removed, version), "removing");
  EXPECT_EQ(leases_of(removed, version), 1U);
  // A new session does not get it (nor lease it).
  const auto [second, offered] = broker_->RequestSession(opts);
  ASSERT_EQ(offered.size(), 1U);
  EXPECT_NE(str(offered[0], "state"), "ready");
  EXPECT_FALSE(offered[0].contains("library_path"));
  EXPECT_EQ(leases_of(provider(kTestEp), version), 1U);
  release(*conn_, second);

  // Released: the session object is gone, and the files with its lease.
  release(*conn_, session);
  EXPECT_TRUE(is_gone(error_name_of([&] { release(*conn_, session); })));
  EXPECT_TRUE(wait_until([&] { return !fs::exists(tree); }, 5s)) << tree;
  EXPECT_FALSE(fs::exists(library));
  EXPECT_EQ(leases_of(provider(kTestEp), version), std::nullopt);
  EXPECT_EQ(str(provider(kTestEp), "state"), "available");
  EXPECT_TRUE(wait_until([&] { return broker_->DaemonState() == "idle"; }, 5s));
}

TEST_F(CatalogTest, SessionWithDownloadStartsTheInstallAndNamesItsJob) {
  start();
  refresh();
  std::map<std::string, sdbus::Variant> opts;
  opts.emplace("providers", sdbus::Variant(std::vector<std::string>{kTestEp}));
  opts.emplace("download", sdbus::Variant(true));
  const auto [session, providers] = broker_->RequestSession(opts);
  ASSERT_EQ(providers.size(), 1U);
  EXPECT_EQ(str(providers[0], "state"), "installing");
  const std::string job = providers[0].at("job").get<sdbus::ObjectPath>();
  EXPECT_EQ(wait_job(*conn_, job), "done");
  EXPECT_EQ(str(provider(kTestEp), "state"), "ready");
  release(*conn_, session);
}

TEST_F(CatalogTest, OwnerLeavingTheBusEndsItsLease) {
  start();
  refresh();
  install(kTestEp);

  // Another process takes a session and holds it.
  Child holder = start_child({bus_client_path().string(), bus_->address(), "session", kTestEp});
  const auto first = holder.read_line(30s);
  ASSERT_TRUE(first.has_value()) << "the holder printed nothing";
  ASSERT_TRUE(first->starts_with("session /org/epbroker/Broker1/session/")) << *first;
  const std::string session = first->substr(std::string("session ").size());
  EXPECT_EQ(holder.read_line(10s).value_or(""), "provider test-ep ready");
  EXPECT_EQ(holder.read_line(10s).value_or(""), "holding");
  // Its one lease, on the current version.
  const Dict row = provider(kTestEp);
  const std::string version = str(row, "version");
  const fs::path library = str(row, "library_path");
  const fs::path tree = bus_->store_dir() / kTestEp / version;
  EXPECT_EQ(leases_of(row, version), 1U);

  // Removed while it holds the lease: the files stay for it.
  broker_->RemoveProvider(kTestEp);
  EXPECT_EQ(str(provider(kTestEp), "state"), "available");
  EXPECT_EQ(leases_of(provider(kTestEp), version), 1U);
  EXPECT_TRUE(fs::is_regular_file(library)) << library;

  // Killed without a word: the bus tells the daemon, which ends the session, and
  // with its lease the files go.
  holder.kill_and_wait(SIGKILL);
  EXPECT_TRUE(wait_until([&] { return !fs::exists(tree); }, 10s)) << tree << " still there";
  EXPECT_EQ(leases_of(provider(kTestEp), version), std::nullopt);
  EXPECT_EQ(str(provider(kTestEp), "state"), "available");
  EXPECT_TRUE(wait_until([&] { return !listed(*conn_, session).has_value(); }, 10s));
  EXPECT_TRUE(is_gone(error_name_of([&] { release(*conn_, session); })));
}

TEST_F(CatalogTest, AnotherClientsSessionCannotBeReleasedOrRead) {
  start();
  refresh();
  install(kTestEp);
  std::map<std::string, sdbus::Variant> opts;
  opts.emplace("providers", sdbus::Variant(std::vector<std::string>{kTestEp}));
  const auto [session, providers] = broker_->RequestSession(opts);
  ASSERT_EQ(providers.size(), 1U);
  const std::string version = str(providers[0], "version");
  ASSERT_EQ(leases_of(provider(kTestEp), version), 1U);

  // A second client of the same uid: NotFound, and the lease holds.
  auto other = bus_->connect();
  EXPECT_EQ(error_name_of([&] { release(*other, session); }), kNotFound);
  EXPECT_EQ(leases_of(provider(kTestEp), version), 1U);
  // Another process too (bus_client exits 1 printing the error).
  const auto r = run_command({bus_client_path().string(), bus_->address(), "release", session});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(r.out.starts_with("error " + kNotFound)) << r.out << r.err;
  EXPECT_EQ(leases_of(provider(kTestEp), version), 1U);
  // Nor can it read anything about it: no properties, no owner, no leases.
  EXPECT_TRUE(all_properties(*other, session).empty());
  EXPECT_FALSE(error_name_of([&] {
                 auto proxy = sdbus::createProxy(*other, kBrokerName, session);
                 proxy->getProperty("Owner").onInterface(kSessionInterface);
               }).empty());
  const auto seen = listed(*other, session);
  ASSERT_TRUE(seen.has_value());
  EXPECT_TRUE(seen->at(kSessionInterface).empty());

  // Its owner's release ends the lease: nothing keeps the files from a removal.
  release(*conn_, session);
  EXPECT_EQ(leases_of(provider(kTestEp), version), 0U);
  broker_->RemoveProvider(kTestEp);
  const fs::path tree = bus_->store_dir() / kTestEp / version;
  EXPECT_TRUE(wait_until([&] { return !fs::exists(tree); }, 5s)) << tree;
}

// The daemon is restarted (SIGTERM: systemctl restart, a package upgrade) while an
// app holds a session: the next instance takes the app's lease again (its unique
// name is still on the bus), so a removal keeps the app's files until the app
// leaves, then deletes them.
TEST_F(CatalogTest, LeasesOfRunningAppsSurviveADaemonRestart) {
  start();
  refresh();
  install(kTestEp);
  auto app = bus_->connect();
  auto app_broker = std::make_unique<BrokerProxy>(*app);
  std::map<std::string, sdbus::Variant> opts;
  opts.emplace("providers", sdbus::Variant(std::vector<std::string>{kTestEp}));
  const auto [session, providers] = app_broker->RequestSession(opts);
  ASSERT_EQ(providers.size(), 1U);
  ASSERT_EQ(str(providers[0], "state"), "ready");
  const std::string version = str(providers[0], "version");
  const fs::path tree = bus_->store_dir() / kTestEp / version;

  const auto pid = bus_->broker_pid();
  ASSERT_TRUE(pid.has_value());
  ASSERT_EQ(kill(*pid, SIGTERM), 0);
  ASSERT_TRUE(wait_until([&] { return !bus_->broker_pid().has_value(); }, 20s));

  // A new instance (activated by this call) holds the app's lease again.
  EXPECT_EQ(leases_of(provider(kTestEp), version), 1U);
  ASSERT_NE(bus_->broker_pid(), pid);
  broker_->RemoveProvider(kTestEp);
  EXPECT_TRUE(fs::exists(tree)) << "removed under a running app";
  EXPECT_EQ(role_of(provider(kTestEp), version), "removing");

  // The app leaves the bus: its lease ends, and the files go.
  app_broker.reset();
  app.reset();
  EXPECT_TRUE(wait_until([&] { return !fs::exists(tree); }, 10s)) << tree << " still there";
}

}  // namespace
}  // namespace tests::daemon
