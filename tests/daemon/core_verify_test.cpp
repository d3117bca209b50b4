// Broker::start_verify's rule (issue 17, item 4), on a real Broker with an empty
// store and a test clock: one verification at a time; root, or a caller the
// authorizer allows org.epbroker.manage, starts a new one at any time; anyone else
// at most one per kVerifyInterval, and otherwise gets the latest result (a job
// done at once); while the daemon stops, the latest result or Busy "exiting". With
// an authorizer that must ask (polkit), the call notes the question instead of
// deciding, and decides with the answer.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "common/bus_errors.hpp"
#include "daemon/core/broker.hpp"
#include "tests/support/temp_dir.hpp"

namespace epbrokerd::core {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr uid_t kNobody = 65534;

fs::path source_dir() {
  if (const char* dir = std::getenv("EPBROKER_SOURCE_DIR"); dir != nullptr && *dir != '\0') {
    return dir;
  }
  return fs::path(__FILE__).parent_path().parent_path().parent_path();
}

// Like polkit: root at once; anyone else only with an answer in the call's
// CallAuthorization, else the question is noted. Counts the questions noted.
class AskingAuthorizer final : public Authorizer {
 public:
  Result<void> check(const RequestContext& ctx, Action action) override {
    return decide(ctx, action, true);
  }
  Result<void> check_quietly(const RequestContext& ctx, Action action) override {
    return decide(ctx, action, false);
  }
  std::atomic<int> noted{0};
  std::atomic<bool> last_interactive{true};

 private:
  Result<void> decide(const RequestContext& ctx, Action action, bool interactive) {
    if (ctx.uid == 0) return {};
    if (!ctx.authorization) return fail(Errc::NotAuthorized, "cannot ask");
    if (const auto* a = ctx.authorization->answer(action)) return *a;
    ctx.authorization->need(action, interactive);
    ++noted;
    last_interactive = interactive;
    return fail(Errc::NotAuthorized, "not asked yet");
  }
};

class VerifyRuleTest : public ::testing::Test {
 protected:
  void start(Authorizer& authorizer) {
    BrokerOptions o;
    o.config.paths.state_dir = tmp_.path() / "state";
    o.config.paths.store_root = o.config.paths.state_dir;
    o.config.paths.cache_dir = tmp_.path() / "cache";
    const fs::path machine = source_dir() / "tests/data/sysfs/cpu-server";
    o.roots = {machine / "sys", machine / "proc", machine / "dev", "x86_64"};
    o.fetcher_factory = [](const config::Remote&) -> std::unique_ptr<catalog::tuf::Fetcher> {
      return nullptr;
    };
    o.authorizer = &authorizer;
    o.now = [this] { return clock_.load(); };
    auto b = Broker::create(std::move(o), nullptr);
    ASSERT_TRUE(b) << b.error().message;
    broker_ = std::move(*b);
  }

  // Waits for job `id` to end; what it found.
  VerifyRun run_of(std::uint64_t id) {
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (std::chrono::steady_clock::now() < deadline) {
      if (auto r = broker_->verify_results(id)) return *r;
      std::this_thread::sleep_for(2ms);
    }
    ADD_FAILURE() << "verify job " << id << " did not end";
    return {};
  }

  std::uint64_t start_ok(const RequestContext& ctx, bool may_start = true) {
    auto id = broker_->start_verify(ctx, may_start);
    EXPECT_TRUE(id) << id.error().message;
    return id.value_or(0);
  }

  tests::support::TempDir tmp_;
  std::atomic<std::int64_t> clock_{1'000'000};
  std::unique_ptr<Broker> broker_;
  const RequestContext root_{0, ":1.1"};
  const RequestContext nobody_{kNobody, ":1.2"};
};

TEST_F(VerifyRuleTest, OthersThanRootStartOnePerIntervalAndGetTheLatestResult) {
  UidAuthorizer authorizer;
  start(authorizer);
  const std::int64_t interval = kVerifyInterval.count();

  // While the daemon stops, nothing to give yet: Busy "exiting".
  auto none = broker_->start_verify(nobody_, /*may_start=*/false);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, Errc::Busy);
  EXPECT_EQ(none.error().message, common::kExitingMessage);

  // 1. The first verification: anyone may start it.
  const auto first = start_ok(nobody_);
  EXPECT_EQ(run_of(first).finished_at, clock_.load());

  // 2. Within the interval: the latest result, as a job done at once.
  const auto first_at = clock_.load();
  clock_ += interval - 1;
  const auto again = start_ok(nobody_);
  EXPECT_NE(again, first);
  EXPECT_EQ(broker_->jobs().find(again)->snapshot().state, JobState::done);
  EXPECT_EQ(run_of(again).finished_at, first_at);

  // 3. Root: a new one at any time; it is the latest result from then on.
  const auto by_root = start_ok(root_);
  const auto root_at = clock_.load();
  EXPECT_EQ(run_of(by_root).finished_at, root_at);
  EXPECT_EQ(run_of(start_ok(nobody_)).finished_at, root_at);

  // 4. The interval counts from the newest start (root's): past it, a new one.
  clock_ += interval;
  EXPECT_EQ(run_of(start_ok(nobody_)).finished_at, clock_.load());

  // 5. A clock set back counts as the interval having passed.
  clock_ -= 10 * interval;
  EXPECT_EQ(run_of(start_ok(nobody_)).finished_at, clock_.load());

  // 6. While the daemon stops: the latest result, never a new verification.
  const auto latest = clock_.load();
  clock_ += 2 * interval;
  EXPECT_EQ(run_of(start_ok(root_, /*may_start=*/false)).finished_at, latest);

  // The results of a job no longer kept: NotFound.
  for (std::size_t i = 0; i <= VerifyRuns::kKept; ++i) (void)run_of(start_ok(nobody_));
  auto gone = broker_->verify_results(first);
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, Errc::NotFound);
}

TEST_F(VerifyRuleTest, AnAskingAuthorizerIsAskedQuietlyAndOnlyWhenItMatters) {
  AskingAuthorizer authorizer;
  start(authorizer);
  auto call = [&](std::optional<Result<void>> answer) {
    RequestContext ctx = nobody_;
    ctx.authorization = std::make_shared<CallAuthorization>();
    if (answer) ctx.authorization->set_answer(Action::manage, *answer);
    return std::pair(broker_->start_verify(ctx), ctx.authorization);
  };

  // 1. No verification yet: started without asking anyone.
  auto [first, a1] = call(std::nullopt);
  ASSERT_TRUE(first);
  EXPECT_EQ(authorizer.noted.load(), 0);
  const auto first_at = run_of(*first).finished_at;

  // 2. Within the interval: the question is noted (without user interaction),
  //    the call answers nothing yet.
  clock_ += 10;
  auto [asking, a2] = call(std::nullopt);
  ASSERT_FALSE(asking);
  EXPECT_EQ(asking.error().code, Errc::NotAuthorized);
  EXPECT_TRUE(a2->wants_asking());
  EXPECT_EQ(a2->question()->action, Action::manage);
  EXPECT_FALSE(authorizer.last_interactive.load());

  // 3. Asked and refused: the latest result. Asked and allowed: a new one.
  auto [refused, a3] = call(fail(Errc::NotAuthorized, "no"));
  ASSERT_TRUE(refused);
  EXPECT_EQ(run_of(*refused).finished_at, first_at);
  auto [allowed, a4] = call(Result<void>());
  ASSERT_TRUE(allowed);
  EXPECT_EQ(run_of(*allowed).finished_at, clock_.load());
}

}  // namespace
}  // namespace epbrokerd::core
