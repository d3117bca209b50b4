// libepbroker_ep.so's only exported symbols: the plugin-EP entry points ORT looks
// up after dlopen() (exports.map). What they do is docs/meta-ep.md:
//
//   CreateEpFactories: 1. the OrtApi of ORT 1.22 (else: nothing, logged);
//   2. the options from the environment (options.hpp); 3. the broker's grant for
//   this ORT's version, bounded (grant.hpp); 4. each usable library loaded and its
//   factories handed to ORT (forward.hpp); 5. the session kept while any of them
//   is out. Whatever fails is logged through ORT's logger and ORT gets fewer
//   factories (zero at worst): the app keeps its own EPs and never sees an error.
//
//   ReleaseEpFactory: the factory goes back to the library that made it; with the
//   last factory of a registration its libraries close and its lease ends.
#include <stdlib.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "client/ep/forward.hpp"
#include "client/ep/grant.hpp"
#include "client/ep/options.hpp"
#include "client/ep/ort_log.hpp"

#define EPBROKER_EP_EXPORT __attribute__((visibility("default")))

namespace epbroker::meta_ep {
namespace {

// One registration: its lease and the libraries whose factories ORT holds.
struct Instance {
  Session session;
  Forwarded libraries;  // destroyed first: factories back, libraries closed
};

// Every live registration. Never destroyed: at exit the process's bus connection
// closing ends the leases, and no static destructor races ORT's own teardown.
struct Registry {
  std::mutex mu;
  std::vector<std::unique_ptr<Instance>> instances;
  const OrtApi* api = nullptr;
};

Registry& registry() {
  static auto* r = new Registry;
  return *r;
}

// Why a skipped provider is worth a warning: the ones an app or admin can act
// on. Packages for other hardware, or the runtime package, are routine.
bool worth_a_warning(SkipCode code) {
  switch (code) {
    case SkipCode::ort_too_old:
    case SkipCode::install_failed:
    case SkipCode::registration_failed:
    case SkipCode::not_ready:
    case SkipCode::unknown_kind:
      return true;
    case SkipCode::incompatible:
    case SkipCode::runtime_package:
      return false;
  }
  return true;
}

std::size_t create(const OrtApiBase* base, const OrtApi* api, const OrtLogger* logger,
                   OrtEpFactory** factories, std::size_t max_factories) {
  const Log log(api, logger);
  const std::string ort = base->GetVersionString();
  // 2. Options.
  const auto options = read_options([](const char* name) { return secure_getenv(name); });
  if (!options) {
    log.error("no brokered execution providers: " + options.error());
    return 0;
  }
  // 3. The grant.
  auto grant = request_grant(*options, ort);
  if (!grant) {
    log.warning("no brokered execution providers (" + grant.error() +
                "); ONNX Runtime's own execution providers remain");
    return 0;
  }
  for (const SkippedProvider& s : grant->skipped) {
    const std::string line = "skipped " + s.name + " (" + to_string(s.code) + "): " + s.reason;
    worth_a_warning(s.code) ? log.warning(line) : log.info(line);
  }
  // A name the daemon did not consider at all: no catalog offers it.
  for (const std::string& name : options->providers) {
    const auto named = [&](const auto& v) { return v.name == name; };
    if (std::none_of(grant->usable.begin(), grant->usable.end(), named) &&
        std::none_of(grant->skipped.begin(), grant->skipped.end(), named)) {
      log.warning(std::string(kProvidersVar) + " names " + name +
                  ", which no catalog offers (`epbrokerctl providers` lists what there is)");
    }
  }
  // 4. Each library, while ORT has room.
  auto instance = std::make_unique<Instance>();
  std::size_t used = 0;
  for (const Usable& u : grant->usable) {
    if (used == max_factories) {
      log.warning("skipped " + u.name + ": ONNX Runtime takes at most " +
                  std::to_string(max_factories) + " factories from one library; choose with " +
                  kProvidersVar);
      continue;
    }
    auto made =
        instance->libraries.load(u, base, api, logger, factories + used, max_factories - used);
    if (!made) {
      log.warning("skipped " + u.name + " (registration_failed): " + made.error());
      continue;
    }
    log.info("forwarding " + u.name + " " + u.version + " from " + u.library_path + ": " +
             std::to_string(*made) + " factories");
    used += *made;
  }
  if (used == 0) {
    if (grant->usable.empty()) {
      log.warning("the broker granted no execution provider this ONNX Runtime " + ort +
                  " can load (see the reasons above; `epbrokerctl providers` lists them)");
    }
    return 0;  // `instance` and the grant's session end here
  }
  // 5. The lease stays with the factories.
  instance->session = std::move(grant->session);
  Registry& reg = registry();
  std::lock_guard lock(reg.mu);
  reg.api = api;
  reg.instances.push_back(std::move(instance));
  return used;
}

}  // namespace
}  // namespace epbroker::meta_ep

extern "C" {

EPBROKER_EP_EXPORT OrtStatus* CreateEpFactories(const char* registration_name,
                                                const OrtApiBase* ort_api_base,
                                                const OrtLogger* default_logger,
                                                OrtEpFactory** factories, std::size_t max_factories,
                                                std::size_t* num_factories) noexcept;
EPBROKER_EP_EXPORT OrtStatus* ReleaseEpFactory(OrtEpFactory* factory) noexcept;

OrtStatus* CreateEpFactories(const char* /*registration_name*/, const OrtApiBase* ort_api_base,
                             const OrtLogger* default_logger, OrtEpFactory** factories,
                             std::size_t max_factories, std::size_t* num_factories) noexcept {
  using namespace epbroker::meta_ep;
  *num_factories = 0;
  // 1. The API of ORT 1.22; an older runtime only hears why nothing comes.
  const OrtApi* api = ort_api_base->GetApi(kOrtApiVersion);
  if (api == nullptr) {
    const Log log(ort_api_base->GetApi(kOrtLogApiVersion), default_logger);
    log.warning(std::string("ONNX Runtime ") + ort_api_base->GetVersionString() +
                " has no plugin-EP API (1.22 or newer): no brokered execution providers");
    return nullptr;
  }
  try {
    *num_factories = create(ort_api_base, api, default_logger, factories, max_factories);
  } catch (const std::exception& e) {
    Log(api, default_logger).error(std::string("no brokered execution providers: ") + e.what());
  } catch (...) {
    Log(api, default_logger).error("no brokered execution providers: unknown exception");
  }
  return nullptr;
}

OrtStatus* ReleaseEpFactory(OrtEpFactory* factory) noexcept {
  using namespace epbroker::meta_ep;
  Registry& reg = registry();
  std::unique_ptr<Instance> done;  // ended outside the lock: releasing is a bus call
  OrtStatus* status = nullptr;
  {
    std::lock_guard lock(reg.mu);
    auto it = reg.instances.begin();
    while (it != reg.instances.end() && !(*it)->libraries.owns(factory)) ++it;
    if (it == reg.instances.end()) {
      return reg.api != nullptr
                 ? reg.api->CreateStatus(ORT_INVALID_ARGUMENT,
                                         "epbroker_ep: not a factory this library handed out")
                 : nullptr;
    }
    status = (*it)->libraries.release(factory);
    if ((*it)->libraries.empty()) {
      done = std::move(*it);
      reg.instances.erase(it);
    }
  }
  try {
    done.reset();
  } catch (...) {  // Session's destructor ignores errors; nothing else throws
  }
  return status;
}

}  // extern "C"
