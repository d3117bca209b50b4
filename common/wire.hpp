// The one source of the strings on the bus that the daemon writes and libepbroker
// reads (or the other way round) beyond the introspection XML: the keys of every
// a{sv}, job and provider states, package kinds and policy names. The daemon's
// core keeps these as enums; both sides convert to text only here.
#pragma once

#include <optional>
#include <string_view>

namespace common {

// Keys of the a{sv} dictionaries: devices (ListDevices), providers (ListProviders,
// RequestSession), verify results (Verify) and session options (RequestSession).
namespace key {
// devices
inline constexpr const char* id = "id";
inline constexpr const char* type = "type";
inline constexpr const char* vendor_id = "vendor_id";
inline constexpr const char* device_id = "device_id";
inline constexpr const char* vendor = "vendor";
inline constexpr const char* name = "name";
inline constexpr const char* driver = "driver";
inline constexpr const char* driver_version = "driver_version";
inline constexpr const char* bus_path = "bus_path";
inline constexpr const char* discrete = "discrete";
inline constexpr const char* node = "node";
inline constexpr const char* isa = "isa";
inline constexpr const char* cores = "cores";
inline constexpr const char* threads = "threads";
inline constexpr const char* arch = "arch";
// providers (also name, vendor)
inline constexpr const char* kind = "kind";
inline constexpr const char* ort_min = "ort_min";
inline constexpr const char* ep_names = "ep_names";
inline constexpr const char* version = "version";
inline constexpr const char* state = "state";
inline constexpr const char* devices = "devices";
inline constexpr const char* size = "size";
inline constexpr const char* remote = "remote";
inline constexpr const char* library_path = "library_path";
inline constexpr const char* reason = "reason";
inline constexpr const char* job = "job";
// verify results (also name, version)
inline constexpr const char* ok = "ok";
inline constexpr const char* problem = "problem";
// session options
inline constexpr const char* policy = "policy";
inline constexpr const char* ort_version = "ort_version";
inline constexpr const char* providers = "providers";
inline constexpr const char* download = "download";
}  // namespace key

// Job1.State and Finished's state.
enum class JobState { queued, downloading, verifying, installing, done, failed, cancelled };
inline constexpr JobState kAllJobStates[] = {
    JobState::queued, JobState::downloading, JobState::verifying, JobState::installing,
    JobState::done,   JobState::failed,      JobState::cancelled};
std::string_view job_state_name(JobState s);
std::optional<JobState> parse_job_state(std::string_view text);

// A provider's "state".
enum class ProviderState { ready, available, installing, incompatible };
inline constexpr ProviderState kAllProviderStates[] = {
    ProviderState::ready, ProviderState::available, ProviderState::installing,
    ProviderState::incompatible};
std::string_view provider_state_name(ProviderState s);
std::optional<ProviderState> parse_provider_state(std::string_view text);

// A provider's "kind" (as its EP metadata says).
enum class PackageKind { execution_provider, runtime };
std::string_view package_kind_name(PackageKind k);

// The session option "policy": ORT's device selection policies.
enum class Policy {
  default_policy,
  prefer_cpu,
  prefer_gpu,
  prefer_npu,
  max_performance,
  max_efficiency,
  min_overall_power,
};
inline constexpr Policy kAllPolicies[] = {
    Policy::default_policy,  Policy::prefer_cpu,     Policy::prefer_gpu,       Policy::prefer_npu,
    Policy::max_performance, Policy::max_efficiency, Policy::min_overall_power};
std::string_view policy_name(Policy p);
std::optional<Policy> parse_policy(std::string_view text);

}  // namespace common
