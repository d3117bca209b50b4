// A private D-Bus for integration tests of epbrokerd, with the daemon activated by
// the bus exactly as on a real system (but from the built binary, as root or as the
// test's user, under temporary directories).
//
// PrivateBus lays out one temporary root:
//
//   ROOT/bus/socket            the bus's listening socket (ROOT and bus/ are 0755, so
//                              an unprivileged caller, e.g. uid 65534, can connect)
//   ROOT/bus.conf              dbus-daemon configuration: <type>session</type>, EXTERNAL
//                              auth, ROOT/services as the only service dir, and a
//                              permissive default policy (any uid connects, owns, sends)
//   ROOT/services/org.epbroker.Broker1.service
//                              Exec= the built epbrokerd with --bus-address, the
//                              directories below, the fixture roots and --idle-timeout
//   ROOT/conf/epbroker.conf    [daemon] section; remotes.d/ for add_remote()
//   ROOT/state, ROOT/cache     the daemon's state (store/ under it) and cache
//   ROOT/bus.log               dbus-daemon's (and so epbrokerd's) stdout and stderr
//
// The bus is started in the constructor (dbus-daemon --nofork --print-address; ready
// when it has printed the address) and the daemon is NOT: the first call to
// org.epbroker.Broker1 activates it. The destructor stops every epbrokerd this bus
// started (found by the bus, and by its unique --state-dir argument), then the bus.
// The constructor makes the test process a child subreaper (PR_SET_CHILD_SUBREAPER):
// dbus-daemon double-forks what it activates, and the daemons it started are then
// reaped here rather than left to init.
//
// Nothing here sleeps a fixed time: every wait polls a condition with a deadline.
#pragma once

#include <sdbus-c++/sdbus-c++.h>
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/temp_dir.hpp"

namespace tests::daemon {

using namespace std::chrono_literals;

inline constexpr const char* kBrokerName = "org.epbroker.Broker1";
inline constexpr const char* kBrokerPath = "/org/epbroker/Broker1";
inline constexpr const char* kBrokerInterface = "org.epbroker.Broker1";
inline constexpr const char* kJobInterface = "org.epbroker.Job1";
inline constexpr const char* kSessionInterface = "org.epbroker.Session1";

// The built binaries (compile definitions set by CMake).
std::filesystem::path epbrokerd_path();
std::filesystem::path bus_client_path();  // tests/daemon/integration/bus_client.cpp
class PrivateBus;
// A copy of bus_client under `bus`'s root that other uids may execute (the build
// tree may be private to its owner).
std::filesystem::path client_for_others(const PrivateBus& bus);

// What a finished child process left.
struct CommandResult {
  int exit_code = -1;  // exit status; 128 + N when killed by signal N; -1 if never ran
  bool timed_out = false;
  std::string out;
  std::string err;
};

// Runs argv[0] (searched in PATH) with `argv`, stdin from /dev/null, capturing stdout
// and stderr. Past `timeout` the child is killed (SIGKILL) and timed_out set.
CommandResult run_command(const std::vector<std::string>& argv,
                          std::chrono::milliseconds timeout = 30s);

// Polls `condition` (every 10 ms at first, then up to every 100 ms) until it holds
// or `timeout` passes; returns its last value.
bool wait_until(const std::function<bool()>& condition, std::chrono::milliseconds timeout);

// A child process started with start_child(): killed (SIGKILL) and reaped when the
// object dies. Its stdout is a pipe read with read_line().
class Child {
 public:
  Child() = default;
  Child(pid_t pid, int stdout_fd) : pid_(pid), out_fd_(stdout_fd) {}
  ~Child();
  Child(Child&& other) noexcept;
  Child& operator=(Child&& other) noexcept;

  pid_t pid() const { return pid_; }
  // The next line of stdout (without '\n'), or nothing on EOF or timeout.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout);
  // Sends `sig` and reaps; returns the wait status.
  int kill_and_wait(int sig);

