// The small value types of the public headers: names, Error, CancelToken.
#include <array>
#include <utility>

#include "epbroker/client.hpp"
#include "epbroker/error.hpp"

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

std::string_view to_string(ProviderState state) noexcept {
  switch (state) {
    case ProviderState::ready:
      return "ready";
    case ProviderState::available:
      return "available";
    case ProviderState::installing:
      return "installing";
    case ProviderState::incompatible:
      return "incompatible";
    case ProviderState::unknown:
      break;
  }
  return "unknown";
}

std::string_view to_string(JobState state) noexcept {
  switch (state) {
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
    case JobState::unknown:
      break;
  }
  return "unknown";
}

bool is_final(JobState state) noexcept {
  return state == JobState::done || state == JobState::failed || state == JobState::cancelled;
}

namespace {

constexpr std::array<std::pair<Policy, std::string_view>, 7> kPolicies{{
    {Policy::default_policy, "default"},
    {Policy::prefer_cpu, "prefer_cpu"},
    {Policy::prefer_gpu, "prefer_gpu"},
    {Policy::prefer_npu, "prefer_npu"},
    {Policy::max_performance, "max_performance"},
    {Policy::max_efficiency, "max_efficiency"},
    {Policy::min_overall_power, "min_overall_power"},
}};

}  // namespace

std::string_view to_string(Policy policy) noexcept {
  for (const auto& [p, name] : kPolicies) {
    if (p == policy) return name;
  }
  return "default";
}

std::optional<Policy> parse_policy(std::string_view text) noexcept {
  for (const auto& [p, name] : kPolicies) {
    if (name == text) return p;
  }
  return std::nullopt;
}

// cancel() is called from signal handlers: the store must not take a lock.
static_assert(std::atomic<bool>::is_always_lock_free);

CancelToken::CancelToken() : flag_(std::make_shared<std::atomic<bool>>(false)) {}

void CancelToken::cancel() const noexcept { flag_->store(true, std::memory_order_relaxed); }

bool CancelToken::cancelled() const noexcept { return flag_->load(std::memory_order_relaxed); }

}  // namespace epbroker
