// epbroker.conf's [daemon] section (sections.hpp).
#include "daemon/config/sections.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

#include "catalog/text.hpp"
#include "daemon/config/values.hpp"

namespace epbrokerd::config::detail {
namespace {

using catalog::Errc;
using catalog::fail;
using catalog::quote_for_message;

// The ranges of the [daemon] keys (docs/configuration.md); their defaults are those of
// DaemonSettings and FetchSettings (config.hpp).
constexpr std::uint64_t kMinRefreshInterval = 60;        // when not 0
constexpr std::uint64_t kMaxRefreshInterval = 31536000;  // a year
constexpr std::uint64_t kMaxSessionsPerClient = 4096;
constexpr std::uint64_t kMaxJobsPerClient = 256;
constexpr std::uint64_t kMaxConnectTimeout = 300;
constexpr std::uint64_t kMaxLowSpeedLimit = std::uint64_t{1} << 30;
constexpr std::uint64_t kMaxLowSpeedTime = 3600;
constexpr std::uint64_t kMaxTransferTimeout = 86400;
constexpr std::uint64_t kMaxFetchAttempts = 16;
constexpr std::uint64_t kMaxRetryAfter = 3600;
constexpr std::uint64_t kMaxKeepVersions = 100;
constexpr std::uint64_t kMaxKeepForOlderOrtDays = 3650;  // ten years
constexpr std::uint64_t kMaxAuthorizationTimeout = 3600;

// One of the [daemon] fetch keys applied to `f`; nullopt if `e` is not one.
std::optional<Result<void>> apply_fetch_key(const Entry& e, const std::string& prefix,
                                            FetchSettings& f) {
  struct Key {
    std::string_view name;
    std::uint64_t min;
    std::uint64_t max;
    std::function<void(std::uint64_t)> set;
  };
  const Key keys[] = {
      {"connect_timeout_sec", 1, kMaxConnectTimeout,
       [&](std::uint64_t v) { f.connect_timeout = std::chrono::seconds(v); }},
      {"low_speed_limit_bytes", 0, kMaxLowSpeedLimit,
       [&](std::uint64_t v) { f.low_speed_limit_bytes = v; }},
      {"low_speed_time_sec", 1, kMaxLowSpeedTime,
       [&](std::uint64_t v) { f.low_speed_time = std::chrono::seconds(v); }},
      {"transfer_timeout_sec", 0, kMaxTransferTimeout,
       [&](std::uint64_t v) { f.transfer_timeout = std::chrono::seconds(v); }},
      {"fetch_attempts", 1, kMaxFetchAttempts,
       [&](std::uint64_t v) { f.attempts = static_cast<std::uint32_t>(v); }},
      {"max_retry_after_sec", 0, kMaxRetryAfter,
       [&](std::uint64_t v) { f.max_retry_after = std::chrono::seconds(v); }},
  };
  for (const Key& k : keys) {
    if (e.key != k.name) continue;
    auto v = uint_in(e.value, k.min, k.max, prefix);
    if (!v) return Result<void>(std::unexpected(v.error()));
    k.set(*v);
    return Result<void>();
  }
  return std::nullopt;
}

}  // namespace

Result<void> apply_daemon_section(const Section& section, const std::string& file,
                                  DaemonSettings& d) {
  for (const Entry& e : section.entries) {
    const std::string prefix = at_key(file, e);
    if (e.key == "idle_timeout_sec") {
      auto v = uint_in(e.value, 0, kMaxIdleTimeout, prefix);
      if (!v) return std::unexpected(v.error());
      d.idle_timeout = std::chrono::seconds(*v);
    } else if (e.key == "refresh_interval_sec") {
      auto v = uint_in(e.value, 0, kMaxRefreshInterval, prefix);
      if (!v) return std::unexpected(v.error());
      if (*v != 0 && *v < kMinRefreshInterval) {
        return fail(Errc::bad_field, prefix + "expected 0 (no automatic refresh) or " +
                                         std::to_string(kMinRefreshInterval) + ".." +
                                         std::to_string(kMaxRefreshInterval) + ", got " +
                                         quote_for_message(e.value));
      }
      d.refresh_interval = std::chrono::seconds(*v);
    } else if (e.key == "max_sessions_per_client") {
      auto v = uint_in(e.value, 1, kMaxSessionsPerClient, prefix);
      if (!v) return std::unexpected(v.error());
      d.max_sessions_per_client = static_cast<std::size_t>(*v);
    } else if (e.key == "max_jobs_per_client") {
      auto v = uint_in(e.value, 1, kMaxJobsPerClient, prefix);
      if (!v) return std::unexpected(v.error());
      d.max_jobs_per_client = static_cast<std::size_t>(*v);
    } else if (e.key == "install_group") {
      if (!e.value.empty() && !is_group_name(e.value)) {
        return fail(Errc::bad_field, prefix + "not a group name ([a-z_][a-z0-9_-]{0,31}): " +
                                         quote_for_message(e.value));
      }
      d.install_group = e.value;
    } else if (e.key == "authorization_timeout_sec") {
      auto v = uint_in(e.value, 1, kMaxAuthorizationTimeout, prefix);
      if (!v) return std::unexpected(v.error());
      d.authorization_timeout = std::chrono::seconds(*v);
    } else if (e.key == "log_level") {
      auto v = parse_log_level(e.value);
      if (!v) return fail(Errc::bad_field, prefix + v.error().message);
      d.log_level = *v;
    } else if (e.key == "keep_versions") {
      auto v = uint_in(e.value, 0, kMaxKeepVersions, prefix);
      if (!v) return std::unexpected(v.error());
      d.keep_versions = static_cast<std::size_t>(*v);
    } else if (e.key == "keep_for_older_ort_days") {
      auto v = uint_in(e.value, 0, kMaxKeepForOlderOrtDays, prefix);
      if (!v) return std::unexpected(v.error());
      d.keep_for_older_ort = std::chrono::days(*v);
    } else if (e.key == "remove_revoked") {
      auto v = parse_bool(e.value, prefix);
      if (!v) return std::unexpected(v.error());
      d.remove_revoked = *v;
    } else if (e.key == "auto_update") {
      auto v = parse_auto_update(e.value);
      if (!v) return fail(Errc::bad_field, prefix + v.error().message);
      d.auto_update = *v;
    } else if (auto fetch = apply_fetch_key(e, prefix, d.fetch)) {
      if (!*fetch) return std::unexpected(fetch->error());
    } else {
      return fail(Errc::bad_field, prefix + "unknown key in [daemon]");
    }
  }
  return {};
}

}  // namespace epbrokerd::config::detail
