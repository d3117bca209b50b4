// epbrokerd's lifecycle on a private bus: idle exit under a stream of calls (every
// call answered, by the instance that is leaving or by the one activated after it),
// DaemonState's PropertiesChanged, finished jobs that stay readable, and the log.
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <random>
#include <set>
#include <thread>

#include "tests/daemon/integration/fixture.hpp"

namespace tests::daemon {
namespace {

using Clock = std::chrono::steady_clock;

std::size_t count_of(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// Records Broker1.DaemonState as PropertiesChanged reports it, from construction on.
class StateLog {
 public:
  explicit StateLog(sdbus::IConnection& conn) {
    const std::string rule = std::string("type='signal',sender='") + kBrokerName + "',path='" +
                             kBrokerPath +
                             "',interface='org.freedesktop.DBus.Properties',"
                             "member='PropertiesChanged'";
    slot_ = conn.addMatch(rule, [this](sdbus::Message& msg) {
      std::string iface;
      std::map<std::string, sdbus::Variant> changed;
      msg >> iface >> changed;
      auto it = changed.find("DaemonState");
      if (iface != kBrokerInterface || it == changed.end()) return;
      std::lock_guard lock(mu_);
      states_.push_back(it->second.get<std::string>());
    });
  }
  std::vector<std::string> states() const {
    std::lock_guard lock(mu_);
    return states_;
  }
  std::string last() const {
    std::lock_guard lock(mu_);
    return states_.empty() ? "" : states_.back();
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> states_;
  sdbus::Slot slot_;
};

// ---- idle exit under load -------------------------------------------------------------

// Several clients call in rounds. Each round starts about one idle timeout after the
// last call of the previous one (a little before or after it, at random), so the
// daemon decides to exit again and again just as calls arrive: they must all be
// answered, by the leaving instance (calls queued for it before it released the
// name) or by a newly activated one. The one documented refusal: a call that would
// open a session may get Busy ("exiting") from the leaving instance, and calling
// again succeeds.
TEST_F(BrokerTest, IdleExitAnswersEveryCallUnderLoad) {
  PrivateBusOptions o;
  o.idle_timeout_sec = 1;
  start(o, /*with_catalog=*/false);
  ASSERT_FALSE(broker_->ListDevices().empty());

  constexpr int kClients = 4;
  constexpr int kRounds = 16;
  constexpr auto kBurst = 150ms;
  std::mutex mu;
  std::vector<std::string> failures;
  std::atomic<int> answered{0};
  std::atomic<int> busy_retries{0};
  auto fail = [&](const std::string& what) {
    std::lock_guard lock(mu);
    failures.push_back(what);
  };

  std::barrier round_end(kClients);
  std::atomic<std::int64_t> round_start_ns{Clock::now().time_since_epoch().count()};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      auto conn = bus_->connect();
      BrokerProxy broker(*conn);
      std::mt19937 rng(static_cast<unsigned>(1000 + c));
      std::uniform_int_distribution<int> offset_ms(-5, 60);
      for (int round = 0; round < kRounds; ++round) {
        // Load shaping, not synchronisation: start near the idle deadline.
        const Clock::time_point base{Clock::duration(round_start_ns.load())};
        std::this_thread::sleep_until(base + 1s + std::chrono::milliseconds(offset_ms(rng)));
        const auto until = Clock::now() + kBurst;
        while (Clock::now() < until) {
          try {
            if (c == 0) {
              // Sessions: opened, then released by the same instance.
              for (int attempt = 0;; ++attempt) {
                try {
                  const auto [session, providers] = broker.RequestSession({});
                  auto proxy = sdbus::createProxy(*conn, kBrokerName, session);
                  proxy->callMethod("Release").onInterface(kSessionInterface);
                  break;
                } catch (const sdbus::Error& e) {
                  if (e.getName() != "org.epbroker.Error.Busy" || attempt > 0 ||
                      e.getMessage().find("exiting") == std::string::npos) {
                    throw;
                  }
                  ++busy_retries;
                }
              }
            } else if (c == 1) {
              (void)broker.ListProviders();
            } else {
              if (broker.ListDevices().empty()) fail("ListDevices returned nothing");
            }
            ++answered;
          } catch (const sdbus::Error& e) {
            fail("client " + std::to_string(c) + " round " + std::to_string(round) + ": " +
                 e.getName() + ": " + e.getMessage());
          }
        }
        round_end.arrive_and_wait();
        if (c == 0) round_start_ns = Clock::now().time_since_epoch().count();
        round_end.arrive_and_wait();
      }
    });
  }
  for (auto& t : clients) t.join();

