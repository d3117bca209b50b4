// libepbroker reads EPBROKER_BUS_ADDRESS with secure_getenv (issue 17 item 8):
// a privileged program (file capability, setuid) run by an unprivileged user
// must not take its bus from that user's environment, or the user could point
// it at a fake broker. The probe (bus_address_probe.cpp) is libepbroker's
// Client with no address; copies of it run as uid 65534 with a fake address in
// the environment: the plain copy uses it (the control), the privileged copies
// (cap_net_bind_service+ep; setuid to uid 1) fall back to the system bus.
//
// Needs root (setcap, chown, setpriv) and setcap (libcap2-bin, in
// scripts/bootstrap.sh); without them the test fails saying so: a security
// property that was not checked must not look checked.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/support/temp_dir.hpp"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

// A socket that does not exist: connecting fails at once, naming the address.
constexpr const char* kFakeAddress = "unix:path=/nonexistent/epbroker-fake-broker/bus";
constexpr uid_t kNobody = 65534;

struct Outcome {
  int exit_code = -1;  // 128 + N if killed by signal N; -1 if it never ran
  std::string output;  // stdout and stderr together
};

// Runs argv (argv[0] searched in PATH) with `env` added to this process's
// environment, stdin /dev/null; killed if it has not finished within 60 s.
Outcome run_program(const std::vector<std::string>& argv,
                    const std::vector<std::string>& env = {}) {
  Outcome r;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return r;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  std::vector<std::string> env_strings(env);
  for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  for (const auto& e : env_strings) envp.push_back(const_cast<char*>(e.c_str()));
  args.push_back(nullptr);
  envp.push_back(nullptr);
  pid_t pid = -1;
  const int spawned = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (spawned != 0) {
    ::close(fds[0]);
    r.output = argv[0] + ": " + std::strerror(spawned);
    return r;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  char buf[4096];
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{fds[0], POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) == 0) {
      ::kill(pid, SIGKILL);
      r.output += "\n[killed after 60 s]";
      break;
    }
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    r.output.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

std::string describe(const Outcome& r) {
  return "exit " + std::to_string(r.exit_code) + ", output:\n" + r.output;
}

class SecureEnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) {
      FAIL() << "this test needs root (setcap, chown, setpriv to uid 65534); run it as root";
    }
    // Other uids must reach the copies (the temporary directory is 0700).
    ASSERT_EQ(::chmod(dir_.path().c_str(), 0755), 0);
  }

  // A copy of the probe at dir/NAME, mode 0755 (so uid 65534 may run it).
  fs::path copy(const std::string& name) {
    const fs::path to = dir_ / name;
    fs::copy_file(EPBROKER_BUS_ADDRESS_PROBE_PATH, to);
    EXPECT_EQ(::chmod(to.c_str(), 0755), 0);
    return to;
  }

  // The probe at `path` run as uid/gid 65534 with EPBROKER_BUS_ADDRESS set to the fake.
  static Outcome as_nobody(const fs::path& path) {
    return run_program({"setpriv", "--reuid=" + std::to_string(kNobody),
                        "--regid=" + std::to_string(kNobody), "--clear-groups", path.string()},
                       {std::string("EPBROKER_BUS_ADDRESS=") + kFakeAddress});
  }

  tests::support::TempDir dir_;
};

TEST_F(SecureEnvTest, UnprivilegedProgramUsesTheVariable) {
  // The control: without it, "ignored when privileged" proves nothing.
  const Outcome r = as_nobody(copy("plain"));
  ASSERT_EQ(r.exit_code, 0) << "the probe did not run as uid 65534 (can it reach "
                               "libepbroker.so in the build tree?) "
                            << describe(r);
  EXPECT_THAT(r.output, HasSubstr("secure 0\n")) << describe(r);
  EXPECT_THAT(r.output, HasSubstr(std::string("cannot connect to ") + kFakeAddress)) << describe(r);
}

TEST_F(SecureEnvTest, FileCapabilityProgramIgnoresTheVariable) {
  const fs::path probe = copy("with-capability");
  const Outcome set = run_program({"setcap", "cap_net_bind_service+ep", probe.string()});
  ASSERT_EQ(set.exit_code, 0) << "setcap failed (needs setcap from libcap2-bin, see "
                                 "scripts/bootstrap.sh, and root with CAP_SETFCAP) "
                              << describe(set);
  const Outcome r = as_nobody(probe);
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  ASSERT_THAT(r.output, HasSubstr("secure 1\n"))
      << "the capability did not make the probe AT_SECURE (no_new_privs? a nosuid "
         "mount? a bounding set without cap_net_bind_service?) "
      << describe(r);
  EXPECT_THAT(r.output, Not(HasSubstr("epbroker-fake-broker"))) << describe(r);
  // It went to the default instead: the system bus (present or not).
  EXPECT_THAT(r.output, ::testing::AnyOf(HasSubstr("the system bus"), HasSubstr("bus \n")))
      << describe(r);
}

TEST_F(SecureEnvTest, SetuidProgramIgnoresTheVariable) {
  // Owned by uid 1 (daemon), setuid: run by 65534, its effective uid is 1.
  const fs::path probe = copy("setuid");
  ASSERT_EQ(::chown(probe.c_str(), 1, 1), 0);
  ASSERT_EQ(::chmod(probe.c_str(), 04755), 0);
  const Outcome r = as_nobody(probe);
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  ASSERT_THAT(r.output, HasSubstr("secure 1\n"))
      << "setuid did not make the probe AT_SECURE (a nosuid mount? no_new_privs?) " << describe(r);
  EXPECT_THAT(r.output, Not(HasSubstr("epbroker-fake-broker"))) << describe(r);
  EXPECT_THAT(r.output, ::testing::AnyOf(HasSubstr("the system bus"), HasSubstr("bus \n")))
      << describe(r);
}

}  // namespace
