// epbrokerd: wires the core to the bus. Order matters: parse flags (a usage error:
// one line on stderr, exit 2) and config (any error: one message on stderr, exit 1),
// set up the log, open the store and discover hardware (Broker::create), register
// every object, then request the bus name, then tell systemd we are ready.
//
// Stopping (idle exit or SIGTERM/SIGINT), in this order:
//   1. enter "stopping" (atomically with respect to calls: see dbus/lifecycle.hpp):
//      from here calls that would start a job or open a session are refused with
//      Busy, every other call is still answered; STOPPING=1; DaemonState=stopping;
//   2. on a signal: cancel running jobs and wait for them (bounded);
//   3. release the name: new callers activate a fresh instance (after an idle
//      decision, a refused call may have released it already, so that the
//      refusal reaches its caller after the release: dbus/name_release.hpp);
//   4. drain: answer every call that was queued for us before the release;
//   5. leave the event loop, join the workers, exit 0.
// Installs are atomic in the store, so whatever is cut short leaves it as it was
// (a staging leftover is removed by the next start).
#include <pthread.h>
#include <signal.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <string>

#include "daemon/commit/helper_committer.hpp"
#include "daemon/config/command_line.hpp"
#include "daemon/config/config.hpp"
#include "daemon/core/authorizer.hpp"
#include "daemon/core/broker.hpp"
#include "daemon/core/refresh_backoff.hpp"
#include "daemon/dbus/convert.hpp"
#include "daemon/dbus/log_control.hpp"
#include "daemon/dbus/metered.hpp"
#include "daemon/dbus/polkit_authorizer.hpp"
#include "daemon/dbus/service.hpp"
#include "daemon/log/log.hpp"
#include "net/curl_fetcher.hpp"

namespace {

using namespace epbrokerd;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// How long a stop on a signal waits for cancelled jobs to end, and how long the
// drain may take.
constexpr auto kJobStopWait = 10s;
constexpr auto kDrainWait = 5s;

// Root and the install group's members, logging what it refuses (polkit's own
// authorizer logs its answers).
class LoggedUidAuthorizer final : public core::Authorizer {
 public:
  explicit LoggedUidAuthorizer(std::vector<uid_t> allowed) : inner_(std::move(allowed)) {}
  core::Result<void> check(const core::RequestContext& ctx, core::Action action) override {
    auto ok = inner_.check(ctx, action);
    if (!ok) log::info("refused {} to {} (uid {})", core::action_id(action), ctx.sender, ctx.uid);
    return ok;
  }

 private:
  core::UidAuthorizer inner_;
};

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : " ") + i;
  return out;
}

void log_config(const config::Config& cfg) {
  log::info("config: {} (state {}, cache {}), idle timeout {} s, refresh interval {} s",
            cfg.paths.config_dir.string(), cfg.paths.state_dir.string(),
            cfg.paths.cache_dir.string(), cfg.daemon.idle_timeout.count(),
            cfg.daemon.refresh_interval.count());
  const auto& f = cfg.daemon.fetch;
  log::info(
      "fetch: connect timeout {} s, low speed {} B/s for {} s, transfer timeout {} s, {} "
      "attempt(s), Retry-After up to {} s",
      f.connect_timeout.count(), f.low_speed_limit_bytes, f.low_speed_time.count(),
      f.transfer_timeout.count(), f.attempts, f.max_retry_after.count());
  if (cfg.remotes.empty()) log::warn("config: no remotes configured; nothing can be installed");
  for (const auto& r : cfg.remotes) {
    log::info("remote {}: {}{}, priority {}, {} mirror(s){}, redirects to {}", r.name,
              r.primary.metadata_url, r.enabled ? "" : " (disabled)", r.priority, r.mirrors.size(),
              r.allow_http ? ", http allowed" : "",
              r.redirect_hosts.empty() ? std::string("the same origin only")
                                       : "the same origin and " + join(r.redirect_hosts));
  }
  if (cfg.paths.sysfs_root != "/sys" || cfg.paths.procfs_root != "/proc") {
    log::info("hardware roots: sysfs {}, procfs {}", cfg.paths.sysfs_root.string(),
              cfg.paths.procfs_root.string());
  }
}

