// The bus as an attack surface (issue 6, section 4): what the generated proxy
// cannot send, sent anyway. Wrong signatures and arities, oversized arrays, dicts
// and strings up to the bus's message limit, invalid UTF-8 (raw bytes on the
// socket), another client's session and job, 10,000 sessions from one client,
// clients vanishing mid-call. After each: the same epbrokerd process still
// serves, and nothing leaked (sessions, leases, memory, descriptors).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <optional>
#include <random>
#include <thread>
#include <utility>

#include "tests/daemon/integration/fixture.hpp"
#include "tests/daemon/integration/proc_stats.hpp"
#include "tests/daemon/integration/raw_wire.hpp"

namespace tests::daemon {
namespace {

namespace fs = std::filesystem;

const std::string kInvalidArgs = "org.freedesktop.DBus.Error.InvalidArgs";
const std::string kInvalid = "org.epbroker.Error.InvalidArgument";
const std::string kBusy = "org.epbroker.Error.Busy";
const std::string kNotFound = "org.epbroker.Error.NotFound";
const std::string kNotAuthorized = "org.epbroker.Error.NotAuthorized";
const char* const kProperties = "org.freedesktop.DBus.Properties";
constexpr uid_t kNobody = 65534;
// dbus-daemon's built-in max_message_size (the system bus's; bus.conf sets none).
constexpr std::size_t kBusMessageLimit = std::size_t{32} << 20;

using Options = std::map<std::string, sdbus::Variant>;
using Append = std::function<void(sdbus::MethodCall&)>;

// Calls PATH INTERFACE.MEMBER with whatever `append` puts in the message; returns
// the error name, "" when it succeeded.
std::string call_with(sdbus::IConnection& conn, const std::string& path,
                      const std::string& interface, const std::string& member,
                      const Append& append) {
  auto proxy = sdbus::createProxy(conn, kBrokerName, path);
  auto msg = proxy->createMethodCall(interface, member);
  if (append) append(msg);
  return error_name_of([&] { proxy->callMethod(msg); });
}

void release(sdbus::IConnection& conn, const std::string& session) {
  sdbus::createProxy(conn, kBrokerName, session)
      ->callMethod("Release")
      .onInterface(kSessionInterface);
}

// Leases of every installed version of every package ListProviders lists.
std::uint64_t all_leases(const Dicts& rows) {
  std::uint64_t n = 0;
  for (const auto& row : rows) {
    if (const auto it = row.find("versions"); it != row.end()) {
      for (const auto& v : it->second.get<Dicts>()) n += v.at("leases").get<std::uint32_t>();
    }
  }
  return n;
}

// Session objects the daemon has on the bus now (ObjectManager).
std::size_t session_objects(sdbus::IConnection& conn) {
  std::map<sdbus::ObjectPath, std::map<std::string, Options>> objects;
  sdbus::createProxy(conn, kBrokerName, kBrokerPath)
      ->callMethod("GetManagedObjects")
      .onInterface("org.freedesktop.DBus.ObjectManager")
      .storeResultsTo(objects);
  const std::string prefix = std::string(kBrokerPath) + "/session/";
  std::size_t n = 0;
  for (const auto& [path, interfaces] : objects) n += path.starts_with(prefix) ? 1U : 0U;
  return n;
}

class BusAttackTest : public CatalogTest {
 protected:
  // Activates the daemon; returns its pid.
  pid_t daemon_pid() {
    broker_->ListDevices();
    const auto pid = bus_->broker_pid();
    EXPECT_TRUE(pid.has_value());
    return pid.value_or(-1);
  }
  // The daemon that was attacked is the one still serving, and the only one.
  void expect_unharmed(pid_t pid) {
    EXPECT_EQ(bus_->broker_pid(), pid);
    EXPECT_EQ(bus_->daemon_pids(), std::vector<pid_t>{pid});
    EXPECT_NO_THROW(broker_->ListDevices());
    EXPECT_NO_THROW(broker_->ListProviders());
  }
};

TEST_F(BusAttackTest, WrongSignaturesAndAritiesAreInvalidArgsAndChangeNothing) {
  start();
  refresh();
  const std::string job = broker_->RefreshCatalog();  // a Job1 to call
  ASSERT_EQ(wait_job(*conn_, job), "done");
  const auto [session, granted] = broker_->RequestSession({});
  const pid_t pid = daemon_pid();

  struct Case {
    std::string path;
    std::string interface;
    std::string member;
    Append args;
    std::string what;
  };
  const std::string b = kBrokerPath;
  const std::string i = kBrokerInterface;
  auto s = [](std::string v) { return [v](sdbus::MethodCall& m) { m << v; }; };
  const std::vector<Case> cases = {
      {b, i, "ListDevices", s("x"), "(s)"},
      {b, i, "ListProviders", [](auto& m) { m << std::uint32_t{1}; }, "(u)"},
      {b, i, "EnsureProvider", [](auto& m) { m << std::int32_t{7}; }, "(i)"},
      {b, i, "EnsureProvider", nullptr, "()"},
      {b, i, "EnsureProvider", [](auto& m) { m << std::string(kTestEp) << std::string("x"); },
       "(ss)"},
      {b, i, "EnsureProvider", [](auto& m) { m << std::vector<std::string>{kTestEp}; }, "(as)"},
      {b, i, "EnsureProvider", [](auto& m) { m << sdbus::Variant(std::string(kTestEp)); }, "(v)"},
      {b, i, "RemoveProvider", [](auto& m) { m << sdbus::ObjectPath("/test/ep"); }, "(o)"},
      {b, i, "RemoveProvider", nullptr, "()"},
      {b, i, "RemoveProvider", [](auto& m) { m << std::string(kTestEp) << true; }, "(sb)"},
      {b, i, "RefreshCatalog", [](auto& m) { m << true; }, "(b)"},
      {b, i, "Verify", [](auto& m) { m << Options{}; }, "(a{sv})"},
      {b, i, "RequestSession", s("providers"), "(s)"},
      {b, i, "RequestSession", nullptr, "()"},
      {b, i, "RequestSession",
       [](auto& m) {
         m << std::map<std::string, std::string>{{"policy", "default"}};
       },
       "(a{ss})"},
      {b, i, "RequestSession", [](auto& m) { m << Options{} << std::string("extra"); }, "(a{sv}s)"},
      {b, i, "RequestSession", [](auto& m) { m << Options{} << Options{}; }, "(a{sv}a{sv})"},
      {b, i, "RequestSession", [](auto& m) { m << sdbus::Variant(Options{}); }, "(v)"},
      {b, i, "RequestSession",
       [](auto& m) { m << std::vector<sdbus::Variant>{sdbus::Variant(true)}; }, "(av)"},
      {session, kSessionInterface, "Release", s("x"), "(s)"},
      {session, kSessionInterface, "Release", [](auto& m) { m << Options{}; }, "(a{sv})"},
      {job, kJobInterface, "Cancel", [](auto& m) { m << std::uint32_t{1}; }, "(u)"},
      {job, kJobInterface, "Cancel", s("now"), "(s)"},
      {b, kProperties, "Get", s(kBrokerInterface), "(s)"},
      {b, kProperties, "GetAll", nullptr, "()"},
      {b, kProperties, "GetAll", [](auto& m) { m << std::int32_t{1}; }, "(i)"},
      {b, kProperties, "Set", [](auto& m) { m << std::string(kBrokerInterface); }, "(s)"},
      {b, "org.freedesktop.DBus.ObjectManager", "GetManagedObjects", s("x"), "(s)"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.interface + "." + c.member + c.what + " on " + c.path);
    EXPECT_EQ(call_with(*conn_, c.path, c.interface, c.member, c.args), kInvalidArgs);
  }
  // sd-bus's own Properties handler (libsystemd 252) reads what it needs and
  // ignores the rest: Get with an extra argument answers, Set of a read-only
  // property without its value is refused as read-only. Harmless: nothing of ours
  // runs with the extra bytes.
  EXPECT_EQ(call_with(*conn_, b, kProperties, "Get",
                      [](auto& m) {
                        m << std::string(kBrokerInterface) << std::string("Version")
                          << std::int32_t{1};
                      }),
            "");
  EXPECT_EQ(
      call_with(*conn_, b, kProperties, "Set",
                [](auto& m) { m << std::string(kBrokerInterface) << std::string("DaemonState"); }),
      "org.freedesktop.DBus.Error.PropertyReadOnly");
  // Right signatures on the wrong things: named by sd-bus too.
  EXPECT_EQ(call_with(*conn_, b, kProperties, "Set",
                      [](auto& m) {
                        m << std::string(kBrokerInterface) << std::string("DaemonState")
                          << sdbus::Variant(std::string("idle"));
                      }),
            "org.freedesktop.DBus.Error.PropertyReadOnly");
  EXPECT_EQ(call_with(*conn_, b, kProperties, "Get",
                      [](auto& m) { m << std::string(kBrokerInterface) << std::string("Nope"); }),
            "org.freedesktop.DBus.Error.UnknownProperty");
  EXPECT_EQ(call_with(*conn_, b, i, "Shutdown", nullptr),
            "org.freedesktop.DBus.Error.UnknownMethod");
  EXPECT_EQ(call_with(*conn_, b, "org.epbroker.Broker2", "ListDevices", nullptr),
            "org.freedesktop.DBus.Error.UnknownMethod");
  EXPECT_EQ(call_with(*conn_, b + "/nothing", i, "ListDevices", nullptr),
            "org.freedesktop.DBus.Error.UnknownObject");

  // Nothing was started, ended or removed: test-ep is still only available, the
  // session still ours to release, the job still done.
  expect_unharmed(pid);
  EXPECT_EQ(str(provider(kTestEp), "state"), "available");
  EXPECT_EQ(job_property(*conn_, job, "State").get<std::string>(), "done");
  EXPECT_NO_THROW(release(*conn_, session));
  EXPECT_TRUE(wait_until([&] { return broker_->DaemonState() == "idle"; }, 10s));
}

TEST_F(BusAttackTest, OversizedArraysDictsAndStringsAreRefusedWithBoundedMemory) {
  start();
  refresh();
  const pid_t pid = daemon_pid();
  const long rss_start = rss_kb(pid);
  const long fds_start = fd_count(pid);

  Options many_keys;
  for (int k = 0; k < 10'000; ++k) many_keys.emplace("key" + std::to_string(k), sdbus::Variant(k));
  const Options many_providers{
      {"providers", sdbus::Variant(std::vector<std::string>(100'000, kTestEp))}};
  const std::string mib(std::size_t{1} << 20, 'a');
  // As much as fits in one message with its header and the daemon's name.
  const std::string near_limit(kBusMessageLimit - 4096, 'n');
  auto round = [&] {
    EXPECT_EQ(error_name_of([&] { broker_->RequestSession(many_keys); }), kInvalid);
    EXPECT_EQ(error_name_of([&] { broker_->RequestSession(many_providers); }), kInvalid);
    for (const auto& opts :
         std::vector<Options>{{{"policy", sdbus::Variant(mib)}},
                              {{"ort_version", sdbus::Variant(mib)}},
                              {{"providers", sdbus::Variant(std::vector<std::string>{mib})}},
                              {{mib, sdbus::Variant(true)}},
                              {{"policy", sdbus::Variant(near_limit)}}}) {
      EXPECT_EQ(error_name_of([&] { broker_->RequestSession(opts); }), kInvalid);
    }
    for (const std::string* name : {&mib, &near_limit}) {
      EXPECT_EQ(error_name_of([&] { broker_->EnsureProvider(*name); }), kInvalid);
      EXPECT_EQ(error_name_of([&] { broker_->RemoveProvider(*name); }), kInvalid);
    }
  };
  // Each round passes ~150 MiB of arguments through the daemon. What stays resident
  // after a round is the allocator's cache of freed blocks (how much varies from
  // run to run: 12 to 45 MB seen), never the rounds' sum: at most three of the
  // largest messages' worth over the start, after every round. (Under ASan the
  // quarantine of freed blocks is resident too: not checked.)
  std::string after;
  for (int r = 0; r < 5; ++r) {
    round();
    const long rss = rss_kb(pid);
    after += (r ? ", " : "") + std::to_string(rss);
    if (!under_asan(pid)) {
      EXPECT_LT(rss, rss_start + 3 * static_cast<long>(kBusMessageLimit >> 10)) << "round " << r;
    }
  }
  std::printf("daemon RSS: %ld kB at start, after each round %s kB; fds %ld -> %ld\n", rss_start,
              after.c_str(), fds_start, fd_count(pid));
  EXPECT_EQ(fd_count(pid), fds_start);

  // Beyond the bus's limit the message never reaches the daemon: dbus-daemon
  // drops the sender's connection.
  WireWriter body;
  body.str(std::string(kBusMessageLimit + 1024, 'x'));
  RawBusClient raw(bus_->address());
  const auto serial =
      raw.call(kBrokerName, kBrokerPath, kBrokerInterface, "EnsureProvider", "s", body.bytes());
  EXPECT_EQ(raw.wait_reply(serial, 10s).outcome, RawBusClient::Outcome::closed);
  expect_unharmed(pid);
  EXPECT_EQ(broker_->DaemonState(), "idle");
}

// `value` as the one string argument of EnsureProvider ("s").
std::string string_body(std::string_view value) {
  WireWriter w;
  w.str(value);
  return w.bytes();
}

// RequestSession's a{sv} with one entry KEY => <s VALUE>.
std::string options_body(std::string_view key, std::string_view value) {
  WireWriter w;
  w.u32(0);  // the array's byte length, patched below
  w.align(8);
  const std::size_t start = w.bytes().size();
  w.str(key);
  w.sig("s");
  w.str(value);
  const auto len = static_cast<std::uint32_t>(w.bytes().size() - start);
  for (std::size_t k = 0; k < 4; ++k) w.bytes()[k] = static_cast<char>(len >> (8 * k));
  return w.bytes();
}

TEST_F(BusAttackTest, InvalidUtf8NeverReachesTheDaemonTheBusDropsTheSender) {
  start();
  refresh();
  const pid_t pid = daemon_pid();

  // The raw client is honest when the bytes are: a valid but refused name gets
  // the daemon's own error, and valid options a session.
  {
    RawBusClient raw(bus_->address());
    auto r = raw.wait_reply(raw.call(kBrokerName, kBrokerPath, kBrokerInterface, "EnsureProvider",
                                     "s", string_body("Bad Name")),
                            10s);
    EXPECT_EQ(r.outcome, RawBusClient::Outcome::reply);
    EXPECT_EQ(r.error_name, kInvalid);
    r = raw.wait_reply(raw.call(kBrokerName, kBrokerPath, kBrokerInterface, "RequestSession",
                                "a{sv}", options_body("policy", "default")),
                       10s);
    EXPECT_EQ(r.outcome, RawBusClient::Outcome::reply);
    EXPECT_FALSE(r.is_error) << r.error_name;
  }  // (its session ends with the connection)

  const std::vector<std::pair<std::string, std::string>> bad = {
      {"0xff 0xfe", "test\xff\xfe-ep"},
      {"overlong '/'",
       "test\xc0\xaf"
       "ep"},
      {"UTF-16 surrogate",
       "test\xed\xa0\x80"
       "ep"},
      {"truncated sequence", "test-ep\xe2\x82"},
      {"embedded NUL", std::string("test\0ep", 7)},
  };
  for (const auto& [what, text] : bad) {
    SCOPED_TRACE(what);
    for (int where = 0; where < 3; ++where) {
      SCOPED_TRACE(where == 0   ? "EnsureProvider's name"
                   : where == 1 ? "options key"
                                : "option value");
      RawBusClient raw(bus_->address());
      const auto serial =
          where == 0
              ? raw.call(kBrokerName, kBrokerPath, kBrokerInterface, "EnsureProvider", "s",
                         string_body(text))
              : raw.call(kBrokerName, kBrokerPath, kBrokerInterface, "RequestSession", "a{sv}",
                         where == 1 ? options_body(text, "default") : options_body("policy", text));
      EXPECT_EQ(raw.wait_reply(serial, 10s).outcome, RawBusClient::Outcome::closed);
    }
  }
  expect_unharmed(pid);
  EXPECT_TRUE(wait_until([&] { return session_objects(*conn_) == 0; }, 10s));
  EXPECT_EQ(str(provider(kTestEp), "state"), "available");
}

TEST_F(BusAttackTest, AnotherClientsSessionRevealsNothingAndCannotBeReleased) {
  start();
  refresh();
  install(kTestEp);
  const auto [session, granted] =
      broker_->RequestSession({{"providers", sdbus::Variant(std::vector<std::string>{kTestEp})}});
  ASSERT_EQ(granted.size(), 1U);
  const std::string version = str(granted[0], "version");
  ASSERT_EQ(leases_of(provider(kTestEp), version), 1U);

  auto other = bus_->connect();
  auto proxy = sdbus::createProxy(*other, kBrokerName, session);
  Options all;
  proxy->callMethod("GetAll")
      .onInterface(kProperties)
      .withArguments(std::string(kSessionInterface))
      .storeResultsTo(all);
  EXPECT_TRUE(all.empty()) << all.size() << " properties, e.g. " << all.begin()->first;
  EXPECT_EQ(error_name_of([&] {
              proxy->getProperty("Owner").onInterface(kSessionInterface).get<std::string>();
            }),
            "org.freedesktop.DBus.Error.UnknownProperty");
  // The object manager lists the path, with nothing in it either.
  std::map<sdbus::ObjectPath, std::map<std::string, Options>> objects;
  sdbus::createProxy(*other, kBrokerName, kBrokerPath)
      ->callMethod("GetManagedObjects")
      .onInterface("org.freedesktop.DBus.ObjectManager")
      .storeResultsTo(objects);
  ASSERT_TRUE(objects.contains(sdbus::ObjectPath(session)));
  for (const auto& [interface, props] : objects.at(sdbus::ObjectPath(session))) {
    EXPECT_TRUE(props.empty()) << interface;
  }
  EXPECT_EQ(error_name_of([&] { release(*other, session); }), kNotFound);
  EXPECT_EQ(leases_of(provider(kTestEp), version), 1U);  // the lease holds
  // Its owner's release ends it: a removal deletes the tree at once.
  release(*conn_, session);
  EXPECT_EQ(leases_of(provider(kTestEp), version), 0U);
  broker_->RemoveProvider(kTestEp);
  const fs::path tree = bus_->store_dir() / kTestEp / version;
  EXPECT_TRUE(wait_until([&] { return !fs::exists(tree); }, 5s)) << tree;
}

TEST_F(BusAttackTest, TenThousandSessionsFromOneClientStopAtThePerClientCap) {
  start();
  refresh();
  install(kTestEp);
  const pid_t pid = daemon_pid();
  const long rss_start = rss_kb(pid);
  // The install's thread closes its descriptors just after its Finished signal: the
  // count is taken once it holds still (the same twice, 100 ms apart).
  long fds_start = fd_count(pid);
  EXPECT_TRUE(wait_until(
      [&] {
        std::this_thread::sleep_for(100ms);
        const long now = fd_count(pid);
        return std::exchange(fds_start, now) == now;
      },
      10s));
  const Options opts{{"providers", sdbus::Variant(std::vector<std::string>{kTestEp})}};

  auto greedy_conn = bus_->connect();
  auto greedy = std::make_unique<BrokerProxy>(*greedy_conn);
  int granted = 0;
  std::map<std::string, int> refused;
  for (int n = 0; n < 10'000; ++n) {
    const std::string e = error_name_of([&] { greedy->RequestSession(opts); });
    if (e.empty()) {
      ++granted;
    } else {
      ++refused[e];
    }
  }
  EXPECT_EQ(granted, 64);  // daemon/config: max_sessions_per_client default
  EXPECT_EQ(refused, (std::map<std::string, int>{{kBusy, 10'000 - 64}}));
  // Another client is unaffected.
  const auto [mine, providers] = broker_->RequestSession(opts);
  ASSERT_EQ(providers.size(), 1U);
  EXPECT_EQ(str(providers[0], "state"), "ready");
  EXPECT_TRUE(wait_until([&] { return session_objects(*conn_) == 65; }, 10s));
  const std::string version = str(providers[0], "version");
  EXPECT_EQ(leases_of(provider(kTestEp), version), 65U);  // one lease per granted session
  const long rss_full = rss_kb(pid);

  // The greedy client leaves the bus: its 64 sessions end, and their leases.
  greedy.reset();
  greedy_conn.reset();
  EXPECT_TRUE(wait_until([&] { return session_objects(*conn_) == 1; }, 10s));
  EXPECT_TRUE(wait_until([&] { return leases_of(provider(kTestEp), version) == 1U; }, 10s))
      << leases_of(provider(kTestEp), version).value_or(0) << " leases";
  release(*conn_, mine);
  EXPECT_TRUE(wait_until([&] { return broker_->DaemonState() == "idle"; }, 10s));
  // No lease left behind: none counted, and a removal deletes the tree at once.
  EXPECT_EQ(leases_of(provider(kTestEp), version), 0U);
  EXPECT_NO_THROW(broker_->RemoveProvider(kTestEp));
  const fs::path tree = bus_->store_dir() / kTestEp / version;
  EXPECT_TRUE(wait_until([&] { return !fs::exists(tree); }, 5s)) << tree;
  std::printf(
      "daemon RSS: %ld kB at start, %ld kB holding 65 sessions, %ld kB after; fds %ld -> %ld\n",
      rss_start, rss_full, rss_kb(pid), fds_start, fd_count(pid));
  // No descriptor left behind (polled: the sessions' ends are handled on the bus thread).
  EXPECT_TRUE(wait_until([&] { return fd_count(pid) <= fds_start; }, 10s))
      << fd_count(pid) << " fds, " << fds_start << " at start";
  expect_unharmed(pid);
}

TEST_F(BusAttackTest, ClientsVanishingMidCallLeaveNoSessionOrLease) {
  start();
  refresh();
  install(kTestEp);
  const pid_t pid = daemon_pid();
  const Options opts{{"providers", sdbus::Variant(std::vector<std::string>{kTestEp, kBulkEp})},
                     {"download", sdbus::Variant(true)}};

  // 1. In this process: 20 connections each send 50 RequestSession (a lease on
  //    test-ep, an install of bulk-ep) and a Verify, and close without waiting.
  for (int c = 0; c < 20; ++c) {
    auto conn = sdbus::createSessionBusConnectionWithAddress(bus_->address());
    auto proxy = sdbus::createProxy(*conn, kBrokerName, kBrokerPath);
    for (int n = 0; n < 50; ++n) {
      auto call = proxy->createMethodCall(kBrokerInterface, "RequestSession");
      call << opts;
      proxy->callMethod(
          call, [](sdbus::MethodReply&, const sdbus::Error*) {}, 30'000'000);
    }
    {
      // (A message must go before its connection.)
      auto verify = proxy->createMethodCall(kBrokerInterface, "Verify");
      proxy->callMethod(
          verify, [](sdbus::MethodReply&, const sdbus::Error*) {}, 30'000'000);
    }
    proxy.reset();
    conn.reset();  // flushes what was queued, then closes
  }
  // 2. Other processes, killed (SIGKILL) at random moments of their RequestSession.
  std::mt19937 rng(20261121);
  std::uniform_int_distribution<int> delay_us(0, 30'000);
  for (int round = 0; round < 20; ++round) {
    Child client = start_child({bus_client_path().string(), bus_->address(), "session", kTestEp});
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us(rng)));  // the random moment
    client.kill_and_wait(SIGKILL);
  }

  EXPECT_TRUE(wait_until([&] { return session_objects(*conn_) == 0; }, 20s))
      << session_objects(*conn_) << " sessions left";
  // The scenario happened: the daemon granted sessions to callers that were gone
  // or going (session ids count every grant).
  const auto [probe, none] = broker_->RequestSession({});
  const auto granted = std::stoul(probe.substr(probe.rfind('/') + 1)) - 1;
  std::printf("%lu of 1,020 RequestSession calls of vanishing clients were granted\n", granted);
  EXPECT_GT(granted, 0U);
  release(*conn_, probe);
  EXPECT_TRUE(wait_until([&] { return broker_->DaemonState() == "idle"; }, 60s));
  // No lease left behind: none counted (test-ep, nor bulk-ep that some installed),
  // and a removal deletes test-ep's tree at once.
  const Dicts rows = broker_->ListProviders();
  EXPECT_EQ(all_leases(rows), 0U);
  const std::string version = str(provider(kTestEp), "version");
  EXPECT_EQ(leases_of(provider(kTestEp), version), 0U);
  EXPECT_NO_THROW(broker_->RemoveProvider(kTestEp));
  const fs::path tree = bus_->store_dir() / kTestEp / version;
  EXPECT_TRUE(wait_until([&] { return !fs::exists(tree); }, 5s)) << tree;
  expect_unharmed(pid);
}

TEST_F(BusAttackTest, RepeatedJobsLeaveNoThreadBehind) {
  start();
  refresh();
  const pid_t pid = daemon_pid();
  const long vm_start = vm_kb(pid);
  const long rss_start = rss_kb(pid);
  // Each refresh runs on a worker thread of its own. A worker that ended must not
  // stay unjoined: its stack (8 MiB of address space, what it touched resident)
  // would stay mapped until the daemon exits.
  constexpr int kJobs = 64;
  for (int n = 0; n < kJobs; ++n) refresh();
  const long vm_end = vm_kb(pid);
  std::printf("daemon after %d refresh jobs: VmSize %ld -> %ld kB, RSS %ld -> %ld kB\n", kJobs,
              vm_start, vm_end, rss_start, rss_kb(pid));
  if (!under_asan(pid)) {  // (ASan's own mappings grow VmSize)
    EXPECT_LT(vm_end - vm_start, kJobs / 4 * 8 * 1024);
  }
  expect_unharmed(pid);
}

TEST_F(BusAttackTest, AnotherUidCannotCancelAJobItDidNotStart) {
  start();
  // Targets trickle (80 KiB/s): bulk-ep's 4 MiB take ~50 s, a job to cancel.
  bus_->add_remote("test", catalog_->metadata_url(), catalog_->base_url() + "__trickle__/targets/",
                   catalog_->trusted_root());
  refresh();
  const pid_t pid = daemon_pid();
  const std::string job = broker_->EnsureProvider(kBulkEp);

  const fs::path client = client_for_others(*bus_);
  const auto r = run_command({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                              client.string(), bus_->address(), "cancel", job});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(r.out.starts_with("error " + kNotAuthorized + ": only the job's starter"))
      << r.out << r.err;
  // busctl as uid 65534 says the same.
  const auto b = bus_->busctl({"call", kBrokerName, job, kJobInterface, "Cancel"}, kNobody);
  EXPECT_NE(b.exit_code, 0);
  EXPECT_NE(b.err.find("only the job's starter may cancel it"), std::string::npos) << b.err;

  // The job goes on; its starter may cancel it.
  const std::string state = job_property(*conn_, job, "State").get<std::string>();
  EXPECT_TRUE(state == "queued" || state == "downloading") << state;
  sdbus::createProxy(*conn_, kBrokerName, job)->callMethod("Cancel").onInterface(kJobInterface);
  EXPECT_EQ(wait_job(*conn_, job), "cancelled");
  EXPECT_EQ(str(provider(kBulkEp), "state"), "available");
  expect_unharmed(pid);
}

}  // namespace
}  // namespace tests::daemon
