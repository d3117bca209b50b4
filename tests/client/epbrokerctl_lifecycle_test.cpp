// epbrokerctl's package-lifecycle commands as a user runs them: --help of each,
// usage errors (exit 2), and every command with --json against a live daemon on
// a private bus (the documented shapes parsed and checked). The lifecycle's
// scenarios (an update to a newer version, rollback, revocation, ...) are tested
// through the daemon elsewhere; here the catalog offers one version per package.
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "tests/client/client_fixture.hpp"

namespace tests::client {
namespace {

using nlohmann::json;
using tests::daemon::CommandResult;

CommandResult ctl(const std::vector<std::string>& args) {
  std::vector<std::string> argv{epbrokerctl_path()};
  argv.insert(argv.end(), args.begin(), args.end());
  return daemon::run_command(argv, 120s);
}

json doc(const CommandResult& r) {
  auto j = json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(j.is_discarded()) << "not JSON: " << r.out << "\nstderr: " << r.err;
  return j.is_discarded() ? json::object() : j;
}

std::string describe(const CommandResult& r) {
  return "exit " + std::to_string(r.exit_code) + "\nstdout: " + r.out + "\nstderr: " + r.err;
}

const json* named(const json& list, const std::string& name) {
  for (const auto& e : list) {
    if (e.value("name", "") == name) return &e;
  }
  return nullptr;
}

TEST(EpbrokerctlLifecycle, HelpOfEveryNewCommand) {
  const auto top = ctl({"--help"});
  EXPECT_EQ(top.exit_code, 0) << describe(top);
  for (const char* c : {"install NAME[@VERSION] [--allow-older]", "update [NAME...] [--dry-run]",
                        "hold NAME", "unhold NAME", "rollback NAME", "history [NAME]", "gc",
                        "remove NAME [--now]", "remote reset NAME"}) {
    EXPECT_NE(top.out.find(c), std::string::npos) << c << " missing from --help";
  }
  const std::vector<std::vector<std::string>> helps = {
      {"install", "--help"}, {"update", "--help"},   {"hold", "--help"},
      {"unhold", "--help"},  {"rollback", "--help"}, {"history", "--help"},
      {"gc", "--help"},      {"remove", "--help"},   {"remote", "--help"},
      {"help", "update"},    {"help", "remote"},     {"remote", "reset", "--help"}};
  for (const auto& args : helps) {
    const auto r = ctl(args);
    EXPECT_EQ(r.exit_code, 0) << args[0] << ": " << describe(r);
    EXPECT_TRUE(r.out.starts_with("Usage: epbrokerctl " + (args[0] == "help" ? args[1] : args[0])))
        << r.out;
  }
  EXPECT_TRUE(
      ctl({"remote", "reset", "--help"}).out.starts_with("Usage: epbrokerctl remote reset"));
  EXPECT_NE(ctl({"update", "--help"}).out.find("--dry-run"), std::string::npos);
  EXPECT_NE(ctl({"install", "--help"}).out.find("--allow-older"), std::string::npos);
  EXPECT_NE(ctl({"remove", "--help"}).out.find("--now"), std::string::npos);
}

TEST(EpbrokerctlLifecycle, UsageErrorsExit2) {
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"install", "test-ep@"},
                                             {"install", "@1.0.0"},
                                             {"install", "test-ep@not-a-version"},
                                             {"remote"},
                                             {"remote", "reset"},
                                             {"remote", "frob", "x"},
                                             {"hold"},
                                             {"rollback", "a", "b"},
                                             {"update", "--now"},
                                             {"remove", "--dry-run", "x"}}) {
    const auto r = ctl(args);
    EXPECT_EQ(r.exit_code, 2) << describe(r);
    EXPECT_NE(r.err.find("epbrokerctl --help"), std::string::npos) << r.err;
  }
  // With --json the usage error is a document too.
  const auto r = ctl({"--json", "install", "test-ep@"});
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  const json j = doc(r);
  EXPECT_EQ(j["error"]["code"], "Usage");
  EXPECT_NE(j["error"]["message"].get<std::string>().find("test-ep@"), std::string::npos) << j;
}

class CtlLifecycleTest : public ClientTest {
 protected:
  CommandResult json_cmd(std::vector<std::string> args) {
    args.insert(args.begin(), {"--bus-address", address(), "--json"});
    return ctl(args);
  }
};