// Waits for a signal in `sigs` until `deadline`; 0 when none came.
int wait_signal(const sigset_t& sigs, Clock::time_point deadline) {
  auto wait = std::chrono::duration_cast<std::chrono::microseconds>(deadline - Clock::now());
  wait = std::clamp(wait, std::chrono::microseconds(1000),
                    std::chrono::microseconds(std::chrono::hours(24)));
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(wait);
  timespec ts{static_cast<time_t>(secs.count()), static_cast<long>((wait - secs).count() * 1000)};
  const int sig = sigtimedwait(&sigs, nullptr, &ts);
  return sig > 0 ? sig : 0;
}

// org.freedesktop.DBus.NameHasOwner(name); false on any error.
bool name_has_owner(sdbus::IConnection& conn, const std::string& name) {
  try {
    auto bus = sdbus::createProxy(conn, "org.freedesktop.DBus", "/org/freedesktop/DBus");
    bool has_owner = false;
    bus->callMethod("NameHasOwner")
        .onInterface("org.freedesktop.DBus")
        .withArguments(name)
        .storeResultsTo(has_owner);
    return has_owner;
  } catch (const sdbus::Error& e) {
    log::debug("cannot ask whether {} is on the bus: {}: {}", name, e.getName(), e.getMessage());
    return false;
  }
}

const char* signal_name(int sig) { return sig == SIGTERM ? "SIGTERM" : "SIGINT"; }

enum class StopReason { idle, signal };

