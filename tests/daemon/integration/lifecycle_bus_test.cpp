// The package lifecycle's bus API (issue 16) on a private bus: the new Broker1
// methods in introspection, their strict a{sv} options, who may call them, the
// lifecycle entries of ListProviders, and, without the daemon, the provider
// dicts (daemon/dbus/convert). NetworkManager's Metered: metered_bus_test.cpp.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "common/wire.hpp"
#include "daemon/dbus/convert.hpp"
#include "tests/daemon/integration/fixture.hpp"

namespace tests::daemon {
namespace {

namespace fs = std::filesystem;
namespace key = common::key;

const std::string kError = "org.epbroker.Error.";
constexpr uid_t kNobody = 65534;

using Options = std::map<std::string, sdbus::Variant>;

// A b entry; a missing key or another type fails the calling test.
bool flag(const Dict& d, const std::string& k) {
  auto it = d.find(k);
  if (it == d.end() || it->second.peekValueType() != "b") {
    ADD_FAILURE() << "no b entry '" << k << "'";
    return false;
  }
  return it->second.get<bool>();
}

// ---- the daemon ---------------------------------------------------------------

TEST_F(BrokerTest, IntrospectionListsTheLifecycleMethods) {
  start({}, /*with_catalog=*/false);
  const auto r = bus_->busctl({"introspect", kBrokerName, kBrokerPath, kBrokerInterface});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Each method with its in and out signatures, as busctl prints them.
  const std::vector<std::vector<std::string>> want = {{".InstallProvider", "sa{sv}", "o"},
                                                      {".Update", "asa{sv}", "aa{sv}"},
                                                      {".Hold", "s", "-"},
                                                      {".Unhold", "s", "-"},
                                                      {".Rollback", "s", "ss"},
                                                      {".History", "s", "aa{sv}"},
                                                      {".CollectGarbage", "-", "aa{sv}"},
                                                      {".RemoveProvider", "s", "-"},
                                                      {".RemoveProviderNow", "s", "-"},
                                                      {".ResetRemote", "s", "-"}};
  std::istringstream lines(r.out);
  std::map<std::string, std::vector<std::string>> methods;
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string name, type, in, out;
    if (words >> name >> type >> in >> out && type == "method") methods[name] = {name, in, out};
  }
  for (const auto& w : want) EXPECT_EQ(methods[w[0]], w) << r.out;
}

class LifecycleBusTest : public CatalogTest {
 protected:
  // test-ep installed and current.
  void start_installed() {
    start();
    refresh();
    install(kTestEp);
  }
  // What must not change when a call is refused.
  std::string snapshot() {
    const auto p = provider(kTestEp);
    return str(p, key::state) + " " + str(p, key::version) + " " +
           std::to_string(broker_->History("").size()) + " " + broker_->DaemonState();
  }
};

TEST_F(LifecycleBusTest, OptionsAreCheckedStrictly) {
  start_installed();
  const auto before = snapshot();
  const std::string invalid = kError + "InvalidArgument";
  const std::vector<std::pair<std::string, Options>> bad_install = {
      {"unknown key", {{"bogus", sdbus::Variant(std::string("x"))}}},
      {"dry_run is Update's", {{key::dry_run, sdbus::Variant(true)}}},
      {"version as int", {{key::version, sdbus::Variant(std::int32_t{1})}}},
      {"allow_older as string", {{key::allow_older, sdbus::Variant(std::string("yes"))}}},
      {"long version", {{key::version, sdbus::Variant(std::string(65, '1'))}}},
      {"bad version", {{key::version, sdbus::Variant(std::string("one.two"))}}},
  };
  for (const auto& [what, opts] : bad_install) {
    SCOPED_TRACE(what);
    EXPECT_EQ(error_name_of([&] { broker_->InstallProvider(kTestEp, opts); }), invalid);
  }
  Options many;
  for (int i = 0; i < 9; ++i) many.emplace("k" + std::to_string(i), sdbus::Variant(true));
  EXPECT_EQ(error_name_of([&] { broker_->InstallProvider(kTestEp, many); }), invalid);
  EXPECT_EQ(error_name_of([&] { broker_->Update({}, many); }), invalid);

  const std::vector<std::pair<std::string, Options>> bad_update = {
      {"unknown key", {{"bogus", sdbus::Variant(true)}}},
      {"version is InstallProvider's", {{key::version, sdbus::Variant(std::string("0.1.0"))}}},
      {"dry_run as string", {{key::dry_run, sdbus::Variant(std::string("true"))}}},
      {"dry_run as int", {{key::dry_run, sdbus::Variant(std::uint32_t{1})}}},
  };
  for (const auto& [what, opts] : bad_update) {
    SCOPED_TRACE(what);
    EXPECT_EQ(error_name_of([&] { broker_->Update({}, opts); }), invalid);
  }
  const std::vector<std::string> names(65, kTestEp);
  EXPECT_EQ(error_name_of([&] { broker_->Update(names, {}); }), invalid);
  // Bad package names, in every method that takes one.
  for (const auto& name :
       std::vector<std::string>{"", "Not A Name", "../etc", std::string(65, 'a')}) {
    SCOPED_TRACE("name '" + name + "'");
    EXPECT_EQ(error_name_of([&] { broker_->InstallProvider(name, {}); }), invalid);
    EXPECT_EQ(error_name_of([&] { broker_->Update({name}, {}); }), invalid);
    EXPECT_EQ(error_name_of([&] { broker_->Hold(name); }), invalid);
    EXPECT_EQ(error_name_of([&] { broker_->Unhold(name); }), invalid);
    EXPECT_EQ(error_name_of([&] { broker_->Rollback(name); }), invalid);
    EXPECT_EQ(error_name_of([&] { broker_->RemoveProviderNow(name); }), invalid);
  }
  // Nothing changed, and the daemon still serves.
  EXPECT_EQ(snapshot(), before);
  EXPECT_FALSE(flag(provider(kTestEp), key::held));
  EXPECT_EQ(bus_->daemon_pids().size(), 1U);
}

TEST_F(LifecycleBusTest, UnprivilegedCallerMayReadButNotChangeTheLifecycle) {
  start_installed();
  const auto before = snapshot();
  const fs::path client = client_for_others(*bus_);
  auto as_nobody = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {"setpriv",        "--reuid=65534", "--regid=65534",
                                     "--clear-groups", client.string(), bus_->address()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_command(argv);
  };
  // Reads are open to everyone.
  for (const auto& call : std::vector<std::vector<std::string>>{
           {"call", "History", ""}, {"call", "History", kTestEp}, {"call", "ListProviders"}}) {
    SCOPED_TRACE(call[1]);
    const auto r = as_nobody(call);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_TRUE(r.out.starts_with("ok")) << r.out;
  }
  // Changes are not, each refused for its polkit action.
  const std::vector<std::pair<std::vector<std::string>, std::string>> refused = {
      {{"call", "Hold", kTestEp}, "org.epbroker.hold"},
      {{"call", "Unhold", kTestEp}, "org.epbroker.hold"},
      {{"call", "Rollback", kTestEp}, "org.epbroker.downgrade"},
      {{"call", "CollectGarbage"}, "org.epbroker.manage"},
      {{"call", "RemoveProvider", kTestEp}, "org.epbroker.manage"},
      {{"call", "RemoveProviderNow", kTestEp}, "org.epbroker.manage"},
      {{"call", "ResetRemote", "test"}, "org.epbroker.manage"},
  };
  for (const auto& [call, action] : refused) {
    SCOPED_TRACE(call[1]);
    const auto r = as_nobody(call);
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_EQ(r.out,
              "error " + kError + "NotAuthorized: uid 65534 may not perform " + action + "\n");
  }
  // The methods with other arguments, through busctl.
  auto busctl_as_nobody = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {"call", kBrokerName, kBrokerPath, kBrokerInterface};
    argv.insert(argv.end(), args.begin(), args.end());
    return bus_->busctl(argv, kNobody);
  };
  auto r = busctl_as_nobody({"Update", "asa{sv}", "0", "0"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("may not perform org.epbroker.update"), std::string::npos) << r.err;
  r = busctl_as_nobody({"InstallProvider", "sa{sv}", kTestEp, "0"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("may not perform org.epbroker.install"), std::string::npos) << r.err;
  r = busctl_as_nobody({"History", "s", ""});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.starts_with("aa{sv} ")) << r.out;
  // Nothing changed.
  EXPECT_EQ(snapshot(), before);
  EXPECT_FALSE(flag(provider(kTestEp), key::held));
}

TEST_F(LifecycleBusTest, LifecycleMethodsAnswerAsDocumented) {
  start_installed();
  const std::string version = catalog_->target(kTestEp).version;
  // An installed package's row carries its lifecycle; an available one's does not.
  auto p = provider(kTestEp);
  ASSERT_EQ(p[key::versions].peekValueType(), "aa{sv}");
  const auto versions = p[key::versions].get<Dicts>();
  ASSERT_EQ(versions.size(), 1U);
  EXPECT_EQ(str(versions[0], key::version), version);
  EXPECT_EQ(str(versions[0], key::role), "current");
  EXPECT_EQ(versions[0].at(key::leases).peekValueType(), "u");
  EXPECT_EQ(versions[0].at(key::reason).peekValueType(), "s");
  EXPECT_EQ(str(p, key::update_available), "");
  EXPECT_EQ(p[key::held].peekValueType(), "b");
  EXPECT_EQ(p[key::hold_reason].peekValueType(), "s");
  EXPECT_FALSE(provider(kBulkEp).contains(key::versions));
  // A session's providers (written value by value) carry the same entries.
  const auto [session, granted] = broker_->RequestSession({});
  const auto in_session = find_named(granted, kTestEp);
  ASSERT_TRUE(in_session);
  for (const char* k : {key::versions, key::update_available, key::held, key::hold_reason}) {
    EXPECT_EQ(in_session->at(k).peekValueType(), p[k].peekValueType()) << k;
  }
  sdbus::createProxy(*conn_, kBrokerName, session)
      ->callMethod("Release")
      .onInterface(kSessionInterface);

  // Hold and Unhold: installed packages only.
  broker_->Hold(kTestEp);
  EXPECT_TRUE(flag(provider(kTestEp), key::held));
  auto changes = broker_->Update({kTestEp}, {{key::dry_run, sdbus::Variant(true)}});
  ASSERT_EQ(changes.size(), 1U);
  EXPECT_EQ(str(changes[0], key::name), kTestEp);
  EXPECT_EQ(str(changes[0], key::from), version);
  EXPECT_EQ(str(changes[0], key::to), version);
  EXPECT_FALSE(changes[0].contains(key::job));
  broker_->Unhold(kTestEp);
  EXPECT_FALSE(flag(provider(kTestEp), key::held));
  EXPECT_EQ(error_name_of([&] { broker_->Hold(kBulkEp); }), kError + "NotFound");
  EXPECT_EQ(error_name_of([&] { broker_->Update({kBulkEp}, {}); }), kError + "NotFound");
  // Nothing to roll back to.
  EXPECT_EQ(error_name_of([&] { broker_->Rollback(kTestEp); }), kError + "NotFound");
  // An unknown version: NotFound, naming the versions there are.
  try {
    broker_->InstallProvider(kTestEp, {{key::version, sdbus::Variant(std::string("9.9.9"))}});
    ADD_FAILURE() << "installed test-ep 9.9.9";
  } catch (const sdbus::Error& e) {
    EXPECT_EQ(e.getName(), kError + "NotFound");
    EXPECT_NE(e.getMessage().find(version), std::string::npos) << e.getMessage();
  }
  // The current version again: a job, done.
  const std::string job =
      broker_->InstallProvider(kTestEp, {{key::version, sdbus::Variant(version)}});
  EXPECT_EQ(wait_job(*conn_, job), "done");
  // Nothing is collectable: the one version is current.
  for (const auto& r : broker_->CollectGarbage()) {
    ADD_FAILURE() << "collected " << str(r, key::name) << " " << str(r, key::version);
  }

  // History: oldest first, each entry with every documented key of its type.
  const auto history = broker_->History(kTestEp);
  ASSERT_GE(history.size(), 3U);  // install, hold, unhold
  const std::map<std::string, std::string> types = {
      {key::time, "t"}, {key::uid, "u"}, {key::action, "s"}, {key::name, "s"},
      {key::from, "s"}, {key::to, "s"},  {key::result, "s"}, {key::reason, "s"}};
  for (const auto& e : history) {
    std::map<std::string, std::string> got;
    for (const auto& [k, v] : e) got[k] = v.peekValueType();
    EXPECT_EQ(got, types);
    EXPECT_EQ(str(e, key::name), kTestEp);
  }
  EXPECT_EQ(str(history[0], key::action), "install");
  EXPECT_EQ(str(history[0], key::to), version);
  EXPECT_EQ(str(history[0], key::result), "ok");
  std::vector<std::string> actions;
  for (const auto& e : history) actions.push_back(str(e, key::action));
  EXPECT_NE(std::find(actions.begin(), actions.end(), "hold"), actions.end());
  EXPECT_NE(std::find(actions.begin(), actions.end(), "unhold"), actions.end());
  EXPECT_TRUE(broker_->History(kBulkEp).empty());

  // RemoveProviderNow: gone at once.
  broker_->RemoveProviderNow(kTestEp);
  EXPECT_EQ(str(provider(kTestEp), key::state), "available");
  EXPECT_FALSE(provider(kTestEp).contains(key::versions));
  EXPECT_EQ(error_name_of([&] { broker_->RemoveProviderNow(kTestEp); }), kError + "NotFound");
  const auto after = broker_->History(kTestEp);
  ASSERT_FALSE(after.empty());
  EXPECT_EQ(str(after.back(), key::action), "remove");

  // ResetRemote: a known remote only; a refresh starts again from its root.
  EXPECT_EQ(error_name_of([&] { broker_->ResetRemote("no-such-remote"); }), kError + "NotFound");
  broker_->ResetRemote("test");
  refresh();
  EXPECT_EQ(str(provider(kTestEp), key::state), "available");
}

// ---- the provider dicts (daemon/dbus/convert), without the daemon ------------

// Two variants of the same bus value.
bool same(const sdbus::Variant& a, const sdbus::Variant& b);

bool same(const Dict& a, const Dict& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [k, v] : a) {
    auto it = b.find(k);
    if (it == b.end() || !same(v, it->second)) return false;
  }
  return true;
}

