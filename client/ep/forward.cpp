#include "client/ep/forward.hpp"

#include <dlfcn.h>

#include <algorithm>

namespace epbroker::meta_ep {

namespace {

using CreateFn = OrtStatus*(ORT_API_CALL*)(const char*, const OrtApiBase*, const OrtLogger*,
                                           OrtEpFactory**, std::size_t, std::size_t*);

// A library's ReleaseEpFactory; an exception out of it (a C++ plugin breaking its
// C contract) is swallowed as ORT's own loader does: the factory counts as released.
template <typename Fn>
OrtStatus* call_release(Fn release, OrtEpFactory* factory) noexcept {
  try {
    return release(factory);
  } catch (...) {
    return nullptr;
  }
}

std::string dl_error() {
  const char* e = dlerror();
  return e != nullptr ? e : "unknown dlerror";
}

}  // namespace

std::expected<std::size_t, std::string> Forwarded::load(const Usable& u, const OrtApiBase* base,
                                                        const OrtApi* api, const OrtLogger* logger,
                                                        OrtEpFactory** out, std::size_t room) {
  api_ = api;
  void* handle = dlopen(u.library_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr)
    return std::unexpected("cannot load " + u.library_path + ": " + dl_error());
  // 1. Both entry points, or the library is not a plugin EP.
  auto create = reinterpret_cast<CreateFn>(dlsym(handle, "CreateEpFactories"));
  auto release = reinterpret_cast<ReleaseFn>(dlsym(handle, "ReleaseEpFactory"));
  if (create == nullptr || release == nullptr) {
    dlclose(handle);
    return std::unexpected(u.library_path + " exports no CreateEpFactories/ReleaseEpFactory");
  }
  // A provider-bridge library (ORT's own CUDA provider, say) needs the provider host
  // ORT sets up before loading it; only ORT can load it.
  if (dlsym(handle, "GetProvider") != nullptr) {
    dlclose(handle);
    return std::unexpected(u.library_path +
                           " is an ORT provider-bridge library (GetProvider): register it "
                           "directly with ONNX Runtime");
  }
  // 2. Its factories go straight into ORT's array: ORT calls them, not us. A C++
  // plugin that throws through its C entry point is caught here, as ORT does.
  std::size_t made = 0;
  OrtStatus* created = nullptr;
  try {
    created = create(u.name.c_str(), base, logger, out, room, &made);
  } catch (...) {
    dlclose(handle);
    return std::unexpected(u.library_path + ": CreateEpFactories threw an exception");
  }
  if (OrtStatus* st = created) {
    std::string why = u.library_path + " refused: " + api->GetErrorMessage(st);
    api->ReleaseStatus(st);
    dlclose(handle);
    return std::unexpected(std::move(why));
  }
  made = std::min(made, room);
  // 3. Kept open while any factory of it is out (and a library that made none
  // is closed at once: ORT will never call it).
  if (made == 0) {
    dlclose(handle);
    return 0;
  }
  libraries_.push_back(Library{u.name, handle, release, {out, out + made}});
  return made;
}

bool Forwarded::owns(const OrtEpFactory* factory) const {
  return std::any_of(libraries_.begin(), libraries_.end(), [&](const Library& l) {
    return std::find(l.factories.begin(), l.factories.end(), factory) != l.factories.end();
  });
}

OrtStatus* Forwarded::release(OrtEpFactory* factory) {
  for (auto lib = libraries_.begin(); lib != libraries_.end(); ++lib) {
    auto it = std::find(lib->factories.begin(), lib->factories.end(), factory);
    if (it == lib->factories.end()) continue;
    lib->factories.erase(it);
    OrtStatus* st = call_release(lib->release, factory);
    if (lib->factories.empty()) {
      dlclose(lib->handle);
      libraries_.erase(lib);
    }
    return st;
  }
  return nullptr;
}

bool Forwarded::empty() const { return libraries_.empty(); }

Forwarded::~Forwarded() {
  for (Library& lib : libraries_) {
    for (OrtEpFactory* f : lib.factories) {
      OrtStatus* st = call_release(lib.release, f);
      if (st != nullptr && api_ != nullptr) api_->ReleaseStatus(st);
    }
    dlclose(lib.handle);
  }
}

}  // namespace epbroker::meta_ep
