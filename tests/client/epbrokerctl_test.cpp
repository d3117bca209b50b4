// epbrokerctl as a user runs it: every command with --json against a live daemon
// on a private bus (the documented shapes parsed and checked), human output,
// exit codes, --help, errors with hints, an unprivileged caller, Ctrl-C.
#include <signal.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/client/client_fixture.hpp"

namespace tests::client {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using tests::daemon::CommandResult;

CommandResult ctl(const std::vector<std::string>& args) {
  std::vector<std::string> argv{epbrokerctl_path()};
  argv.insert(argv.end(), args.begin(), args.end());
  return daemon::run_command(argv, 120s);
}

// The JSON document on stdout; fails the test if there is none.
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

class CtlTest : public ClientTest {
 protected:
  // epbrokerctl --bus-address THIS_BUS --json ARGS...
  CommandResult json_cmd(std::vector<std::string> args) {
    args.insert(args.begin(), {"--bus-address", address(), "--json"});
    return ctl(args);
  }
};

TEST(Epbrokerctl, HelpForTheToolAndEveryCommand) {
  const auto top = ctl({"--help"});
  EXPECT_EQ(top.exit_code, 0) << describe(top);
  for (const char* c :
       {"devices", "providers", "install NAME", "remove NAME", "refresh", "verify", "status",
        "help [COMMAND]", "--json", "--bus-address", "--help", "--version", "Exit status"}) {
    EXPECT_NE(top.out.find(c), std::string::npos) << c << " missing from --help";
  }
  for (const char* c :
       {"devices", "providers", "install", "remove", "refresh", "verify", "status"}) {
    for (const auto& args :
         {std::vector<std::string>{c, "--help"}, std::vector<std::string>{"help", c}}) {
      const auto r = ctl(args);
      EXPECT_EQ(r.exit_code, 0) << c << ": " << describe(r);
      EXPECT_TRUE(r.out.starts_with("Usage: epbrokerctl")) << r.out;
      EXPECT_NE(r.out.find(std::string(" ") + c), std::string::npos) << r.out;
    }
  }
  const auto v = ctl({"--version"});
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_EQ(v.out, std::string("epbrokerctl ") + EPBROKER_EXPECTED_VERSION + "\n");
}

TEST(Epbrokerctl, UsageErrorsExit2) {
  for (const auto& args : {std::vector<std::string>{},
                           {"frobnicate"},
                           {"install"},
                           {"install", "a", "b"},
                           {"status", "extra"},
                           {"--bogus", "status"},
                           {"status", "--bus-address"}}) {
    const auto r = ctl(args);
    EXPECT_EQ(r.exit_code, 2) << describe(r);
    EXPECT_NE(r.err.find("epbrokerctl --help"), std::string::npos) << r.err;
  }
  // The first line on stderr names the problem.
  for (const auto& [args, says] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--bogus", "status"}, "--bogus"},
           {{"frobnicate"}, "frobnicate"},
           {{"help", "frobnicate"}, "frobnicate"},
           {{"install"}, "NAME"},
           {{"status", "extra"}, "extra"},
           {{"status", "--bus-address"}, "--bus-address"},
           {{"--json=1", "status"}, "json"}}) {
    const auto r = ctl(args);
    EXPECT_EQ(r.exit_code, 2) << describe(r);
    EXPECT_NE(r.err.substr(0, r.err.find('\n')).find(says), std::string::npos) << describe(r);
  }
  // With --json the error is a document on stdout.
  const auto r = ctl({"--json", "frobnicate"});
  EXPECT_EQ(r.exit_code, 2);
  const json j = doc(r);
  EXPECT_EQ(j["error"]["code"], "Usage");
  EXPECT_NE(j["error"]["message"].get<std::string>().find("frobnicate"), std::string::npos);
}

TEST(Epbrokerctl, NoDaemonExits5WithAHint) {
  const std::string nowhere = "unix:path=/nonexistent/epbroker-bus";
  auto r = ctl({"--bus-address", nowhere, "status"});
  EXPECT_EQ(r.exit_code, 5) << describe(r);
  EXPECT_NE(r.err.find(nowhere), std::string::npos) << r.err;
  r = ctl({"--bus-address", nowhere, "--json", "status"});
  EXPECT_EQ(r.exit_code, 5) << describe(r);
  EXPECT_EQ(doc(r)["error"]["code"], "Unavailable");
  EXPECT_TRUE(doc(r)["error"]["hint"].is_string());
}