bool same(const sdbus::Variant& a, const sdbus::Variant& b) {
  const std::string t = a.peekValueType();
  if (t != b.peekValueType()) return false;
  if (t == "s") return a.get<std::string>() == b.get<std::string>();
  if (t == "o") return a.get<sdbus::ObjectPath>() == b.get<sdbus::ObjectPath>();
  if (t == "as") return a.get<std::vector<std::string>>() == b.get<std::vector<std::string>>();
  if (t == "t") return a.get<std::uint64_t>() == b.get<std::uint64_t>();
  if (t == "u") return a.get<std::uint32_t>() == b.get<std::uint32_t>();
  if (t == "b") return a.get<bool>() == b.get<bool>();
  if (t == "aa{sv}") {
    const auto x = a.get<Dicts>();
    const auto y = b.get<Dicts>();
    if (x.size() != y.size()) return false;
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (!same(x[i], y[i])) return false;
    }
    return true;
  }
  ADD_FAILURE() << "unexpected type " << t;
  return false;
}

std::vector<epbrokerd::core::ProviderView> sample_views() {
  using namespace epbrokerd::core;
  ProviderView installed;
  installed.name = "test-ep";
  installed.ep_names = {"EpbrokerTestEp"};
  installed.version = "1.10.0";
  installed.ort_min = "1.22.0";
  installed.state = common::ProviderState::ready;
  installed.devices = {"cpu0"};
  installed.size = 1234;
  installed.library_path = "/var/lib/epbroker/store/test-ep/1.10.0/lib/libtest.so";
  installed.remote = "test";
  installed.versions = {{"1.10.0", common::VersionRole::current, "", 2},
                        {"1.9.0", common::VersionRole::rollback, "previous version", 0},
                        {"1.8.0", common::VersionRole::older_ort, "ORT 1.21 apps", 1}};
  installed.update_available = "1.11.0";
  installed.held = true;
  installed.hold_reason = "held by uid 0";
  ProviderView available;
  available.name = "bulk-ep";
  available.version = "1.0.0";
  available.job = 7;
  available.state = common::ProviderState::installing;
  return {installed, available};
}

