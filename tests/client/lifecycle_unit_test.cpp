// libepbroker's and epbrokerctl's package-lifecycle parts, without a bus: the new
// provider keys (versions, update_available, held, hold_reason, the revoked
// state), Update/History/CollectGarbage dictionaries, InstallProvider and Update
// options, and epbrokerctl's new command lines and their JSON.
#include <gtest/gtest.h>

#include "client/epbrokerctl/cli.hpp"
#include "client/epbrokerctl/output.hpp"
#include "client/src/convert.hpp"
#include "common/wire.hpp"

namespace tests::client {
namespace {

using epbroker::Errc;
using epbroker::detail::Dict;
namespace key = common::key;

sdbus::Variant str(const char* s) { return sdbus::Variant(std::string(s)); }

Dict version_dict(const char* version, common::VersionRole role, const char* reason,
                  std::uint32_t leases) {
  return {{key::version, str(version)},
          {key::role, sdbus::Variant(std::string(common::version_role_name(role)))},
          {key::reason, str(reason)},
          {key::leases, sdbus::Variant(leases)}};
}

TEST(LifecycleConvert, ProviderVersionsUpdateAndHold) {
  Dict d{{key::name, str("test-ep")},
         {key::state,
          sdbus::Variant(std::string(common::provider_state_name(common::ProviderState::ready)))},
         {key::version, str("1.3.0")},
         {key::versions,
          sdbus::Variant(std::vector<Dict>{
              version_dict("1.3.0", common::VersionRole::current, "", 2),
              version_dict("1.2.0", common::VersionRole::rollback, "previously current", 0)})},
         {key::update_available, str("1.4.0")},
         {key::held, sdbus::Variant(true)},
         {key::hold_reason, str("rolled back")}};
  const auto p = epbroker::detail::to_provider(d);
  EXPECT_EQ(p.state, epbroker::ProviderState::ready);
  ASSERT_EQ(p.versions.size(), 2U);
  EXPECT_EQ(p.versions[0].version, "1.3.0");
  EXPECT_EQ(p.versions[0].role, "current");
  EXPECT_EQ(p.versions[0].leases, 2U);
  EXPECT_EQ(p.versions[0].reason, "");
  EXPECT_EQ(p.versions[1].version, "1.2.0");
  EXPECT_EQ(p.versions[1].role, "rollback");
  EXPECT_EQ(p.versions[1].reason, "previously current");
  EXPECT_EQ(p.update_available, "1.4.0");
  EXPECT_TRUE(p.held);
  EXPECT_EQ(p.hold_reason, "rolled back");
}

// Every state the daemon may send (common/wire.hpp) is one the library knows,
// "refused" (issue 17: a name claimed from outside its NAME/ paths) included.
TEST(LifecycleConvert, EveryDaemonProviderStateIsKnown) {
  for (const auto state : common::kAllProviderStates) {
    const std::string name(common::provider_state_name(state));
    SCOPED_TRACE(name);
    const auto p = epbroker::detail::to_provider(
        Dict{{key::name, str("x")}, {key::state, sdbus::Variant(name)}});
    EXPECT_NE(p.state, epbroker::ProviderState::unknown);
    EXPECT_EQ(epbroker::to_string(p.state), name);
  }
  const auto refused = epbroker::detail::to_provider(
      Dict{{key::name, str("x")}, {key::state, str("refused")}, {key::reason, str("why")}});
  EXPECT_EQ(refused.state, epbroker::ProviderState::refused);
  EXPECT_EQ(refused.reason, "why");
}

TEST(LifecycleConvert, MissingKeysDefaultAndRevokedIsKnown) {
  // An older daemon, or a package that is not installed: none of the new keys.
  Dict d{{key::name, str("openvino")},
         {key::state,
          sdbus::Variant(std::string(common::provider_state_name(common::ProviderState::revoked)))},
         {key::reason, str("no signed catalog lists 1.8.1 any more")}};
  auto p = epbroker::detail::to_provider(d);
  EXPECT_EQ(p.state, epbroker::ProviderState::revoked);
  EXPECT_EQ(epbroker::to_string(p.state), "revoked");
  EXPECT_EQ(epbroker::to_string(epbroker::ProviderState::unknown), "unknown");
  EXPECT_TRUE(p.versions.empty());
  EXPECT_EQ(p.update_available, "");
  EXPECT_FALSE(p.held);
  EXPECT_EQ(p.hold_reason, "");

  // A version dict missing keys (and carrying a newer daemon's): defaults.
  d[key::versions] = sdbus::Variant(
      std::vector<Dict>{{{key::version, str("1.8.1")}, {"future", sdbus::Variant(1.5)}}});
  p = epbroker::detail::to_provider(d);
  ASSERT_EQ(p.versions.size(), 1U);
  EXPECT_EQ(p.versions[0].version, "1.8.1");
  EXPECT_EQ(p.versions[0].role, "");
  EXPECT_EQ(p.versions[0].leases, 0U);
}

TEST(LifecycleConvert, WrongTypesAreProtocolErrorsNamingTheKey) {
  const std::vector<std::pair<const char*, sdbus::Variant>> bad = {
      {key::versions, sdbus::Variant(std::vector<std::string>{"1.2.0"})},
      {key::held, str("yes")},
      {key::update_available, sdbus::Variant(true)},
  };
  for (const auto& [k, v] : bad) {
    Dict d{{key::name, str("x")}, {k, v}};
    try {
      epbroker::detail::to_provider(d);
      ADD_FAILURE() << "no error for " << k;
    } catch (const epbroker::Error& e) {
      EXPECT_EQ(e.code(), Errc::protocol);
      EXPECT_NE(e.message().find(std::string("'") + k + "'"), std::string::npos) << e.message();
    }
  }
  Dict v{{key::leases, str("2")}};
  try {
    epbroker::detail::to_version_info(v);
    ADD_FAILURE() << "no error for a string lease count";
  } catch (const epbroker::Error& e) {
    EXPECT_EQ(e.code(), Errc::protocol);
  }
}

TEST(LifecycleConvert, UpdateHistoryAndGarbage) {
  auto c = epbroker::detail::to_update_change(
      {{key::name, str("test-ep")},
       {key::from, str("1.2.0")},
       {key::to, str("1.3.0")},
       {key::reason, str("newer compatible version")},
       {key::job, sdbus::Variant(sdbus::ObjectPath("/org/epbroker/Broker1/job/4"))}});
  EXPECT_EQ(c.name, "test-ep");
  EXPECT_EQ(c.from, "1.2.0");
  EXPECT_EQ(c.to, "1.3.0");
  EXPECT_EQ(c.reason, "newer compatible version");
  EXPECT_EQ(c.job, "/org/epbroker/Broker1/job/4");
  c = epbroker::detail::to_update_change({{key::name, str("held-ep")}});  // no job, no versions
  EXPECT_EQ(c.job, "");
  EXPECT_EQ(c.from, "");

  const auto h = epbroker::detail::to_history_entry(
      {{key::time, sdbus::Variant(std::uint64_t{1767225600})},
       {key::uid, sdbus::Variant(std::uint32_t{1000})},
       {key::action,
        sdbus::Variant(std::string(common::history_action_name(common::HistoryAction::rollback)))},
       {key::name, str("test-ep")},
       {key::from, str("1.3.0")},
       {key::to, str("1.2.0")},
       {key::result, str("ok")}});
  EXPECT_EQ(h.time, 1767225600);
  EXPECT_EQ(h.uid, 1000U);
  EXPECT_EQ(h.action, "rollback");
  EXPECT_EQ(h.from, "1.3.0");
  EXPECT_EQ(h.to, "1.2.0");
  EXPECT_EQ(h.result, "ok");
  EXPECT_EQ(h.reason, "");
  // A time beyond int64 is clamped, not wrapped negative.
  EXPECT_GT(epbroker::detail::to_history_entry(
                {{key::time, sdbus::Variant(std::numeric_limits<std::uint64_t>::max())}})
                .time,
            0);

  const auto r = epbroker::detail::to_removed_version(
      {{key::name, str("test-ep")}, {key::version, str("1.1.0")}});
  EXPECT_EQ(r.name, "test-ep");
  EXPECT_EQ(r.version, "1.1.0");
}

TEST(LifecycleConvert, InstallAndUpdateOptions) {
  auto d = epbroker::detail::to_install_options({});
  EXPECT_TRUE(d.empty()) << "the daemon's defaults: newest compatible, no downgrade";
  d = epbroker::detail::to_install_options({"1.2.0", true});
  EXPECT_EQ(d.at(key::version).get<std::string>(), "1.2.0");
  EXPECT_TRUE(d.at(key::allow_older).get<bool>());
  EXPECT_FALSE(epbroker::detail::to_update_options(false).at(key::dry_run).get<bool>());
  EXPECT_TRUE(epbroker::detail::to_update_options(true).at(key::dry_run).get<bool>());
}

// ---- epbrokerctl ------------------------------------------------------------------------

epbrokerctl::Invocation parsed(std::vector<std::string> args) {
  args.insert(args.begin(), "epbrokerctl");
  auto r = epbrokerctl::parse_args(args);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error());
  return r.value_or(epbrokerctl::Invocation{});
}

std::string usage_error(std::vector<std::string> args) {
  args.insert(args.begin(), "epbrokerctl");
  auto r = epbrokerctl::parse_args(args);
  EXPECT_FALSE(r.has_value()) << args[1];
  const std::string e = r ? std::string() : r.error();
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  return e;
}

TEST(LifecycleArgs, NewCommandsAndTheirOptions) {
  auto inv = parsed({"install", "test-ep@1.2.0", "--allow-older", "--json"});
  EXPECT_EQ(inv.command, "install");
  EXPECT_EQ(inv.args, std::vector<std::string>{"test-ep"});
  EXPECT_EQ(inv.package_version, "1.2.0");
  EXPECT_TRUE(inv.allow_older);
  EXPECT_TRUE(inv.json);
  inv = parsed({"install", "test-ep"});
  EXPECT_EQ(inv.args, std::vector<std::string>{"test-ep"});
  EXPECT_EQ(inv.package_version, "");
  EXPECT_FALSE(inv.allow_older);
  EXPECT_EQ(parsed({"install", "openvino@2025.1.0-rc1"}).package_version, "2025.1.0-rc1");
  // Build metadata is not part of a package version (the daemon refuses it too).
  EXPECT_NE(usage_error({"install", "openvino@2025.1.0+b2"}).find("not a version"),
            std::string::npos);

  inv = parsed({"update"});
  EXPECT_TRUE(inv.args.empty());
  EXPECT_FALSE(inv.dry_run);
  inv = parsed({"update", "a", "--dry-run", "b"});
  EXPECT_EQ(inv.args, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(inv.dry_run);

  for (const char* c : {"hold", "unhold", "rollback"}) {
    inv = parsed({c, "test-ep"});
    EXPECT_EQ(inv.command, c);
    EXPECT_EQ(inv.args, std::vector<std::string>{"test-ep"});
  }
  EXPECT_TRUE(parsed({"history"}).args.empty());
  EXPECT_EQ(parsed({"history", "x"}).args, std::vector<std::string>{"x"});
  EXPECT_TRUE(parsed({"gc"}).args.empty());
  EXPECT_TRUE(parsed({"remove", "--now", "x"}).now);
  EXPECT_FALSE(parsed({"remove", "x"}).now);

  inv = parsed({"remote", "reset", "default", "--json"});
  EXPECT_EQ(inv.command, "remote");
  EXPECT_EQ(inv.action, "reset");
  EXPECT_EQ(inv.args, std::vector<std::string>{"default"});
  EXPECT_TRUE(inv.json);

  inv = parsed({"remote", "reset", "--help"});
  EXPECT_TRUE(inv.help);
  EXPECT_EQ(inv.command, "remote");
  EXPECT_EQ(inv.action, "reset");
  EXPECT_TRUE(parsed({"update", "--help"}).help);
}

TEST(LifecycleArgs, UsageErrorsNameWhatIsWrong) {
  EXPECT_NE(usage_error({"install", "test-ep@"}).find("names no version"), std::string::npos);
  EXPECT_NE(usage_error({"install", "@1.2.0"}).find("names no package"), std::string::npos);
  for (const char* bad :
       {"test-ep@v1", "test-ep@1..2", "test-ep@1.2.", "test-ep@1 2", "test-ep@1.2.0@3"}) {
    EXPECT_NE(usage_error({"install", bad}).find("is not a version"), std::string::npos) << bad;
  }
  EXPECT_NE(usage_error({"remote"}).find("which action"), std::string::npos);
  EXPECT_NE(usage_error({"remote", "frob"}).find("unknown action 'frob'"), std::string::npos);
  EXPECT_NE(usage_error({"remote", "reset"}).find("NAME"), std::string::npos);
  EXPECT_NE(usage_error({"hold"}).find("NAME"), std::string::npos);
  EXPECT_NE(usage_error({"history", "a", "b"}).find("'b'"), std::string::npos);
  EXPECT_NE(usage_error({"gc", "x"}).find("'x'"), std::string::npos);
  EXPECT_NE(usage_error({"status", "--dry-run"}).find("--dry-run"), std::string::npos);
  EXPECT_NE(usage_error({"install", "x", "--dry-run"}).find("--dry-run"), std::string::npos);
  EXPECT_NE(usage_error({"remove", "--now"}).find("NAME"), std::string::npos);
}

TEST(LifecycleArgs, HelpShowsArgumentsOptionsAndActions) {
  const std::string top = epbrokerctl::tool_help();
  for (const char* s : {"install NAME[@VERSION] [--allow-older]", "update [NAME...] [--dry-run]",
                        "hold NAME", "unhold NAME", "rollback NAME", "history [NAME]", "gc",
                        "remove NAME [--now]", "remote reset NAME"}) {
    EXPECT_NE(top.find(s), std::string::npos) << s << " missing from\n" << top;
  }
  const auto* remote = epbrokerctl::find_command("remote");
  ASSERT_NE(remote, nullptr);
  ASSERT_EQ(remote->actions.size(), 1U);
  const std::string reset = epbrokerctl::command_help(*remote, "reset");
  EXPECT_TRUE(reset.starts_with("Usage: epbrokerctl remote reset")) << reset;
  EXPECT_NE(reset.find("trusted_root"), std::string::npos) << reset;
  const std::string update = epbrokerctl::command_help(*epbrokerctl::find_command("update"));
  EXPECT_NE(update.find("--dry-run"), std::string::npos) << update;
}

TEST(LifecycleOutput, JsonShapes) {
  epbroker::Provider p;
  p.name = "test-ep";
  p.versions = {{"1.3.0", "current", "", 1}, {"1.2.0", "rollback", "previously current", 0}};
  p.held = true;
  auto j = epbrokerctl::to_json(p);
  ASSERT_EQ(j["versions"].size(), 2U);
  EXPECT_EQ(j["versions"][0],
            nlohmann::json(
                {{"version", "1.3.0"}, {"role", "current"}, {"reason", nullptr}, {"leases", 1}}));
  EXPECT_EQ(j["versions"][1]["reason"], "previously current");
  EXPECT_TRUE(j["update_available"].is_null());
  EXPECT_EQ(j["held"], true);
  EXPECT_TRUE(j["hold_reason"].is_null());

  epbroker::HistoryEntry h{1767225600, 0, "update", "test-ep", "1.2.0", "1.3.0", "ok", ""};
  j = epbrokerctl::to_json(h);
  EXPECT_EQ(j["time"], "2026-01-01T00:00:00Z");
  EXPECT_EQ(j["timestamp"], 1767225600);
  EXPECT_EQ(j["uid"], 0);
  EXPECT_TRUE(j["reason"].is_null());
  EXPECT_EQ(epbrokerctl::format_utc(0), "1970-01-01T00:00:00Z");

  j = epbrokerctl::to_json(epbroker::UpdateChange{"a", "1.0.0", "1.0.0", "held", ""}, nullptr);
  EXPECT_EQ(j["changed"], false);
  EXPECT_TRUE(j["job"].is_null());
  EXPECT_EQ(j["reason"], "held");
}

}  // namespace
}  // namespace tests::client
