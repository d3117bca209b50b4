// The C API as a C application sees it: `cmake --install` of the libepbroker components
// into a temporary prefix, tests/client/c_api_program.c compiled as strict C99 with
// nothing but `pkg-config --cflags --libs epbroker` from that prefix (no path into the
// source or build tree), then run against a live daemon on a private bus.
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "tests/client/client_fixture.hpp"
#include "tests/support/temp_dir.hpp"

namespace tests::client {
namespace {

#ifndef EPBROKER_C_PROGRAM_FLAGS
// The sanitizer build sets it (CMakeLists.txt): an application of a sanitized
// library must be built with the same -fsanitize (its runtime comes first).
#define EPBROKER_C_PROGRAM_FLAGS ""
#endif

namespace fs = std::filesystem;
using tests::daemon::CommandResult;
using tests::daemon::run_command;

std::string describe(const CommandResult& r) {
  return "exit " + std::to_string(r.exit_code) + "\nstdout: " + r.out + "\nstderr: " + r.err;
}

// `text` split at white space.
std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

TEST_F(ClientTest, CApiProgramBuildsAsC99AgainstTheInstalledHeaderAndRuns) {
  support::TempDir tmp;
  const fs::path prefix = tmp / "prefix";
  const fs::path libdir = prefix / EPBROKER_INSTALL_LIBDIR;

  // 1. Install the library's components from this build tree.
  for (const char* component : {"libepbroker", "libepbroker-dev"}) {
    const auto r = run_command({EPBROKER_CMAKE_COMMAND, "--install", EPBROKER_BUILD_DIR, "--prefix",
                                prefix.string(), "--component", component},
                               120s);
    ASSERT_EQ(r.exit_code, 0) << describe(r);
  }
  ASSERT_TRUE(fs::is_regular_file(prefix / "include/epbroker/epbroker.h"));

  // 2. Compile with the installed pkg-config file's flags only.
  const std::string pc_path = "PKG_CONFIG_PATH=" + (libdir / "pkgconfig").string();
  auto r = run_command({"env", pc_path, "pkg-config", "--cflags", "--libs", "epbroker"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_EQ(r.out.find(EPBROKER_SOURCE_DIR), std::string::npos) << r.out;
  const fs::path program = tmp / "c_api_program";
  std::vector<std::string> cc = {
      EPBROKER_C_COMPILER,      "-std=c99", "-Wall", "-Wextra", "-Wpedantic", "-Werror",
      EPBROKER_C_PROGRAM_SOURCE};
  for (const auto& w : words(EPBROKER_C_PROGRAM_FLAGS)) cc.push_back(w);
  for (const auto& w : words(r.out)) cc.push_back(w);
  cc.insert(cc.end(), {"-o", program.string()});
  r = run_command(cc, 120s);
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_EQ(r.err, "") << "warnings";

  // 3. Run it against the private bus's daemon, with the installed library.
  start();
  refresh();
  r = run_command(
      {"env", "LD_LIBRARY_PATH=" + libdir.string(), program.string(), address(), kTestEp}, 120s);
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  const std::string& out = r.out;
  EXPECT_TRUE(out.starts_with("libepbroker " EPBROKER_EXPECTED_VERSION "\n")) << out;
  EXPECT_NE(out.find("\ndevice cpu"), std::string::npos) << out;
  EXPECT_NE(out.find("\nprovider test-ep 0.1.0 available\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\nprogress install test-ep "), std::string::npos) << out;
  EXPECT_NE(out.find("\nprogress install test-ep done "), std::string::npos) << out;
  const std::string store = bus_->store_dir().string();
  const auto leased = out.find("\nleased test-ep " + store);
  ASSERT_NE(leased, std::string::npos) << out;
  const auto path_at = leased + std::string("\nleased test-ep ").size();
  const fs::path library = out.substr(path_at, out.find('\n', path_at) - path_at);
  EXPECT_TRUE(fs::is_regular_file(library)) << library;
  EXPECT_NE(out.find("\nready test-ep " + library.string() + " after "), std::string::npos) << out;
  EXPECT_NE(out.find("\nsession /org/epbroker/"), std::string::npos) << out;
  EXPECT_NE(out.find("\nreleased\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\nerror NotFound 1 org.epbroker.Error.NotFound: "), std::string::npos) << out;

  // No daemon to reach: the status and message, exit 1.
  r = run_command({"env", "LD_LIBRARY_PATH=" + libdir.string(), program.string(),
                   "unix:path=/nonexistent/epbroker-bus", kTestEp},
                  60s);
  EXPECT_EQ(r.exit_code, 1) << describe(r);
  EXPECT_NE(r.err.find("connect: Unavailable (9): "), std::string::npos) << r.err;
}

}  // namespace
}  // namespace tests::client
