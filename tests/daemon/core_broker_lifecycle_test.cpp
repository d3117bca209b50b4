// The package lifecycle through a real Broker (real store, a signed TUF
// repository on disk, the cpu-server hardware fixture): updates reach new
// sessions, the old version goes with its last lease, hold, rollback,
// downgrade, history, revocation and re-publishing, ORT-safe grants, automatic
// updates and metered connections, garbage collection bounds, leases kept
// across a restart, and concurrent lifecycle operations on one package.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <optional>
#include <thread>

#include "catalog/ep_metadata.hpp"
#include "catalog/package/pack.hpp"
#include "catalog/tuf/dir_fetcher.hpp"
#include "catalog/tuf/repository.hpp"
#include "daemon/core/broker.hpp"
#include "tests/support/temp_dir.hpp"

namespace epbrokerd::core {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using common::HistoryAction;
using common::ProviderState;
using common::VersionRole;

constexpr const char* kUrl = "http://repo.test/";
constexpr const char* kEp = "test-ep";

fs::path source_dir() {
  if (const char* dir = std::getenv("EPBROKER_SOURCE_DIR"); dir != nullptr && *dir != '\0') {
    return dir;
  }
  return fs::path(__FILE__).parent_path().parent_path().parent_path();
}

catalog::EpMetadata metadata(const std::string& version, const std::string& ort_min) {
  nlohmann::json custom = {{"epbroker",
                            {{"schema", 1},
                             {"name", kEp},
                             {"version", version},
                             {"ep_names", {"TestEp"}},
                             {"vendor", "epbroker tests"},
                             {"arch", "x86_64"},
                             {"ort_min", ort_min},
                             {"library", "lib/libtest.so"},
                             {"supports", {{{"type", "cpu"}}}}}}};
  auto meta = catalog::parse_ep_metadata(custom);
  EXPECT_TRUE(meta) << meta.error().message;
  return *meta;
}

class LifecycleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto repo = catalog::tuf::Repository::create(now_tp());
    ASSERT_TRUE(repo) << repo.error().message;
    repo_ = std::move(*repo);
  }
  void TearDown() override { broker_.reset(); }

  static catalog::tuf::TimePoint now_tp() {
    return std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
  }
  static std::string target(const std::string& version) {
    return std::string(kEp) + "/" + kEp + "-" + version + ".tar.zst";
  }

  void add(const std::string& version, const std::string& ort_min = "1.20.0") {
    const fs::path dir = tmp_ / ("src-" + version);
    fs::create_directories(dir / "lib");
    tests::support::write_file(dir / "lib/libtest.so", "library " + version);
    const fs::path package = tmp_ / ("pkg-" + version + ".tar.zst");
    const auto meta = metadata(version, ort_min);
    auto packed = catalog::package::pack_directory(dir, meta, package);
    ASSERT_TRUE(packed) << packed.error().message;
    auto added = repo_.add_target(target(version), tests::support::read_file(package),
                                  catalog::to_json(meta));
    ASSERT_TRUE(added) << added.error().message;
  }
  void withdraw(const std::string& version) { ASSERT_TRUE(repo_.remove_target(target(version))); }
  void publish() {
    auto ok = repo_.publish(catalog::tuf::directory_writer(tmp_ / "repo"), now_tp());
    ASSERT_TRUE(ok) << ok.error().message;
  }

  void start(config::AutoUpdate mode = config::AutoUpdate::off, std::size_t keep = 1) {
    broker_.reset();
    BrokerOptions o;
    o.config.paths.state_dir = tmp_ / "state";
    o.config.paths.store_root = o.config.paths.state_dir;
    o.config.paths.cache_dir = tmp_ / "cache";
    o.config.daemon.auto_update = mode;
    o.config.daemon.keep_versions = keep;
    config::Remote remote;
    remote.name = "test";
    remote.primary = {std::string(kUrl) + "metadata/", std::string(kUrl) + "targets/"};
    remote.trusted_root = tmp_ / "repo/metadata/1.root.json";
    remote.allow_http = true;
    o.config.remotes.push_back(remote);
    const fs::path machine = source_dir() / "tests/data/sysfs/cpu-server";
    o.roots = {machine / "sys", machine / "proc", machine / "dev", "x86_64"};
    o.fetcher_factory = [this](const config::Remote&) {
      return std::make_unique<catalog::tuf::DirFetcher>(kUrl, tmp_ / "repo");
    };
    o.authorizer = &authorizer_;
    o.metered = [this] { return metered_.load(); };
    o.now = [this] { return clock_.load(); };
    auto b = Broker::create(std::move(o), nullptr);
    ASSERT_TRUE(b) << b.error().message;
    broker_ = std::move(*b);
  }

  JobState finish(std::uint64_t id) {
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (std::chrono::steady_clock::now() < deadline) {
      auto job = broker_->jobs().find(id);
      if (!job) return JobState::failed;
      if (const auto s = job->snapshot(); is_final(s.state)) return s.state;
      std::this_thread::sleep_for(5ms);
    }
    ADD_FAILURE() << "job " << id << " did not end";
    return JobState::failed;
  }
  // Waits for every install job to end (automatic updates start their own).
  void settle() {
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (broker_->jobs().active_count() > 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(5ms);
    }
    ASSERT_EQ(broker_->jobs().active_count(), 0U);
  }
  void refresh() {
    auto id = broker_->refresh(root_);
    ASSERT_TRUE(id) << id.error().message;
    ASSERT_EQ(finish(*id), JobState::done);
    settle();
  }
  void install(const std::string& version = "", bool allow_older = false) {
    auto id = broker_->install_provider(root_, kEp, {version, allow_older});
    ASSERT_TRUE(id) << id.error().message;
    ASSERT_EQ(finish(*id), JobState::done);
  }
  void update() {
    auto changes = broker_->update(root_, {}, false);
    ASSERT_TRUE(changes) << changes.error().message;
    for (const auto& c : *changes) {
      if (c.job) {
        ASSERT_EQ(finish(c.job), JobState::done);
      }
    }
  }

  ProviderView row() {
    for (auto& p : broker_->providers()) {
      if (p.name == kEp) return p;
    }
    ADD_FAILURE() << "no row for " << kEp;
    return {};
  }
  std::string granted(const std::string& ort = "", const std::string& owner = ":1.50") {
    SessionRequest r;
    r.ort_version = ort;
    auto grant = broker_->request_session(RequestContext{1000, owner}, r);
    EXPECT_TRUE(grant) << grant.error().message;
    if (!grant) return "";
    sessions_[owner] = grant->session;
    for (const auto& p : grant->providers) {
      if (p.name == kEp && p.state == ProviderState::ready) return p.version;
    }
    return "(none)";
  }
  void release(const std::string& owner = ":1.50") {
    ASSERT_TRUE(broker_->release_session(RequestContext{1000, owner}, sessions_.at(owner)));
  }
  std::vector<std::string> trees() {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& d : fs::directory_iterator(tmp_ / "state/store" / kEp, ec)) {
      out.push_back(d.path().filename().string());
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  std::optional<VersionRole> role_of(const std::string& version) {
    for (const auto& v : row().versions) {
      if (v.version == version) return v.role;
    }
    return std::nullopt;
  }

  tests::support::TempDir tmp_;
  catalog::tuf::Repository repo_;
  UidAuthorizer authorizer_;
  const RequestContext root_{0, ":1.1"};
  std::atomic<bool> metered_{false};
  std::atomic<std::int64_t> clock_{1'800'000'000};
  std::map<std::string, std::uint64_t> sessions_;
  std::unique_ptr<Broker> broker_;
};

// The report: 1.3.0 installed next to 1.2.0 must reach new sessions, and
// 1.10.0 must be newer than 1.9.0 (not as text).
TEST_F(LifecycleTest, AnUpdateReachesNewSessionsAndTheOldVersionGoesWithItsLastLease) {
  for (const auto& [old_v, new_v] : {std::pair{"1.2.0", "1.3.0"}, std::pair{"1.9.0", "1.10.0"}}) {
    SCOPED_TRACE(std::string(old_v) + " -> " + new_v);
    TearDown();
    fs::remove_all(tmp_ / "state");
    SetUp();
    add(old_v);
    publish();
    start();
    refresh();
    install();
    EXPECT_EQ(granted("", ":1.60"), old_v);  // an app keeps using the old one

    add(new_v);
    publish();
    refresh();
    EXPECT_EQ(row().update_available, new_v);
    install();  // install NAME: the newest compatible version
    const auto r = row();
    EXPECT_EQ(r.version, new_v);
    EXPECT_TRUE(r.update_available.empty());
    EXPECT_EQ(granted("", ":1.61"), new_v);

    // keep_versions 1: the old one stays for rollback, then goes once it is
    // neither kept nor leased.
    EXPECT_EQ(role_of(old_v), VersionRole::rollback);
    EXPECT_EQ(trees().size(), 2U);
    release(":1.60");
    release(":1.61");
    EXPECT_EQ(trees().size(), 2U);  // still the rollback version
    ASSERT_TRUE(broker_->collect_garbage(root_));
    EXPECT_EQ(trees().size(), 2U);
  }
}

TEST_F(LifecycleTest, TwentyUpdatesLeaveAtMostKeepVersionsPlusOneTrees) {
  for (std::size_t keep : {1U, 3U}) {
    SCOPED_TRACE("keep_versions " + std::to_string(keep));
    TearDown();
    fs::remove_all(tmp_ / "state");
    SetUp();
    add("1.0.0");
    publish();
    start(config::AutoUpdate::off, keep);
    refresh();
    install();
    for (int i = 1; i <= 20; ++i) {
      const std::string v = "1." + std::to_string(i) + ".0";
      add(v);
      publish();
      refresh();
      update();
      ASSERT_EQ(row().version, v);
      EXPECT_LE(trees().size(), keep + 1) << "after " << v;
    }
    EXPECT_EQ(trees().size(), keep + 1);
  }
}

TEST_F(LifecycleTest, HoldRollbackDowngradeAndHistory) {
  add("1.2.0");
  publish();
  start();
  refresh();
  install();
  add("1.3.0");
  publish();
  refresh();

  // Hold: update skips it, says why, and changes nothing.
  ASSERT_TRUE(broker_->hold(root_, kEp));
  auto changes = broker_->update(root_, {kEp}, false);
  ASSERT_TRUE(changes);
  ASSERT_EQ(changes->size(), 1U);
  EXPECT_EQ((*changes)[0].to, "1.2.0");
  EXPECT_NE((*changes)[0].reason.find("held"), std::string::npos);
  EXPECT_EQ((*changes)[0].job, 0U);
  ASSERT_TRUE(broker_->unhold(root_, kEp));

  // Dry run: lists the change, starts nothing.
  changes = broker_->update(root_, {}, true);
  ASSERT_TRUE(changes);
  ASSERT_EQ(changes->size(), 1U);
  EXPECT_EQ((*changes)[0].from, "1.2.0");
  EXPECT_EQ((*changes)[0].to, "1.3.0");
  EXPECT_EQ(row().version, "1.2.0");
  EXPECT_EQ(trees(), std::vector<std::string>{"1.2.0"});

  update();
  EXPECT_EQ(row().version, "1.3.0");

  // Rollback: the previous version is current again, and held.
  auto back = broker_->rollback(root_, kEp);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->from, "1.3.0");
  EXPECT_EQ(back->to, "1.2.0");
  EXPECT_EQ(row().version, "1.2.0");
  EXPECT_TRUE(row().held);
  EXPECT_EQ(granted(), "1.2.0");

  // A downgrade without --allow-older is refused, saying so; nothing changes.
  ASSERT_TRUE(broker_->unhold(root_, kEp));
  update();
  ASSERT_EQ(row().version, "1.3.0");
  auto refused = broker_->install_provider(root_, kEp, {"1.2.0", false});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Errc::InvalidArgument);
  EXPECT_NE(refused.error().message.find("--allow-older"), std::string::npos);
  EXPECT_EQ(row().version, "1.3.0");
  install("1.2.0", true);
  EXPECT_EQ(row().version, "1.2.0");
  EXPECT_TRUE(row().held);

  // An unknown version: NotFound, listing what there is.
  auto unknown = broker_->install_provider(root_, kEp, {"9.9.9", false});
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, Errc::NotFound);
  EXPECT_NE(unknown.error().message.find("1.2.0, 1.3.0"), std::string::npos)
      << unknown.error().message;
  EXPECT_EQ(broker_->hold(root_, "no-such-ep").error().code, Errc::NotFound);

  // The history, persisted: the same after a restart.
  std::vector<std::string> seen;
  for (const auto& e : broker_->history(kEp)) {
    seen.push_back(std::string(common::history_action_name(e.action)) + " " + e.from + ">" + e.to +
                   " " + e.result);
  }
  const std::vector<std::string> expected = {"install >1.2.0 ok",       "hold 1.2.0>1.2.0 ok",
                                             "unhold 1.2.0>1.2.0 ok",   "update 1.2.0>1.3.0 ok",
                                             "rollback 1.3.0>1.2.0 ok", "unhold 1.2.0>1.2.0 ok",
                                             "update 1.2.0>1.3.0 ok",   "downgrade 1.3.0>1.2.0 ok"};
  EXPECT_EQ(seen, expected);
  start();
  EXPECT_EQ(broker_->history(kEp).size(), expected.size());
  EXPECT_EQ(row().version, "1.2.0");
  EXPECT_TRUE(row().held);
}

