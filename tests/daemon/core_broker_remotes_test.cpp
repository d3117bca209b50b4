// The broker with two remotes, each its own TUF repository and keys: a package
// name belongs to the highest-priority remote that lists it (a lower one cannot
// take it over with a newer version), and a remote whose refresh fails keeps what
// it listed before without holding back the others' updates.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
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

fs::path source_dir() {
  if (const char* dir = std::getenv("EPBROKER_SOURCE_DIR"); dir != nullptr && *dir != '\0') {
    return dir;
  }
  return fs::path(__FILE__).parent_path().parent_path().parent_path();
}

catalog::tuf::TimePoint now() {
  return std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
}

// One remote: a repository of its own (fresh keys) published under DIR/NAME.
struct Remote {
  Remote(const fs::path& dir, std::string remote_name, int remote_priority)
      : name(std::move(remote_name)), root(dir / name), priority(remote_priority) {
    auto r = catalog::tuf::Repository::create(now());
    EXPECT_TRUE(r) << r.error().message;
    repo = std::move(*r);
  }

  // Packs NAME VERSION (its library says which remote packed it) and adds it.
  void add(const std::string& pkg, const std::string& version) { add_sized(pkg, version, 0); }
  // The same with a library of `size` bytes (0: the short text).
  void add_sized(const std::string& pkg, const std::string& version, std::size_t size) {
    nlohmann::json custom = {{"epbroker",
                              {{"schema", 1},
                               {"name", pkg},
                               {"version", version},
                               {"ep_names", {"TestEp"}},
                               {"vendor", "vendor " + name},
                               {"arch", "x86_64"},
                               {"ort_min", "1.20.0"},
                               {"library", "lib/libtest.so"},
                               {"supports", {{{"type", "cpu"}}}},
                               {"description", "broker remotes test package"}}}};
    auto meta = catalog::parse_ep_metadata(custom);
    ASSERT_TRUE(meta) << meta.error().message;
    const fs::path src = root.parent_path() / ("src-" + name + "-" + pkg);
    tests::support::write_file(src / "lib/libtest.so",
                               size == 0 ? pkg + " from " + name : std::string(size, 'x'));
    const fs::path package = root.parent_path() / (name + "-" + pkg + "-" + version + ".tar.zst");
    ASSERT_TRUE(catalog::package::pack_directory(src, *meta, package));
    auto added = repo.add_target(pkg + "/" + package.filename().string(),
                                 tests::support::read_file(package), catalog::to_json(*meta));
    ASSERT_TRUE(added) << added.error().message;
  }

  void publish() {
    auto ok = repo.publish(catalog::tuf::directory_writer(root), now());
    ASSERT_TRUE(ok) << ok.error().message;
  }

  std::string url() const { return "http://" + name + ".test/"; }

  std::string name;
  fs::path root;
  int priority;
  catalog::tuf::Repository repo;
};

class RemotesTest : public ::testing::Test {
 protected:
  void start() {
    BrokerOptions o;
    o.config.paths.state_dir = tmp_ / "state";
    o.config.paths.store_root = o.config.paths.state_dir;
    o.config.paths.cache_dir = tmp_ / "cache";
    // Priority order, as load_config() gives them.
    for (const Remote* r : {&main_, &extra_}) {
      config::Remote c;
      c.name = r->name;
      c.primary = {r->url() + "metadata/", r->url() + "targets/"};
      c.trusted_root = tmp_ / ("root-" + r->name + ".json");
      c.allow_http = true;
      c.priority = r->priority;
      fs::copy_file(r->root / "metadata/1.root.json", c.trusted_root,
                    fs::copy_options::skip_existing);
      o.config.remotes.push_back(c);
    }
    const fs::path machine = source_dir() / "tests/data/sysfs/cpu-server";
    o.roots = {machine / "sys", machine / "proc", machine / "dev", "x86_64"};
    o.fetcher_factory = [this](const config::Remote& r) {
      const Remote& remote = r.name == main_.name ? main_ : extra_;
      return std::make_unique<catalog::tuf::DirFetcher>(remote.url(), remote.root);
    };
    o.authorizer = &authorizer_;
    auto b = Broker::create(std::move(o), nullptr);
    ASSERT_TRUE(b) << b.error().message;
    broker_ = std::move(*b);
  }

  // Runs job `id` to its end; its final snapshot.
  JobSnapshot finish(std::uint64_t id) {
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (std::chrono::steady_clock::now() < deadline) {
      if (const auto s = broker_->jobs().find(id)->snapshot(); is_final(s.state)) return s;
      std::this_thread::sleep_for(5ms);
    }
    ADD_FAILURE() << "job " << id << " did not end";
    return {};
  }
  JobSnapshot refresh() { return finish(broker_->refresh(root_).value()); }

