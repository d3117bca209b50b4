// daemon/core/refresh_backoff: when the next automatic catalog refresh is due after
// successes and failures, and refresh.json (strict, atomic, set aside when bad).
#include "daemon/core/refresh_backoff.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <optional>

#include "tests/support/temp_dir.hpp"

namespace epbrokerd::core {
namespace {

using namespace std::chrono_literals;
using catalog::Errc;
using tests::support::TempDir;
using tests::support::write_file;

constexpr std::chrono::seconds kDay{86400};

SysTime at(std::int64_t unix_seconds) { return SysTime{} + std::chrono::seconds(unix_seconds); }

TEST(RefreshBackoff, FiveMinutesDoublingUpToTheIntervalOrADay) {
  EXPECT_EQ(refresh_backoff(0, kDay), 0s);
  EXPECT_EQ(refresh_backoff(1, kDay), 300s);
  EXPECT_EQ(refresh_backoff(2, kDay), 600s);
  EXPECT_EQ(refresh_backoff(3, kDay), 1200s);
  EXPECT_EQ(refresh_backoff(9, kDay), 76800s);
  EXPECT_EQ(refresh_backoff(10, kDay), kDay);
  EXPECT_EQ(refresh_backoff(4000000000U, kDay), kDay);
  // A shorter interval caps it; a longer one does not lift the day's cap.
  EXPECT_EQ(refresh_backoff(1, 60s), 60s);
  EXPECT_EQ(refresh_backoff(3, 3600s), 1200s);
  EXPECT_EQ(refresh_backoff(5, 3600s), 3600s);
  EXPECT_EQ(refresh_backoff(30, 365 * kDay), kDay);
}

TEST(RefreshBackoff, NeverRefreshedAndNeverTriedIsDueAtOnce) {
  const SysTime now = at(1'000'000);
  EXPECT_EQ(next_refresh_due({}, std::nullopt, kDay, now), now);
}

TEST(RefreshBackoff, AfterASuccessDueAnIntervalLater) {
  const SysTime now = at(1'000'000);
  EXPECT_EQ(next_refresh_due({}, at(990'000), kDay, now), at(990'000) + kDay);
  EXPECT_EQ(next_refresh_due({}, at(0), kDay, now), at(kDay.count()));  // overdue: at once
}

// The attack of issue 17 item 10: a remote that keeps failing, a daemon started
// again and again. Each start sees the saved attempts and waits for their backoff.
TEST(RefreshBackoff, AfterFailuresNotBeforeTheBackoffEvenWhenNeverRefreshed) {
  const SysTime tried = at(1'000'000);
  RefreshAttempts a{1'000'000, 1};
  EXPECT_EQ(next_refresh_due(a, std::nullopt, kDay, tried + 60s), tried + 300s);
  a.failures = 4;
  EXPECT_EQ(next_refresh_due(a, std::nullopt, kDay, tried + 60s), tried + 2400s);
  // With a success long ago (an overdue catalog), the backoff decides.
  EXPECT_EQ(next_refresh_due(a, at(0), kDay, tried + 60s), tried + 2400s);
  // A success that is still fresh decides when it is later.
  EXPECT_EQ(next_refresh_due({1'000'000, 1}, tried - 10s, kDay, tried + 60s), tried - 10s + kDay);
}

TEST(RefreshBackoff, ASuccessSinceTheLastAttemptClearsTheFailures) {
  const RefreshAttempts a{1'000'000, 7};
  EXPECT_TRUE(failures_count(a, std::nullopt));
  EXPECT_TRUE(failures_count(a, at(999'999)));
  EXPECT_FALSE(failures_count(a, at(1'000'000)));
  EXPECT_FALSE(failures_count(a, at(1'000'123)));
  EXPECT_FALSE(failures_count({1'000'000, 0}, std::nullopt));
  EXPECT_EQ(next_refresh_due(a, at(1'000'123), kDay, at(1'000'200)), at(1'000'123) + kDay);
}

// A clock set back (or a file from the future) postpones nothing beyond the
// interval or the backoff counted from now.
TEST(RefreshBackoff, TimesInTheFutureCountAsNow) {
  const SysTime now = at(1'000'000);
  EXPECT_EQ(next_refresh_due({5'000'000, 2}, std::nullopt, kDay, now), now + 600s);
  EXPECT_EQ(next_refresh_due({}, at(9'000'000), kDay, now), now + kDay);
}

TEST(RefreshBackoff, FileRoundTripsAndIsStrict) {
  const RefreshAttempts a{1'700'000'000, 3};
  auto back = parse_refresh_attempts(to_text(a));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, a);
  struct Bad {
    const char* text;
    Errc code;
  };
  for (const auto& [text, code] : {
           Bad{"", Errc::malformed},
           Bad{"{", Errc::malformed},
           Bad{"[]", Errc::bad_field},
           Bad{R"({"refresh_version":2,"last_attempt":1,"failures":1})", Errc::unsupported},
           Bad{R"({"refresh_version":1,"last_attempt":1})", Errc::bad_field},
           Bad{R"({"refresh_version":1,"failures":1})", Errc::bad_field},
           Bad{R"({"refresh_version":1,"last_attempt":-1,"failures":1})", Errc::bad_field},
           Bad{R"({"refresh_version":1,"last_attempt":"1","failures":1})", Errc::bad_field},
           Bad{R"({"refresh_version":1,"last_attempt":1,"failures":4294967296})", Errc::bad_field},
           Bad{R"({"refresh_version":1,"last_attempt":1,"failures":1,"x":0})", Errc::bad_field},
           Bad{R"({"refresh_version":1,"last_attempt":1,"last_attempt":2,"failures":1})",
               Errc::malformed},
       }) {
    auto r = parse_refresh_attempts(text);
    ASSERT_FALSE(r) << text;
    EXPECT_EQ(r.error().code, code) << text << ": " << r.error().message;
  }
}

TEST(RefreshBackoff, SavedLoadedAndABadFileSetAside) {
  TempDir dir;
  std::optional<catalog::Error> problem;
  EXPECT_EQ(load_refresh_attempts(dir.path(), &problem), RefreshAttempts{});
  EXPECT_FALSE(problem);

  const RefreshAttempts a{1'700'000'000, 2};
  ASSERT_TRUE(save_refresh_attempts(dir.path(), a));
  EXPECT_EQ(load_refresh_attempts(dir.path(), &problem), a);
  EXPECT_FALSE(problem);

  write_file(dir / kRefreshFileName, "{\"refresh_version\": 1, \"failures\": ");
  EXPECT_EQ(load_refresh_attempts(dir.path(), &problem), RefreshAttempts{});
  ASSERT_TRUE(problem);
  EXPECT_EQ(problem->code, Errc::malformed);
  EXPECT_FALSE(std::filesystem::exists(dir / kRefreshFileName));
  EXPECT_TRUE(std::filesystem::exists(dir / (std::string(kRefreshFileName) + ".bad")));
}

}  // namespace
}  // namespace epbrokerd::core
