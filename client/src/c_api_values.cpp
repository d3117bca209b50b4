// The C API's enumerations (policy, provider and job states) and the accessors of
// devices, providers and their versions.
#include <cstdlib>
#include <cstring>
#include <new>

#include "client/src/c_api.hpp"

epbroker_provider::epbroker_provider(epbroker::Provider p) : value(std::move(p)) {
  versions.reserve(value.versions.size());
  for (const auto& v : value.versions) versions.push_back({v});
}

namespace epbroker::capi {
namespace {

epbroker_provider_state provider_state_of(ProviderState state) noexcept {
  switch (state) {
    case ProviderState::ready:
      return EPBROKER_PROVIDER_READY;
    case ProviderState::available:
      return EPBROKER_PROVIDER_AVAILABLE;
    case ProviderState::installing:
      return EPBROKER_PROVIDER_INSTALLING;
    case ProviderState::incompatible:
      return EPBROKER_PROVIDER_INCOMPATIBLE;
    case ProviderState::revoked:
      return EPBROKER_PROVIDER_REVOKED;
    case ProviderState::refused:
      return EPBROKER_PROVIDER_REFUSED;
    case ProviderState::unknown:
      return EPBROKER_PROVIDER_UNKNOWN;
  }
  return EPBROKER_PROVIDER_UNKNOWN;
}

}  // namespace

epbroker_job_state job_state_of(JobState state) noexcept {
  switch (state) {
    case JobState::queued:
      return EPBROKER_JOB_QUEUED;
    case JobState::downloading:
      return EPBROKER_JOB_DOWNLOADING;
    case JobState::verifying:
      return EPBROKER_JOB_VERIFYING;
    case JobState::installing:
      return EPBROKER_JOB_INSTALLING;
    case JobState::done:
      return EPBROKER_JOB_DONE;
    case JobState::failed:
      return EPBROKER_JOB_FAILED;
    case JobState::cancelled:
      return EPBROKER_JOB_CANCELLED;
    case JobState::unknown:
      return EPBROKER_JOB_UNKNOWN;
  }
  return EPBROKER_JOB_UNKNOWN;
}

const char* job_state_name(JobState state) noexcept {
  // to_string's words are common/wire's string literals (the daemon's own), so data()
  // ends in a NUL.
  return epbroker::to_string(state).data();
}

Policy policy_of(epbroker_policy policy) {
  switch (policy) {
    case EPBROKER_POLICY_DEFAULT:
      return Policy::default_policy;
    case EPBROKER_POLICY_PREFER_CPU:
      return Policy::prefer_cpu;
    case EPBROKER_POLICY_PREFER_GPU:
      return Policy::prefer_gpu;
    case EPBROKER_POLICY_PREFER_NPU:
      return Policy::prefer_npu;
    case EPBROKER_POLICY_MAX_PERFORMANCE:
      return Policy::max_performance;
    case EPBROKER_POLICY_MAX_EFFICIENCY:
      return Policy::max_efficiency;
    case EPBROKER_POLICY_MIN_OVERALL_POWER:
      return Policy::min_overall_power;
  }
  throw Error(Errc::invalid_argument,
              "policy " + std::to_string(static_cast<int>(policy)) + " is not an epbroker_policy");
}

epbroker_policy c_policy_of(Policy policy) noexcept {
  switch (policy) {
    case Policy::default_policy:
      return EPBROKER_POLICY_DEFAULT;
    case Policy::prefer_cpu:
      return EPBROKER_POLICY_PREFER_CPU;
    case Policy::prefer_gpu:
      return EPBROKER_POLICY_PREFER_GPU;
    case Policy::prefer_npu:
      return EPBROKER_POLICY_PREFER_NPU;
    case Policy::max_performance:
      return EPBROKER_POLICY_MAX_PERFORMANCE;
    case Policy::max_efficiency:
      return EPBROKER_POLICY_MAX_EFFICIENCY;
    case Policy::min_overall_power:
      return EPBROKER_POLICY_MIN_OVERALL_POWER;
  }
  return EPBROKER_POLICY_DEFAULT;
}

char* copy_string(const std::string& text) {
  // malloc, not new[]: epbroker_string_free() is free(), which any language can call.
  auto* out = static_cast<char*>(std::malloc(text.size() + 1));
  if (out == nullptr) throw std::bad_alloc();
  std::memcpy(out, text.c_str(), text.size() + 1);
  return out;
}

}  // namespace epbroker::capi

using epbroker::Device;
using epbroker::Provider;
using epbroker::VersionInfo;
using namespace epbroker::capi;

