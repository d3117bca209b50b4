#include "client/epbroker-run/acquire.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>

namespace epbroker_run {

namespace {

std::string mib(std::uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

// Progress on stderr: on a terminal one line rewritten in place, otherwise a line
// per state change and per 10% of the download.
class ProgressPrinter {
 public:
  ProgressPrinter() : tty_(isatty(STDERR_FILENO) == 1) {}

  void operator()(const epbroker::Progress& p) {
    const int tenth = p.bytes_total > 0 ? static_cast<int>(10 * p.bytes_done / p.bytes_total) : -1;
    const bool changed = p.target != target_ || p.state != state_;
    if (!tty_ && !changed && tenth == tenth_) return;
    target_ = p.target;
    state_ = p.state;
    tenth_ = tenth;
    std::string line = "installing " + p.target + ": " + std::string(epbroker::to_string(p.state));
    if (p.bytes_total > 0) {
      line += " " + mib(p.bytes_done) + " / " + mib(p.bytes_total) + " (" +
              std::to_string(100 * p.bytes_done / p.bytes_total) + "%)";
    }
    const bool final = epbroker::is_final(p.state);
    if (tty_) {
      std::cerr << "\r\033[K" << line << (final ? "\n" : "") << std::flush;
    } else {
      std::cerr << line << "\n";
    }
  }

 private:
  bool tty_;
  std::string target_;
  epbroker::JobState state_ = epbroker::JobState::unknown;
  int tenth_ = -1;
};

// Ctrl-C while installing cancels the install job (the token's cancel() is one
// atomic store: async-signal-safe).
epbroker::CancelToken& interrupt_token() {
  static epbroker::CancelToken token;
  return token;
}

extern "C" void on_interrupt(int /*sig*/) { interrupt_token().cancel(); }

// SIGINT/SIGTERM cancel the token while this lives; the previous handlers after.
class InterruptScope {
 public:
  InterruptScope() {
    struct sigaction sa {};
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
  }
  ~InterruptScope() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

}  // namespace

std::string broker_hint(const epbroker::Error& e) {
  using epbroker::Errc;
  switch (e.code()) {
    case Errc::unavailable:
    case Errc::timeout:
      return "is epbrokerd installed (D-Bus activation) and the bus reachable? For a private bus "
             "pass --bus-address or set EPBROKER_BUS_ADDRESS; --no-broker runs on ONNX Runtime's "
             "own EPs only";
    case Errc::not_authorized:
      return "installing needs the org.epbroker.install permission (polkit) or root: ask an admin "
             "to run `epbrokerctl install NAME`, or use --no-install";
    case Errc::busy:
      return "the daemon refused for now (too many sessions?): close other sessions and retry";
    case Errc::protocol:
      return "epbroker-run and epbrokerd are different versions: update both";
    case Errc::disk_full:
      return "the daemon's disk is full: free space under /var/lib/epbroker and "
             "/var/cache/epbroker, then retry";
    case Errc::internal:
      return "epbrokerd failed on its own side: see `journalctl -u epbrokerd`";
    case Errc::not_found:
    case Errc::invalid_argument:
    case Errc::incompatible:
    case Errc::verification_failed:
    case Errc::network:
    case Errc::cancelled:
      break;
  }
  return "see `epbrokerctl status` and `epbrokerctl providers`";
}

std::expected<Brokered, Failure> acquire(Ort::Env& env, const Options& options) {
  const auto start = std::chrono::steady_clock::now();
  Brokered out;
  out.ep_name = options.ep;
  try {
    epbroker::Client client(epbroker::ClientOptions{options.bus_address});
    epbroker::EnsureOptions eo;
    eo.policy = options.policy.value_or(epbroker::Policy::default_policy);
    eo.install = !options.no_install;
    if (!options.ep.empty()) {
      // --ep names a package (that one), or an EP (every package providing it: the
      // ones this ORT cannot use are skipped with the reason).
      for (const auto& p : client.providers()) {
        if (p.name == options.ep) {
          eo.providers = {p.name};
          if (!p.ep_names.empty()) out.ep_name = p.ep_names.front();
          break;
        }
        if (std::find(p.ep_names.begin(), p.ep_names.end(), options.ep) != p.ep_names.end()) {
          eo.providers.push_back(p.name);
        }
      }
    }
    ProgressPrinter printer;
    eo.cancel = interrupt_token();  // constructed before the handler can use it
    const InterruptScope interrupts;
    out.ensured = epbroker::ensure_and_register(
        client, env, [&](const epbroker::Progress& p) { printer(p); }, eo);
    try {
      out.devices = client.devices();
    } catch (const epbroker::Error&) {
      // Only for device names in the report.
    }
  } catch (const epbroker::Error& e) {
    if (e.code() == epbroker::Errc::cancelled && interrupt_token().cancelled()) {
      return std::unexpected(Failure{kInterrupted, "interrupted: the install was cancelled"});
    }
    return std::unexpected(
        Failure{kBroker, "the broker: " + std::string(epbroker::errc_name(e.code())) + ": " +
                             e.message() + "\n  hint: " + broker_hint(e)});
  }
  out.ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace epbroker_run
