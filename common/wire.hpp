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
// providers: the lifecycle (one row per package; see dbus/org.epbroker.Broker1.xml)
inline constexpr const char* versions = "versions";  // aa{sv}: version, role, reason, leases
inline constexpr const char* role = "role";
inline constexpr const char* leases = "leases";
inline constexpr const char* update_available = "update_available";
inline constexpr const char* held = "held";
inline constexpr const char* hold_reason = "hold_reason";
// history entries (also name, reason)
inline constexpr const char* time = "time";
inline constexpr const char* uid = "uid";
inline constexpr const char* action = "action";
inline constexpr const char* from = "from";
inline constexpr const char* to = "to";
inline constexpr const char* result = "result";
// update and install options and results (also version, job, from, to, reason)
inline constexpr const char* dry_run = "dry_run";
inline constexpr const char* allow_older = "allow_older";
// verify results (also name, version)
inline constexpr const char* ok = "ok";
inline constexpr const char* problem = "problem";
// session options
inline constexpr const char* policy = "policy";
inline constexpr const char* ort_version = "ort_version";
inline constexpr const char* providers = "providers";
inline constexpr const char* download = "download";
// models (ListModels; also name, version, state, reason, remote, id, devices,
// ort_min, size) and EnsureModel's options (also version, policy, ort_version)
inline constexpr const char* publisher = "publisher";
inline constexpr const char* license = "license";
inline constexpr const char* license_url = "license_url";
inline constexpr const char* description = "description";
inline constexpr const char* task = "task";
inline constexpr const char* variants = "variants";  // aa{sv}: id, devices, eps, ort_min, ...
inline constexpr const char* eps = "eps";
inline constexpr const char* opset = "opset";
inline constexpr const char* installed = "installed";
inline constexpr const char* variant = "variant";
// ListModels: the variant this machine would get (also policy, ort_version in)
inline constexpr const char* planned = "planned";
inline constexpr const char* plan_device = "plan_device";
inline constexpr const char* plan_ep = "plan_ep";
inline constexpr const char* plan_reason = "plan_reason";
// RequestSession's models option (a{ss}) and each granted model (kind "model";
// also name, version, variant, state, devices, eps, job, reason)
inline constexpr const char* models = "models";
inline constexpr const char* path = "path";
inline constexpr const char* main = "main";
inline constexpr const char* files = "files";
// RemoveModel's options (also version, variant)
inline constexpr const char* now = "now";
}  // namespace key

// Job1.State and Finished's state.
enum class JobState { queued, downloading, verifying, installing, done, failed, cancelled };
inline constexpr JobState kAllJobStates[] = {
    JobState::queued, JobState::downloading, JobState::verifying, JobState::installing,
    JobState::done,   JobState::failed,      JobState::cancelled};
std::string_view job_state_name(JobState s);
std::optional<JobState> parse_job_state(std::string_view text);

// A provider's "state". revoked: installed, but the signed catalogs no longer
// list any installed version, so none is granted. refused: a catalog lists a
// package of that name only from a target path outside "NAME/" (a role not
// trusted for the name; catalog/name_binding.hpp), so it is never installed; shown
// only when no valid package has that name.
enum class ProviderState { ready, available, installing, incompatible, revoked, refused };
inline constexpr ProviderState kAllProviderStates[] = {
    ProviderState::ready,        ProviderState::available, ProviderState::installing,
    ProviderState::incompatible, ProviderState::revoked,   ProviderState::refused};
std::string_view provider_state_name(ProviderState s);
std::optional<ProviderState> parse_provider_state(std::string_view text);

// The "kind" of a granted model in RequestSession's reply (a provider's kind is
// a PackageKind), and the Kind of a model job (Job1).
inline constexpr std::string_view kModelKind = "model";

// A provider's "kind" (as its EP metadata says).
enum class PackageKind { execution_provider, runtime };
std::string_view package_kind_name(PackageKind k);

// What an installed version is kept for (a provider's "versions"[].role); see
// daemon/core/version_plan.hpp for the rules.
enum class VersionRole {
  current,    // new sessions get it
  rollback,   // previously current, kept (keep_versions)
  older_ort,  // apps with an older ORT still ask for it (keep_for_older_ort_days)
  staged,     // newer than current: downloaded, not yet switched to
  leased,     // needed for nothing, kept while sessions lease it
  revoked,    // the signed catalog no longer lists it: never granted
  removing,   // removed by an admin: never granted, files go with the last lease
  unused,     // goes at the next collection
};
inline constexpr VersionRole kAllVersionRoles[] = {
    VersionRole::current, VersionRole::rollback, VersionRole::older_ort, VersionRole::staged,
    VersionRole::leased,  VersionRole::revoked,  VersionRole::removing,  VersionRole::unused};
std::string_view version_role_name(VersionRole r);
std::optional<VersionRole> parse_version_role(std::string_view text);

// A history entry's "action".
enum class HistoryAction {
  install,       // a version installed and made current (install, EnsureProvider)
  update,        // a newer version made current (update, automatic update)
  downgrade,     // an older version installed and made current (--allow-older)
  rollback,      // back to the previously current version
  download,      // a newer version downloaded, not made current (auto_update = download)
  remove,        // a package removed (its files go when unleased)
  revoke,        // the signed catalog no longer lists a version
  unrevoke,      // it lists it again
  gc,            // a version's files deleted
  hold,          // updates skip the package
  unhold,        // they no longer do
  remote_reset,  // a remote's trusted metadata dropped and re-anchored
};
inline constexpr HistoryAction kAllHistoryActions[] = {
    HistoryAction::install,  HistoryAction::update,   HistoryAction::downgrade,
    HistoryAction::rollback, HistoryAction::download, HistoryAction::remove,
    HistoryAction::revoke,   HistoryAction::unrevoke, HistoryAction::gc,
    HistoryAction::hold,     HistoryAction::unhold,   HistoryAction::remote_reset};
std::string_view history_action_name(HistoryAction a);
std::optional<HistoryAction> parse_history_action(std::string_view text);

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
