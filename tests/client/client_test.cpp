// libepbroker against a live epbrokerd on a private bus: devices and providers,
// ensure_ready's progress, cancellation, sessions (the leases they hold, counted
// in Provider::versions; release on destruction and on the owner's death; remove()
// while leased: the files stay until the last lease ends), status, and typed errors.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <thread>

#include "tests/client/client_fixture.hpp"

namespace tests::client {
namespace {

namespace fs = std::filesystem;
using epbroker::Errc;
using epbroker::JobState;
using epbroker::ProviderState;

const epbroker::Provider* find(const std::vector<epbroker::Provider>& list,
                               const std::string& name) {
  for (const auto& p : list) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

// How many sessions lease `version` of package `name`, as providers() says;
// nullopt when no such version is listed (not installed: its files are gone).
std::optional<std::uint32_t> leases_of(epbroker::Client& c, const std::string& name,
                                       const std::string& version) {
  const auto list = c.providers();
  const auto* p = find(list, name);
  if (p == nullptr) return std::nullopt;
  for (const auto& v : p->versions) {
    if (v.version == version) return v.leases;
  }
  return std::nullopt;
}

int rank(JobState s) {
  return epbroker::is_final(s) ? 4 : static_cast<int>(s);  // queued..installing = 0..3
}

TEST_F(ClientTest, DevicesProvidersRefreshAndStatus) {
  start();
  auto c = client();
  EXPECT_EQ(c.bus_address(), address());

  const auto devices = c.devices();
  ASSERT_FALSE(devices.empty());
  const auto cpu =
      std::find_if(devices.begin(), devices.end(), [](const auto& d) { return d.type == "cpu"; });
  ASSERT_NE(cpu, devices.end());
  EXPECT_TRUE(cpu->id.starts_with("cpu")) << cpu->id;
  EXPECT_FALSE(cpu->arch.empty());
  EXPECT_GT(cpu->threads, 0U);

  auto s = c.status();
  EXPECT_EQ(s.version, EPBROKER_EXPECTED_VERSION);
  EXPECT_EQ(s.catalog_revision, 0U);
  EXPECT_EQ(s.sessions, 0U);

  // refresh() waits for the job and returns the new revision.
  std::vector<epbroker::Progress> seen;
  const auto revision = c.refresh([&](const epbroker::Progress& p) { seen.push_back(p); });
  EXPECT_GT(revision, 0U);
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back().state, JobState::done);
  EXPECT_EQ(seen.back().kind, "refresh");
  s = c.status();
  EXPECT_EQ(s.catalog_revision, revision);
  EXPECT_FALSE(s.catalog_expires.empty());

  const auto providers = c.providers();
  EXPECT_EQ(providers.size(), 3U);
  const auto* test_ep = find(providers, kTestEp);
  ASSERT_NE(test_ep, nullptr);
  EXPECT_EQ(test_ep->state, ProviderState::available);
  EXPECT_EQ(test_ep->state_name, "available");
  EXPECT_EQ(test_ep->version, "0.1.0");
  EXPECT_EQ(test_ep->ep_names, std::vector<std::string>{"EpbrokerTestEp"});
  EXPECT_EQ(test_ep->size, catalog_->target(kTestEp).length);
  EXPECT_EQ(test_ep->remote, "test");
  EXPECT_TRUE(test_ep->library_path.empty());
  ASSERT_FALSE(test_ep->devices.empty());
  for (const auto& id : test_ep->devices) EXPECT_TRUE(id.starts_with("cpu")) << id;
  const auto* foreign = find(providers, kForeignEp);
  ASSERT_NE(foreign, nullptr);
  EXPECT_EQ(foreign->state, ProviderState::incompatible);
  EXPECT_FALSE(foreign->reason.empty());
}

TEST_F(ClientTest, EnsureReadyReportsMonotoneCompleteProgress) {
  start();
  auto c = client();
  c.refresh();

  std::vector<epbroker::Progress> seen;
  const auto p = c.ensure_ready(kBulkEp, [&](const epbroker::Progress& pr) { seen.push_back(pr); });
  EXPECT_EQ(p.name, kBulkEp);
  EXPECT_EQ(p.state, ProviderState::ready);
  EXPECT_TRUE(fs::is_regular_file(p.library_path)) << p.library_path;
  EXPECT_TRUE(p.library_path.starts_with(bus_->store_dir().string())) << p.library_path;

  // Monotone: bytes and states only move forward; complete: it ends done with
  // every signed byte counted.
  ASSERT_GE(seen.size(), 2U);
  const std::uint64_t length = catalog_->target(kBulkEp).length;
  std::size_t steps = 0;
  for (std::size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].job, seen[0].job);
    EXPECT_EQ(seen[i].kind, "install");
    EXPECT_EQ(seen[i].target, kBulkEp);
    EXPECT_TRUE(seen[i].bytes_total == 0 || seen[i].bytes_total == length) << seen[i].bytes_total;
    if (i == 0) continue;
    EXPECT_GE(seen[i].bytes_done, seen[i - 1].bytes_done) << "at report " << i;
    EXPECT_GE(rank(seen[i].state), rank(seen[i - 1].state)) << "at report " << i;
    if (seen[i].bytes_done > seen[i - 1].bytes_done) ++steps;
  }
  EXPECT_GE(steps, 2U) << "expected several progress steps over " << length << " bytes";
  EXPECT_EQ(seen.back().state, JobState::done);
  EXPECT_EQ(seen.back().bytes_done, length);
  EXPECT_EQ(seen.back().bytes_total, length);
  for (std::size_t i = 0; i + 1 < seen.size(); ++i) {
    EXPECT_FALSE(epbroker::is_final(seen[i].state)) << "a report after the final one";
  }