  EXPECT_TRUE(failures.empty()) << failures.size() << " calls failed, first: " << failures.front();
  EXPECT_GT(answered.load(), kRounds * kClients);
  // The load did make the daemon exit (and be activated again) several times.
  const std::string log = bus_->log();
  const auto exits = count_of(log, "idle for 1 s: exiting");
  EXPECT_GE(exits, 2U) << "the daemon never exited under the load; the test proved nothing";
  EXPECT_GE(count_of(log, " starting (pid "), exits);
  std::cout << "[ figures ] " << answered << " calls answered, " << exits << " idle exits, "
            << busy_retries << " RequestSession retried after Busy(exiting)\n";
}

// ---- DaemonState -------------------------------------------------------------------------

TEST_F(BrokerTest, DaemonStateChangesAreSignalled) {
  PrivateBusOptions o;
  o.idle_timeout_sec = 2;
  start(o, /*with_catalog=*/false);
  StateLog log(*conn_);
  EXPECT_EQ(broker_->DaemonState(), "idle");  // activates

  const auto [session, providers] = broker_->RequestSession({});
  ASSERT_TRUE(wait_until([&] { return log.last() == "busy"; }, 5s)) << "no busy signal";
  EXPECT_EQ(broker_->DaemonState(), "busy");

  auto proxy = sdbus::createProxy(*conn_, kBrokerName, session);
  proxy->callMethod("Release").onInterface(kSessionInterface);
  ASSERT_TRUE(wait_until([&] { return log.last() == "idle"; }, 5s)) << "no idle signal";
  EXPECT_EQ(broker_->DaemonState(), "idle");

  // Idle for the timeout: "stopping" is signalled while the daemon still owns the
  // name (so a watcher of the well-known name sees it), then it leaves.
  ASSERT_TRUE(wait_until([&] { return log.last() == "stopping"; }, 15s)) << "no stopping signal";
  EXPECT_TRUE(wait_until([&] { return !bus_->broker_running(); }, 10s));

  // Each change once, in order (an instance's first "idle" may precede the watch).
  auto states = log.states();
  if (!states.empty() && states.front() == "idle") states.erase(states.begin());
  EXPECT_EQ(states, (std::vector<std::string>{"busy", "idle", "stopping"}));

  // The log: plain lines on stderr (bus.log) with level names.
  const std::string text = bus_->log();
  EXPECT_NE(text.find(" info: epbrokerd " EPBROKER_EXPECTED_VERSION " starting (pid "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(" info: authorization: no polkit on this bus; only root may install"),
            std::string::npos);
  EXPECT_NE(text.find(" debug: session 1: opened by "), std::string::npos);
  EXPECT_NE(text.find(" info: idle for 2 s: exiting"), std::string::npos);
  EXPECT_NE(text.find(" info: stopped"), std::string::npos);
}

// ---- finished jobs -----------------------------------------------------------------------

// An install of a package that is installed already finishes before EnsureProvider
// returns, so before any client could subscribe to its Finished: its object still
// answers State (and Finished went out once, right after it was published), and it
// stays while many newer jobs finish (kept by time, not by count).
TEST_F(CatalogTest, JobsFinishedBeforeTheirObjectIsPublishedStayReadable) {
  start();
  refresh();
  install(kTestEp);
  JobLog log(*conn_);

  std::vector<std::string> jobs;
  for (int i = 0; i < 40; ++i) {
    jobs.push_back(broker_->EnsureProvider(kTestEp));
    // Subscribing after the reply is too late for Finished: read State.
    EXPECT_EQ(job_property(*conn_, jobs.back(), "State").get<std::string>(), "done");
  }
  EXPECT_EQ(std::set<std::string>(jobs.begin(), jobs.end()).size(), jobs.size());
  for (const auto& job : jobs) {
    SCOPED_TRACE(job);
    EXPECT_EQ(job_property(*conn_, job, "State").get<std::string>(), "done");
    EXPECT_EQ(job_property(*conn_, job, "Error").get<std::string>(), "");
    EXPECT_EQ(job_property(*conn_, job, "Target").get<std::string>(), kTestEp);
  }
  // A watcher of every job path (JobLog) got each one's Finished exactly once.
  ASSERT_TRUE(wait_until([&] { return log.finished(jobs.back()).has_value(); }, 5s));
  for (const auto& job : jobs) {
    std::size_t finished = 0;
    for (const auto& e : log.events(job)) finished += e.member == "Finished" ? 1U : 0U;
    EXPECT_EQ(finished, 1U) << job;
  }
  const std::string text = bus_->log();
  EXPECT_NE(text.find("install test-ep started for " + conn_->getUniqueName()), std::string::npos)
      << text;
  EXPECT_NE(text.find("install test-ep done"), std::string::npos);
}

}  // namespace
}  // namespace tests::daemon
