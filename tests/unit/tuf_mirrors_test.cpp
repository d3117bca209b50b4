// catalog::tuf::try_mirrors: which failures fall through to the next mirror,
// which are retried, how many times, and cancel during the backoff wait.
#include "catalog/tuf/mirrors.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

namespace catalog::tuf {
namespace {

using namespace std::chrono_literals;

// Scripted answers per mirror: the i-th try of mirror m gets script[m][i]
// (the last entry repeats). Records the order of tries.
struct Script {
  explicit Script(std::vector<std::vector<std::optional<Errc>>> a) : answers(std::move(a)) {}

  std::vector<std::vector<std::optional<Errc>>> answers;  // nullopt = success
  std::vector<std::size_t> tried;

  Result<void> operator()(std::size_t mirror) {
    const auto n = static_cast<std::size_t>(std::count(tried.begin(), tried.end(), mirror));
    tried.push_back(mirror);
    const auto& list = answers.at(mirror);
    const auto& a = list.at(std::min(n, list.size() - 1));
    if (!a) return {};
    return fail(*a, "mirror " + std::to_string(mirror) + " says " + std::string(errc_name(*a)));
  }
};

RetryPolicy fast(std::uint32_t attempts = 4) { return {attempts, 1ms, 2ms}; }

Result<void> run(Script& s, const RetryPolicy& policy = fast(),
                 const CancelPredicate& cancel = {}) {
  return try_mirrors(s.answers.size(), policy, cancel, std::ref(s));
}

TEST(TryMirrors, FirstSuccessEndsTheSearch) {
  Script s{{{std::nullopt}, {std::nullopt}}};
  EXPECT_TRUE(run(s));
  EXPECT_EQ(s.tried, (std::vector<std::size_t>{0}));
}

TEST(TryMirrors, NetworkFailureIsRetriedUpToTheAttempts) {
  Script s{{{Errc::network, Errc::network, std::nullopt}}};
  EXPECT_TRUE(run(s));
  EXPECT_EQ(s.tried, (std::vector<std::size_t>{0, 0, 0}));

  Script never{{{Errc::network}}};
  auto r = run(never, fast(3));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::network);
  EXPECT_EQ(r.error().message, "mirror 0 says network");  // one mirror: its own error
  EXPECT_EQ(never.tried.size(), 3u);

  Script once{{{Errc::network}}};
  EXPECT_FALSE(run(once, fast(1)));
  EXPECT_EQ(once.tried.size(), 1u);
}

TEST(TryMirrors, AnswersAreNotRetried) {
  for (Errc code : {Errc::not_found, Errc::hash_mismatch, Errc::length_mismatch,
                    Errc::bad_signature, Errc::rollback, Errc::expired, Errc::malformed}) {
    Script s{{{code, std::nullopt}}};
    auto r = run(s);
    ASSERT_FALSE(r) << errc_name(code);
    EXPECT_EQ(r.error().code, code);
    EXPECT_EQ(s.tried.size(), 1u) << errc_name(code);
  }
}

TEST(TryMirrors, DeadOrBadMirrorFallsThroughToTheNext) {
  for (Errc code : {Errc::network, Errc::not_found, Errc::hash_mismatch, Errc::bad_signature}) {
    Script s{{{code}, {std::nullopt}}};
    EXPECT_TRUE(run(s)) << errc_name(code);
    EXPECT_EQ(s.tried, (std::vector<std::size_t>{0, 1})) << errc_name(code);
  }
}

TEST(TryMirrors, LocalProblemsStopAtOnce) {
  for (Errc code : {Errc::cancelled, Errc::io, Errc::invalid_argument}) {
    Script s{{{code}, {std::nullopt}}};
    auto r = run(s);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, code);
    EXPECT_EQ(s.tried, (std::vector<std::size_t>{0})) << errc_name(code);
  }
}

TEST(TryMirrors, RetryRoundsAskOnlyMirrorsThatFailedTransiently) {
  Script s{{{Errc::hash_mismatch}, {Errc::network}, {Errc::network, std::nullopt}}};
  EXPECT_TRUE(run(s));
  EXPECT_EQ(s.tried, (std::vector<std::size_t>{0, 1, 2, 1, 2}));
}

TEST(TryMirrors, AllFailedReportsTheMostTellingErrorAndEveryMirror) {
  Script s{{{Errc::network}, {Errc::bad_signature}}};
  auto r = run(s, fast(2));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::bad_signature);
  EXPECT_NE(r.error().message.find("mirror 0 says network"), std::string::npos);
  EXPECT_NE(r.error().message.find("mirror 1 says bad_signature"), std::string::npos);
  EXPECT_EQ(s.tried, (std::vector<std::size_t>{0, 1, 0}));
}

