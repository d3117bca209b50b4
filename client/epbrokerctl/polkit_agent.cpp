#include "client/epbrokerctl/polkit_agent.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <string>
#include <utility>

namespace epbrokerctl {
namespace {

// The agent's end of the notify pipe, as the child sees it.
constexpr int kNotifyFd = 3;

const char* agent_path() {
  const char* override_path = ::secure_getenv("EPBROKER_POLKIT_AGENT");
  return override_path != nullptr && *override_path != '\0' ? override_path : kPolkitAgentPath;
}

// In the child, between fork() and exec: async-signal-safe calls only.
[[noreturn]] void exec_agent(const char* path, int notify, pid_t parent) {
  // Dies with epbrokerctl, even when killed (then nobody sends SIGTERM).
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != parent) ::_exit(1);
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  // The notify pipe at fd 3, inherited; nothing else of ours beyond stdio.
  if (notify != kNotifyFd) {
    if (::dup2(notify, kNotifyFd) < 0) ::_exit(1);
  } else if (::fcntl(kNotifyFd, F_SETFD, 0) < 0) {
    ::_exit(1);
  }
  ::close_range(kNotifyFd + 1, ~0U, 0);
  // Its prompts go to the terminal, never into a pipe of ours (`epbrokerctl
  // --json install x | jq` must see its EOF when epbrokerctl exits).
  if (::isatty(STDOUT_FILENO) != 1 || ::isatty(STDERR_FILENO) != 1) {
    const int tty = ::open("/dev/tty", O_WRONLY | O_CLOEXEC);
    if (tty < 0) ::_exit(1);
    if (::isatty(STDOUT_FILENO) != 1) ::dup2(tty, STDOUT_FILENO);
    if (::isatty(STDERR_FILENO) != 1) ::dup2(tty, STDERR_FILENO);
  }
  char fd_text[] = {static_cast<char>('0' + kNotifyFd), '\0'};
  std::array<char*, 5> argv = {const_cast<char*>(path), const_cast<char*>("--notify-fd"), fd_text,
                               const_cast<char*>("--fallback"), nullptr};
  ::execv(path, argv.data());
  ::_exit(127);
}

}  // namespace

bool may_need_authorization(std::string_view command) {
  // Not verify: the daemon asks polkit about it without user interaction (a new
  // verification for org.epbroker.manage, else the latest result), so an agent
  // would never be asked.
  for (std::string_view c : {"install", "update", "hold", "unhold", "rollback", "gc", "remove",
                             "remote", "refresh", "model"}) {
    if (c == command) return true;
  }
  return false;
}

PolkitAgent PolkitAgent::start_if_useful(std::string_view command, bool ask_password) {
  if (!ask_password || !may_need_authorization(command)) return {};
  // stdin, not stdout: this is about whom to ask, not where output goes.
  if (::isatty(STDIN_FILENO) != 1 || ::geteuid() == 0) return {};
  const char* path = agent_path();
  if (::access(path, X_OK) != 0) return {};  // not installed: nothing to say
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return {};
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) exec_agent(path, pipe_fds[1], parent);
  ::close(pipe_fds[1]);
  if (pid < 0) {
    ::close(pipe_fds[0]);
    return {};
  }
  // Registered once it closed its end (or exited: then without an agent).
  pollfd fd{pipe_fds[0], POLLIN, 0};
  const auto deadline = std::chrono::steady_clock::now() + kAgentRegisterWait;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    const int n = ::poll(&fd, 1, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || (fd.revents & (POLLHUP | POLLERR)) != 0) break;
    char byte;
    if (::read(pipe_fds[0], &byte, 1) <= 0) break;  // EOF: closed
  }
  ::close(pipe_fds[0]);
  return PolkitAgent(pid);
}

PolkitAgent::~PolkitAgent() { stop(); }

PolkitAgent::PolkitAgent(PolkitAgent&& other) noexcept : pid_(std::exchange(other.pid_, -1)) {}

PolkitAgent& PolkitAgent::operator=(PolkitAgent&& other) noexcept {
  if (this != &other) {
    stop();
    pid_ = std::exchange(other.pid_, -1);
  }
  return *this;
}

void PolkitAgent::stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  ::kill(pid_, SIGCONT);  // a stopped agent gets the SIGTERM too
  while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

}  // namespace epbrokerctl
