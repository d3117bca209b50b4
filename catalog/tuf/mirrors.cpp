#include "catalog/tuf/mirrors.hpp"

#include <algorithm>
#include <optional>
#include <thread>
#include <vector>

namespace catalog::tuf {

bool wait_unless_cancelled(std::chrono::milliseconds duration, const CancelPredicate& cancel) {
  using Clock = std::chrono::steady_clock;
  constexpr auto kPoll = std::chrono::milliseconds(10);
  const auto deadline = Clock::now() + duration;
  while (true) {
    if (cancel && cancel()) return false;
    const auto now = Clock::now();
    if (now >= deadline) return true;
    // The predicate has no way to wake us, so short sleeps up to the deadline.
    std::this_thread::sleep_for(std::min<Clock::duration>(kPoll, deadline - now));
  }
}

MirrorVerdict mirror_verdict(Errc code) {
  switch (code) {
    case Errc::network:
      return MirrorVerdict::retry;
    // Local trouble, or the caller's: no other mirror can help.
    case Errc::cancelled:
    case Errc::io:
    case Errc::no_space:
    case Errc::invalid_argument:
    case Errc::crypto:
    case Errc::unavailable:
    case Errc::busy:
      return MirrorVerdict::stop;
    // What this mirror served: another may serve it right.
    case Errc::malformed:
    case Errc::bad_field:
    case Errc::unsupported:
    case Errc::bad_signature:
    case Errc::expired:
    case Errc::rollback:
    case Errc::version_mismatch:
    case Errc::length_mismatch:
    case Errc::hash_mismatch:
    case Errc::not_found:
    case Errc::too_many:
    case Errc::too_large:
    case Errc::unsafe_entry:
    case Errc::manifest_mismatch:
      return MirrorVerdict::next;
  }
  return MirrorVerdict::stop;  // not an Errc value
}

Result<void> try_mirrors(std::size_t count, const RetryPolicy& policy,
                         const CancelPredicate& cancel,
                         const std::function<Result<void>(std::size_t mirror)>& try_mirror) {
  if (count == 0) return fail(Errc::invalid_argument, "no mirror to fetch from");
  auto cancelled = [] { return fail(Errc::cancelled, "cancelled"); };
  std::vector<std::optional<Error>> last(count);  // per mirror; nullopt: not asked yet
  std::vector<bool> ask(count, true);             // still worth asking
  auto backoff = policy.initial_backoff;
  const std::uint32_t rounds = std::max<std::uint32_t>(policy.attempts, 1);
  std::chrono::milliseconds asked_wait{0};  // the longest Retry-After of the last round
  for (std::uint32_t round = 0; round < rounds; ++round) {
    if (round > 0) {
      const auto wait = std::max<std::chrono::milliseconds>(
          backoff, std::min<std::chrono::milliseconds>(asked_wait, policy.max_retry_after));
      if (!wait_unless_cancelled(wait, cancel)) return cancelled();
      backoff = std::min(backoff * 2, std::max(policy.max_backoff, policy.initial_backoff));
    }
    asked_wait = std::chrono::milliseconds(0);
    bool transient = false;
    for (std::size_t i = 0; i < count; ++i) {
      if (!ask[i]) continue;
      if (cancel && cancel()) return cancelled();
      auto r = try_mirror(i);
      if (r) return r;
      switch (mirror_verdict(r.error().code)) {
        case MirrorVerdict::stop:
          return r;
        case MirrorVerdict::retry:
          transient = true;
          if (r.error().retry_after) {
            asked_wait = std::max<std::chrono::milliseconds>(asked_wait, *r.error().retry_after);
          }
          break;
        case MirrorVerdict::next:
          ask[i] = false;
          break;
      }
      last[i] = std::move(r.error());
    }
    const bool answered_not_found = std::any_of(
        last.begin(), last.end(), [](const auto& e) { return e && e->code == Errc::not_found; });
    if (!transient || answered_not_found) break;
  }

  // Every mirror failed: one error for all (see the header for the choice).
  const Error* pick = nullptr;
  for (const auto& e : last) {
    if (e && e->code == Errc::not_found) {
      pick = &*e;
      break;
    }
  }
  for (const auto& e : last) {
    if (!pick && e && e->code != Errc::network) pick = &*e;
  }
  for (const auto& e : last) {
    if (!pick && e) pick = &*e;
  }
  if (count == 1) return std::unexpected(*pick);
  std::string message = "all " + std::to_string(count) + " mirrors failed:";
  for (std::size_t i = 0; i < count; ++i) {
    message += (i == 0 ? " " : "; ") + std::to_string(i + 1) + ": " +
               (last[i] ? last[i]->message : "not asked");
  }
  return fail(pick->code, std::move(message));
}

}  // namespace catalog::tuf
