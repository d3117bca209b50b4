// epbrokerd: wires the core to the bus. Order matters: parse flags and config
// (any error: one message, exit 1), open the store and discover hardware
// (Broker::create), register every object, then request the bus name, then
// tell systemd we are ready. Exits after `idle_timeout` with no jobs or
// sessions: releases the name first so new callers activate a fresh instance,
// lets queued calls drain, then leaves.
#include <pthread.h>
#include <signal.h>
#include <systemd/sd-daemon.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>

#include "daemon/config/config.hpp"
#include "daemon/core/authorizer.hpp"
#include "daemon/core/broker.hpp"
#include "daemon/dbus/convert.hpp"
#include "daemon/dbus/polkit_authorizer.hpp"
#include "daemon/dbus/service.hpp"
#include "net/curl_fetcher.hpp"

namespace {

using Clock = std::chrono::steady_clock;

void log(const std::string& msg) {
  // Under systemd stderr goes to the journal; the <N> prefix sets the priority.
  std::fprintf(stderr, "%s%s\n",
               std::getenv("JOURNAL_STREAM") ? "<6>" : "epbrokerd: ", msg.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  using namespace epbrokerd;
  // 1. Flags and configuration.
  auto options = config::parse_command_line(argc, argv);
  if (!options) {
    std::cerr << "epbrokerd: " << options.error().message << "\nTry 'epbrokerd --help'.\n";
    return 1;
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

  // 2. Signals are taken synchronously by the main loop (sigtimedwait), so
  //    block them before any thread starts.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGUSR1);  // "something changed": wakes the loop, see step 5
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  const pthread_t main_thread = pthread_self();

  // 3. Core: store, hardware, catalog cache.
  core::BrokerOptions bopts;
  bopts.config = *cfg;
  bopts.roots.sysfs = cfg->paths.sysfs_root;
  bopts.roots.procfs = cfg->paths.procfs_root;
  bopts.fetcher_factory = [](const config::Remote& remote) {
    net::CurlFetcherOptions o;
    o.allow_http = remote.allow_http;
    return std::make_unique<net::CurlFetcher>(o);
  };

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
  // Authorization: polkit on the system bus when it is there; otherwise root
  // and the members of the configured install group, and the log says so.
  std::unique_ptr<core::Authorizer> authorizer;
  if (cfg->bus_address.empty() && dbus::PolkitAuthorizer::available(*conn)) {
    authorizer = std::make_unique<dbus::PolkitAuthorizer>(sdbus::createSystemBusConnection());
    log("authorization: polkit (org.epbroker.install, org.epbroker.manage)");
  } else {
    authorizer =
        std::make_unique<core::UidAuthorizer>(dbus::group_members(cfg->daemon.install_group));
    log("authorization: no polkit on this bus; only root" +
        (cfg->daemon.install_group.empty()
             ? std::string()
             : " and members of group '" + cfg->daemon.install_group + "'") +
        " may install or manage");
  }
  bopts.authorizer = authorizer.get();
  dbus::Service service(*conn);
  service.set_wake([main_thread] { pthread_kill(main_thread, SIGUSR1); });
  auto broker = core::Broker::create(bopts, &service);
  if (!broker) {
    std::cerr << "epbrokerd: " << broker.error().message << "\n";
    return 1;
  }
  try {
    service.attach(**broker);
    conn->requestName(dbus::kBusName);
  } catch (const sdbus::Error& e) {
    std::cerr << "epbrokerd: " << e.getName() << ": " << e.getMessage() << "\n";
    return 1;
  }
  conn->enterEventLoopAsync();
  sd_notify(0, "READY=1\nSTATUS=serving");
  log("serving " + std::string(dbus::kBusName) + " (" +
      std::to_string((*broker)->devices().size()) + " devices)");

  // 5. Sleep until something happens: a signal, a wake-up from the service (a
  //    session retired, a job finished), the watchdog's half-period, or the
  //    end of the idle timeout. An idle daemon without a watchdog never wakes.
  const auto idle_timeout = cfg->daemon.idle_timeout;
  std::uint64_t watchdog_usec = 0;
  const bool watchdog = sd_watchdog_enabled(0, &watchdog_usec) > 0;
  auto idle_since = Clock::now();
  bool was_idle = true;
  while (true) {
    auto wait = std::chrono::microseconds(std::chrono::hours(24));
    if (watchdog) wait = std::min(wait, std::chrono::microseconds(watchdog_usec / 2));
    if (was_idle && idle_timeout.count() > 0) {
      const auto left = idle_timeout - (Clock::now() - idle_since);
      wait = std::min(wait, std::chrono::duration_cast<std::chrono::microseconds>(left));
    } else if (!was_idle && idle_timeout.count() > 0) {
      // Busy: look again now and then (a session may end without a wake-up).
      wait = std::min(wait, std::chrono::microseconds(std::chrono::seconds(1)));
    }
    wait = std::max(wait, std::chrono::microseconds(1000));
    const auto secs = std::chrono::duration_cast<std::chrono::seconds>(wait);
    timespec ts{static_cast<time_t>(secs.count()), static_cast<long>((wait - secs).count() * 1000)};
    const int sig = sigtimedwait(&sigs, nullptr, &ts);
    if (sig == SIGTERM || sig == SIGINT) {
      log("stopping on signal");
      break;
    }
    service.reap();
    if (watchdog) sd_notify(0, "WATCHDOG=1");
    const bool idle = (*broker)->idle();
    if (!idle) {
      was_idle = false;
      continue;
    }
    if (!was_idle) {
      was_idle = true;
      idle_since = Clock::now();
    }
    if (idle_timeout.count() > 0 && Clock::now() - idle_since >= idle_timeout) {
      log("idle, exiting");
      break;
    }
  }

  // 6. Leave: give up the name (new callers activate a new instance), let what
  //    is queued run, cancel jobs (the store keeps every install atomic).
  sd_notify(0, "STOPPING=1");
  service.set_stopping();
  try {
    conn->releaseName(dbus::kBusName);
  } catch (const sdbus::Error&) {
  }
  timespec drain{0, 200'000'000};
  sigtimedwait(&sigs, nullptr, &drain);
  conn->leaveEventLoop();
  broker->reset();
  return 0;
}
