// The broker's provider views are computed once and shared until something they
// depend on changes: these tests drive a real Broker (real store, a signed TUF
// repository on disk read through a DirFetcher, the cpu-server hardware fixture)
// and check that every change shows in providers() at once: a refresh adds
// packages, an install moves its provider to installing and then ready (or back
// to available when it fails), a removal back to available.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

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

constexpr const char* kUrl = "http://repo.test/";
constexpr uid_t kInstaller = 1234;  // not root, allowed to install

fs::path source_dir() {
  if (const char* dir = std::getenv("EPBROKER_SOURCE_DIR"); dir != nullptr && *dir != '\0') {
    return dir;
  }
  return fs::path(__FILE__).parent_path().parent_path().parent_path();
}

catalog::EpMetadata metadata(const std::string& name, const std::string& ort_min = "1.20.0") {
  nlohmann::json custom = {{"epbroker",
                            {{"schema", 1},
                             {"name", name},
                             {"version", "1.0.0"},
                             {"ep_names", {"TestEp"}},
                             {"vendor", "epbroker tests"},
                             {"arch", "x86_64"},
                             {"ort_min", ort_min},
                             {"library", "lib/libtest.so"},
                             {"supports", {{{"type", "cpu"}}}},
                             {"description", "broker unit test package"}}}};
  auto meta = catalog::parse_ep_metadata(custom);
  EXPECT_TRUE(meta) << meta.error().message;
  return *meta;
}

// Holds back package downloads (URLs under targets/) while closed, so a test can
// see an install in progress; can also fail them.
class Gate {
 public:
  void close() {
    std::lock_guard lock(mu_);
    open_ = false;
  }
  void open() {
    {
      std::lock_guard lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }
  void fail_downloads(bool on) {
    std::lock_guard lock(mu_);
    fail_ = on;
  }
  // The next download stops with a network error halfway (the updater then
  // resumes it in a second transfer).
  void cut_next_download() {
    std::lock_guard lock(mu_);
    cut_ = true;
  }
  bool take_cut() {
    std::lock_guard lock(mu_);
    return std::exchange(cut_, false);
  }
  // Called by fetches of package bytes: waits while closed (at most 60 s).
  bool pass() {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, 60s, [&] { return open_; });
    return !fail_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = true;
  bool fail_ = false;
  bool cut_ = false;
};

class GatedFetcher : public catalog::tuf::Fetcher {
 public:
  GatedFetcher(Gate& gate, const fs::path& root) : gate_(gate), inner_(kUrl, root) {}
  catalog::Result<void> fetch(const std::string& url, std::uint64_t max_bytes,
                              const catalog::tuf::ChunkSink& sink) override {
    const bool target = url.find("/targets/") != std::string::npos;
    if (target && !gate_.pass()) {
      return catalog::fail(catalog::Errc::network, "download failed (test)");
    }
    if (target && gate_.take_cut()) {
      std::string bytes;
      auto all = inner_.fetch(url, max_bytes, [&](std::span<const std::byte> c) {
        bytes.append(reinterpret_cast<const char*>(c.data()), c.size());
        return catalog::Result<void>();
      });
      if (!all) return all;
      const auto half = std::as_bytes(std::span(bytes.data(), bytes.size() / 2));
      if (auto ok = sink(half); !ok) return ok;
      return catalog::fail(catalog::Errc::network, "connection cut (test)");
    }
    return inner_.fetch(url, max_bytes, sink);
  }