 private:
  void reset();
  pid_t pid_ = -1;
  int out_fd_ = -1;
  std::string buffer_;
};

// Starts `argv` with stdout to a pipe, stderr inherited, dying with the test.
Child start_child(const std::vector<std::string>& argv);

struct PrivateBusOptions {
  // Fixture roots for hardware discovery (the live system by default).
  std::filesystem::path sysfs_root = "/sys";
  std::filesystem::path procfs_root = "/proc";
  // --idle-timeout; 0 = never exit when idle.
  unsigned idle_timeout_sec = 0;
  // [daemon] refresh_interval_sec; 0 (the tests' default) = no automatic refresh.
  unsigned refresh_interval_sec = 0;
  // [daemon] log_level; empty = the daemon's default (info), as benchmarks want:
  // the tests' debug logs a line per session.
  std::string log_level = "debug";
  // [daemon] install_group (without polkit on the bus: root and its members may
  // install and manage); empty = root only.
  std::string install_group;
  // Extra elements for bus.conf's <busconfig>, e.g. a <limit>. None by default: the
  // bus runs with dbus-daemon's built-in limits, which are the system bus's (32 MiB
  // per message, 256 connections per uid, 128 pending replies per connection).
  std::string extra_bus_config;
  // The epbrokerd the bus activates; empty = the built one (epbrokerd_path()), e.g.
  // an ASan build's for the bus fuzzer.
  std::filesystem::path epbrokerd;
  // The uid (and gid) the bus starts epbrokerd as (setpriv, groups cleared), as
  // systemd starts it as user epbroker; it owns the state and cache directories.
  // Unset: the test's own (root for most tests). Needs root.
  std::optional<uid_t> daemon_uid;
};

class PrivateBus {
 public:
  // Writes the layout above and starts dbus-daemon (throws std::runtime_error if it
  // does not print its address within 10 s).
  explicit PrivateBus(PrivateBusOptions options = {});
  ~PrivateBus();
  PrivateBus(const PrivateBus&) = delete;
  PrivateBus& operator=(const PrivateBus&) = delete;

  const std::filesystem::path& root() const { return tmp_.path(); }
  std::filesystem::path config_dir() const { return root() / "conf"; }
  std::filesystem::path state_dir() const { return root() / "state"; }
  std::filesystem::path cache_dir() const { return root() / "cache"; }
  std::filesystem::path store_dir() const { return state_dir() / "store"; }
  // "unix:path=ROOT/bus/socket"
  const std::string& address() const { return address_; }

  // Writes conf/remotes.d/NAME.conf (allow_http on: the catalog is on loopback).
  // Takes effect when the daemon next starts.
  void add_remote(const std::string& name, const std::string& metadata_url,
                  const std::string& targets_url, const std::filesystem::path& trusted_root);

  // A new client connection to this bus, its event loop running on its own thread
  // (so signals are dispatched while the test thread waits or calls).
  std::unique_ptr<sdbus::IConnection> connect() const;

  // `busctl --address=ADDRESS args...`; as uid/gid `as_uid` (through setpriv, groups
  // cleared) when given.
  CommandResult busctl(const std::vector<std::string>& args,
                       std::optional<uid_t> as_uid = std::nullopt) const;

  // Whether org.epbroker.Broker1 has an owner now (org.freedesktop.DBus.NameHasOwner).
  bool broker_running() const;
  // The pid of org.epbroker.Broker1's owner, if it has one.
  std::optional<pid_t> broker_pid() const;
  // Pids of every live epbrokerd started for this bus (by its --state-dir argument).
  std::vector<pid_t> daemon_pids() const;
  // Waits until no epbrokerd of this bus is alive.
  bool wait_daemons_gone(std::chrono::milliseconds timeout) const;

  // dbus-daemon's and epbrokerd's output so far (for failure messages).
  std::string log() const;

 private:
  void stop_daemons();
  // Reaps the epbrokerd zombies that are this process's children (see the constructor).
  void reap_daemon_zombies() const;
  void stop_bus();

  support::TempDir tmp_;
  PrivateBusOptions options_;
  std::string address_;
  pid_t bus_pid_ = -1;
  std::unique_ptr<sdbus::IConnection> control_;  // for NameHasOwner & co.
};

// Calls `body`; returns the D-Bus error name it threw (sdbus::Error), or "" when it
// returned normally.
std::string error_name_of(const std::function<void()>& body);

}  // namespace tests::daemon