extern "C" {

// ---- enumerations ----------------------------------------------------------------

const char* epbroker_policy_name(epbroker_policy policy) {
  // to_string's words are common/wire's string literals, so data() ends in a NUL; a
  // value outside the enum (policy_of refuses it) has no name.
  try {
    return epbroker::to_string(policy_of(policy)).data();
  } catch (...) {
    return "";
  }
}

epbroker_status epbroker_policy_parse(const char* name, epbroker_policy* out) {
  return guard(__func__, [&] {
    require(name, "name");
    require(out, "out");
    const auto policy = epbroker::parse_policy(name);
    if (!policy) {
      throw epbroker::Error(epbroker::Errc::invalid_argument,
                            std::string("unknown policy '") + name + "'");
    }
    *out = c_policy_of(*policy);
  });
}

// ---- devices ---------------------------------------------------------------------

size_t epbroker_device_list_size(const epbroker_device_list* list) { return list_size(list); }
const epbroker_device* epbroker_device_list_get(const epbroker_device_list* list, size_t i) {
  return list_get(list, i);
}
void epbroker_device_list_free(epbroker_device_list* list) { delete list; }

const char* epbroker_device_id(const epbroker_device* d) { return text(d, &Device::id); }
const char* epbroker_device_type(const epbroker_device* d) { return text(d, &Device::type); }
uint16_t epbroker_device_vendor_id(const epbroker_device* d) {
  return number(d, &Device::vendor_id);
}
uint16_t epbroker_device_device_id(const epbroker_device* d) {
  return number(d, &Device::device_id);
}
const char* epbroker_device_vendor(const epbroker_device* d) { return text(d, &Device::vendor); }
const char* epbroker_device_name(const epbroker_device* d) { return text(d, &Device::name); }
const char* epbroker_device_driver(const epbroker_device* d) { return text(d, &Device::driver); }
const char* epbroker_device_driver_version(const epbroker_device* d) {
  return text(d, &Device::driver_version);
}
const char* epbroker_device_bus_path(const epbroker_device* d) {
  return text(d, &Device::bus_path);
}
int epbroker_device_discrete(const epbroker_device* d) { return d && d->value.discrete ? 1 : 0; }
const char* epbroker_device_node(const epbroker_device* d) { return text(d, &Device::node); }
size_t epbroker_device_isa_count(const epbroker_device* d) { return count(d, &Device::isa); }
const char* epbroker_device_isa(const epbroker_device* d, size_t i) {
  return item(d, &Device::isa, i);
}
uint32_t epbroker_device_cores(const epbroker_device* d) { return number(d, &Device::cores); }
uint32_t epbroker_device_threads(const epbroker_device* d) { return number(d, &Device::threads); }
const char* epbroker_device_arch(const epbroker_device* d) { return text(d, &Device::arch); }

// ---- providers -------------------------------------------------------------------

size_t epbroker_provider_list_size(const epbroker_provider_list* list) { return list_size(list); }
const epbroker_provider* epbroker_provider_list_get(const epbroker_provider_list* list, size_t i) {
  return list_get(list, i);
}
void epbroker_provider_list_free(epbroker_provider_list* list) { delete list; }
void epbroker_provider_free(epbroker_provider* provider) { delete provider; }

const char* epbroker_provider_name(const epbroker_provider* p) { return text(p, &Provider::name); }
const char* epbroker_provider_kind(const epbroker_provider* p) { return text(p, &Provider::kind); }
size_t epbroker_provider_ep_name_count(const epbroker_provider* p) {
  return count(p, &Provider::ep_names);
}
const char* epbroker_provider_ep_name(const epbroker_provider* p, size_t i) {
  return item(p, &Provider::ep_names, i);
}
const char* epbroker_provider_version(const epbroker_provider* p) {
  return text(p, &Provider::version);
}
const char* epbroker_provider_vendor(const epbroker_provider* p) {
  return text(p, &Provider::vendor);
}
epbroker_provider_state epbroker_provider_state_of(const epbroker_provider* p) {
  return p ? provider_state_of(p->value.state) : EPBROKER_PROVIDER_UNKNOWN;
}
const char* epbroker_provider_state_name(const epbroker_provider* p) {
  return text(p, &Provider::state_name);
}
size_t epbroker_provider_device_count(const epbroker_provider* p) {
  return count(p, &Provider::devices);
}
const char* epbroker_provider_device(const epbroker_provider* p, size_t i) {
  return item(p, &Provider::devices, i);
}
uint64_t epbroker_provider_size(const epbroker_provider* p) { return number(p, &Provider::size); }
const char* epbroker_provider_library_path(const epbroker_provider* p) {
  return text(p, &Provider::library_path);
}
const char* epbroker_provider_reason(const epbroker_provider* p) {
  return text(p, &Provider::reason);
}
const char* epbroker_provider_remote(const epbroker_provider* p) {
  return text(p, &Provider::remote);
}
const char* epbroker_provider_job(const epbroker_provider* p) { return text(p, &Provider::job); }
const char* epbroker_provider_ort_min(const epbroker_provider* p) {
  return text(p, &Provider::ort_min);
}
size_t epbroker_provider_version_count(const epbroker_provider* p) {
  return p ? p->versions.size() : 0;
}
const epbroker_version_info* epbroker_provider_version_info(const epbroker_provider* p, size_t i) {
  return p && i < p->versions.size() ? &p->versions[i] : nullptr;
}
const char* epbroker_provider_update_available(const epbroker_provider* p) {
  return text(p, &Provider::update_available);
}
int epbroker_provider_held(const epbroker_provider* p) { return p && p->value.held ? 1 : 0; }
const char* epbroker_provider_hold_reason(const epbroker_provider* p) {
  return text(p, &Provider::hold_reason);
}

const char* epbroker_version_info_version(const epbroker_version_info* v) {
  return text(v, &VersionInfo::version);
}
const char* epbroker_version_info_role(const epbroker_version_info* v) {
  return text(v, &VersionInfo::role);
}
const char* epbroker_version_info_reason(const epbroker_version_info* v) {
  return text(v, &VersionInfo::reason);
}
uint32_t epbroker_version_info_leases(const epbroker_version_info* v) {
  return number(v, &VersionInfo::leases);
}

}  // extern "C"
