// Mirrors tried in order, with bounded retries of transient failures.
//
// The TUF workflow runs every fetch (and, for metadata, the verification of
// what came back) through try_mirrors(); what any mirror serves passes the same
// checks, so a mirror is trusted for availability only.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "catalog/error.hpp"

namespace catalog::tuf {

// One place a repository is served from. Base URLs; a missing final '/' is added.
struct Mirror {
  std::string metadata_base_url;  // "<base>/<N>.root.json", "<base>/timestamp.json", ...
  std::string target_base_url;    // "<base>/<hash>.<name>" with consistent snapshots
};

struct RetryPolicy {
  // Rounds over the mirrors (1 = no retry). A round asks, in order, every mirror
  // whose last answer was transient (Errc::network); the next round starts after
  // the backoff, which begins at `initial_backoff` and doubles up to `max_backoff`.
  std::uint32_t attempts = 4;
  std::chrono::milliseconds initial_backoff{200};
  std::chrono::milliseconds max_backoff{5000};
  // A server that answered a round's try with a Retry-After (Error::retry_after)
  // is given that long before the next round (if longer than the backoff), but
  // never more than this; 0 ignores Retry-After. The backoff doubles as usual.
  std::chrono::seconds max_retry_after{60};
};

// Polled to stop early; true = stop with Errc::cancelled. Empty = never.
using CancelPredicate = std::function<bool()>;

// Sleeps `duration` unless `cancel` turns true first (polled every 10 ms at
// most). Returns false if cancelled.
bool wait_unless_cancelled(std::chrono::milliseconds duration, const CancelPredicate& cancel);

// What a failed try means for the other mirrors:
enum class MirrorVerdict {
  retry,  // Errc::network: next mirror now, this one again next round
  next,   // the mirror answered but not with what we need (not_found, or
          // bytes that failed a length/hash/signature/version/expiry/format
          // check): next mirror, this one is not asked again
  stop,   // a local or caller problem (cancelled, io, invalid_argument, ...):
          // no mirror would do better, fail at once
};
MirrorVerdict mirror_verdict(Errc code);

// Runs `try_mirror(i)` for mirrors i = 0..count-1 in order until one succeeds,
// in at most policy.attempts rounds (see RetryPolicy), checking `cancel` before
// every try and during backoff. Retry rounds happen only while no mirror has
// answered not_found: a reachable mirror saying "not there" (e.g. no next root
// version) is an answer, not worth waiting for a flaky one.
// When every mirror failed, the error is: not_found if any mirror answered it
// (so the root chain ends when no mirror has the next version); else the first
// that is not Errc::network (a mirror served something refused); else network.
// With several mirrors its message names each mirror's last failure.
Result<void> try_mirrors(std::size_t count, const RetryPolicy& policy,
                         const CancelPredicate& cancel,
                         const std::function<Result<void>(std::size_t mirror)>& try_mirror);

}  // namespace catalog::tuf
