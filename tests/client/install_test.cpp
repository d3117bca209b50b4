// The installed library as an application sees it: `cmake --install` of the
// libepbroker components into a temporary prefix, the headers free of D-Bus
// types, pkg-config and find_package(epbroker) both working, and the out-of-tree
// example (client/examples/list-providers, C++17) configured, built and run
// against a live daemon on a private bus.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/client/client_fixture.hpp"
#include "tests/support/temp_dir.hpp"

namespace tests::client {
namespace {

#ifndef EPBROKER_EXAMPLE_CXX_FLAGS
// The sanitizer build sets it (CMakeLists.txt): the example is built with it, as an
// application of a sanitized library must be (ASan's runtime comes first).
#define EPBROKER_EXAMPLE_CXX_FLAGS ""
#endif

namespace fs = std::filesystem;
using tests::daemon::CommandResult;
using tests::daemon::run_command;

std::string describe(const CommandResult& r) {
  return "exit " + std::to_string(r.exit_code) + "\nstdout: " + r.out + "\nstderr: " + r.err;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST_F(ClientTest, ExampleBuildsAgainstTheInstalledLibraryAndRuns) {
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
  for (const fs::path& f :
       {prefix / "include/epbroker/client.hpp", prefix / "include/epbroker/error.hpp",
        prefix / "include/epbroker/version.hpp", libdir / "libepbroker.so",
        libdir / ("libepbroker.so." EPBROKER_SOVERSION), libdir / "pkgconfig/epbroker.pc",
        libdir / "cmake/epbroker/epbrokerConfig.cmake",
        libdir / "cmake/epbroker/epbrokerConfigVersion.cmake"}) {
    EXPECT_TRUE(fs::exists(f)) << f;
  }
  // Applications need no D-Bus headers: the installed ones include only the
  // standard library and each other.
  for (const auto& entry : fs::directory_iterator(prefix / "include/epbroker")) {
    std::istringstream text(slurp(entry.path()));
    for (std::string line; std::getline(text, line);) {
      if (!line.starts_with("#include")) continue;
      const bool standard =
          line.find('<') != std::string::npos && line.find('/') == std::string::npos;
      const bool ours = line.find("epbroker/") != std::string::npos;
      EXPECT_TRUE(standard || ours) << entry.path() << ": " << line;
    }
  }

  // 2. pkg-config finds it where it was installed (the .pc file is relocatable).
  const std::string pc_path = "PKG_CONFIG_PATH=" + (libdir / "pkgconfig").string();
  auto r = run_command({"env", pc_path, "pkg-config", "--cflags", "--libs", "epbroker"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_NE(r.out.find("-lepbroker"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("-I"), std::string::npos) << r.out;
  const auto include_flag = r.out.substr(r.out.find("-I") + 2);
  const fs::path include_dir = include_flag.substr(0, include_flag.find_first_of(" \n"));
  EXPECT_TRUE(fs::exists(include_dir / "epbroker/client.hpp")) << include_dir;
  r = run_command({"env", pc_path, "pkg-config", "--modversion", "epbroker"});
  EXPECT_EQ(r.out, std::string(EPBROKER_EXPECTED_VERSION) + "\n");

  // 3. The example, configured and built out of tree with find_package(epbroker).
  const fs::path build = tmp / "example-build";
  r = run_command(
      {EPBROKER_CMAKE_COMMAND, "-S", EPBROKER_EXAMPLE_DIR, "-B", build.string(), "-G",
       EPBROKER_CMAKE_GENERATOR, "-DCMAKE_MAKE_PROGRAM=" EPBROKER_MAKE_PROGRAM,
       "-DCMAKE_CXX_COMPILER=" EPBROKER_CXX_COMPILER, "-DCMAKE_PREFIX_PATH=" + prefix.string(),
       "-DCMAKE_CXX_FLAGS_INIT=" EPBROKER_EXAMPLE_CXX_FLAGS},
      300s);
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  r = run_command({EPBROKER_CMAKE_COMMAND, "--build", build.string()}, 300s);
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  const std::string example = (build / "list-providers").string();

  // 4. Run against the private bus's daemon (activated by its first call).
  start();
  refresh();
  r = run_command({example, address()}, 60s);
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_NE(r.out.find(std::string("libepbroker ") + EPBROKER_EXPECTED_VERSION + ", epbrokerd " +
                       EPBROKER_EXPECTED_VERSION),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\ndevice cpu"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nprovider test-ep 0.1.0 available"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nprovider foreign-ep 1.0.0 incompatible ("), std::string::npos) << r.out;

  // And with no daemon to reach: a clear error, exit 1.
  r = run_command({example, "unix:path=/nonexistent/epbroker-bus"}, 60s);
  EXPECT_EQ(r.exit_code, 1) << describe(r);
  EXPECT_NE(r.err.find("cannot connect to unix:path=/nonexistent/epbroker-bus"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("[Unavailable]"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace tests::client