TEST(TryMirrors, NotFoundFromAnyMirrorEndsTheSearchWithoutRetries) {
  // "No next root version" from a reachable mirror is an answer: a flaky or bad
  // mirror must neither delay it with retries nor turn it into a failure.
  Script s{{{Errc::network}, {Errc::not_found}, {Errc::malformed}}};
  auto r = run(s);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::not_found);
  EXPECT_EQ(s.tried, (std::vector<std::size_t>{0, 1, 2}));
}

TEST(TryMirrors, CancelBeforeATryOrDuringTheBackoffStops) {
  Script never{{{Errc::network}}};
  auto r = run(never, fast(), [] { return true; });
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::cancelled);
  EXPECT_TRUE(never.tried.empty());

  // A backoff far longer than the test's patience: only the cancel can end it.
  std::atomic<bool> cancel{false};
  std::atomic<int> tries{0};
  const RetryPolicy slow{4, std::chrono::minutes(5), std::chrono::minutes(5)};
  auto done = std::async(std::launch::async, [&] {
    return try_mirrors(
        1, slow, [&] { return cancel.load(); },
        [&](std::size_t) -> Result<void> {
          ++tries;
          return fail(Errc::network, "down");
        });
  });
  // Cancel once the first try has failed: what follows is the backoff wait.
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (tries.load() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  const int tried = tries.load();
  cancel = true;
  ASSERT_EQ(tried, 1);
  ASSERT_EQ(done.wait_for(10s), std::future_status::ready) << "the backoff wait ignored cancel";
  auto result = done.get();
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, Errc::cancelled);
  EXPECT_EQ(tries.load(), 1);
}

// A mirror that answers "network" with a Retry-After the first `busy` times.
struct BusyMirror {
  int busy;
  std::chrono::seconds after;
  std::vector<std::chrono::steady_clock::time_point> tries;
  Result<void> operator()(std::size_t) {
    tries.push_back(std::chrono::steady_clock::now());
    if (static_cast<int>(tries.size()) > busy) return {};
    Error e{Errc::network, "503"};
    e.retry_after = after;
    return std::unexpected(e);
  }
};

TEST(TryMirrors, RetryAfterIsWaitedForInsteadOfTheShorterBackoff) {
  BusyMirror m{1, 1s, {}};
  ASSERT_TRUE(try_mirrors(1, fast(), {}, std::ref(m)));
  ASSERT_EQ(m.tries.size(), 2U);
  EXPECT_GE(m.tries[1] - m.tries[0], 1s);  // the backoff alone is 1 ms
}

TEST(TryMirrors, RetryAfterIsCappedAndCanBeIgnored) {
  // Five minutes asked, one second allowed: the retry comes after the cap. A
  // cancel after 60 s turns an ignored cap into a failure rather than a hang.
  const auto start = std::chrono::steady_clock::now();
  const CancelPredicate patience = [&] { return std::chrono::steady_clock::now() - start > 60s; };
  BusyMirror capped{1, std::chrono::minutes(5), {}};
  RetryPolicy policy = fast();
  policy.max_retry_after = 1s;
  ASSERT_TRUE(try_mirrors(1, policy, patience, std::ref(capped)));
  ASSERT_EQ(capped.tries.size(), 2U);
  EXPECT_GE(capped.tries[1] - capped.tries[0], 1s);

  BusyMirror ignored{2, std::chrono::minutes(5), {}};
  policy.max_retry_after = 0s;
  ASSERT_TRUE(try_mirrors(1, policy, patience, std::ref(ignored)));
  EXPECT_EQ(ignored.tries.size(), 3U);
}

TEST(TryMirrors, CancelDuringARetryAfterWaitStops) {
  std::atomic<bool> cancel{false};
  std::atomic<int> tries{0};
  auto done = std::async(std::launch::async, [&] {
    return try_mirrors(
        1, fast(), [&] { return cancel.load(); },
        [&](std::size_t) -> Result<void> {
          ++tries;
          Error e{Errc::network, "503"};
          e.retry_after = std::chrono::minutes(5);
          return std::unexpected(e);
        });
  });
  // Cancel once the first try has failed: what follows is the Retry-After wait.
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (tries.load() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_EQ(tries.load(), 1);
  cancel = true;
  ASSERT_EQ(done.wait_for(10s), std::future_status::ready) << "the Retry-After wait ignored cancel";
  auto r = done.get();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::cancelled);
  EXPECT_EQ(tries.load(), 1);
}

TEST(WaitUnlessCancelled, WaitsTheDurationOrStopsOnCancel) {
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(wait_unless_cancelled(20ms, {}));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 20ms);
  EXPECT_TRUE(wait_unless_cancelled(0ms, [] { return false; }));
  EXPECT_FALSE(wait_unless_cancelled(std::chrono::minutes(5), [] { return true; }));
}

}  // namespace
}  // namespace catalog::tuf