TEST_F(CtlLifecycleTest, EveryNewCommandWithJson) {
  start();
  refresh();
  auto r = json_cmd({"install", std::string(kTestEp) + "@" + catalog_->target(kTestEp).version});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  json j = doc(r);
  EXPECT_EQ(j["provider"]["name"], kTestEp);
  EXPECT_EQ(j["provider"]["state"], "ready");
  EXPECT_EQ(j["job"]["state"], "done");

  r = json_cmd({"providers"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  j = doc(r);
  const json* p = named(j["providers"], kTestEp);
  ASSERT_NE(p, nullptr) << j;
  ASSERT_TRUE((*p)["versions"].is_array()) << *p;
  ASSERT_EQ((*p)["versions"].size(), 1U) << *p;
  EXPECT_EQ((*p)["versions"][0]["version"], catalog_->target(kTestEp).version);
  EXPECT_EQ((*p)["versions"][0]["role"], "current");
  EXPECT_TRUE((*p)["versions"][0]["leases"].is_number_unsigned());
  EXPECT_TRUE((*p)["update_available"].is_null()) << *p;
  EXPECT_EQ((*p)["held"], false);
  EXPECT_TRUE((*p)["hold_reason"].is_null());
  const json* bulk = named(j["providers"], kBulkEp);
  ASSERT_NE(bulk, nullptr);
  EXPECT_EQ((*bulk)["versions"], json::array()) << "not installed: no versions";

  // Nothing newer in the catalog: the update leaves test-ep alone.
  for (const bool dry : {true, false}) {
    r = json_cmd(dry ? std::vector<std::string>{"update", "--dry-run"}
                     : std::vector<std::string>{"update"});
    ASSERT_EQ(r.exit_code, 0) << describe(r);
    j = doc(r);
    EXPECT_EQ(j["dry_run"], dry);
    const json* c = named(j["changes"], kTestEp);
    ASSERT_NE(c, nullptr) << j;
    EXPECT_EQ((*c)["changed"], false) << *c;
    EXPECT_EQ((*c)["from"], (*c)["to"]) << *c;
    EXPECT_TRUE((*c)["job"].is_null()) << *c;
  }

  r = json_cmd({"hold", kTestEp});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_EQ(doc(r), json({{"name", kTestEp}, {"held", true}}));
  r = json_cmd({"providers"});
  EXPECT_EQ((*named(doc(r)["providers"], kTestEp))["held"], true);
  r = json_cmd({"unhold", kTestEp});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_EQ(doc(r), json({{"name", kTestEp}, {"held", false}}));

  // No previous version kept: NotFound, with a hint.
  r = json_cmd({"rollback", kTestEp});
  EXPECT_EQ(r.exit_code, 4) << describe(r);
  EXPECT_EQ(doc(r)["error"]["code"], "NotFound");
  EXPECT_TRUE(doc(r)["error"]["hint"].is_string());
  // An unknown version: NotFound.
  r = json_cmd({"install", std::string(kTestEp) + "@99.0.0"});
  EXPECT_EQ(r.exit_code, 4) << describe(r);
  EXPECT_EQ(doc(r)["error"]["code"], "NotFound");

  r = json_cmd({"history", kTestEp});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  j = doc(r);
  ASSERT_TRUE(j["history"].is_array()) << j;
  ASSERT_FALSE(j["history"].empty()) << j;
  for (const auto& e : j["history"]) {
    EXPECT_TRUE(e["time"].is_string()) << e;
    EXPECT_TRUE(e["timestamp"].is_number()) << e;
    EXPECT_TRUE(e["uid"].is_number_unsigned()) << e;
    EXPECT_TRUE(e["action"].is_string()) << e;
    EXPECT_EQ(e["name"], kTestEp) << e;
    EXPECT_TRUE(e["result"].is_string()) << e;
  }
  EXPECT_EQ(j["history"][0]["action"], "install") << j;
  r = json_cmd({"history"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);

  r = json_cmd({"gc"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_EQ(doc(r), json({{"removed", json::array()}}));

  r = json_cmd({"remote", "reset", "test"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_EQ(doc(r), json({{"remote", "test"}, {"reset", true}}));

  r = json_cmd({"remove", "--now", kTestEp});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_EQ(doc(r), json({{"removed", kTestEp}, {"now", true}}));
  r = json_cmd({"hold", kTestEp});
  EXPECT_EQ(r.exit_code, 4) << describe(r);
}

// The human output through an update and a rollback (one newer version published).
TEST_F(CtlLifecycleTest, HumanOutputThroughAnUpdateAndARollback) {
  start();
  std::ofstream(bus_->config_dir() / "epbroker.conf", std::ios::app) << "auto_update = off\n";
  auto with_bus = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"--bus-address", address()});
    return ctl(args);
  };
  ASSERT_EQ(with_bus({"refresh"}).exit_code, 0);
  auto r = with_bus({"install", kTestEp});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_TRUE(r.out.starts_with("installed test-ep 0.1.0")) << r.out;

  catalog_->publish_version(kTestEp, "0.2.0");
  ASSERT_EQ(with_bus({"refresh"}).exit_code, 0);
  r = with_bus({"providers"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_NE(r.out.find("  test-ep: update available: 0.2.0\n"), std::string::npos) << r.out;

  r = with_bus({"update", "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_NE(r.out.find("test-ep 0.1.0 -> 0.2.0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(dry run: nothing was changed)"), std::string::npos) << r.out;

  r = with_bus({"update"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_NE(r.out.find("test-ep 0.1.0 -> 0.2.0\n"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("updating test-ep\n"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("done: "), std::string::npos) << r.err;

  r = with_bus({"providers"});
  EXPECT_NE(r.out.find("test-ep     0.2.0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("    0.1.0    rollback"), std::string::npos) << r.out;

  r = with_bus({"rollback", kTestEp});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_EQ(r.out,
            "test-ep: 0.2.0 -> 0.1.0 (held; `epbrokerctl unhold test-ep` allows updates again)\n");
  r = with_bus({"providers"});
  EXPECT_NE(r.out.find("  test-ep: update available: 0.2.0; held"), std::string::npos) << r.out;

  r = with_bus({"update", kTestEp});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_TRUE(r.out.starts_with("test-ep 0.1.0 (")) << r.out;

  r = with_bus({"history", kTestEp});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_TRUE(r.out.starts_with("TIME")) << r.out;
  for (const char* s : {"install", "0.1.0 -> 0.2.0", "rollback", "0.2.0 -> 0.1.0"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << s << " in\n" << r.out;
  }
  r = with_bus({"gc"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  r = with_bus({"unhold", kTestEp});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  r = with_bus({"remove", kTestEp});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_TRUE(r.out.starts_with("removed test-ep")) << r.out;
  std::cout << "---- human output, last history ----\n"
            << with_bus({"history"}).out << with_bus({"providers"}).out;
}

}  // namespace
}  // namespace tests::client