  // Ready already: a job that is done at once, reported done.
  seen.clear();
  EXPECT_EQ(c.ensure_ready(kBulkEp, [&](const auto& pr) { seen.push_back(pr); }).state,
            ProviderState::ready);
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back().state, JobState::done);
  EXPECT_EQ(seen.back().bytes_done, seen.back().bytes_total);
}

TEST_F(ClientTest, CancelMidDownloadLeavesNothingInstalled) {
  start();
  serve_targets_slowly();
  auto c = client();
  c.refresh();

  // Another thread cancels once the package's download is under way (the
  // token is what a Ctrl-C handler would fire).
  epbroker::CancelToken cancel;
  std::atomic<bool> started{false};
  std::thread canceller([&] {
    started = daemon::wait_until([&] { return download_started(kBulkEp); }, 60s);
    cancel.cancel();
  });
  std::vector<epbroker::Progress> seen;
  const auto e = error_of([&] {
    c.ensure_ready(
        kBulkEp, [&](const epbroker::Progress& p) { seen.push_back(p); }, cancel);
  });
  canceller.join();
  EXPECT_TRUE(started) << "the daemon never asked for the package";
  EXPECT_EQ(e.code(), Errc::cancelled) << e.what();
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back().state, JobState::cancelled);
  EXPECT_TRUE(std::any_of(seen.begin(), seen.end(),
                          [](const auto& p) { return p.state == JobState::downloading; }));
  EXPECT_LT(seen.back().bytes_done, catalog_->target(kBulkEp).length);

  // Nothing installed: listed available, no tree in the store, no job running.
  const auto providers = c.providers();
  ASSERT_NE(find(providers, kBulkEp), nullptr);
  EXPECT_EQ(find(providers, kBulkEp)->state, ProviderState::available);
  EXPECT_FALSE(fs::exists(bus_->store_dir() / kBulkEp));
  const auto s = c.status();
  for (const auto& j : s.jobs) {
    if (j.progress.job == seen.back().job) {
      EXPECT_EQ(j.progress.state, JobState::cancelled);
      EXPECT_EQ(j.error, "org.epbroker.Error.Cancelled");
    }
  }
  EXPECT_TRUE(c.verify().empty());

  // A token cancelled before the call: nothing is started.
  EXPECT_EQ(error_of([&] { c.ensure_ready(kTestEp, {}, cancel); }).code(), Errc::cancelled);
}

