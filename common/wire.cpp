#include "common/wire.hpp"

namespace common {
namespace {

// The inverse of a name function over every value of its enum.
template <typename E, std::size_t N, typename NameOf>
std::optional<E> parse(std::string_view text, const E (&all)[N], NameOf name_of) {
  for (const E e : all) {
    if (name_of(e) == text) return e;
  }
  return std::nullopt;
}

}  // namespace

std::string_view job_state_name(JobState s) {
  switch (s) {
    case JobState::queued:
      return "queued";
    case JobState::downloading:
      return "downloading";
    case JobState::verifying:
      return "verifying";
    case JobState::installing:
      return "installing";
    case JobState::done:
      return "done";
    case JobState::failed:
      return "failed";
    case JobState::cancelled:
      return "cancelled";
  }
  return "failed";  // not a JobState value (a cast)
}

std::optional<JobState> parse_job_state(std::string_view text) {
  return parse(text, kAllJobStates, job_state_name);
}

std::string_view provider_state_name(ProviderState s) {
  switch (s) {
    case ProviderState::ready:
      return "ready";
    case ProviderState::available:
      return "available";
    case ProviderState::installing:
      return "installing";
    case ProviderState::incompatible:
      return "incompatible";
    case ProviderState::revoked:
      return "revoked";
    case ProviderState::refused:
      return "refused";
  }
  return "incompatible";  // not a ProviderState value (a cast)
}

std::optional<ProviderState> parse_provider_state(std::string_view text) {
  return parse(text, kAllProviderStates, provider_state_name);
}

std::string_view version_role_name(VersionRole r) {
  switch (r) {
    case VersionRole::current:
      return "current";
    case VersionRole::rollback:
      return "rollback";
    case VersionRole::older_ort:
      return "older_ort";
    case VersionRole::staged:
      return "staged";
    case VersionRole::leased:
      return "leased";
    case VersionRole::revoked:
      return "revoked";
    case VersionRole::removing:
      return "removing";
    case VersionRole::unused:
      return "unused";
  }
  return "unused";  // not a VersionRole value (a cast)
}

std::optional<VersionRole> parse_version_role(std::string_view text) {
  return parse(text, kAllVersionRoles, version_role_name);
}

std::string_view history_action_name(HistoryAction a) {
  switch (a) {
    case HistoryAction::install:
      return "install";
    case HistoryAction::update:
      return "update";
    case HistoryAction::downgrade:
      return "downgrade";
    case HistoryAction::rollback:
      return "rollback";
    case HistoryAction::download:
      return "download";
    case HistoryAction::remove:
      return "remove";
    case HistoryAction::revoke:
      return "revoke";
    case HistoryAction::unrevoke:
      return "unrevoke";
    case HistoryAction::gc:
      return "gc";
    case HistoryAction::hold:
      return "hold";
    case HistoryAction::unhold:
      return "unhold";
    case HistoryAction::remote_reset:
      return "remote_reset";
  }
  return "install";  // not a HistoryAction value (a cast)
}

std::optional<HistoryAction> parse_history_action(std::string_view text) {
  return parse(text, kAllHistoryActions, history_action_name);
}

std::string_view package_kind_name(PackageKind k) {
  switch (k) {
    case PackageKind::execution_provider:
      return "execution_provider";
    case PackageKind::runtime:
      return "runtime";
  }
  return "execution_provider";  // not a PackageKind value (a cast)
}

std::string_view policy_name(Policy p) {
  switch (p) {
    case Policy::default_policy:
      return "default";
    case Policy::prefer_cpu:
      return "prefer_cpu";
    case Policy::prefer_gpu:
      return "prefer_gpu";
    case Policy::prefer_npu:
      return "prefer_npu";
    case Policy::max_performance:
      return "max_performance";
    case Policy::max_efficiency:
      return "max_efficiency";
    case Policy::min_overall_power:
      return "min_overall_power";
  }
  return "default";  // not a Policy value (a cast)
}

std::optional<Policy> parse_policy(std::string_view text) {
  return parse(text, kAllPolicies, policy_name);
}

}  // namespace common