 private:
  Gate& gate_;
  catalog::tuf::DirFetcher inner_;
};

class ProvidersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto repo = catalog::tuf::Repository::create(now());
    ASSERT_TRUE(repo) << repo.error().message;
    repo_ = std::move(*repo);
    add_package("alpha-ep");
    publish();
  }

  static catalog::tuf::TimePoint now() {
    return std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
  }

  // Packs NAME (one small library) and adds it to the repository.
  void add_package(const std::string& name, const std::string& ort_min = "1.20.0") {
    const fs::path dir = tmp_ / ("src-" + name);
    fs::create_directories(dir / "lib");
    tests::support::write_file(dir / "lib/libtest.so", "library of " + name);
    const fs::path package = tmp_ / (name + "-1.0.0.tar.zst");
    const auto meta = metadata(name, ort_min);
    auto packed = catalog::package::pack_directory(dir, meta, package);
    ASSERT_TRUE(packed) << packed.error().message;
    auto added = repo_.add_target(name + "/" + package.filename().string(),
                                  tests::support::read_file(package), catalog::to_json(meta));
    ASSERT_TRUE(added) << added.error().message;
  }

  void publish() {
    auto ok = repo_.publish(catalog::tuf::directory_writer(tmp_ / "repo"), now());
    ASSERT_TRUE(ok) << ok.error().message;
  }

  void start() {
    BrokerOptions o;
    o.config.paths.state_dir = tmp_ / "state";
    o.config.paths.store_root = o.config.paths.state_dir;
    o.config.paths.cache_dir = tmp_ / "cache";
    config::Remote remote;
    remote.name = "test";
    remote.primary = {std::string(kUrl) + "metadata/", std::string(kUrl) + "targets/"};
    remote.trusted_root = tmp_ / "repo/metadata/1.root.json";
    remote.allow_http = true;
    o.config.remotes.push_back(remote);
    const fs::path machine = source_dir() / "tests/data/sysfs/cpu-server";
    o.roots = {machine / "sys", machine / "proc", machine / "dev", "x86_64"};
    o.fetcher_factory = [this](const config::Remote&) {
      return std::make_unique<GatedFetcher>(gate_, tmp_ / "repo");
    };
    o.authorizer = &authorizer_;
    auto b = Broker::create(std::move(o), nullptr);
    ASSERT_TRUE(b) << b.error().message;
    broker_ = std::move(*b);
  }

  // Waits (polling, at most 60 s) for job `id` to end; returns its final state.
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

  void refresh() {
    auto id = broker_->refresh(root_);
    ASSERT_TRUE(id) << id.error().message;
    ASSERT_EQ(finish(*id), JobState::done);
  }

  std::optional<ProviderView> provider(const std::string& name) {
    for (auto& p : broker_->providers()) {
      if (p.name == name) return p;
    }
    return std::nullopt;
  }
  std::string state_of(const std::string& name) {
    auto p = provider(name);
    return p ? std::string(common::provider_state_name(p->state)) : "(absent)";
  }

  tests::support::TempDir tmp_;
  catalog::tuf::Repository repo_;
  Gate gate_;
  UidAuthorizer authorizer_{{kInstaller}};  // root and kInstaller may install
  const RequestContext root_{0, ":1.1"};
  std::unique_ptr<Broker> broker_;
};

TEST_F(ProvidersTest, RefreshListsTheCatalogsPackages) {
  start();
  EXPECT_TRUE(broker_->providers().empty());
  refresh();
  EXPECT_EQ(state_of("alpha-ep"), "available");

  // A new revision with one more package: listed after the next refresh, not before.
  add_package("beta-ep");
  publish();
  EXPECT_EQ(state_of("beta-ep"), "(absent)");
  refresh();
  EXPECT_EQ(state_of("alpha-ep"), "available");
  EXPECT_EQ(state_of("beta-ep"), "available");
}

TEST_F(ProvidersTest, InstallMovesAvailableToInstallingToReady) {
  start();
  refresh();
  ASSERT_EQ(state_of("alpha-ep"), "available");

  gate_.close();
  auto id = broker_->ensure_provider(root_, "alpha-ep");
  ASSERT_TRUE(id) << id.error().message;
  auto p = provider("alpha-ep");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->state, common::ProviderState::installing);
  EXPECT_EQ(p->job, *id);
  EXPECT_EQ(state_of("alpha-ep"), "installing");  // read again: the same shared views

  gate_.open();
  ASSERT_EQ(finish(*id), JobState::done);
  p = provider("alpha-ep");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->state, common::ProviderState::ready);
  EXPECT_EQ(p->job, 0U);
  EXPECT_TRUE(fs::exists(p->library_path)) << p->library_path;
}

// Job1.Cancel's policy lives in the core: the connection that started a job may cancel
// it, and root may cancel any; another connection of the same uid may not.
TEST_F(ProvidersTest, OnlyTheStartersConnectionOrRootCancelsAJob) {
  start();
  refresh();
  gate_.close();
  const RequestContext starter{kInstaller, ":1.20"};
  auto id = broker_->ensure_provider(starter, "alpha-ep");
  ASSERT_TRUE(id) << id.error().message;
  auto job = broker_->jobs().find(*id);
  ASSERT_TRUE(job);

  auto unknown = broker_->cancel_job(root_, *id + 1000);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, Errc::NotFound);

  for (const RequestContext& other : {RequestContext{kInstaller, ":1.21"},  // same uid
                                      RequestContext{1000, ":1.22"}}) {
    auto refused = broker_->cancel_job(other, *id);
    ASSERT_FALSE(refused) << other.sender;
    EXPECT_EQ(refused.error().code, Errc::NotAuthorized);
    EXPECT_EQ(refused.error().message, "only the job's starter may cancel it");
    EXPECT_FALSE(job->cancel_requested()) << other.sender;
  }

  ASSERT_TRUE(broker_->cancel_job(starter, *id));
  EXPECT_TRUE(job->cancel_requested());
  gate_.open();
  EXPECT_EQ(finish(*id), JobState::cancelled);
  EXPECT_EQ(state_of("alpha-ep"), "available");

  // Root may cancel a job it did not start.
  gate_.close();
  id = broker_->ensure_provider(starter, "alpha-ep");
  ASSERT_TRUE(id) << id.error().message;
  ASSERT_TRUE(broker_->cancel_job(RequestContext{0, ":1.23"}, *id));
  gate_.open();
  EXPECT_EQ(finish(*id), JobState::cancelled);
}