TEST_F(ClientTest, SessionLeasesUntilDestroyed) {
  start();
  auto c = client();
  c.refresh();
  c.ensure_ready(kTestEp);
  std::string library;
  std::string version;
  {
    epbroker::SessionOptions opts;
    opts.providers = {kTestEp};
    opts.policy = epbroker::Policy::prefer_cpu;
    epbroker::Session s = c.request_session(opts);
    ASSERT_TRUE(s.active());
    EXPECT_TRUE(s.path().starts_with("/org/epbroker/Broker1/session/")) << s.path();
    const auto ready = s.ready_providers();
    ASSERT_EQ(ready.size(), 1U);
    const auto& p = ready[0];
    EXPECT_EQ(p.name, kTestEp);
    EXPECT_EQ(p.ep_names, std::vector<std::string>{"EpbrokerTestEp"});
    library = p.library_path;
    version = p.version;
    EXPECT_TRUE(fs::is_regular_file(library)) << library;
    EXPECT_EQ(c.status().sessions, 1U);

    // Leased: the granted version counts this one session.
    EXPECT_EQ(leases_of(c, kTestEp, version), 1U);

    // Moved, still one lease; the moved-from Session holds nothing.
    epbroker::Session moved = std::move(s);
    EXPECT_FALSE(s.active());  // NOLINT(bugprone-use-after-move): checking the contract
    EXPECT_TRUE(moved.active());
    EXPECT_EQ(c.status().sessions, 1U);
    EXPECT_EQ(leases_of(c, kTestEp, version), 1U);
  }  // destroyed: released (its object goes a moment after the reply)
  EXPECT_TRUE(daemon::wait_until([&] { return c.status().sessions == 0U; }, 10s));
  // No lease left: none counted, and remove() deletes the tree at once.
  EXPECT_EQ(leases_of(c, kTestEp, version), 0U);
  c.remove(kTestEp);
  const fs::path tree = bus_->store_dir() / kTestEp / version;
  EXPECT_TRUE(daemon::wait_until([&] { return !fs::exists(tree); }, 5s)) << tree;
  EXPECT_FALSE(fs::exists(library));

  // release() by hand, then the destructor does nothing more.
  c.ensure_ready(kTestEp);
  epbroker::Session s = c.request_session();
  EXPECT_EQ(c.status().sessions, 1U);
  s.release();
  EXPECT_FALSE(s.active());
  EXPECT_TRUE(daemon::wait_until([&] { return c.status().sessions == 0U; }, 10s));
}

TEST_F(ClientTest, SessionOutlivesItsClientObject) {
  start();
  std::optional<epbroker::Session> s;
  {
    auto c = client();
    c.refresh();
    c.ensure_ready(kTestEp);
    s = c.request_session();
  }  // the Client is gone; its connection stays with the Session
  auto other = client();
  EXPECT_EQ(other.status().sessions, 1U);
  // Its lease holds.
  ASSERT_EQ(s->ready_providers().size(), 1U);
  const std::string version = s->ready_providers()[0].version;
  EXPECT_EQ(leases_of(other, kTestEp, version), 1U);
  s.reset();
  EXPECT_TRUE(daemon::wait_until([&] { return other.status().sessions == 0U; }, 10s));
  // Released with the Session: no lease left, and remove() deletes the tree at once.
  EXPECT_EQ(leases_of(other, kTestEp, version), 0U);
  other.remove(kTestEp);
  const fs::path tree = bus_->store_dir() / kTestEp / version;
  EXPECT_TRUE(daemon::wait_until([&] { return !fs::exists(tree); }, 5s)) << tree;
}

TEST_F(ClientTest, SessionEndsWhenItsProcessIsKilled) {
  start();
  auto c = client();
  c.refresh();
  c.ensure_ready(kTestEp);

  daemon::Child holder = daemon::start_child({session_holder_path(), address(), kTestEp});
  const auto first = holder.read_line(30s);
  ASSERT_TRUE(first.has_value()) << "the holder printed nothing";
  ASSERT_TRUE(first->starts_with("session /org/epbroker/Broker1/session/")) << *first;
  EXPECT_EQ(holder.read_line(10s).value_or(""), "provider test-ep ready");
  EXPECT_EQ(holder.read_line(10s).value_or(""), "holding");
  // Its one lease, on the current version.
  const auto before = c.providers();
  const auto* row = find(before, kTestEp);
  ASSERT_NE(row, nullptr);
  const std::string version = row->version;
  const fs::path library = row->library_path;
  const fs::path tree = bus_->store_dir() / kTestEp / version;
  EXPECT_EQ(leases_of(c, kTestEp, version), 1U);

  // remove() does not wait for it: new sessions lose test-ep at once, while the
  // leased files stay for the holder.
  c.remove(kTestEp);
  const auto after = c.providers();
  row = find(after, kTestEp);
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(row->state, ProviderState::available);
  ASSERT_EQ(row->versions.size(), 1U);
  EXPECT_EQ(row->versions[0].version, version);
  EXPECT_EQ(row->versions[0].role, "removing");
  EXPECT_EQ(row->versions[0].leases, 1U);
  EXPECT_TRUE(fs::is_regular_file(library)) << library;
  {
    epbroker::SessionOptions opts;
    opts.providers = {kTestEp};
    auto fresh = c.request_session(opts);
    EXPECT_TRUE(fresh.ready_providers().empty());
    EXPECT_EQ(leases_of(c, kTestEp, version), 1U);
  }

  // Killed: the daemon ends its session, and with its lease the files go.
  holder.kill_and_wait(SIGKILL);
  EXPECT_TRUE(daemon::wait_until([&] { return !fs::exists(tree); }, 10s)) << tree << " still there";
  EXPECT_EQ(leases_of(c, kTestEp, version), std::nullopt);
  EXPECT_TRUE(daemon::wait_until([&] { return c.status().sessions == 0U; }, 10s));
}

