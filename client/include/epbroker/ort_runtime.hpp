// The shared runtime: ONNX Runtime itself from the broker's store (part of
// <epbroker/ort.hpp>; include that).
//
// A catalog may carry ONNX Runtime as a package of kind "runtime" (the
// `onnxruntime` package holds lib/libonnxruntime.so.1). An application built
// only against ORT's headers, without linking or bundling libonnxruntime, gets a
// session that grants it and opens it:
//
//   #define ORT_API_MANUAL_INIT            // in every translation unit, before
//   #include <epbroker/ort.hpp>            // any ORT header (e.g. a compile flag)
//
//   epbroker::Session s = client.request_session({.providers = {"onnxruntime", ...}});
//   static epbroker::Runtime rt = epbroker::load_runtime(s);
//   rt.init_cxx_api();                     // Ort::InitApi(rt.api())
//   Ort::Env env;                          // ... the C++ API as usual
//   epbroker::register_providers(env, s);  // plugin EPs register into this runtime
//
// Constraints:
// - The app must not link libonnxruntime (no -lonnxruntime, no OrtGetApiBase
//   reference): with ORT_API_MANUAL_INIT the C++ wrappers only use the API that
//   init_cxx_api() installs. All translation units must agree on the macro.
// - The runtime must be at least as new as the headers: load_runtime() refuses a
//   runtime whose GetApi(ORT_API_VERSION) is null (Errc::incompatible).
// - It is loaded RTLD_LOCAL (its symbols do not leak into the global namespace,
//   so another ORT in the process, e.g. a Python module's, does not clash) and
//   RTLD_NODELETE: once loaded it stays for the life of the process (unloading
//   ORT with live threads or objects is unsafe). Plugin EP libraries get the API
//   through the factory call, so they work with it unless they themselves link
//   libonnxruntime.so.1 (they would then load a second copy by SONAME).
// - Keep the Session while ORT uses the runtime's files? Not required once
//   loaded (the mapping stays valid), but a Session is the lease that keeps the
//   package installed for the next start.
#pragma once

#include <dlfcn.h>

#include <onnxruntime_cxx_api.h>

#include <cstdint>
#include <string>

#include "epbroker/client.hpp"
#include "epbroker/ort_detail.hpp"

namespace epbroker {

// An ONNX Runtime opened from the store. Copyable (copies share the handle).
class Runtime {
 public:
  Runtime() = default;

  explicit operator bool() const noexcept { return base_ != nullptr; }
  const OrtApiBase* api_base() const noexcept { return base_; }
  // base->GetApi(version): null when the runtime is older than `version`.
  const OrtApi* api(std::uint32_t version = ORT_API_VERSION) const noexcept {
    return base_ != nullptr ? base_->GetApi(version) : nullptr;
  }
  // The runtime's own version string, e.g. "1.30.0".
  std::string version() const { return base_ != nullptr ? base_->GetVersionString() : ""; }
  const std::string& library_path() const noexcept { return library_path_; }
  void* handle() const noexcept { return handle_; }

#ifdef ORT_API_MANUAL_INIT
  // Makes the ORT C++ API of this program use this runtime (Ort::InitApi), and
  // epbroker::ort_version() report its version. Call once, before any Ort:: object.
  void init_cxx_api() const {
    const OrtApi* a = api();
    if (a == nullptr) throw Error(Errc::incompatible, "no ONNX Runtime loaded");
    Ort::InitApi(a);
    detail::active_api_base() = base_;
  }
#endif

  // Opens `library` (a libonnxruntime.so) RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE.
  // Throws Error(incompatible) if it cannot be loaded, has no OrtGetApiBase, or
  // is older than the headers this is compiled with.
  static Runtime open(const std::string& library) {
    void* h = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (h == nullptr) {
      const char* why = ::dlerror();
      throw Error(Errc::incompatible, "cannot load ONNX Runtime " + library + ": " +
                                          (why != nullptr ? why : "dlopen failed"));
    }
    using GetApiBase = const OrtApiBase* (*)();
    void* sym = ::dlsym(h, "OrtGetApiBase");
    const OrtApiBase* base = sym != nullptr ? reinterpret_cast<GetApiBase>(sym)() : nullptr;
    if (base == nullptr) {
      throw Error(Errc::incompatible, library + " is not an ONNX Runtime (no OrtGetApiBase)");
    }
    if (base->GetApi(ORT_API_VERSION) == nullptr) {
      throw Error(Errc::incompatible,
                  "ONNX Runtime " + std::string(base->GetVersionString()) + " from " + library +
                      " is older than this application's ORT headers (API version " +
                      std::to_string(ORT_API_VERSION) + "): update the onnxruntime package");
    }
    Runtime out;
    out.handle_ = h;
    out.base_ = base;
    out.library_path_ = library;
    return out;
  }

 private:
  void* handle_ = nullptr;  // never dlclosed (RTLD_NODELETE; see above)
  const OrtApiBase* base_ = nullptr;
  std::string library_path_;
};

// Opens the ONNX Runtime that `session` grants (its ready provider of kind
// "runtime"; the newest if several). Throws Error(not_found) when the session
// grants none (with what to do), Error(incompatible) as Runtime::open().
inline Runtime load_runtime(const Session& session) {
  const Provider* best = nullptr;
  const Provider* unready = nullptr;
  for (const Provider& p : session.providers()) {
    if (p.kind != "runtime") continue;
    if (p.state != ProviderState::ready || p.library_path.empty()) {
      unready = &p;
      continue;
    }
    const auto v = detail::parse_version(p.version);
    if (best == nullptr || (v && detail::parse_version(best->version) < v)) best = &p;
  }
  if (best == nullptr) {
    if (unready != nullptr) {
      throw Error(Errc::not_found,
                  "the ONNX Runtime package '" + unready->name + "' is " + unready->state_name +
                      (unready->reason.empty() ? "" : " (" + unready->reason + ")") +
                      ": install it (Client::ensure_ready(\"" + unready->name +
                      "\") or `epbrokerctl install " + unready->name +
                      "`), then request a new session");
    }
    throw Error(Errc::not_found,
                "the session grants no ONNX Runtime package (kind runtime): install one "
                "(`epbrokerctl install onnxruntime`) and request a session that includes it");
  }
  return Runtime::open(best->library_path);
}

}  // namespace epbroker