TEST_F(LifecycleTest, RevocationThenRepublish) {
  add("1.2.0");
  publish();
  start();
  refresh();
  install();
  add("1.3.0");
  publish();
  refresh();
  update();
  ASSERT_EQ(row().version, "1.3.0");

  // 1.3.0 withdrawn: revoked, never granted; 1.2.0 (kept) is current again.
  withdraw("1.3.0");
  publish();
  refresh();
  EXPECT_EQ(row().version, "1.2.0");
  EXPECT_EQ(role_of("1.3.0"), VersionRole::revoked);
  EXPECT_EQ(granted(), "1.2.0");
  bool revoke_seen = false;
  for (const auto& e : broker_->history(kEp)) revoke_seen |= e.action == HistoryAction::revoke;
  EXPECT_TRUE(revoke_seen);

  // Re-published: no longer revoked (kept: it was current before 1.2.0), and an
  // update makes it current again (already in the store: no download).
  add("1.3.0");
  publish();
  refresh();
  EXPECT_EQ(role_of("1.3.0"), VersionRole::rollback);
  update();
  EXPECT_EQ(row().version, "1.3.0");

  // Everything withdrawn: the package shows revoked and no session gets it.
  withdraw("1.2.0");
  withdraw("1.3.0");
  publish();
  refresh();
  EXPECT_EQ(row().state, ProviderState::revoked);
  EXPECT_EQ(granted(), "(none)");
}

