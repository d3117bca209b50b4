// The admin flows through `busctl --address=...`, as an admin would type them:
// introspection, properties, ListProviders, RefreshCatalog, EnsureProvider and its
// job, RemoveProvider, and an error. Each command and its output is printed (the
// transcript shows with `ctest -V` or when the test binary runs directly).
#include <gtest/gtest.h>

#include <iostream>
#include <regex>

#include "tests/daemon/integration/fixture.hpp"

namespace tests::daemon {
namespace {

class BusctlTest : public CatalogTest {
 protected:
  // Runs busctl, prints the transcript, expects exit status `want_exit`.
  CommandResult run(const std::vector<std::string>& args, int want_exit = 0) {
    std::string line = "$ busctl --address=" + bus_->address();
    for (const auto& a : args) line += " " + (a.find(' ') == std::string::npos ? a : "'" + a + "'");
    auto r = bus_->busctl(args);
    std::cout << line << "\n" << r.out << r.err;
    EXPECT_EQ(r.exit_code, want_exit) << line << "\n" << r.out << r.err;
    return r;
  }
  CommandResult call(const std::string& method, const std::vector<std::string>& args = {},
                     int want_exit = 0) {
    std::vector<std::string> argv = {"call", kBrokerName, kBrokerPath, kBrokerInterface, method};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv, want_exit);
  }
  // `o "/org/epbroker/Broker1/job/N"` -> the path.
  static std::string object_path(const std::string& out) {
    std::smatch m;
    const bool found = std::regex_search(out, m, std::regex("o \"([^\"]+)\""));
    EXPECT_TRUE(found) << out;
    return found ? m[1].str() : "";
  }
  // Polls the job's State with busctl get-property until it is final.
  std::string wait_state(const std::string& job) {
    std::string state;
    const std::vector<std::string> args = {"get-property", kBrokerName, job, kJobInterface,
                                           "State"};
    wait_until(
        [&] {
          state = bus_->busctl(args).out;
          return state != "s \"queued\"\n" && state != "s \"downloading\"\n" &&
                 state != "s \"verifying\"\n" && state != "s \"installing\"\n";
        },
        60s);
    run(args);  // once more, for the transcript
    return state;
  }
};

TEST_F(BusctlTest, AdminFlow) {
  start();
  std::cout << "# (the first call activates epbrokerd)\n";
  auto r = run({"introspect", kBrokerName, kBrokerPath});
  for (const char* want :
       {"org.epbroker.Broker1", "org.freedesktop.DBus.ObjectManager",
        "org.freedesktop.DBus.Properties", "org.freedesktop.DBus.Introspectable", ".EnsureProvider",
        ".RemoveProvider", ".RequestSession", ".CatalogChanged", ".CatalogRevision", ".Version"}) {
    EXPECT_NE(r.out.find(want), std::string::npos) << want;
  }
  r = run({"get-property", kBrokerName, kBrokerPath, kBrokerInterface, "Version"});
  EXPECT_EQ(r.out, std::string("s \"") + EPBROKER_EXPECTED_VERSION + "\"\n");
  r = run({"get-property", kBrokerName, kBrokerPath, kBrokerInterface, "CatalogRevision"});
  EXPECT_EQ(r.out, "t 0\n");

  r = call("ListDevices");
  EXPECT_NE(r.out.find("\"id\" s \"cpu0\""), std::string::npos);

  r = call("RefreshCatalog");
  const std::string refresh_job = object_path(r.out);
  EXPECT_EQ(wait_state(refresh_job), "s \"done\"\n");
  r = run({"get-property", kBrokerName, kBrokerPath, kBrokerInterface, "CatalogRevision"});
  EXPECT_NE(r.out, "t 0\n");

  r = call("ListProviders");
  EXPECT_TRUE(r.out.starts_with("aa{sv} 3 ")) << r.out;
  EXPECT_NE(r.out.find("\"name\" s \"test-ep\""), std::string::npos);
  EXPECT_NE(r.out.find("\"state\" s \"available\""), std::string::npos);
  EXPECT_NE(r.out.find("\"state\" s \"incompatible\""), std::string::npos);

  r = call("EnsureProvider", {"s", kTestEp});
  const std::string job = object_path(r.out);
  EXPECT_TRUE(job.starts_with("/org/epbroker/Broker1/job/")) << job;
  EXPECT_EQ(wait_state(job), "s \"done\"\n");
  r = run({"introspect", kBrokerName, job, kJobInterface});
  EXPECT_NE(r.out.find(".BytesDone"), std::string::npos);
  r = run({"get-property", kBrokerName, job, kJobInterface, "Kind", "Target", "BytesDone",
           "BytesTotal", "Error"});
  EXPECT_EQ(r.out.substr(0, r.out.find("t ")), "s \"install\"\ns \"test-ep\"\n");
  r = run({"call", kBrokerName, kBrokerPath, "org.freedesktop.DBus.ObjectManager",
           "GetManagedObjects"});
  EXPECT_NE(r.out.find(job), std::string::npos);
  r = run({"tree", kBrokerName});
  EXPECT_NE(r.out.find(job), std::string::npos);

  r = call("ListProviders");
  EXPECT_NE(r.out.find("\"state\" s \"ready\""), std::string::npos);
  EXPECT_NE(r.out.find("\"library_path\" s \"" + bus_->store_dir().string() + "/test-ep/"),
            std::string::npos);
  r = call("Verify");
  EXPECT_NE(r.out.find("\"ok\" b true"), std::string::npos);

  r = call("RemoveProvider", {"s", kTestEp});
  EXPECT_EQ(r.out, "");
  r = call("RemoveProvider", {"s", kTestEp}, 1);
  EXPECT_NE(r.err.find("test-ep is not installed"), std::string::npos);
  r = call("EnsureProvider", {"s", "Not A Name"}, 1);
  EXPECT_NE(r.err.find("invalid package name"), std::string::npos);
}

}  // namespace
}  // namespace tests::daemon
