// Catalog refresh and installs through the bus: RefreshCatalog's job and signals,
// ListProviders' states, EnsureProvider's progress (PropertiesChanged), Finished,
// the installed tree, one job for concurrent callers, Verify, RemoveProvider.
#include <gtest/gtest.h>

#include <barrier>
#include <filesystem>
#include <thread>

#include "tests/daemon/integration/fixture.hpp"

namespace tests::daemon {
namespace {

namespace fs = std::filesystem;

bool inside(const fs::path& child, const fs::path& parent) {
  const auto rel = fs::weakly_canonical(child).lexically_relative(fs::weakly_canonical(parent));
  return !rel.empty() && *rel.begin() != "..";
}

TEST_F(CatalogTest, RefreshCatalogJobFinishesAndListsThePackages) {
  start();
  JobLog log(*conn_);
  EXPECT_EQ(broker_->CatalogRevision(), 0U);
  EXPECT_EQ(broker_->CatalogExpires(), "");

  const std::string job = broker_->RefreshCatalog();
  EXPECT_TRUE(job.starts_with(std::string(kBrokerPath) + "/job/")) << job;
  EXPECT_EQ(job_property(*conn_, job, "Kind").get<std::string>(), "refresh");
  EXPECT_EQ(job_property(*conn_, job, "Target").get<std::string>(), "");
  ASSERT_EQ(wait_job(*conn_, job, &log), "done");
  EXPECT_EQ(job_property(*conn_, job, "State").get<std::string>(), "done");
  EXPECT_EQ(job_property(*conn_, job, "Error").get<std::string>(), "");

  // Signals: CatalogChanged(revision) and ProvidersChanged.
  ASSERT_TRUE(wait_until([&] { return broker_->catalog_changed > 0; }, 10s));
  EXPECT_TRUE(wait_until([&] { return broker_->providers_changed > 0; }, 10s));
  const std::uint64_t revision = broker_->CatalogRevision();
  EXPECT_GT(revision, 0U);
  EXPECT_EQ(broker_->last_revision.load(), revision);
  EXPECT_FALSE(broker_->CatalogExpires().empty());

  const Dicts providers = broker_->ListProviders();
  EXPECT_EQ(providers.size(), 3U);
  const Dict test_ep = provider(kTestEp);
  EXPECT_EQ(str(test_ep, "state"), "available");
  EXPECT_EQ(str(test_ep, "version"), "0.1.0");
  EXPECT_EQ(strs(test_ep, "ep_names"), std::vector<std::string>{"EpbrokerTestEp"});
  EXPECT_EQ(str(test_ep, "remote"), "test");
  EXPECT_EQ(u64(test_ep, "size"), catalog_->target(kTestEp).length);
  const auto served = strs(test_ep, "devices");  // a CPU package: the machine's CPUs
  EXPECT_FALSE(served.empty());
  for (const auto& id : served) EXPECT_TRUE(id.starts_with("cpu")) << id;
  EXPECT_EQ(test_ep.count("library_path"), 0U);
  EXPECT_EQ(str(provider(kBulkEp), "state"), "available");
  const Dict foreign = provider(kForeignEp);
  EXPECT_EQ(str(foreign, "state"), "incompatible");
  EXPECT_FALSE(str(foreign, "reason").empty());

  // A second refresh of an unchanged catalog: done, same revision.
  refresh();
  EXPECT_EQ(broker_->CatalogRevision(), revision);
}

TEST_F(CatalogTest, EnsureProviderReportsProgressAndInstallsIntoTheStore) {
  start();
  refresh();
  JobLog log(*conn_);
  const int changes_before = broker_->providers_changed;

  const std::string job = broker_->EnsureProvider(kTestEp);
  EXPECT_EQ(job_property(*conn_, job, "Kind").get<std::string>(), "install");
  EXPECT_EQ(job_property(*conn_, job, "Target").get<std::string>(), kTestEp);
  ASSERT_EQ(wait_job(*conn_, job, &log), "done");

  // Finished("done", "", ""), and BytesDone never went down on the way.
  const auto finished = log.finished(job);
  ASSERT_TRUE(finished.has_value()) << "no Finished signal";
  EXPECT_EQ(*finished->state, "done");
  EXPECT_EQ(finished->error, "");
  const std::uint64_t length = catalog_->target(kTestEp).length;
  std::uint64_t last = 0;
  std::size_t progress_signals = 0;
  std::vector<std::string> states;
  for (const auto& e : log.events(job)) {
    if (e.member != "PropertiesChanged") continue;
    ASSERT_TRUE(e.bytes_done && e.bytes_total && e.state) << "PropertiesChanged without values";
    EXPECT_GE(*e.bytes_done, last) << "BytesDone went down";
    if (*e.bytes_done > last) ++progress_signals;
    last = *e.bytes_done;
    // 0 until the download starts, then the signed length.
    EXPECT_TRUE(*e.bytes_total == 0 || *e.bytes_total == length) << *e.bytes_total;
    if (states.empty() || states.back() != *e.state) states.push_back(*e.state);
  }
  EXPECT_EQ(last, length);
  EXPECT_GE(progress_signals, 2U) << "expected several progress steps for " << length << " bytes";
  EXPECT_EQ(states.back(), "done");
  EXPECT_EQ(job_property(*conn_, job, "BytesDone").get<std::uint64_t>(), length);
  EXPECT_EQ(job_property(*conn_, job, "BytesTotal").get<std::uint64_t>(), length);

  // Ready, with its library inside TMP/state/store.
  EXPECT_TRUE(wait_until([&] { return broker_->providers_changed > changes_before; }, 10s));
  const Dict p = provider(kTestEp);
  EXPECT_EQ(str(p, "state"), "ready");
  const fs::path library = str(p, "library_path");
  EXPECT_TRUE(inside(library, bus_->store_dir())) << library;
  EXPECT_TRUE(fs::is_regular_file(library)) << library;
  EXPECT_TRUE(library.string().ends_with(catalog_->target(kTestEp).library)) << library;
  EXPECT_EQ(broker_->DaemonState(), "idle");

  // Verify: the tree is intact.
  const Dicts verify = broker_->Verify();
  ASSERT_EQ(verify.size(), 1U);
  EXPECT_EQ(str(verify[0], "name"), kTestEp);
  EXPECT_TRUE(verify[0].at("ok").get<bool>());

  // Installed already: a new job that is done at once.
  const std::string again = broker_->EnsureProvider(kTestEp);
  EXPECT_NE(again, job);
  EXPECT_EQ(wait_job(*conn_, again), "done");

  // Removed (root may): available again, the tree gone.
  broker_->RemoveProvider(kTestEp);
  EXPECT_EQ(str(provider(kTestEp), "state"), "available");
  EXPECT_FALSE(fs::exists(library));
  EXPECT_EQ(error_name_of([&] { broker_->RemoveProvider(kTestEp); }),
            "org.epbroker.Error.NotFound");
}

TEST_F(CatalogTest, ConcurrentEnsureProviderCallsShareOneJob) {
  start();
  refresh();
  // Two clients (two unique names) ask at the same moment.
  auto conn_a = bus_->connect();
  auto conn_b = bus_->connect();
  BrokerProxy a(*conn_a);
  BrokerProxy b(*conn_b);
  JobLog log(*conn_);
  std::barrier sync(2);
  std::string job_a;
  std::string job_b;
  std::thread ta([&] {
    sync.arrive_and_wait();
    job_a = a.EnsureProvider(kBulkEp);
  });
  std::thread tb([&] {
    sync.arrive_and_wait();
    job_b = b.EnsureProvider(kBulkEp);
  });
  ta.join();
  tb.join();
  EXPECT_EQ(job_a, job_b) << "two downloads of one package";
  ASSERT_EQ(wait_job(*conn_, job_a, &log), "done");
  // Only one install job ever existed: one Finished, one job object among them.
  std::size_t finished = 0;
  for (const auto& e : log.events(job_a)) finished += e.member == "Finished";
  EXPECT_EQ(finished, 1U);
  const Dict p = provider(kBulkEp);
  EXPECT_EQ(str(p, "state"), "ready");
  EXPECT_TRUE(inside(str(p, "library_path"), bus_->store_dir()));
}

TEST_F(CatalogTest, ProviderIsListedInstallingWhileItsJobRuns) {
  start();
  refresh();
  JobLog log(*conn_);
  const std::string job = broker_->EnsureProvider(kBulkEp);
  // Either still running (then it says so, with its job) or already done.
  const Dict p = provider(kBulkEp);
  const std::string state = str(p, "state");
  if (state == "installing") {
    EXPECT_EQ(p.at("job").get<sdbus::ObjectPath>(), job);
    EXPECT_EQ(broker_->DaemonState(), "busy");
  } else {
    EXPECT_EQ(state, "ready");
  }
  ASSERT_EQ(wait_job(*conn_, job, &log), "done");
  EXPECT_EQ(str(provider(kBulkEp), "state"), "ready");
}

TEST_F(CatalogTest, IncompatibleAndUnknownPackagesAreRefused) {
  start();
  refresh();
  EXPECT_EQ(error_name_of([&] { broker_->EnsureProvider(kForeignEp); }),
            "org.epbroker.Error.Incompatible");
  EXPECT_EQ(error_name_of([&] { broker_->EnsureProvider("no-such-ep"); }),
            "org.epbroker.Error.NotFound");
  EXPECT_EQ(error_name_of([&] { broker_->RemoveProvider(kTestEp); }),
            "org.epbroker.Error.NotFound");
}

}  // namespace
}  // namespace tests::daemon