TEST_F(LifecycleTest, AnAppWithAnOlderOrtKeepsTheVersionItCanLoad) {
  add("1.2.0", "1.29.0");
  publish();
  start();
  refresh();
  install();
  add("1.3.0", "1.30.0");
  publish();
  refresh();
  update();
  EXPECT_EQ(granted("1.30.0", ":1.70"), "1.3.0");
  EXPECT_EQ(granted("1.29.0", ":1.71"), "1.2.0");
  EXPECT_EQ(granted("1.28.0", ":1.72"), "(none)");
  release(":1.70");
  release(":1.71");
  release(":1.72");

  // Two more updates: 1.2.0 is no longer the rollback version, but it stays
  // while apps with ORT 1.29 keep asking, and its reason says so.
  add("1.4.0", "1.30.0");
  add("1.5.0", "1.30.0");
  publish();
  refresh();
  update();
  ASSERT_EQ(row().version, "1.5.0");
  EXPECT_EQ(role_of("1.2.0"), VersionRole::older_ort);
  EXPECT_EQ(granted("1.29.0", ":1.73"), "1.2.0");
  release(":1.73");

  // keep_for_older_ort_days (30) after the last such request, it goes.
  clock_ += 31 * 86400;
  ASSERT_TRUE(broker_->collect_garbage(root_));
  EXPECT_FALSE(role_of("1.2.0"));
  EXPECT_EQ(granted("1.29.0", ":1.74"), "(none)");
}

