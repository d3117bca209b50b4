#include "client/epbroker-run/acquire.hpp"

#include <algorithm>
#include <chrono>

#include "client/epbroker-run/progress.hpp"

namespace epbroker_run {

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
    const InterruptScope interrupts;
    eo.cancel = interrupt_token();
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
