#include "tests/daemon/integration/private_bus.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace tests::daemon {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

fs::path epbrokerd_path() { return EPBROKER_EPBROKERD_PATH; }
fs::path bus_client_path() { return EPBROKER_BUS_CLIENT_PATH; }

fs::path client_for_others(const PrivateBus& bus) {
  const fs::path client = bus.root() / "bin/bus_client";
  fs::create_directories(client.parent_path());
  fs::copy_file(bus_client_path(), client, fs::copy_options::overwrite_existing);
  ::chmod(client.parent_path().c_str(), 0755);
  ::chmod(client.c_str(), 0755);
  return client;
}

namespace {

constexpr auto kBusStartTimeout = 10s;
constexpr auto kStopTimeout = 5s;

void write_text(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("PrivateBus: cannot write " + p.string());
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Alive: exists and is not a zombie (an exited child its parent has not reaped yet).
bool alive(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!in || !std::getline(in, stat)) return false;
  const auto close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';
}

std::vector<std::string> cmdline_of(pid_t pid) {
  const std::string text = read_text("/proc/" + std::to_string(pid) + "/cmdline");
  std::vector<std::string> args;
  std::string cur;
  for (char c : text) {
    if (c == '\0') {
      args.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  return args;
}

// Reaps `pid` (a child of ours) within `timeout`; false if it is still running.
bool reap_within(pid_t pid, std::chrono::milliseconds timeout) {
  return wait_until(
      [&] {
        int status = 0;
        const pid_t r = waitpid(pid, &status, WNOHANG);
        return r == pid || (r < 0 && errno == ECHILD);
      },
      timeout);
}

int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

std::vector<char*> c_argv(std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  return argv;
}

}  // namespace

bool wait_until(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  auto pause = 10ms;
  while (true) {
    if (condition()) return true;
    if (Clock::now() >= deadline) return condition();
    std::this_thread::sleep_for(pause);
    pause = std::min<std::chrono::milliseconds>(pause * 2, 100ms);
  }
}

// ---- child processes ----------------------------------------------------------------

CommandResult run_command(const std::vector<std::string>& argv_in,
                          std::chrono::milliseconds timeout) {
  CommandResult result;
  int out_pipe[2];
  int err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return result;
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    return result;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  std::vector<std::string> args = argv_in;
  auto argv = c_argv(args);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (rc != 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    result.err = "cannot start " + argv_in.front() + ": " + std::strerror(rc);
    return result;
  }

  // Drain both pipes until EOF on both, or the deadline.
  const auto deadline = Clock::now() + timeout;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_fds = 2;
  while (open_fds > 0) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      result.timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    const int n = poll(fds, 2, static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buf[4096];
      const ssize_t got = read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        sinks[i]->append(buf, static_cast<std::size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds) {
    if (f.fd >= 0) close(f.fd);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = decode_status(status);
  return result;
}

Child start_child(const std::vector<std::string>& argv_in) {
  int out_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) throw std::runtime_error("start_child: pipe failed");
  std::vector<std::string> args = argv_in;
  auto argv = c_argv(args);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("start_child: fork failed");
  if (pid == 0) {
    // Only async-signal-safe calls from here to exec.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    dup2(out_pipe[1], STDOUT_FILENO);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execvp(argv[0], argv.data());
    _exit(127);
  }
  close(out_pipe[1]);
  return Child(pid, out_pipe[0]);
}

Child::~Child() { reset(); }

Child::Child(Child&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      out_fd_(std::exchange(other.out_fd_, -1)),
      buffer_(std::move(other.buffer_)) {}

Child& Child::operator=(Child&& other) noexcept {
  if (this != &other) {
    reset();
    pid_ = std::exchange(other.pid_, -1);
    out_fd_ = std::exchange(other.out_fd_, -1);
    buffer_ = std::move(other.buffer_);
  }
  return *this;
}

void Child::reset() {
  if (pid_ > 0) kill_and_wait(SIGKILL);
  if (out_fd_ >= 0) close(out_fd_);
  out_fd_ = -1;
}

std::optional<std::string> Child::read_line(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (true) {
    if (auto nl = buffer_.find('\n'); nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    if (out_fd_ < 0) return std::nullopt;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return std::nullopt;
    pollfd fd{out_fd_, POLLIN, 0};
    const int n = poll(&fd, 1, static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    char buf[1024];
    const ssize_t got = read(out_fd_, buf, sizeof buf);
    if (got > 0) {
      buffer_.append(buf, static_cast<std::size_t>(got));
    } else if (got == 0 || errno != EINTR) {
      close(out_fd_);
      out_fd_ = -1;
    }
  }
}

int Child::kill_and_wait(int sig) {
  if (pid_ <= 0) return -1;
  kill(pid_, sig);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  return status;
}

// ---- the bus ------------------------------------------------------------------------

PrivateBus::PrivateBus(PrivateBusOptions options) : options_(std::move(options)) {
  const fs::path bus_dir = root() / "bus";
  const fs::path socket = bus_dir / "socket";
  const fs::path services = root() / "services";
  address_ = "unix:path=" + socket.string();

  // 0. dbus-daemon double-forks the services it activates, so epbrokerd's parent
  //    exits at once: as a subreaper, this process (not init) becomes its parent and
  //    reaps it (reap_daemon_zombies()).
  prctl(PR_SET_CHILD_SUBREAPER, 1);

  // 1. Directories: the socket's must be reachable by an unprivileged caller.
  for (const auto& d : {bus_dir, services, config_dir() / "remotes.d", state_dir(), cache_dir()}) {
    fs::create_directories(d);
  }
  // The store libepbroker trusts (client/src/store_path.hpp) is this daemon's
  // (its --state-dir holds it), for this process and the clients it starts.
  ::setenv("EPBROKER_STORE_DIR", (state_dir() / "store").c_str(), 1);
  for (const auto& d : {root(), bus_dir}) {
    fs::permissions(d, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                           fs::perms::others_read | fs::perms::others_exec);
  }

  // 2. The daemon's configuration and its activation file.
  write_text(
      config_dir() / "epbroker.conf",
      "# written by tests/daemon/integration/private_bus.cpp\n"
      "[daemon]\n"
      "idle_timeout_sec = " +
          std::to_string(options_.idle_timeout_sec) +
          "\n"
          "refresh_interval_sec = " +
          std::to_string(options_.refresh_interval_sec) + "\n" +
          (options_.log_level.empty() ? std::string()
                                      : "log_level = " + options_.log_level + "\n") +
          (options_.install_group.empty() ? std::string()
                                          : "install_group = " + options_.install_group + "\n"));
  std::string as_user;
  if (options_.daemon_uid) {
    const std::string id = std::to_string(*options_.daemon_uid);
    for (const auto& d : {state_dir(), cache_dir()}) {
      if (::chown(d.c_str(), *options_.daemon_uid, *options_.daemon_uid) != 0) {
        throw std::runtime_error("PrivateBus: cannot chown " + d.string() + " to uid " + id);
      }
    }
    as_user = "/usr/bin/setpriv --reuid=" + id + " --regid=" + id + " --clear-groups ";
  }
  write_text(services / "org.epbroker.Broker1.service",
             "[D-BUS Service]\n"
             "Name=org.epbroker.Broker1\n"
             "Exec=" +
                 as_user +
                 (options_.epbrokerd.empty() ? epbrokerd_path() : options_.epbrokerd).string() +
                 " --bus-address " + address_ + " --config-dir " + config_dir().string() +
                 " --state-dir " + state_dir().string() + " --cache-dir " + cache_dir().string() +
                 " --sysfs-root " + options_.sysfs_root.string() + " --procfs-root " +
                 options_.procfs_root.string() + " --idle-timeout " +
                 std::to_string(options_.idle_timeout_sec) + "\n");

  // 3. The bus: a session-type bus on our socket, open to every uid.
  const fs::path conf = root() / "bus.conf";
  write_text(conf,
             "<!DOCTYPE busconfig PUBLIC \"-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN\"\n"
             " \"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd\">\n"
             "<busconfig>\n"
             "  <type>session</type>\n"
             "  <listen>" +
                 address_ +
                 "</listen>\n"
                 "  <auth>EXTERNAL</auth>\n"
                 "  <servicedir>" +
                 services.string() +
                 "</servicedir>\n"
                 "  <policy context=\"default\">\n"
                 "    <!-- any uid may connect (by default only the bus's own) -->\n"
                 "    <allow user=\"*\"/>\n"
                 "    <!-- as dbus's session.conf: own, send and receive anything -->\n"
                 "    <allow own=\"*\"/>\n"
                 "    <allow send_destination=\"*\" eavesdrop=\"true\"/>\n"
                 "    <allow eavesdrop=\"true\"/>\n"
                 "  </policy>\n" +
                 options_.extra_bus_config + "</busconfig>\n");

  // 4. Start it; it prints its address on fd 3 once it listens.
  int addr_pipe[2];
  if (pipe2(addr_pipe, O_CLOEXEC) != 0) throw std::runtime_error("PrivateBus: pipe failed");
  const std::string log_path = (root() / "bus.log").string();
  std::vector<std::string> args = {"dbus-daemon", "--nofork", "--nopidfile",
                                   "--config-file=" + conf.string(), "--print-address=3"};
  auto argv = c_argv(args);
  const pid_t parent = getpid();
  bus_pid_ = fork();
  if (bus_pid_ < 0) throw std::runtime_error("PrivateBus: fork failed");
  if (bus_pid_ == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127);
    const int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd >= 0) {
      dup2(log_fd, STDOUT_FILENO);
      dup2(log_fd, STDERR_FILENO);
    }
    if (addr_pipe[1] == 3) {
      fcntl(3, F_SETFD, 0);  // keep it across exec
    } else {
      dup2(addr_pipe[1], 3);  // the copy has no FD_CLOEXEC
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execvp(argv[0], argv.data());
    _exit(127);
  }
  close(addr_pipe[1]);
  std::string printed;
  const auto deadline = Clock::now() + kBusStartTimeout;
  while (printed.find('\n') == std::string::npos) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    pollfd fd{addr_pipe[0], POLLIN, 0};
    const int n = left > 0 ? poll(&fd, 1, static_cast<int>(left)) : 0;
    if (n < 0 && errno == EINTR) continue;
    char buf[512];
    const ssize_t got = n > 0 ? read(addr_pipe[0], buf, sizeof buf) : -1;
    if (got <= 0) break;
    printed.append(buf, static_cast<std::size_t>(got));
  }
  close(addr_pipe[0]);
  if (printed.find('\n') == std::string::npos) {
    stop_bus();
    throw std::runtime_error("PrivateBus: dbus-daemon did not start: " + log());
  }
  try {
    control_ = sdbus::createSessionBusConnectionWithAddress(address_);
  } catch (const sdbus::Error& e) {
    stop_bus();
    throw std::runtime_error("PrivateBus: cannot connect to " + address_ + ": " + e.getMessage());
  }
}

PrivateBus::~PrivateBus() {
  stop_daemons();
  control_.reset();
  stop_bus();
  // One may have been activated while we stopped the others.
  for (pid_t pid : daemon_pids()) kill(pid, SIGKILL);
  wait_daemons_gone(kStopTimeout);
}

void PrivateBus::add_remote(const std::string& name, const std::string& metadata_url,
                            const std::string& targets_url, const fs::path& trusted_root) {
  write_text(config_dir() / "remotes.d" / (name + ".conf"),
             "[remote]\n"
             "name = " +
                 name + "\nmetadata_url = " + metadata_url + "\ntargets_url = " + targets_url +
                 "\ntrusted_root = " + trusted_root.string() + "\nallow_http = true\n");
}

std::unique_ptr<sdbus::IConnection> PrivateBus::connect() const {
  auto conn = sdbus::createSessionBusConnectionWithAddress(address_);
  conn->enterEventLoopAsync();
  return conn;
}

CommandResult PrivateBus::busctl(const std::vector<std::string>& args,
                                 std::optional<uid_t> as_uid) const {
  std::vector<std::string> argv;
  if (as_uid) {
    argv = {"setpriv", "--reuid=" + std::to_string(*as_uid), "--regid=" + std::to_string(*as_uid),
            "--clear-groups"};
  }
  argv.push_back("busctl");
  argv.push_back("--address=" + address_);
  argv.push_back("--no-pager");
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command(argv);
}

bool PrivateBus::broker_running() const {
  bool has = false;
  auto proxy = sdbus::createProxy(*control_, "org.freedesktop.DBus", "/org/freedesktop/DBus");
  proxy->callMethod("NameHasOwner")
      .onInterface("org.freedesktop.DBus")
      .withArguments(std::string(kBrokerName))
      .storeResultsTo(has);
  return has;
}

std::optional<pid_t> PrivateBus::broker_pid() const {
  try {
    std::uint32_t pid = 0;
    auto proxy = sdbus::createProxy(*control_, "org.freedesktop.DBus", "/org/freedesktop/DBus");
    proxy->callMethod("GetConnectionUnixProcessID")
        .onInterface("org.freedesktop.DBus")
        .withArguments(std::string(kBrokerName))
        .storeResultsTo(pid);
    return static_cast<pid_t>(pid);
  } catch (const sdbus::Error&) {
    return std::nullopt;  // no owner
  }
}

std::vector<pid_t> PrivateBus::daemon_pids() const {
  reap_daemon_zombies();
  std::vector<pid_t> pids;
  const std::string state = state_dir().string();
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    const auto pid = static_cast<pid_t>(std::stol(name));
    const auto args = cmdline_of(pid);
    for (std::size_t i = 0; i + 1 < args.size(); ++i) {
      if (args[i] == "--state-dir" && args[i + 1] == state && alive(pid)) {
        pids.push_back(pid);
        break;
      }
    }
  }
  return pids;
}

void PrivateBus::reap_daemon_zombies() const {
  const std::string state = state_dir().string();
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    const auto pid = static_cast<pid_t>(std::stol(name));
    if (alive(pid)) continue;
    // A zombie has no cmdline left: match it as our child named epbrokerd.
    const std::string stat = read_text("/proc/" + name + "/stat");
    const auto open = stat.find('(');
    const auto close = stat.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close < open) continue;
    if (stat.substr(open + 1, close - open - 1) != "epbrokerd") continue;
    int status = 0;
    waitpid(pid, &status, WNOHANG);  // ECHILD unless it is ours
  }
}

bool PrivateBus::wait_daemons_gone(std::chrono::milliseconds timeout) const {
  return wait_until([&] { return daemon_pids().empty(); }, timeout);
}

void PrivateBus::stop_daemons() {
  std::vector<pid_t> pids = daemon_pids();
  if (control_) {
    if (auto owner = broker_pid();
        owner && std::find(pids.begin(), pids.end(), *owner) == pids.end()) {
      pids.push_back(*owner);
    }
  }
  auto all_gone = [&] {
    reap_daemon_zombies();
    return std::none_of(pids.begin(), pids.end(), alive);
  };
  for (pid_t pid : pids) kill(pid, SIGTERM);
  if (!wait_until(all_gone, kStopTimeout)) {
    for (pid_t pid : pids) {
      if (alive(pid)) kill(pid, SIGKILL);
    }
    wait_until(all_gone, kStopTimeout);
  }
}

void PrivateBus::stop_bus() {
  if (bus_pid_ <= 0) return;
  kill(bus_pid_, SIGTERM);
  if (!reap_within(bus_pid_, kStopTimeout)) {
    kill(bus_pid_, SIGKILL);
    int status = 0;
    while (waitpid(bus_pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  bus_pid_ = -1;
}

std::string PrivateBus::log() const { return read_text(root() / "bus.log"); }

std::string error_name_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const sdbus::Error& e) {
    return e.getName();
  }
  return "";
}

}  // namespace tests::daemon