TEST_F(LifecycleTest, AutomaticUpdatesInstallDownloadAndWaitWhileMetered) {
  add("1.2.0");
  publish();
  start(config::AutoUpdate::install);
  refresh();
  install();
  add("1.3.0");
  publish();

  // Metered: nothing is downloaded.
  metered_ = true;
  refresh();
  EXPECT_EQ(row().version, "1.2.0");
  EXPECT_EQ(row().update_available, "1.3.0");
  EXPECT_EQ(trees(), std::vector<std::string>{"1.2.0"});

  // Not metered: installed and current, by the daemon (uid 0).
  metered_ = false;
  refresh();
  EXPECT_EQ(row().version, "1.3.0");
  const auto h = broker_->history(kEp);
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h.back().action, HistoryAction::update);
  EXPECT_EQ(h.back().uid, 0U);

  // A held package is not updated automatically.
  ASSERT_TRUE(broker_->hold(root_, kEp));
  add("1.4.0");
  publish();
  refresh();
  EXPECT_EQ(row().version, "1.3.0");

  // auto_update = download: in the store, not current, until update.
  ASSERT_TRUE(broker_->unhold(root_, kEp));
  start(config::AutoUpdate::download);
  refresh();
  EXPECT_EQ(row().version, "1.3.0");
  EXPECT_EQ(role_of("1.4.0"), VersionRole::staged);
  update();
  EXPECT_EQ(row().version, "1.4.0");
}

