// kill -9 of epbrokerd during lifecycle operations, as crash_test.cpp does for
// installs: rounds alternate between
//   (a) an update: a new version published, refreshed, Update([name]), and the
//       kill after a random delay (download, verify, extract, commit, the
//       collection of the version beyond keep_versions: wherever it lands);
//   (b) a collection: RemoveProvider(name) (every version deleted), or a version
//       left only to a session's lease, whose holder is killed while
//       CollectGarbage runs; the kill after a random delay.
// After each kill the next call activates a fresh daemon: every tree verifies,
// staging/ is empty, each package's ListProviders row lists exactly the trees
// under store/NAME/, and the operation, asked again, completes. The seed is
// printed (and can be set with EPBROKER_CRASH_SEED) so a failing round can be
// replayed.
#include <signal.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "tests/daemon/integration/fixture.hpp"
#include "tests/daemon/integration/hostile_repo.hpp"
#include "tests/daemon/integration/proc_stats.hpp"

namespace tests::daemon {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Options = std::map<std::string, sdbus::Variant>;

class LifecycleCrashTest : public CatalogTest {
 protected:
  // The versions ListProviders lists for `name` (none when not installed).
  std::set<std::string> listed(const std::string& name) {
    std::set<std::string> out;
    const Dict row = provider(name);
    if (auto it = row.find("versions"); it != row.end()) {
      for (const auto& v : it->second.get<Dicts>()) out.insert(str(v, "version"));
    }
    return out;
  }
  // The trees under store/NAME/.
  std::set<std::string> trees(const std::string& name) const {
    std::set<std::string> out;
    std::error_code ec;
    for (const auto& d : fs::directory_iterator(bus_->store_dir() / name, ec)) {
      out.insert(d.path().filename().string());
    }
    return out;
  }
  bool staging_empty() const {
    const fs::path staging = bus_->state_dir() / "staging";
    return !fs::exists(staging) || fs::is_empty(staging);
  }
  // Update([name]) and its job, if one was started; fails unless it ends "done".
  void update(const std::string& name) {
    const Dicts changes = broker_->Update({name}, Options{});
    ASSERT_EQ(changes.size(), 1U);
    if (auto it = changes[0].find("job"); it != changes[0].end()) {
      const std::string job = it->second.get<sdbus::ObjectPath>();
      ASSERT_EQ(wait_job(*conn_, job), "done")
          << job_property(*conn_, job, "ErrorMessage").get<std::string>();
    }
  }
  // kill -9 of the daemon; waits until it is gone and the bus has noticed (the
  // name has no owner, or a new one that a racing call activated).
  void kill_daemon() {
    const auto pid = bus_->broker_pid();
    ASSERT_TRUE(pid.has_value());
    ASSERT_EQ(::kill(*pid, SIGKILL), 0);
    ASSERT_TRUE(wait_until([&] { return !alive(*pid); }, 10s)) << "pid " << *pid;
    ASSERT_TRUE(wait_until(
        [&] {
          const auto now = bus_->broker_pid();
          return !now || *now != *pid;
        },
        10s));
  }
  // What must hold after any kill, once the next call activated a new daemon.
  void check_recovered() {
    const Dicts verify = broker_->Verify();
    for (const auto& v : verify) {
      EXPECT_TRUE(v.at("ok").get<bool>()) << str(v, "name") << " " << str(v, "version");
    }
    EXPECT_TRUE(staging_empty()) << "staging/ not empty";
    for (const std::string name : {kBulkEp, kTestEp}) {
      EXPECT_EQ(listed(name), trees(name)) << name;
    }
  }
};

TEST_F(LifecycleCrashTest, KillNineDuringUpdatesAndCollectionsLeavesTheStoreVerifiable) {
  start();
  // Updates are what the test starts, not the daemon after a refresh.
  add_daemon_settings(*bus_, "auto_update = off\n");
  refresh();
  install(kBulkEp);
  install(kTestEp);
  std::uint32_t seed = 20261122;
  if (const char* s = std::getenv("EPBROKER_CRASH_SEED")) {
    seed = static_cast<std::uint32_t>(std::strtoul(s, nullptr, 10));
  }
  std::cout << "EPBROKER_CRASH_SEED=" << seed << "\n";
  std::mt19937 rng(seed);
  // An update of bulk-ep (4 MiB, incompressible) takes from a few to tens of
  // milliseconds from the call to the collection of the old version, test-ep's
  // less; a removal (its fsyncs) from a few to a hundred; the collection after a
  // lease ends about one to ten, all of them longer on a loaded machine. The
  // delays are log-uniform from 50 us to 100 ms: as many in each decade, so some
  // land inside each operation whatever its speed here.
  std::uniform_real_distribution<double> log_delay(std::log(50.0), std::log(100'000.0));
  auto delay = [&] {
    std::this_thread::sleep_for(std::chrono::microseconds(std::lround(std::exp(log_delay(rng)))));
  };

  std::map<std::string, int> minor = {{kBulkEp, 0}, {kTestEp, 1}};
  auto next_version = [&](const std::string& name) {
    return (name == kBulkEp ? "1." : "0.") + std::to_string(++minor[name]) + ".0";
  };
  auto publish_and_update = [&](const std::string& name) {
    const std::string v = next_version(name);
    catalog_->publish_version(name, v);
    refresh();
    update(name);
    EXPECT_EQ(str(provider(name), "version"), v);
    return v;
  };

  constexpr int kRounds = 24;
  int interrupted = 0;  // kills that landed before the operation was complete
  std::map<std::string, std::pair<int, int>> by_kind;  // kind -> (interrupted, kills)
  for (int round = 0; round < kRounds; ++round) {
    const std::string name = (round / 2) % 2 == 0 ? kBulkEp : kTestEp;
    const bool updating = round % 2 == 0;
    const bool removing = !updating && (round / 4) % 2 == 0;
    const std::string kind = updating ? "update" : removing ? "remove" : "lease end + gc";
    SCOPED_TRACE("round " + std::to_string(round) + ", " + name + ", " + kind);
    auto count = [&](bool interrupting) {
      interrupted += interrupting;
      by_kind[kind].first += interrupting;
      ++by_kind[kind].second;
    };
    if (str(provider(name), "state") != "ready") install(name);

    if (updating) {
      // (a) The update, killed.
      const std::string v = next_version(name);
      catalog_->publish_version(name, v);
      refresh();
      const Dicts changes = broker_->Update({name}, Options{});
      ASSERT_EQ(changes.size(), 1U);
      EXPECT_EQ(str(changes[0], "to"), v);
      delay();
      kill_daemon();
      const bool busy = !staging_empty();

      check_recovered();
      count(busy || str(provider(name), "version") != v);
      // Asked again, the update completes.
      update(name);
      EXPECT_EQ(str(provider(name), "version"), v);
      EXPECT_EQ(listed(name), trees(name));
      continue;
    }

    // (b) A collection, killed.
    std::set<std::string> gone;  // versions that must be gone once it completes
    std::optional<Child> holder;
    if (removing) {
      gone = trees(name);
    } else {
      // A session leases the current version; two updates later it is beyond
      // keep_versions (1) and kept only for that lease.
      const std::string leased = str(provider(name), "version");
      holder = start_child({bus_client_path().string(), bus_->address(), "session", name});
      ASSERT_TRUE(holder->read_line(30s).value_or("").starts_with("session "));
      ASSERT_EQ(holder->read_line(10s).value_or(""), "provider " + name + " ready");
      publish_and_update(name);
      publish_and_update(name);
      ASSERT_TRUE(trees(name).contains(leased));
      gone = {leased};
    }
    auto conn = bus_->connect();
    BrokerProxy other(*conn);
    std::string call_error = "(not called)";
    std::jthread caller([&] {
      call_error = error_name_of([&] {
        if (removing) {
          other.RemoveProvider(name);
        } else {
          (void)other.CollectGarbage();
        }
      });
    });
    if (holder) holder->kill_and_wait(SIGKILL);  // its lease ends: a collection
    delay();
    kill_daemon();
    bool busy = !staging_empty();
    for (const auto& v : gone) busy |= trees(name).contains(v);
    caller.join();
    count(busy || !call_error.empty());

    check_recovered();
    // Asked again, it completes: the removal (NotFound when the new daemon's
    // start-up collection already finished it), the collection.
    if (removing) {
      const std::string again = error_name_of([&] { broker_->RemoveProvider(name); });
      EXPECT_TRUE(again.empty() || again == "org.epbroker.Error.NotFound") << again;
    }
    EXPECT_EQ(error_name_of([&] { (void)broker_->CollectGarbage(); }), "");
    for (const auto& v : gone) EXPECT_FALSE(trees(name).contains(v)) << v;
    EXPECT_EQ(listed(name), trees(name));
  }
  std::cout << interrupted << " of " << kRounds << " kills interrupted an operation (";
  for (const auto& [kind, n] : by_kind) {
    std::cout << (kind == by_kind.begin()->first ? "" : ", ") << kind << " " << n.first << "/"
              << n.second;
  }
  std::cout << ")\n";
  // The test means little if no kill landed inside an operation.
  EXPECT_GT(interrupted, 0);
  check_recovered();
}

}  // namespace
}  // namespace tests::daemon
