// When the daemon refreshes the catalogs by itself (daemon.refresh_interval_sec),
// and how that survives restarts.
//
// Due refresh_interval after the last successful refresh of every enabled remote
// (Broker::last_refresh(), read back from the catalog.json mtimes at start), at
// once when there never was one. After failures, not before the backoff either:
// 5 min after the first failed one, doubling with each further failure in a row,
// at most min(refresh_interval, 24 h). The attempts are persisted, so an
// on-demand daemon that any bus client can activate (a ListProviders is enough)
// does not ask a failing remote again at every activation.
//
// An automatic refresh counts as failed from the moment it starts (saved before
// it runs), until a success: one cut short by a crash or a stop counts too. A
// successful refresh (automatic or asked for) that ends after the last attempt
// started clears the failures. Explicit refreshes (RefreshCatalog, which only
// org.epbroker.manage may call) run at once and are not counted as attempts.
//
// Persisted as <state>/refresh.json, rewritten atomically:
//   {"refresh_version": 1, "last_attempt": <unix seconds>, "failures": <n>}
// A file that does not parse is set aside as refresh.json.bad (the caller logs
// it) and reads as no attempt: the worst case is one refresh at once.
//
// Plain data and its file; used by the daemon's main loop only.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "catalog/error.hpp"

namespace epbrokerd::core {

using SysTime = std::chrono::system_clock::time_point;

inline constexpr std::chrono::seconds kFirstRefreshBackoff{300};
inline constexpr std::chrono::seconds kMaxRefreshBackoff{86400};
inline constexpr const char* kRefreshFileName = "refresh.json";
inline constexpr int kRefreshVersion = 1;

struct RefreshAttempts {
  std::int64_t last_attempt = 0;  // unix seconds the last automatic refresh started; 0 = none
  std::uint32_t failures = 0;     // automatic refreshes in a row not (yet) successful

  friend bool operator==(const RefreshAttempts&, const RefreshAttempts&) = default;
};

// The wait after `failures` failed refreshes in a row: 0 for none; else
// kFirstRefreshBackoff * 2^(failures-1), at most min(interval, kMaxRefreshBackoff)
// (interval > 0; at least 1 s).
std::chrono::seconds refresh_backoff(std::uint32_t failures, std::chrono::seconds interval);

// Whether the failures in `a` still count: some, and no success since the last
// attempt started (`last_success` at or after it clears them).
bool failures_count(const RefreshAttempts& a, std::optional<SysTime> last_success);

// When the next automatic refresh is due: the later of
//   last_success + interval (`now` when there never was one), and
//   last_attempt + refresh_backoff(failures)          (while failures_count()).
// Times after `now` (a clock set back) are taken as `now`, so nothing is
// postponed by more than interval or the backoff.
SysTime next_refresh_due(const RefreshAttempts& a, std::optional<SysTime> last_success,
                         std::chrono::seconds interval, SysTime now);

// refresh.json's text (deterministic) and its strict parse: Errc::malformed (not
// JSON), Errc::bad_field (a missing, unknown or ill-typed key), Errc::unsupported
// (another refresh_version).
std::string to_text(const RefreshAttempts& a);
catalog::Result<RefreshAttempts> parse_refresh_attempts(std::string_view text);

// <state_dir>/refresh.json: missing reads as no attempt; one that cannot be read or
// parsed is renamed refresh.json.bad, *problem says why, and reads as no attempt.
RefreshAttempts load_refresh_attempts(const std::filesystem::path& state_dir,
                                      std::optional<catalog::Error>* problem);
catalog::Result<void> save_refresh_attempts(const std::filesystem::path& state_dir,
                                            const RefreshAttempts& a);

}  // namespace epbrokerd::core
