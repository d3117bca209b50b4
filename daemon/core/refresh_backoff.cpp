#include "daemon/core/refresh_backoff.hpp"

#include <algorithm>
#include <limits>
#include <system_error>

#include "catalog/atomic_file.hpp"
#include "catalog/json_fields.hpp"

namespace epbrokerd::core {

namespace fs = std::filesystem;
using catalog::Errc;
using nlohmann::json;
namespace cj = catalog::json;

namespace {

constexpr std::size_t kMaxRefreshFileBytes = 4096;

SysTime from_unix(std::int64_t seconds) { return SysTime{} + std::chrono::seconds(seconds); }

}  // namespace

std::chrono::seconds refresh_backoff(std::uint32_t failures, std::chrono::seconds interval) {
  if (failures == 0) return std::chrono::seconds(0);
  const auto cap =
      std::max(std::chrono::seconds(1),
               interval.count() > 0 ? std::min(interval, kMaxRefreshBackoff) : kMaxRefreshBackoff);
  auto wait = kFirstRefreshBackoff;
  // Doubling stops at the cap, long before the count could overflow anything.
  for (std::uint32_t i = 1; i < failures && wait < cap; ++i) wait *= 2;
  return std::min(wait, cap);
}

bool failures_count(const RefreshAttempts& a, std::optional<SysTime> last_success) {
  if (a.failures == 0) return false;
  return !last_success || *last_success < from_unix(a.last_attempt);
}

SysTime next_refresh_due(const RefreshAttempts& a, std::optional<SysTime> last_success,
                         std::chrono::seconds interval, SysTime now) {
  SysTime due = last_success ? std::min(*last_success, now) + interval : now;
  if (failures_count(a, last_success)) {
    const SysTime attempt = std::min(from_unix(a.last_attempt), now);
    due = std::max(due, attempt + refresh_backoff(a.failures, interval));
  }
  return due;
}

std::string to_text(const RefreshAttempts& a) {
  const json doc = {{"refresh_version", kRefreshVersion},
                    {"last_attempt", a.last_attempt},
                    {"failures", a.failures}};
  return doc.dump(2) + "\n";
}

catalog::Result<RefreshAttempts> parse_refresh_attempts(std::string_view text) {
  auto doc = cj::parse_strict(text, "refresh", kMaxRefreshFileBytes);
  if (!doc) return std::unexpected(doc.error());
  if (!doc->is_object()) return cj::wrong_type("refresh", "object", *doc);
  auto version = cj::uint_field(*doc, "refresh_version", "");
  if (!version) return std::unexpected(version.error());
  if (*version != kRefreshVersion) {
    return catalog::fail(Errc::unsupported,
                         "refresh_version " + std::to_string(*version) + " is not supported");
  }
  for (const auto& [key, v] : doc->items()) {
    if (key != "refresh_version" && key != "last_attempt" && key != "failures") {
      return cj::field_error(key, "unknown key");
    }
  }
  auto last = cj::uint_field(*doc, "last_attempt", "");
  if (!last) return std::unexpected(last.error());
  auto failures = cj::uint_field(*doc, "failures", "");
  if (!failures) return std::unexpected(failures.error());
  // Bounds that keep the arithmetic above well inside its types.
  if (*last > static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max()) * 4) {
    return cj::field_error("last_attempt", "out of range");
  }
  if (*failures > std::numeric_limits<std::uint32_t>::max()) {
    return cj::field_error("failures", "out of range");
  }
  return RefreshAttempts{static_cast<std::int64_t>(*last), static_cast<std::uint32_t>(*failures)};
}

RefreshAttempts load_refresh_attempts(const fs::path& state_dir,
                                      std::optional<catalog::Error>* problem) {
  const fs::path path = state_dir / kRefreshFileName;
  std::error_code ec;
  if (!fs::exists(path, ec)) return {};
  auto text = catalog::read_file(path, kMaxRefreshFileBytes);
  auto parsed = text ? parse_refresh_attempts(*text)
                     : catalog::Result<RefreshAttempts>(std::unexpected(text.error()));
  if (parsed) return *parsed;
  // Kept for people to look at; the schedule goes on as with no attempt.
  fs::rename(path, state_dir / (std::string(kRefreshFileName) + ".bad"), ec);
  if (problem) *problem = parsed.error();
  return {};
}

catalog::Result<void> save_refresh_attempts(const fs::path& state_dir, const RefreshAttempts& a) {
  return catalog::atomic_write_file(state_dir / kRefreshFileName, to_text(a));
}

}  // namespace epbrokerd::core