// Sleeps until something happens: a signal, a wake-up from the service (a job
// started or finished, a session opened or ended), the watchdog's half-period,
// the end of a finished job's grace period, or the idle deadline. An idle daemon
// without a watchdog wakes only for its idle exit.
StopReason serve(dbus::Service& service, const sigset_t& sigs, std::chrono::seconds idle_timeout,
                 std::chrono::seconds refresh_interval) {
  std::uint64_t watchdog_usec = 0;
  const bool watchdog = sd_watchdog_enabled(0, &watchdog_usec) > 0;
  auto& lifecycle = service.lifecycle();
  // Passes woken by the service come at most this often (see 2. below).
  constexpr std::chrono::milliseconds kMinPass{20};
  // The automatic refreshes' attempts, from the previous instances too
  // (core/refresh_backoff.hpp): activations do not make a failing remote be
  // asked again at once.
  const auto& state_dir = service.broker().config().paths.state_dir;
  std::optional<catalog::Error> problem;
  core::RefreshAttempts attempts = core::load_refresh_attempts(state_dir, &problem);
  if (problem) {
    log::warn("{}: {}; set aside as {}.bad, refreshing as if no attempt failed",
              (state_dir / core::kRefreshFileName).string(), problem->message,
              core::kRefreshFileName);
  }
  const auto save_attempts = [&] {
    if (auto ok = core::save_refresh_attempts(state_dir, attempts); !ok) {
      log::warn("cannot save {}: {}", core::kRefreshFileName, ok.error().message);
    }
  };
  std::optional<std::chrono::system_clock::time_point> announced;  // the due time logged last
  while (true) {
    service.reap();
    const auto state_due = service.publish_state();
    const auto now = Clock::now();
    auto deadline = now + std::chrono::hours(24);
    if (state_due) deadline = std::min(deadline, *state_due);
    if (watchdog) deadline = std::min(deadline, now + std::chrono::microseconds(watchdog_usec / 2));
    // 1. Automatic refresh: due refresh_interval after the last successful one (at
    //    once when there never was one), and after failures not before their
    //    backoff (core/refresh_backoff.hpp); on the wall clock, since it spans
    //    restarts.
    const auto& remotes = service.broker().config().remotes;
    const bool any_remote =
        std::any_of(remotes.begin(), remotes.end(), [](const auto& r) { return r.enabled; });
    if (refresh_interval.count() > 0 && any_remote &&
        lifecycle.state() != dbus::DaemonState::stopping) {
      auto& broker = service.broker();
      const auto last = broker.last_refresh();
      const auto wall_now = std::chrono::system_clock::now();
      if (attempts.failures > 0 && !core::failures_count(attempts, last)) {
        log::info("catalog refresh succeeded after {} failed automatic one(s)", attempts.failures);
        attempts.failures = 0;  // a refresh succeeded since the last attempt
        save_attempts();
      }
      const auto wall_due = core::next_refresh_due(attempts, last, refresh_interval, wall_now);
      const auto due = now + std::chrono::duration_cast<Clock::duration>(wall_due - wall_now);
      if (due <= now) {
        // Counted as failed until it succeeds, and saved before it runs: one that
        // a crash or a stop cuts short counts too.
        attempts.last_attempt =
            std::chrono::duration_cast<std::chrono::seconds>(wall_now.time_since_epoch()).count();
        if (attempts.failures < std::numeric_limits<std::uint32_t>::max()) ++attempts.failures;
        save_attempts();
        log::info("catalog refresh due (interval {} s): job {}", refresh_interval.count(),
                  broker.auto_refresh());
        continue;  // the job changed the state: look again
      }
      if (core::failures_count(attempts, last) && announced != wall_due) {
        announced = wall_due;
        log::info("automatic catalog refresh: {} in a row not successful; the next one in {} s",
                  attempts.failures,
                  std::chrono::duration_cast<std::chrono::seconds>(wall_due - wall_now).count());
      }
      deadline = std::min(deadline, due);
    }
    if (auto reap = service.next_reap()) deadline = std::min(deadline, *reap);
    if (idle_timeout.count() > 0 && lifecycle.state() == dbus::DaemonState::idle) {
      const auto idle_at = lifecycle.last_activity() + idle_timeout;
      // Fails when a call came in meanwhile: then the next deadline is later.
      if (idle_at <= now && lifecycle.stop_if_idle(now - idle_timeout)) {
        log::info("idle for {} s: exiting", idle_timeout.count());
        return StopReason::idle;
      }
      deadline = std::min(deadline, std::max(idle_at, now + 1ms));
    }
    int sig = wait_signal(sigs, deadline);
    // 2. A wake-up soon after the last pass waits for kMinPass to end: a pass
    //    takes the bus connection's lock, and a pass per session opened would
    //    stall the bus thread under a stream of them. Released sessions are
    //    reaped at once (their objects should not outlive them); SIGTERM ends
    //    the wait.
    while (sig == SIGUSR1 && !service.reap_pending() && Clock::now() < now + kMinPass) {
      sig = wait_signal(sigs, now + kMinPass);
    }
    if (sig == SIGTERM || sig == SIGINT) {
      log::info("{} received: stopping", signal_name(sig));
      lifecycle.stop();
      return StopReason::signal;
    }
    if (watchdog) sd_notify(0, "WATCHDOG=1");
  }
}

// Cancels every running job and waits (at most kJobStopWait, or until a second
// signal) for them to end. False if some did not.
bool stop_jobs(core::Broker& broker, const sigset_t& sigs) {
  const auto running = broker.jobs().active_count();
  if (running == 0) return true;
  log::info("cancelling {} running job(s)", running);
  broker.jobs().cancel_all();
  const auto deadline = Clock::now() + kJobStopWait;
  // Each finished job wakes us (SIGUSR1 from the service).
  while (broker.jobs().active_count() > 0 && Clock::now() < deadline) {
    const int sig = wait_signal(sigs, deadline);
    if (sig == SIGTERM || sig == SIGINT) {
      log::warn("{} received again: not waiting for jobs any longer", signal_name(sig));
      break;
    }
  }
  const auto left = broker.jobs().active_count();
  if (left > 0) log::warn("{} job(s) still running after cancel", left);
  return left == 0;
}

}  // namespace

