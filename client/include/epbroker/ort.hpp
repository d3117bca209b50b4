// <epbroker/ort.hpp>: brokered execution providers in the application's own ONNX
// Runtime. Header-only, compiled against the application's ORT headers (with the
// plugin-EP API: Env::RegisterExecutionProviderLibrary, GetEpDevices,
// SetEpSelectionPolicy; tested with the 1.29 headers and the 1.30 runtime), so it
// works with whichever ORT the app ships; it links only libepbroker (for
// Client/Session/Error). C++17.
//
//   epbroker::Client client;
//   Ort::Env env;
//   auto ready = epbroker::ensure_and_register(client, env, on_progress);
//   for (const auto& s : ready.registration.skipped) log(s.name, s.reason);
//   Ort::SessionOptions so;
//   epbroker::configure(so, env, epbroker::Policy::max_performance);
//   Ort::Session session(env, "model.onnx", so);   // keep `ready.session` alive
//
// Registration is per ORT environment (OrtEnv, which ORT shares between every
// Ort::Env of a process) and idempotent: registering a provider that this env
// already has (by registration name, or the same library under another name) is a
// no-op reported as `already`. A provider whose ort_min is newer than the app's ORT
// is never registered; it comes back in `skipped` with the reason (ort_too_old, also
// when the daemon, told the app's ORT version, found no installed version it can
// load). ensure_and_register() tells the daemon the app's ORT version, so each
// package is granted its newest installed version this ORT can load.
//
// Keep the epbroker::Session alive while ORT sessions use its providers: it is
// the lease that keeps their files in the store.
//
// Errors: ORT failures throw Ort::Exception; broker failures throw epbroker::Error;
// a provider that cannot be used is reported in `skipped`, not thrown.
//
// Threads: functions here may be called from several threads; the registration
// bookkeeping is under one mutex. Client and Session keep their own rules
// (see <epbroker/client.hpp>).
//
// Only onnxruntime_cxx_api.h is included (onnxruntime_ep_c_api.h, which it
// includes, has no include guard).
#pragma once

#include <onnxruntime_cxx_api.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "epbroker/client.hpp"
#include "epbroker/ort_detail.hpp"
#include "epbroker/ort_runtime.hpp"