TEST_F(ClientTest, SessionsForEveryPolicyAndAnOldOnnxRuntime) {
  start();
  auto c = client();
  c.refresh();
  c.ensure_ready(kTestEp);
  for (auto policy : {epbroker::Policy::default_policy, epbroker::Policy::prefer_cpu,
                      epbroker::Policy::prefer_gpu, epbroker::Policy::prefer_npu,
                      epbroker::Policy::max_performance, epbroker::Policy::max_efficiency,
                      epbroker::Policy::min_overall_power}) {
    epbroker::SessionOptions opts;
    opts.policy = policy;
    auto s = c.request_session(opts);
    EXPECT_TRUE(s.active()) << epbroker::to_string(policy);
    EXPECT_EQ(s.ready_providers().size(), 1U) << epbroker::to_string(policy);
    EXPECT_EQ(epbroker::parse_policy(epbroker::to_string(policy)), policy);
  }
  // An ONNX Runtime older than test-ep's minimum: the reason, no lease.
  epbroker::SessionOptions old;
  old.providers = {kTestEp};
  old.ort_version = "1.0.0";
  auto s = c.request_session(old);
  ASSERT_EQ(s.providers().size(), 1U);
  EXPECT_EQ(s.providers()[0].state, ProviderState::incompatible);
  EXPECT_NE(s.providers()[0].reason.find("ONNX Runtime"), std::string::npos)
      << s.providers()[0].reason;
  EXPECT_TRUE(s.providers()[0].library_path.empty());
  EXPECT_TRUE(s.ready_providers().empty());
}

TEST_F(ClientTest, TypedErrorsKeepTheDaemonsMessage) {
  start();
  auto c = client();
  c.refresh();

  auto e = error_of([&] { c.ensure_ready("no-such-ep"); });
  EXPECT_EQ(e.code(), Errc::not_found) << e.what();
  EXPECT_EQ(e.bus_name(), "org.epbroker.Error.NotFound");
  EXPECT_NE(e.message().find("no-such-ep"), std::string::npos) << e.message();
  EXPECT_STREQ(e.what(), e.message().c_str());

  e = error_of([&] { c.ensure_ready("Not A Name!"); });
  EXPECT_EQ(e.code(), Errc::invalid_argument) << e.what();
  EXPECT_EQ(e.bus_name(), "org.epbroker.Error.InvalidArgument");
  EXPECT_FALSE(e.message().empty());

  EXPECT_EQ(error_of([&] { c.ensure_ready(kForeignEp); }).code(), Errc::incompatible);
  EXPECT_EQ(error_of([&] { c.remove(kTestEp); }).code(), Errc::not_found);  // not installed
  epbroker::SessionOptions bad;
  bad.ort_version = "not-a-version";
  EXPECT_EQ(error_of([&] { c.request_session(bad); }).code(), Errc::invalid_argument);
  EXPECT_EQ(epbroker::errc_name(Errc::not_found), "NotFound");
}

TEST(ClientNoBus, ConnectingToNothingIsUnavailable) {
  const auto e = error_of(
      [] { epbroker::Client c(epbroker::ClientOptions{"unix:path=/nonexistent/epbroker-bus"}); });
  EXPECT_EQ(e.code(), Errc::unavailable) << e.what();
  EXPECT_NE(e.message().find("/nonexistent/epbroker-bus"), std::string::npos) << e.message();
}

}  // namespace
}  // namespace tests::client