TEST_F(CtlTest, EveryCommandWithJson) {
  start();
  // status before anything: the daemon starts (activation), nothing refreshed.
  auto r = json_cmd({"status"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  json j = doc(r);
  EXPECT_EQ(j["bus_address"], address());
  EXPECT_EQ(j["daemon"]["version"], EPBROKER_EXPECTED_VERSION);
  EXPECT_TRUE(j["daemon"]["state"].is_string());
  EXPECT_EQ(j["catalog"]["revision"], 0);
  EXPECT_TRUE(j["catalog"]["expires"].is_null());
  EXPECT_EQ(j["store"]["installed"], 0);
  EXPECT_EQ(j["store"]["bytes"], 0);
  EXPECT_EQ(j["sessions"], 0);
  EXPECT_TRUE(j["jobs"].is_array());

  r = json_cmd({"refresh"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  j = doc(r);
  EXPECT_GT(j["catalog"]["revision"].get<std::uint64_t>(), 0U);
  EXPECT_TRUE(j["catalog"]["expires"].is_string());
  EXPECT_EQ(j["job"]["state"], "done");
  EXPECT_EQ(j["job"]["kind"], "refresh");

  r = json_cmd({"devices"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  j = doc(r);
  ASSERT_TRUE(j["devices"].is_array());
  ASSERT_FALSE(j["devices"].empty());
  bool cpu_seen = false;
  for (const auto& d : j["devices"]) {
    for (const char* k :
         {"id", "type", "vendor", "name", "driver", "driver_version", "bus_path", "node"}) {
      EXPECT_TRUE(d[k].is_string()) << k << " in " << d;
    }
    EXPECT_TRUE(d["vendor_id"].is_number_unsigned()) << d;
    EXPECT_TRUE(d["discrete"].is_boolean()) << d;
    if (d["type"] == "cpu") {
      cpu_seen = true;
      EXPECT_TRUE(d["cpu"]["arch"].is_string()) << d;
      EXPECT_GT(d["cpu"]["threads"].get<unsigned>(), 0U) << d;
      EXPECT_TRUE(d["cpu"]["isa"].is_array()) << d;
    } else {
      EXPECT_TRUE(d["cpu"].is_null()) << d;
    }
  }
  EXPECT_TRUE(cpu_seen);

  r = json_cmd({"providers"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  j = doc(r);
  ASSERT_EQ(j["providers"].size(), 3U) << j;
  const json* test_ep = named(j["providers"], kTestEp);
  ASSERT_NE(test_ep, nullptr);
  EXPECT_EQ((*test_ep)["state"], "available");
  EXPECT_EQ((*test_ep)["version"], "0.1.0");
  EXPECT_EQ((*test_ep)["size"], catalog_->target(kTestEp).length);
  EXPECT_EQ((*test_ep)["ep_names"], json::array({"EpbrokerTestEp"}));
  EXPECT_FALSE((*test_ep)["devices"].empty());
  EXPECT_TRUE((*test_ep)["library_path"].is_null());
  EXPECT_TRUE((*test_ep)["reason"].is_null());
  EXPECT_EQ((*test_ep)["remote"], "test");
  EXPECT_TRUE((*test_ep)["job"].is_null());
  const json* foreign = named(j["providers"], kForeignEp);
  ASSERT_NE(foreign, nullptr);
  EXPECT_EQ((*foreign)["state"], "incompatible");
  EXPECT_TRUE((*foreign)["reason"].is_string());

  r = json_cmd({"install", kTestEp});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_EQ(r.err, "") << "--json prints no progress";
  j = doc(r);
  EXPECT_EQ(j["provider"]["name"], kTestEp);
  EXPECT_EQ(j["provider"]["state"], "ready");
  EXPECT_TRUE(fs::is_regular_file(j["provider"]["library_path"].get<std::string>())) << j;
  EXPECT_EQ(j["job"]["state"], "done");
  EXPECT_EQ(j["job"]["bytes_done"], j["job"]["bytes_total"]);
  EXPECT_EQ(j["job"]["bytes_total"], catalog_->target(kTestEp).length);

  r = json_cmd({"verify"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  j = doc(r);
  EXPECT_EQ(j["ok"], true);
  ASSERT_EQ(j["results"].size(), 1U);
  EXPECT_EQ(j["results"][0]["name"], kTestEp);
  EXPECT_EQ(j["results"][0]["ok"], true);
  EXPECT_TRUE(j["results"][0]["problem"].is_null());

  r = json_cmd({"status"});
  j = doc(r);
  EXPECT_EQ(j["store"]["installed"], 1);
  EXPECT_GT(j["store"]["bytes"].get<std::uint64_t>(), 0U);
  EXPECT_GT(j["catalog"]["revision"].get<std::uint64_t>(), 0U);

  r = json_cmd({"remove", kTestEp});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_EQ(doc(r), json({{"removed", kTestEp}, {"now", false}}));

  // Errors: a document with the daemon's kind, its message and a hint.
  r = json_cmd({"remove", kTestEp});
  EXPECT_EQ(r.exit_code, 4) << describe(r);
  j = doc(r);
  EXPECT_EQ(j["error"]["code"], "NotFound");
  EXPECT_EQ(j["error"]["bus_name"], "org.epbroker.Error.NotFound");
  EXPECT_TRUE(j["error"]["message"].is_string());
  EXPECT_TRUE(j["error"]["hint"].is_string());
  r = json_cmd({"install", "no-such-ep"});
  EXPECT_EQ(r.exit_code, 4) << describe(r);
  EXPECT_EQ(doc(r)["error"]["code"], "NotFound");
  r = json_cmd({"install", "Bad_Name!"});
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  EXPECT_EQ(doc(r)["error"]["code"], "InvalidArgument");
  r = json_cmd({"install", kForeignEp});
  EXPECT_EQ(r.exit_code, 1) << describe(r);
  EXPECT_EQ(doc(r)["error"]["code"], "Incompatible");
}

TEST_F(CtlTest, HumanOutputAndProgressLines) {
  start();
  const std::vector<std::string> bus{"--bus-address", address()};
  auto with_bus = [&](std::vector<std::string> args) {
    args.insert(args.begin(), bus.begin(), bus.end());
    return ctl(args);
  };
  auto r = with_bus({"refresh"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_TRUE(r.out.starts_with("catalog revision ")) << r.out;

  r = with_bus({"providers"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_TRUE(r.out.starts_with("NAME")) << r.out;
  EXPECT_NE(r.out.find("Why not usable here:\n  foreign-ep: "), std::string::npos) << r.out;

  // Not a terminal: plain progress lines on stderr, the result on stdout.
  r = with_bus({"install", kBulkEp});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_TRUE(r.out.starts_with("installed bulk-ep 1.0.0")) << r.out;
  EXPECT_NE(r.err.find("downloading: "), std::string::npos) << r.err;
  const auto done_line = r.err.find("done: ");
  ASSERT_NE(done_line, std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(100%)", done_line), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << "no in-place redraw off a terminal";

  r = with_bus({"status"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_NE(r.out.find("store:     1 provider installed"), std::string::npos) << r.out;

  // The bus address from the environment, as libepbroker reads it.
  setenv("EPBROKER_BUS_ADDRESS", address().c_str(), 1);
  r = ctl({"devices"});
  unsetenv("EPBROKER_BUS_ADDRESS");
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_TRUE(r.out.starts_with("ID")) << r.out;
  EXPECT_NE(r.out.find("cpu"), std::string::npos) << r.out;

  // Errors say what to do next.
  r = with_bus({"remove", "no-such-ep"});
  EXPECT_EQ(r.exit_code, 4) << describe(r);
  EXPECT_NE(r.err.find("epbrokerctl providers"), std::string::npos) << r.err;
}

TEST_F(CtlTest, UnprivilegedInstallIsNotAuthorized) {
  start();
  refresh();
  const auto r = daemon::run_command(
      {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", epbrokerctl_path(),
       "--bus-address", address(), "--json", "install", kTestEp},
      60s);
  EXPECT_EQ(r.exit_code, 3) << describe(r);
  const json j = doc(r);
  EXPECT_EQ(j["error"]["code"], "NotAuthorized");
  // What to do (issue 18): the action, sudo, or a polkit rule an admin adds.
  const std::string hint = j["error"]["hint"].get<std::string>();
  EXPECT_NE(hint.find("org.epbroker.install"), std::string::npos) << hint;
  EXPECT_NE(hint.find("sudo epbrokerctl install " + std::string(kTestEp)), std::string::npos)
      << hint;
  EXPECT_NE(hint.find("polkit rule in /etc/polkit-1/rules.d/"), std::string::npos) << hint;
  EXPECT_NE(hint.find("install_group"), std::string::npos) << hint;
  // Reading is open to everyone.
  const auto p =
      daemon::run_command({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                           epbrokerctl_path(), "--bus-address", address(), "--json", "providers"},
                          60s);
  EXPECT_EQ(p.exit_code, 0) << describe(p);
}

TEST_F(CtlTest, CtrlCDuringInstallCancelsTheJob) {
  start();
  serve_targets_slowly();
  refresh();
  auto c = client();
  daemon::Child ctl_child =
      daemon::start_child({epbrokerctl_path(), "--bus-address", address(), "install", kBulkEp});
  // Wait until the download is under way.
  ASSERT_TRUE(daemon::wait_until([&] { return download_started(kBulkEp); }, 60s));
  std::string job;
  for (const auto& j : c.status().jobs) {
    if (j.progress.target == kBulkEp) job = j.progress.job;
  }
  ASSERT_FALSE(job.empty());
  const int status = ctl_child.kill_and_wait(SIGINT);
  ASSERT_TRUE(WIFEXITED(status)) << "status " << status;
  EXPECT_EQ(WEXITSTATUS(status), 130);
  // The job was cancelled (not merely abandoned) and nothing is installed.
  for (const auto& j : c.status().jobs) {
    if (j.progress.job == job) {
      EXPECT_EQ(j.progress.state, epbroker::JobState::cancelled);
    }
  }
  for (const auto& p : c.providers()) {
    if (p.name == kBulkEp) {
      EXPECT_EQ(p.state, epbroker::ProviderState::available);
    }
  }
  EXPECT_FALSE(fs::exists(bus_->store_dir() / kBulkEp));
}

}  // namespace
}  // namespace tests::client