namespace epbroker {

// ---- registration -------------------------------------------------------------------

struct RegisteredProvider {
  std::string name;                   // package name = ORT registration name
  std::vector<std::string> ep_names;  // EPs the library provides
  std::string library_path;           // the library ORT loaded
  std::string version;
  // Already registered in this env before the call (by an earlier call, or by
  // the application itself): nothing was done.
  bool already = false;
};

enum class SkipCode {
  ort_too_old,          // the package's ort_min is newer than the app's ORT
  incompatible,         // the daemon says it cannot run on this machine (or this app)
  not_ready,            // not installed (available, installing) or no library
  install_failed,       // ensure_and_register could not install it
  registration_failed,  // ORT refused the library (RegisterExecutionProviderLibrary)
  runtime_package,      // an ONNX Runtime package (kind runtime): see load_runtime()
  unknown_kind,         // a kind this header does not know (newer daemon)
};

// "ort_too_old", "incompatible", ...
inline const char* to_string(SkipCode code) noexcept {
  switch (code) {
    case SkipCode::ort_too_old:
      return "ort_too_old";
    case SkipCode::incompatible:
      return "incompatible";
    case SkipCode::not_ready:
      return "not_ready";
    case SkipCode::install_failed:
      return "install_failed";
    case SkipCode::registration_failed:
      return "registration_failed";
    case SkipCode::runtime_package:
      return "runtime_package";
    case SkipCode::unknown_kind:
      return "unknown_kind";
  }
  return "unknown";
}

struct SkippedProvider {
  std::string name;
  SkipCode code = SkipCode::not_ready;
  std::string reason;  // for people: what happened and, where it helps, what to do
};

struct Registration {
  std::vector<RegisteredProvider> registered;
  std::vector<SkippedProvider> skipped;
};

namespace detail {

// How the daemon's reason starts when it marks a package incompatible because no
// installed version suits the app's ORT (SessionOptions::ort_version).
inline constexpr const char* kNeedsOrt = "needs ONNX Runtime";

// Why an ORT of version `app` (parsed: `app_v`) must not register `p`, or nullopt
// when it may: a plugin EP, ready, with a library, whose ort_min `app` meets. The
// one rule for register_providers() and the broker's own plugin library
// (libepbroker_ep.so, docs/meta-ep.md).
inline std::optional<SkippedProvider> unusable(const Provider& p, const std::string& app,
                                               const std::array<unsigned long, 3>& app_v) {
  const auto skip = [&](SkipCode code, std::string reason) {
    return std::optional<SkippedProvider>(SkippedProvider{p.name, code, std::move(reason)});
  };
  if (p.kind == "runtime") {
    return skip(SkipCode::runtime_package, "ONNX Runtime " + p.version +
                                               " itself (kind runtime), not a plugin EP: open it "
                                               "with epbroker::load_runtime()");
  }
  if (p.kind != "execution_provider") {
    return skip(SkipCode::unknown_kind, "package kind '" + p.kind + "' is not known to this app");
  }
  const auto too_old = [&] {
    return skip(SkipCode::ort_too_old,
                "needs ONNX Runtime >= " + p.ort_min + ", this app has " + app +
                    ": update the app's ONNX Runtime, or use another provider");
  };
  if (p.state == ProviderState::incompatible) {
    // Told the app's version (SessionOptions::ort_version), the daemon marks a
    // package with no installed version this ORT can load incompatible, saying
    // so: that is the app's ORT, not this machine.
    if (p.reason.find(kNeedsOrt) != std::string::npos) {
      const auto need = parse_version(p.ort_min);
      if (need && app_v < *need) return too_old();
      return skip(SkipCode::ort_too_old,
                  p.reason + ": update the app's ONNX Runtime, or use another provider");
    }
    return skip(SkipCode::incompatible, p.reason.empty() ? "incompatible" : p.reason);
  }
  if (!p.ort_min.empty()) {
    const auto need = parse_version(p.ort_min);
    if (!need) return skip(SkipCode::ort_too_old, "cannot read its ort_min '" + p.ort_min + "'");
    if (app_v < *need) return too_old();
  }
  if (p.state != ProviderState::ready || p.library_path.empty()) {
    std::string why = p.reason;
    if (why.empty()) {
      why = p.state == ProviderState::installing
                ? "still installing (job " + p.job + "); wait with Client::ensure_ready()"
                : "not installed (" + p.state_name + "): install it with Client::ensure_ready(\"" +
                      p.name + "\") or `epbrokerctl install " + p.name + "`";
    }
    return skip(SkipCode::not_ready, std::move(why));
  }
  return std::nullopt;
}

// Registers one ready execution provider in `env` unless it is there already (see
// the top of the file); nullopt with `error` set when ORT refuses it.
inline std::optional<RegisteredProvider> register_one(Ort::Env& env, const Provider& p,
                                                      std::string& error) {
  const auto* key = static_cast<const OrtEnv*>(env);
  const std::string library = canonical_path(p.library_path);
  RegisteredProvider out{p.name, p.ep_names, library, p.version, true};
  Registry& reg = registry();
  std::lock_guard lock(reg.mu);
  for (auto it = reg.records.begin(); it != reg.records.end(); ++it) {
    if (it->env != key || (it->name != p.name && it->library_path != library)) continue;
    // A record whose library offered devices that have all vanished is stale: the
    // env it was made for is gone and ORT reused the address.
    if (it->devices == 0 || devices_of_library(env, it->library_path) > 0) {
      out.library_path = it->library_path;
      out.version = it->version;
      return out;
    }
    reg.records.erase(it);
    break;
  }
  // The application (or anyone) registered this very library itself.
  if (devices_of_library(env, library) > 0) return out;
  try {
    env.RegisterExecutionProviderLibrary(p.name.c_str(), p.library_path);
  } catch (const Ort::Exception& e) {
    error = e.what();
    // The name is taken in this env by someone else's registration: ORT refuses a
    // second one, so nothing was double-registered.
    if (error.find("already registered") != std::string::npos) return out;
    return std::nullopt;
  }
  reg.records.push_back(
      Record{key, p.name, library, p.ep_names, p.version, devices_of_library(env, library)});
  out.already = false;
  return out;
}

}  // namespace detail

// The ORT version this process runs ("1.30.0"): OrtGetApiBase()->GetVersionString(),
// or, when built with ORT_API_MANUAL_INIT, the runtime load_runtime() opened and
// Runtime::init_cxx_api() installed ("" if none).
inline std::string ort_version() {
  if (const OrtApiBase* base = detail::active_api_base()) return base->GetVersionString();
#ifndef ORT_API_MANUAL_INIT
  return OrtGetApiBase()->GetVersionString();
#else
  return {};
#endif
}

// Registers every ready execution provider of `session` in `env`
// (Env::RegisterExecutionProviderLibrary with the package name as registration
// name), after checking `app_ort_version` ("" = ort_version()) against each one's
// ort_min. Idempotent per env (see the top of this file). Never throws for a
// provider: each ends in `registered` or in `skipped`. Throws epbroker::Error
// (invalid_argument) only when the app's version is unknown or unreadable.
inline Registration register_providers(Ort::Env& env, const Session& session,
                                       const std::string& app_ort_version = {}) {
  const std::string app = app_ort_version.empty() ? ort_version() : app_ort_version;
  const auto app_v = detail::parse_version(app);
  if (!app_v) {
    throw Error(Errc::invalid_argument,
                "cannot read this application's ONNX Runtime version '" + app +
                    "': pass it to register_providers() (ORT_API_MANUAL_INIT builds must call "
                    "Runtime::init_cxx_api() or name the version)");
  }
  Registration out;
  for (const Provider& p : session.providers()) {
    if (auto skip = detail::unusable(p, app, *app_v)) {
      out.skipped.push_back(std::move(*skip));
      continue;
    }
    std::string error;
    if (auto r = detail::register_one(env, p, error)) {
      out.registered.push_back(std::move(*r));
    } else {
      out.skipped.push_back(
          SkippedProvider{p.name, SkipCode::registration_failed,
                          "ONNX Runtime could not load " + p.library_path + ": " + error});
    }
  }
  return out;
}

// Forgets what register_providers() recorded for `env` (the libraries stay
// registered in ORT). For an app that destroys its last Ort::Env and creates a new
// one: ORT may reuse the address. (register_providers also notices a stale record
// by the EP's devices having vanished.)
inline void forget_env(const Ort::Env& env) { detail::forget(static_cast<const OrtEnv*>(env)); }

// ---- device selection ---------------------------------------------------------------

// ORT picks the EP devices for each session by policy
// (SessionOptionsSetEpSelectionPolicy; the names map 1:1 onto
// OrtExecutionProviderDevicePolicy). `env` is unused: there for symmetry with the
// explicit overload.
inline void configure(Ort::SessionOptions& options, const Ort::Env& env, Policy policy) {
  (void)env;
  options.SetEpSelectionPolicy(detail::to_ort_policy(policy));
}

// One EP device as ORT offers it (Env::GetEpDevices).
struct EpDeviceInfo {
  std::string ep_name;
  std::string ep_vendor;
  std::string type;  // "cpu" | "gpu" | "npu"
  std::string vendor;
  std::uint32_t vendor_id = 0;
  std::uint32_t device_id = 0;
  std::string library_path;  // the plugin library ("" for EPs built into ORT)
};

inline EpDeviceInfo describe(const Ort::ConstEpDevice& d) {
  EpDeviceInfo out;
  out.ep_name = d.EpName();
  out.ep_vendor = d.EpVendor();
  const Ort::ConstHardwareDevice hw = d.Device();
  out.type = detail::device_type_name(hw.Type());
  out.vendor = hw.Vendor() != nullptr ? hw.Vendor() : "";
  out.vendor_id = hw.VendorId();
  out.device_id = hw.DeviceId();
  out.library_path = detail::library_path_of(d);
  return out;
}

// Every EP device the env offers, in ORT's order.
inline std::vector<EpDeviceInfo> ep_devices(const Ort::Env& env) {
  std::vector<EpDeviceInfo> out;
  for (const Ort::ConstEpDevice& d : env.GetEpDevices()) out.push_back(describe(d));
  return out;
}

// An explicit choice: an EP, a device type, or both (at least one).
struct DeviceChoice {
  std::string ep_name;                        // "" = any EP with a device of `type`
  std::optional<OrtHardwareDeviceType> type;  // none = every device of `ep_name`
  std::vector<std::pair<std::string, std::string>> ep_options;  // passed to the EP
  // "" = any; else only devices of the plugin library at this path (compared
  // canonically), e.g. one the app registered itself rather than through the broker.
  std::string library_path;
};

// What configure() appended.
struct Selection {
  std::string ep_name;
  std::vector<EpDeviceInfo> devices;
};

// Appends the chosen EP's devices (Env::GetEpDevices filtered, then
// SessionOptionsAppendExecutionProvider_V2). When several EPs qualify, providers
// this header registered in `env` come first, then the others in ORT's order; an
// EP offered both by the broker's library and built into ORT (e.g. the npm build's
// WebGPU EP) resolves to the broker's library. Throws epbroker::Error(not_found)
// naming what the env offers when nothing matches; Ort::Exception if ORT refuses.
inline Selection configure(Ort::SessionOptions& options, const Ort::Env& env,
                           const DeviceChoice& choice) {
  if (choice.ep_name.empty() && !choice.type) {
    throw Error(Errc::invalid_argument, "DeviceChoice names neither an EP nor a device type");
  }
  const std::vector<Ort::ConstEpDevice> all = env.GetEpDevices();
  const std::string library =
      choice.library_path.empty() ? std::string() : detail::canonical_path(choice.library_path);
  std::vector<Ort::ConstEpDevice> matching;
  for (const auto& d : all) {
    if (!choice.ep_name.empty() && choice.ep_name != d.EpName()) continue;
    if (choice.type && *choice.type != d.Device().Type()) continue;
    if (!library.empty() && library != detail::library_path_of(d)) continue;
    matching.push_back(d);
  }
  if (matching.empty()) {
    std::string offered;
    for (const auto& d : all) {
      offered += (offered.empty() ? "" : ", ") + std::string(d.EpName()) + "/" +
                 detail::device_type_name(d.Device().Type());
    }
    throw Error(Errc::not_found,
                "ONNX Runtime offers no device for " +
                    (choice.ep_name.empty() ? std::string("that device type") : choice.ep_name) +
                    (choice.type ? std::string(" on ") + detail::device_type_name(*choice.type)
                                 : std::string()) +
                    (library.empty() ? std::string() : " from " + library) +
                    "; it offers: " + (offered.empty() ? "(nothing)" : offered) +
                    ". Is the provider installed and registered (register_providers)?");
  }
  // One EP per call to AppendExecutionProvider_V2: the best-ranked one.
  const auto rank = [&](const Ort::ConstEpDevice& d) {
    return detail::is_registered_library(static_cast<const OrtEnv*>(env),
                                         detail::library_path_of(d))
               ? 0
               : 1;
  };
  const auto best =
      std::min_element(matching.begin(), matching.end(),
                       [&](const auto& a, const auto& b) { return rank(a) < rank(b); });
  const std::string ep = best->EpName();
  const std::string lib = detail::library_path_of(*best);
  std::vector<const OrtEpDevice*> chosen;
  Selection out{ep, {}};
  for (const auto& d : matching) {
    if (ep == d.EpName() && lib == detail::library_path_of(d)) {
      chosen.push_back(d);
      out.devices.push_back(describe(d));
    }
  }
  std::vector<const char*> keys;
  std::vector<const char*> values;
  for (const auto& [k, v] : choice.ep_options) {
    keys.push_back(k.c_str());
    values.push_back(v.c_str());
  }
  Ort::ThrowOnError(Ort::GetApi().SessionOptionsAppendExecutionProvider_V2(
      options, static_cast<OrtEnv*>(env), chosen.data(), chosen.size(), keys.data(), values.data(),
      keys.size()));
  return out;
}

// ---- the common case ----------------------------------------------------------------

struct EnsureOptions {
  Policy policy = Policy::default_policy;  // orders what the session grants
  std::vector<std::string> providers;      // package names; empty = every compatible one
  bool install = true;                     // install what is missing (else: ready ones only)
  std::string ort_version;                 // "" = ort_version()
  CancelToken cancel;
};

struct EnsureResult {
  Session session;            // the lease: keep it while ORT sessions use the providers
  Registration registration;  // what was registered, and what was not and why
};

namespace detail {

// The broker half of ensure_and_register(), which needs no ORT: installs what is
// missing (options.install) for an app whose ORT is `app`, then requests the
// session. `early` holds the providers that could not be installed, with that
// reason (better than the session's "not installed"). Shared with the broker's
// plugin library (libepbroker_ep.so).
struct EnsuredSession {
  Session session;
  std::vector<SkippedProvider> early;
};

inline EnsuredSession ensure_session(Client& client, const std::string& app,
                                     const ProgressCallback& on_progress,
                                     const EnsureOptions& options) {
  const auto app_v = parse_version(app);
  EnsuredSession out;
  const auto wanted = [&](const std::string& name) {
    return options.providers.empty() ||
           std::find(options.providers.begin(), options.providers.end(), name) !=
               options.providers.end();
  };
  for (const Provider& p : client.providers()) {
    if (!wanted(p.name) || p.kind != "execution_provider") continue;
    // The session says why; a refused name is never installed.
    if (p.state == ProviderState::incompatible || p.state == ProviderState::refused) continue;
    const auto need = parse_version(p.ort_min);
    if (app_v && need && *app_v < *need) continue;  // unusable() says why; no download
    if (p.state == ProviderState::ready || !options.install) continue;
    try {
      client.ensure_ready(p.name, on_progress, options.cancel);
    } catch (const Error& e) {
      if (e.code() == Errc::cancelled && options.cancel.cancelled()) throw;
      out.early.push_back(SkippedProvider{
          p.name, SkipCode::install_failed,
          "installing failed (" + std::string(errc_name(e.code())) + "): " + e.message()});
    }
  }
  SessionOptions so;
  so.policy = options.policy;
  so.providers = options.providers;
  // The daemon grants each package's newest installed version this ORT can load
  // (an older one kept for it after an update that needs a newer ORT). An
  // unreadable version is left to the caller, which says what to do.
  if (app_v) so.ort_version = app;
  out.session = client.request_session(so);
  return out;
}

// `skipped` with each entry `early` also names replaced by the early one.
inline void prefer_early(std::vector<SkippedProvider>& skipped,
                         const std::vector<SkippedProvider>& early) {
  for (auto& s : skipped) {
    for (const auto& e : early) {
      if (e.name == s.name) s = e;
    }
  }
}

}  // namespace detail

// The equivalent of Windows ML's EnsureAndRegisterCertified: makes every execution
// provider compatible with this machine (and this app's ORT) ready, installing what
// is missing with progress, requests a session, and registers its providers in
// `env`. A provider that cannot be installed or registered is reported, not thrown.
// Throws epbroker::Error when the broker cannot be used at all (unavailable,
// not_authorized for the session, ...) or Cancelled when options.cancel fired.
inline EnsureResult ensure_and_register(Client& client, Ort::Env& env,
                                        const ProgressCallback& on_progress = {},
                                        const EnsureOptions& options = {}) {
  const std::string app = options.ort_version.empty() ? ort_version() : options.ort_version;
  detail::EnsuredSession ensured = detail::ensure_session(client, app, on_progress, options);
  EnsureResult out;
  out.session = std::move(ensured.session);
  out.registration = register_providers(env, out.session, app);
  detail::prefer_early(out.registration.skipped, ensured.early);
  return out;
}

}  // namespace epbroker