TEST_F(LifecycleTest, UnprivilegedSessionsDoNotBlockRemoval) {
  add("1.2.0");
  publish();
  start();
  refresh();
  install();
  const std::string library = row().library_path;
  ASSERT_EQ(granted("", ":1.80"), "1.2.0");

  ASSERT_TRUE(broker_->remove_provider(root_, kEp));
  EXPECT_EQ(role_of("1.2.0"), VersionRole::removing);
  EXPECT_TRUE(fs::exists(library));           // the app's files stay ...
  EXPECT_EQ(granted("", ":1.81"), "(none)");  // ... but nobody new gets them
  release(":1.81");
  release(":1.80");
  EXPECT_FALSE(fs::exists(library));  // gone with the last lease
  EXPECT_TRUE(trees().empty());

  // --now: gone at once, lease or not.
  install();
  ASSERT_EQ(granted("", ":1.82"), "1.2.0");
  ASSERT_TRUE(broker_->remove_provider(root_, kEp, RemoveMode::now));
  EXPECT_TRUE(trees().empty());
  release(":1.82");
}

TEST_F(LifecycleTest, LeasesOfRunningAppsSurviveARestart) {
  add("1.2.0");
  publish();
  start();
  refresh();
  install();
  ASSERT_EQ(granted("", ":1.90"), "1.2.0");
  ASSERT_TRUE(broker_->remove_provider(root_, kEp));

  // The daemon restarts while the app (":1.90") runs: its lease is taken again,
  // so the files stay until it leaves.
  start();
  broker_->adopt_leases([](const std::string& owner) { return owner == ":1.90"; });
  EXPECT_EQ(trees(), std::vector<std::string>{"1.2.0"});
  broker_->client_vanished(":1.90");
  EXPECT_TRUE(trees().empty());

  // An app that left while the daemon was down holds nothing.
  install();
  ASSERT_EQ(granted("", ":1.91"), "1.2.0");
  ASSERT_TRUE(broker_->remove_provider(root_, kEp));
  start();
  broker_->adopt_leases([](const std::string&) { return false; });
  EXPECT_TRUE(trees().empty());
}

