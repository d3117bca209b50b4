#include "client/epbroker-run/model_fetch.hpp"

#include <chrono>

#include <epbroker/ort.hpp>

#include "client/epbroker-run/progress.hpp"

namespace epbroker_run {

epbroker::Policy model_policy(const Options& options) {
  if (options.policy) return *options.policy;
  if (options.device == "cpu") return epbroker::Policy::prefer_cpu;
  if (options.device == "gpu") return epbroker::Policy::prefer_gpu;
  if (options.device == "npu") return epbroker::Policy::prefer_npu;
  return epbroker::Policy::default_policy;
}

std::expected<FetchedModel, Failure> fetch_model(const Options& options) {
  const auto start = std::chrono::steady_clock::now();
  FetchedModel out;
  try {
    epbroker::Client client(epbroker::ClientOptions{options.bus_address});
    epbroker::ModelOptions mo;
    mo.variant = options.variant;
    mo.policy = model_policy(options);
    mo.ort_version = epbroker::ort_version();
    mo.download = !options.no_install;
    ProgressPrinter printer;
    const InterruptScope interrupts;
    out.lease = client.ensure_model(
        options.model_name, mo, [&](const epbroker::Progress& p) { printer(p); },
        interrupt_token());
  } catch (const epbroker::Error& e) {
    if (e.code() == epbroker::Errc::cancelled && interrupt_token().cancelled()) {
      return std::unexpected(Failure{kInterrupted, "interrupted: the install was cancelled"});
    }
    std::string hint = broker_hint(e);
    if (e.code() == epbroker::Errc::verification_failed) {
      hint =
          "what was downloaded is not what the catalog signed: nothing was installed; "
          "tell the catalog's publisher (`epbrokerctl models` names the remote)";
    }
    if (e.code() == epbroker::Errc::not_found) {
      hint = "`epbrokerctl models` lists the models the catalogs offer and their variants";
      if (options.no_install) hint += "; without --no-install it would be installed";
    }
    return std::unexpected(Failure{kBroker, "--model " + options.model_name + ": " +
                                                std::string(epbroker::errc_name(e.code())) + ": " +
                                                e.message() + "\n  hint: " + hint});
  }
  out.ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace epbroker_run