// Who commits into the store (BrokerOptions::committer): see Paths::store_root.
std::shared_ptr<store::Committer> make_committer(const config::Paths& paths) {
  if (paths.store_root != paths.state_dir) {
    log::info("store: {} (committed by the helper at {})", paths.store_root.string(),
              paths.commit_socket.string());
    return std::make_shared<commit::HelperCommitter>(
        commit::HelperCommitter::over_socket(paths.commit_socket));
  }
  // The helper beside our own executable (both in libexec/epbroker, or the build tree).
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const auto helper = (ec ? std::filesystem::path("/usr/libexec/epbroker") : self.parent_path()) /
                      "epbroker-commit";
  log::info("store: {} in the state directory, committed by {} as this uid",
            paths.store_root.string(), helper.string());
  return std::make_shared<commit::HelperCommitter>(commit::HelperCommitter::spawning(
      helper,
      {"--config-dir", paths.config_dir.string(), "--store-root", paths.store_root.string()}));
}

int main(int argc, char** argv) {
  // 1. Flags and configuration.
  auto options = config::parse_command_line(argc, argv);
  if (!options) {
    std::cerr << "epbrokerd: " << options.error().message << "\n";
    return 2;
  }
  if (options->help) {
    std::cout << config::usage();
    return 0;
  }
  if (options->version) {
    std::cout << "epbrokerd " << EPBROKER_VERSION << "\n";
    return 0;
  }
  auto cfg = config::load_config(*options);
  if (!cfg) {
    std::cerr << "epbrokerd: invalid configuration: " << cfg.error().message << "\n";
    return 1;
  }
  log::init(cfg->daemon.log_level);
  log::info("epbrokerd {} starting (pid {}), logging to {} at level {}", EPBROKER_VERSION, getpid(),
            log::to_journal() ? "the journal" : "stderr", config::to_string(cfg->daemon.log_level));
  log_config(*cfg);

  // 2. Signals are taken synchronously by the main loop (sigtimedwait), so
  //    block them before any thread starts.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGUSR1);  // "something changed": wakes the loop, see serve()
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  const pthread_t main_thread = pthread_self();

  // 3. Core: store, hardware, catalog cache.
  core::BrokerOptions bopts;
  bopts.config = *cfg;
  bopts.roots.sysfs = cfg->paths.sysfs_root;
  bopts.roots.procfs = cfg->paths.procfs_root;
  bopts.roots.system = cfg->paths.library_root;
  bopts.fetcher_factory = [fetch = cfg->daemon.fetch](const config::Remote& remote) {
    net::CurlFetcherOptions o;
    o.allow_http = remote.allow_http;
    o.ca_file = remote.ca_file.string();
    o.connect_timeout_ms = static_cast<long>(fetch.connect_timeout.count()) * 1000;
    o.low_speed_bytes_per_s = static_cast<long>(fetch.low_speed_limit_bytes);
    o.low_speed_time_s = static_cast<long>(fetch.low_speed_time.count());
    o.total_timeout_ms = static_cast<long>(fetch.transfer_timeout.count()) * 1000;
    o.redirect_hosts = remote.redirect_hosts;
    return std::make_unique<net::CurlFetcher>(o);
  };
  // NetworkManager's Metered, asked on a connection of its own each time: the
  // core asks from a worker thread, which must not wait on the event loop of
  // the daemon's connection (dbus/metered.hpp).
  bopts.metered = dbus::metered_probe(cfg->bus_address);
  // The store's writer (daemon/commit/helper_committer.hpp): the root helper behind
  // its socket when the store is not ours; else the helper started by us, as us.
  bopts.committer = make_committer(cfg->paths);

  // 4. Bus: objects first, then the name.
  std::unique_ptr<sdbus::IConnection> conn;
  try {
    conn = cfg->bus_address.empty()
               ? sdbus::createSystemBusConnection()
               : sdbus::createSessionBusConnectionWithAddress(cfg->bus_address);
  } catch (const sdbus::Error& e) {
    std::cerr << "epbrokerd: cannot connect to the bus: " << e.getMessage() << "\n";
    return 1;
  }
  log::info("bus: {} as {}", cfg->bus_address.empty() ? "system bus" : cfg->bus_address,
            conn->getUniqueName());
  // Authorization: polkit when it is on the daemon's bus (asked over the daemon's
  // own connection, without blocking it: dbus/polkit_authorizer.hpp); otherwise
  // root and the members of the configured install group, and the log says so.
  std::unique_ptr<core::Authorizer> authorizer;
  if (dbus::PolkitAuthorizer::available(*conn)) {
    authorizer = std::make_unique<dbus::PolkitAuthorizer>(*conn, cfg->daemon.authorization_timeout);
    log::info(
        "authorization: polkit (org.epbroker.install, org.epbroker.update, "
        "org.epbroker.downgrade, org.epbroker.hold, org.epbroker.manage), answers awaited "
        "{} s",
        cfg->daemon.authorization_timeout.count());
  } else {
    authorizer =
        std::make_unique<LoggedUidAuthorizer>(dbus::group_members(cfg->daemon.install_group));
    log::info("authorization: no polkit on this bus; only root{} may install or manage",
              cfg->daemon.install_group.empty()
                  ? std::string()
                  : " and members of group '" + cfg->daemon.install_group + "'");
  }
  bopts.authorizer = authorizer.get();
  dbus::Service service(*conn);
  service.set_wake([main_thread] { pthread_kill(main_thread, SIGUSR1); });
  auto broker = core::Broker::create(bopts, &service);
  if (!broker) {
    log::error("cannot start: {}", broker.error().message);
    std::cerr << "epbrokerd: " << broker.error().message << "\n";
    return 1;
  }
  // `systemctl service-log-level epbrokerd debug` (dbus/log_control.hpp).
  std::unique_ptr<dbus::LogControl> log_control;
  try {
    service.attach(**broker);
    log_control = std::make_unique<dbus::LogControl>(*conn);
    // Leases of the previous instance's sessions whose owners are still on the
    // bus (asked before the event loop runs, so synchronously on this thread):
    // the NameOwnerChanged watch is in place, so an owner leaving from now on
    // ends them.
    (*broker)->adopt_leases(
        [&conn](const std::string& owner) { return name_has_owner(*conn, owner); });
    conn->requestName(dbus::kBusName);
  } catch (const sdbus::Error& e) {
    log::error("cannot take {}: {}: {}", dbus::kBusName, e.getName(), e.getMessage());
    std::cerr << "epbrokerd: " << e.getName() << ": " << e.getMessage() << "\n";
    return 1;
  }
  conn->enterEventLoopAsync();
  sd_notify(0, "READY=1\nSTATUS=serving");
  log::info("serving {} ({} devices, {} providers)", dbus::kBusName, (*broker)->devices().size(),
            (*broker)->providers().size());

  // 5. Serve until idle for idle_timeout or told to stop.
  const StopReason reason =
      serve(service, sigs, cfg->daemon.idle_timeout, cfg->daemon.refresh_interval);

  // 6. Leave (see the header comment for the order).
  sd_notify(0, "STOPPING=1\nSTATUS=stopping");
  // DaemonState=stopping, while we still own the name (unless a refused call said
  // so and released it already).
  service.publish_state(true);
  const bool jobs_ended = reason == StopReason::idle || stop_jobs(**broker, sigs);
  if (!service.leave_bus(kDrainWait)) log::warn("{} not released", dbus::kBusName);
  const auto drain_start = Clock::now();
  if (service.drain(kDrainWait)) {
    log::debug(
        "queued calls answered in {} us",
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - drain_start).count());
  } else {
    log::warn("queued calls not answered within {} s", kDrainWait.count());
  }
  conn->leaveEventLoop();
  if (!jobs_ended) {
    // A worker that does not stop cannot be joined: leave without it. The store
    // is consistent (installs are atomic; the next start removes staging leftovers).
    log::warn("exiting with jobs still running");
    log::flush();
    _exit(0);
  }
  broker->reset();
  log::info("stopped");
  return 0;
}