TEST_F(LifecycleTest, ConcurrentUpdateRemoveAndGcAreSerialized) {
  add("1.0.0");
  publish();
  start();
  refresh();
  install();
  for (int round = 1; round <= 5; ++round) {
    add("1." + std::to_string(round) + ".0");
    publish();
    refresh();
    std::jthread a([&] { (void)broker_->update(root_, {}, false); });
    std::jthread b([&] { (void)broker_->collect_garbage(root_); });
    std::jthread c([&] {
      if (round % 2 == 0) (void)broker_->remove_provider(root_, kEp);
    });
    a.join();
    b.join();
    c.join();
    settle();
    // Whatever order they ran in: the store verifies, every tree is one the
    // lifecycle knows, and the package can be installed again.
    const auto report = broker_->verify();
    for (const auto& r : report) EXPECT_TRUE(r.ok) << r.name << " " << r.version << r.problem;
    const auto r = row();
    for (const auto& t : trees()) {
      bool known = false;
      for (const auto& v : r.versions) known |= v.version == t;
      EXPECT_TRUE(known) << t;
    }
    install();
    EXPECT_EQ(row().state, ProviderState::ready);
  }
}

// The publisher starts over with a new root (new keys) and the admin installs it
// as the remote's trusted_root: the refresh says why it fails and how to
// re-anchor; remote reset does.
TEST_F(LifecycleTest, AChangedTrustedRootIsNamedAndRemoteResetReanchors) {
  add("1.2.0");
  publish();
  start();
  refresh();
  install();

  auto fresh = catalog::tuf::Repository::create(now_tp());
  ASSERT_TRUE(fresh) << fresh.error().message;
  repo_ = std::move(*fresh);
  add("1.3.0");
  publish();  // over the old one: metadata/1.root.json is the new root now

  auto id = broker_->refresh(root_);
  ASSERT_TRUE(id);
  ASSERT_EQ(finish(*id), JobState::failed);
  const auto error = broker_->jobs().find(*id)->snapshot().error;
  ASSERT_TRUE(error);
  EXPECT_NE(error->message.find("epbrokerctl remote reset test"), std::string::npos)
      << error->message;
  EXPECT_EQ(row().version, "1.2.0");  // the old catalog is kept meanwhile

  EXPECT_EQ(broker_->reset_remote(RequestContext{1000, ":1.5"}, "test").error().code,
            Errc::NotAuthorized);
  EXPECT_EQ(broker_->reset_remote(root_, "nope").error().code, Errc::NotFound);
  ASSERT_TRUE(broker_->reset_remote(root_, "test"));
  refresh();
  // The new repository lists only 1.3.0: 1.2.0 is revoked, 1.3.0 offered.
  EXPECT_EQ(row().state, ProviderState::revoked);
  EXPECT_EQ(row().update_available, "1.3.0");
  EXPECT_EQ(broker_->history("test").back().action, HistoryAction::remote_reset);
  update();
  EXPECT_EQ(row().version, "1.3.0");
  EXPECT_EQ(row().state, ProviderState::ready);
}

}  // namespace
}  // namespace epbrokerd::core