TEST_F(BrokerTest, ProviderDictsAreTheSameEveryWay) {
  start({}, /*with_catalog=*/false);
  const auto views = sample_views();
  // Value by value into a message, read back.
  auto proxy = sdbus::createProxy(*conn_, "org.example.Nobody", "/");
  auto msg = proxy->createMethodCall("org.example.Nobody", "Nothing");
  epbrokerd::dbus::append_providers(msg, views);
  msg.seal();
  msg.rewind(true);
  Dicts written;
  msg >> written;
  ASSERT_EQ(written.size(), views.size());
  for (std::size_t i = 0; i < views.size(); ++i) {
    SCOPED_TRACE(views[i].name);
    const auto dict = epbrokerd::dbus::to_dict(views[i]);
    EXPECT_TRUE(same(dict, written[i]));
    EXPECT_TRUE(same(dict, epbrokerd::dbus::to_dict_cached(views[i])));
  }
  const auto installed = epbrokerd::dbus::to_dict(views[0]);
  const auto versions = installed.at(key::versions).get<Dicts>();
  ASSERT_EQ(versions.size(), 3U);
  EXPECT_EQ(str(versions[1], key::role), "rollback");
  EXPECT_EQ(versions[2].at(key::leases).get<std::uint32_t>(), 1U);
  EXPECT_EQ(str(installed, key::update_available), "1.11.0");
  EXPECT_EQ(str(installed, key::hold_reason), "held by uid 0");
  const auto available = epbrokerd::dbus::to_dict(views[1]);
  for (const char* k : {key::versions, key::update_available, key::held, key::hold_reason}) {
    EXPECT_FALSE(available.contains(k)) << k;
  }
  // The cache notices a change of the lifecycle alone.
  auto changed = views[0];
  changed.held = false;
  changed.versions[0].leases = 3;
  const auto& cached = epbrokerd::dbus::to_dict_cached(changed);
  EXPECT_FALSE(cached.at(key::held).get<bool>());
  EXPECT_EQ(cached.at(key::versions).get<Dicts>()[0].at(key::leases).get<std::uint32_t>(), 3U);

  // Update's, History's and CollectGarbage's dicts.
  epbrokerd::core::UpdateChange c{"test-ep", "1.9.0", "1.10.0", 0, "newer"};
  auto d = epbrokerd::dbus::to_dict(c);
  EXPECT_FALSE(d.contains(key::job));
  c.job = 12;
  d = epbrokerd::dbus::to_dict(c);
  EXPECT_EQ(d.at(key::job).get<sdbus::ObjectPath>(), "/org/epbroker/Broker1/job/12");
  EXPECT_EQ(str(d, key::to), "1.10.0");
  epbrokerd::core::HistoryEntry h{1700000000, 1000,        common::HistoryAction::rollback,
                                  "test-ep",  "1.10.0",    "1.9.0",
                                  "ok",       "by request"};
  d = epbrokerd::dbus::to_dict(h);
  EXPECT_EQ(u64(d, key::time), 1700000000U);
  EXPECT_EQ(d.at(key::uid).get<std::uint32_t>(), 1000U);
  EXPECT_EQ(str(d, key::action), "rollback");
  EXPECT_EQ(str(d, key::from) + ">" + str(d, key::to), "1.10.0>1.9.0");
  d = epbrokerd::dbus::to_dict(epbrokerd::core::VersionRef{"test-ep", "1.8.0", ""});
  EXPECT_EQ(d.size(), 2U);
  EXPECT_EQ(str(d, key::version), "1.8.0");
}

}  // namespace
}  // namespace tests::daemon