TEST_F(ProvidersTest, FailedInstallGoesBackToAvailable) {
  start();
  refresh();
  gate_.close();
  gate_.fail_downloads(true);
  auto id = broker_->ensure_provider(root_, "alpha-ep");
  ASSERT_TRUE(id) << id.error().message;
  EXPECT_EQ(state_of("alpha-ep"), "installing");
  gate_.open();
  EXPECT_EQ(finish(*id), JobState::failed);
  EXPECT_EQ(state_of("alpha-ep"), "available");
}

TEST_F(ProvidersTest, ADownloadInTwoTransfersInstallsFromTheDownloadedFile) {
  // The first transfer streams into the store and is cut; the resumed one does
  // not stream, so the streamed tree must not be committed and the install
  // falls back to the verified file.
  start();
  refresh();
  gate_.cut_next_download();
  auto id = broker_->ensure_provider(root_, "alpha-ep");
  ASSERT_TRUE(id) << id.error().message;
  ASSERT_EQ(finish(*id), JobState::done) << broker_->jobs().find(*id)->snapshot().error->message;
  auto p = provider("alpha-ep");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->state, common::ProviderState::ready);
  EXPECT_EQ(tests::support::read_file(p->library_path), "library of alpha-ep");
  EXPECT_TRUE(fs::is_empty(tmp_ / "state/staging"));
}

TEST_F(ProvidersTest, RemoveMovesReadyBackToAvailable) {
  start();
  refresh();
  auto id = broker_->ensure_provider(root_, "alpha-ep");
  ASSERT_TRUE(id) << id.error().message;
  ASSERT_EQ(finish(*id), JobState::done);
  ASSERT_EQ(state_of("alpha-ep"), "ready");

  auto removed = broker_->remove_provider(root_, "alpha-ep");
  ASSERT_TRUE(removed) << removed.error().message;
  EXPECT_EQ(state_of("alpha-ep"), "available");

  // Installing again after the removal: ready again.
  id = broker_->ensure_provider(root_, "alpha-ep");
  ASSERT_TRUE(id) << id.error().message;
  ASSERT_EQ(finish(*id), JobState::done);
  EXPECT_EQ(state_of("alpha-ep"), "ready");
}

TEST_F(ProvidersTest, ARestartedBrokerSeesTheStoreAndTheCatalogCache) {
  start();
  refresh();
  auto id = broker_->ensure_provider(root_, "alpha-ep");
  ASSERT_TRUE(id) << id.error().message;
  ASSERT_EQ(finish(*id), JobState::done);
  broker_.reset();
  start();
  EXPECT_EQ(state_of("alpha-ep"), "ready");
}

TEST_F(ProvidersTest, SessionsLeaseReadyProvidersAndCheckTheAppsOrt) {
  add_package("newer-ort-ep", "1.40.0");
  publish();
  start();
  refresh();
  for (const char* name : {"alpha-ep", "newer-ort-ep"}) {
    auto id = broker_->ensure_provider(root_, name);
    ASSERT_TRUE(id) << id.error().message;
    ASSERT_EQ(finish(*id), JobState::done) << name;
  }
  SessionRequest request;
  request.ort_version = "1.30.0";
  auto grant = broker_->request_session(root_, request);
  ASSERT_TRUE(grant) << grant.error().message;
  std::map<std::string, ProviderView> by_name;
  for (const auto& p : grant->providers) by_name[p.name] = p;
  EXPECT_EQ(by_name.at("alpha-ep").state, common::ProviderState::ready);
  EXPECT_EQ(by_name.at("newer-ort-ep").state, common::ProviderState::incompatible);
  EXPECT_NE(by_name.at("newer-ort-ep").reason.find("1.40.0"), std::string::npos);
  EXPECT_TRUE(by_name.at("newer-ort-ep").library_path.empty());
  // The cached views are not changed by what a session saw.
  EXPECT_EQ(state_of("newer-ort-ep"), "ready");

  // The lease (alpha-ep only) does not block its removal: new sessions never get
  // it from now on, and its files go when the session ends.
  const std::string leased_library = by_name.at("alpha-ep").library_path;
  ASSERT_TRUE(broker_->remove_provider(root_, "alpha-ep"));
  EXPECT_EQ(state_of("alpha-ep"), "available");
  EXPECT_TRUE(fs::exists(leased_library));
  auto second = broker_->request_session(RequestContext{0, ":1.9"}, SessionRequest{});
  ASSERT_TRUE(second) << second.error().message;
  for (const auto& p : second->providers) {
    if (p.name == "alpha-ep") {
      EXPECT_NE(p.state, common::ProviderState::ready);
    }
  }
  ASSERT_TRUE(broker_->release_session(RequestContext{0, ":1.9"}, second->session));
  ASSERT_TRUE(broker_->release_session(root_, grant->session));
  EXPECT_FALSE(fs::exists(leased_library));
  EXPECT_TRUE(broker_->remove_provider(root_, "newer-ort-ep"));
  EXPECT_EQ(state_of("alpha-ep"), "available");
}

}  // namespace
}  // namespace epbrokerd::core