  // Every provider view named `name`.
  std::vector<ProviderView> named(const std::string& name) {
    std::vector<ProviderView> out;
    for (auto& p : broker_->providers()) {
      if (p.name == name) out.push_back(p);
    }
    return out;
  }

  tests::support::TempDir tmp_;
  Remote main_{tmp_.path(), "main", 10};
  Remote extra_{tmp_.path(), "extra", 0};
  UidAuthorizer authorizer_;
  const RequestContext root_{0, ":1.1"};
  std::unique_ptr<Broker> broker_;
};

TEST_F(RemotesTest, AHigherPriorityRemoteOwnsANameEvenAgainstANewerVersion) {
  main_.add("shared-ep", "1.0.0");
  main_.publish();
  extra_.add("shared-ep", "2.0.0");  // newer, signed by the other remote's keys
  extra_.add("extra-ep", "1.0.0");
  extra_.publish();
  start();
  ASSERT_EQ(refresh().state, JobState::done);

  const auto shared = named("shared-ep");
  ASSERT_EQ(shared.size(), 1U) << "the lower remote's shared-ep is listed";
  EXPECT_EQ(shared[0].version, "1.0.0");
  EXPECT_EQ(shared[0].remote, "main");
  ASSERT_EQ(named("extra-ep").size(), 1U);
  EXPECT_EQ(named("extra-ep")[0].remote, "extra");

  const auto job = finish(broker_->ensure_provider(root_, "shared-ep").value());
  ASSERT_EQ(job.state, JobState::done) << job.error->message;
  const auto installed = named("shared-ep");
  ASSERT_EQ(installed.size(), 1U);
  EXPECT_EQ(installed[0].version, "1.0.0");
  EXPECT_EQ(tests::support::read_file(installed[0].library_path), "shared-ep from main");

  // The same holds for the catalog cache a restarted broker reads.
  broker_.reset();
  start();
  ASSERT_EQ(named("shared-ep").size(), 1U);
  EXPECT_EQ(named("shared-ep")[0].remote, "main");
}

TEST_F(RemotesTest, ARemoteThatFailsToRefreshKeepsItsListAndDoesNotHoldBackTheOthers) {
  main_.add("main-ep", "1.0.0");
  main_.publish();
  extra_.add("extra-ep", "1.0.0");
  extra_.publish();
  start();
  ASSERT_EQ(refresh().state, JobState::done);

  // The extra remote's server now serves a repository signed by other keys, and
  // the main remote publishes a new package.
  Remote impostor(tmp_.path() / "impostor", "extra", 0);
  impostor.add("extra-ep", "9.0.0");
  impostor.publish();
  fs::remove_all(extra_.root);
  fs::rename(impostor.root, extra_.root);
  main_.add("new-ep", "1.0.0");
  main_.publish();

  const auto job = refresh();
  ASSERT_EQ(job.state, JobState::failed);
  ASSERT_TRUE(job.error);
  EXPECT_EQ(job.error->code, Errc::VerificationFailed) << job.error->message;
  EXPECT_EQ(job.error->cause, catalog::Errc::bad_signature);
  EXPECT_TRUE(job.error->message.starts_with("remote extra: ")) << job.error->message;
  ASSERT_EQ(named("new-ep").size(), 1U) << "the main remote's update was held back";
  const auto extra = named("extra-ep");
  ASSERT_EQ(extra.size(), 1U);
  EXPECT_EQ(extra[0].version, "1.0.0");
  EXPECT_EQ(named("main-ep").size(), 1U);
}

// The package is re-published (other bytes, other length) after the refresh the
// install was chosen from: the install job's own refresh finds the new signed
// length, which the download, the job's BytesTotal and the stream go by.
TEST_F(RemotesTest, APackageRepublishedSinceTheRefreshIsInstalledByItsNewLength) {
  main_.add("main-ep", "1.0.0");
  main_.publish();
  extra_.publish();
  start();
  ASSERT_EQ(refresh().state, JobState::done);
  const std::uint64_t listed = named("main-ep").at(0).size;
  main_.add_sized("main-ep", "1.0.0", 200'000);
  main_.publish();

  const auto job = finish(broker_->ensure_provider(root_, "main-ep").value());
  ASSERT_EQ(job.state, JobState::done) << job.error->message;
  EXPECT_NE(job.bytes_total, listed);
  EXPECT_EQ(job.bytes_total, job.bytes_done);
  EXPECT_EQ(fs::file_size(named("main-ep").at(0).library_path), 200'000U);
}

}  // namespace
}  // namespace epbrokerd::core
