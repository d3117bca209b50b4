// The small value types of the public headers: names, Error, CancelToken.
#include <array>
#include <utility>

#include "epbroker/client.hpp"
#include "epbroker/error.hpp"

#include "common/wire.hpp"

namespace epbroker {

std::string_view errc_name(Errc code) noexcept {
  switch (code) {
    case Errc::not_found:
      return "NotFound";
    case Errc::not_authorized:
      return "NotAuthorized";
    case Errc::invalid_argument:
      return "InvalidArgument";
    case Errc::incompatible:
      return "Incompatible";
    case Errc::verification_failed:
      return "VerificationFailed";
    case Errc::network:
      return "Network";
    case Errc::busy:
      return "Busy";
    case Errc::cancelled:
      return "Cancelled";
    case Errc::unavailable:
      return "Unavailable";
    case Errc::timeout:
      return "Timeout";
    case Errc::protocol:
      return "Protocol";
    case Errc::disk_full:
      return "DiskFull";
    case Errc::internal:
      return "Internal";
  }
  return "Protocol";  // not an Errc value
}

Error::Error(Errc code, std::string message, std::string bus_name)
    : std::runtime_error(message),
      code_(code),
      message_(std::move(message)),
      bus_name_(std::move(bus_name)) {}

// The wire names come from common/wire.hpp; these switches only pair the public enums
// (C++17, with their own `unknown`) with the daemon's.
std::string_view to_string(ProviderState state) noexcept {
  switch (state) {
    case ProviderState::ready:
      return common::provider_state_name(common::ProviderState::ready);
    case ProviderState::available:
      return common::provider_state_name(common::ProviderState::available);
    case ProviderState::installing:
      return common::provider_state_name(common::ProviderState::installing);
    case ProviderState::incompatible:
      return common::provider_state_name(common::ProviderState::incompatible);
    case ProviderState::revoked:
      return common::provider_state_name(common::ProviderState::revoked);
    case ProviderState::refused:
      return common::provider_state_name(common::ProviderState::refused);
    case ProviderState::unknown:
      break;
  }
  return "unknown";
}

std::string_view to_string(JobState state) noexcept {
  switch (state) {
    case JobState::queued:
      return common::job_state_name(common::JobState::queued);
    case JobState::downloading:
      return common::job_state_name(common::JobState::downloading);
    case JobState::verifying:
      return common::job_state_name(common::JobState::verifying);
    case JobState::installing:
      return common::job_state_name(common::JobState::installing);
    case JobState::done:
      return common::job_state_name(common::JobState::done);
    case JobState::failed:
      return common::job_state_name(common::JobState::failed);
    case JobState::cancelled:
      return common::job_state_name(common::JobState::cancelled);
    case JobState::unknown:
      break;
  }
  return "unknown";
}

bool is_final(JobState state) noexcept {
  return state == JobState::done || state == JobState::failed || state == JobState::cancelled;
}

namespace {

common::Policy to_wire(Policy policy) noexcept {
  switch (policy) {
    case Policy::default_policy:
      return common::Policy::default_policy;
    case Policy::prefer_cpu:
      return common::Policy::prefer_cpu;
    case Policy::prefer_gpu:
      return common::Policy::prefer_gpu;
    case Policy::prefer_npu:
      return common::Policy::prefer_npu;
    case Policy::max_performance:
      return common::Policy::max_performance;
    case Policy::max_efficiency:
      return common::Policy::max_efficiency;
    case Policy::min_overall_power:
      return common::Policy::min_overall_power;
  }
  return common::Policy::default_policy;  // not a Policy value (a cast)
}

constexpr Policy kAllPolicies[] = {
    Policy::default_policy,  Policy::prefer_cpu,     Policy::prefer_gpu,       Policy::prefer_npu,
    Policy::max_performance, Policy::max_efficiency, Policy::min_overall_power};

}  // namespace

std::string_view to_string(Policy policy) noexcept { return common::policy_name(to_wire(policy)); }

std::optional<Policy> parse_policy(std::string_view text) noexcept {
  for (const Policy p : kAllPolicies) {
    if (to_string(p) == text) return p;
  }
  return std::nullopt;
}

// cancel() is called from signal handlers: the store must not take a lock.
static_assert(std::atomic<bool>::is_always_lock_free);

CancelToken::CancelToken() : flag_(std::make_shared<std::atomic<bool>>(false)) {}

void CancelToken::cancel() const noexcept { flag_->store(true, std::memory_order_relaxed); }

bool CancelToken::cancelled() const noexcept { return flag_->load(std::memory_order_relaxed); }

}  // namespace epbroker
