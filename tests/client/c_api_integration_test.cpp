// libepbroker's C API against a live epbrokerd on a private bus: devices, providers,
// refresh and ensure_ready with progress (the callback's user pointer), sessions (the
// lease, release, a lease that outlives its client), the daemon's errors, and the
// lifecycle calls (verify, hold, unhold, update, rollback, history, gc, remove).
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "epbroker/epbroker.h"
#include "tests/client/c_api_fixture.hpp"

namespace tests::client {
namespace {

namespace fs = std::filesystem;
using namespace capi;

// One progress report as the callback saw it.
struct Report {
  std::string job, kind, target, state_name;
  epbroker_job_state state;
  std::uint64_t done, total;
};

// The callback's `user`: every report, and every user pointer it was given.
struct Recorder {
  std::vector<Report> reports;
  std::vector<void*> users;
};

void record(const epbroker_progress* p, void* user) {
  auto* r = static_cast<Recorder*>(user);
  r->users.push_back(user);
  r->reports.push_back({epbroker_progress_job(p), epbroker_progress_kind(p),
                        epbroker_progress_target(p), epbroker_progress_state_name(p),
                        epbroker_progress_state(p), epbroker_progress_bytes_done(p),
                        epbroker_progress_bytes_total(p)});
}

class CApiTest : public capi::CApiClientTest {
 protected:
  std::size_t sessions(epbroker_client* c) {
    epbroker_daemon_status* s = nullptr;
    EXPECT_EQ(epbroker_status_get(c, &s), EPBROKER_OK) << last_error();
    const StatusPtr keep(s);
    return epbroker_daemon_status_sessions(s);
  }
};

TEST_F(CApiTest, DevicesProvidersRefreshAndStatus) {
  start();
  auto c = connect();
  ASSERT_TRUE(c);

  epbroker_device_list* devices = nullptr;
  ASSERT_EQ(epbroker_devices(c.get(), &devices), EPBROKER_OK) << last_error();
  std::unique_ptr<epbroker_device_list, Freer<epbroker_device_list_free>> keep_devices(devices);
  ASSERT_GT(epbroker_device_list_size(devices), 0U);
  EXPECT_EQ(epbroker_device_list_get(devices, epbroker_device_list_size(devices)), nullptr);
  const epbroker_device* cpu = nullptr;
  for (size_t i = 0; i < epbroker_device_list_size(devices); ++i) {
    const auto* d = epbroker_device_list_get(devices, i);
    if (std::string(epbroker_device_type(d)) == "cpu") cpu = d;
  }
  ASSERT_NE(cpu, nullptr);
  EXPECT_TRUE(std::string(epbroker_device_id(cpu)).starts_with("cpu")) << epbroker_device_id(cpu);
  EXPECT_STRNE(epbroker_device_arch(cpu), "");
  EXPECT_GT(epbroker_device_threads(cpu), 0U);
  EXPECT_EQ(epbroker_device_isa(cpu, epbroker_device_isa_count(cpu)), nullptr);

  epbroker_daemon_status* status = nullptr;
  ASSERT_EQ(epbroker_status_get(c.get(), &status), EPBROKER_OK) << last_error();
  StatusPtr keep_status(status);
  EXPECT_STREQ(epbroker_daemon_status_version(status), epbroker_version());
  EXPECT_EQ(epbroker_daemon_status_catalog_revision(status), 0U);
  EXPECT_EQ(epbroker_daemon_status_sessions(status), 0U);

  // refresh: the callback gets our pointer, and the final state last.
  Recorder rec;
  std::uint64_t revision = 0;
  ASSERT_EQ(epbroker_refresh(c.get(), record, &rec, nullptr, &revision), EPBROKER_OK)
      << last_error();
  EXPECT_GT(revision, 0U);
  ASSERT_FALSE(rec.reports.empty());
  for (void* u : rec.users) EXPECT_EQ(u, &rec);
  EXPECT_EQ(rec.reports.back().state, EPBROKER_JOB_DONE);
  EXPECT_EQ(rec.reports.back().state_name, "done");
  EXPECT_EQ(rec.reports.back().kind, "refresh");

  ASSERT_EQ(epbroker_status_get(c.get(), &status), EPBROKER_OK) << last_error();
  keep_status.reset(status);
  EXPECT_EQ(epbroker_daemon_status_catalog_revision(status), revision);
  EXPECT_STRNE(epbroker_daemon_status_catalog_expires(status), "");
  bool listed = false;
  for (size_t i = 0; i < epbroker_daemon_status_job_count(status); ++i) {
    const auto* p = epbroker_job_info_progress(epbroker_daemon_status_job(status, i));
    if (epbroker_progress_job(p) == rec.reports.back().job) {
      listed = true;
      EXPECT_EQ(epbroker_progress_state(p), EPBROKER_JOB_DONE);
    }
  }
  EXPECT_TRUE(listed) << "the refresh job is not in the status";

  ProvidersPtr keep;
  const auto* test_ep = row(c.get(), kTestEp, keep);
  ASSERT_NE(test_ep, nullptr);
  EXPECT_EQ(epbroker_provider_list_size(keep.get()), 3U);
  EXPECT_EQ(epbroker_provider_state_of(test_ep), EPBROKER_PROVIDER_AVAILABLE);
  EXPECT_STREQ(epbroker_provider_state_name(test_ep), "available");
  EXPECT_STREQ(epbroker_provider_version(test_ep), "0.1.0");
  EXPECT_STREQ(epbroker_provider_kind(test_ep), "execution_provider");
  ASSERT_EQ(epbroker_provider_ep_name_count(test_ep), 1U);
  EXPECT_STREQ(epbroker_provider_ep_name(test_ep, 0), "EpbrokerTestEp");
  EXPECT_EQ(epbroker_provider_ep_name(test_ep, 1), nullptr);
  EXPECT_STREQ(epbroker_provider_remote(test_ep), "test");
  EXPECT_STREQ(epbroker_provider_library_path(test_ep), "");
  EXPECT_EQ(epbroker_provider_size(test_ep), catalog_->target(kTestEp).length);
  EXPECT_GT(epbroker_provider_device_count(test_ep), 0U);
  ProvidersPtr keep_foreign;
  const auto* foreign = row(c.get(), kForeignEp, keep_foreign);
  ASSERT_NE(foreign, nullptr);
  EXPECT_EQ(epbroker_provider_state_of(foreign), EPBROKER_PROVIDER_INCOMPATIBLE);
  EXPECT_STRNE(epbroker_provider_reason(foreign), "");
}

TEST_F(CApiTest, EnsureReadyThenLeaseInASession) {
  start();
  auto c = connect();
  ASSERT_TRUE(c);
  ASSERT_EQ(epbroker_refresh(c.get(), nullptr, nullptr, nullptr, nullptr), EPBROKER_OK)
      << last_error();

  Recorder rec;
  epbroker_provider* raw = nullptr;
  ASSERT_EQ(epbroker_ensure_ready(c.get(), kTestEp, record, &rec, nullptr, &raw), EPBROKER_OK)
      << last_error();
  const ProviderPtr ready(raw);
  EXPECT_STREQ(epbroker_provider_name(ready.get()), kTestEp);
  EXPECT_EQ(epbroker_provider_state_of(ready.get()), EPBROKER_PROVIDER_READY);
  const std::string library = epbroker_provider_library_path(ready.get());
  EXPECT_TRUE(fs::is_regular_file(library)) << library;
  EXPECT_TRUE(library.starts_with(bus_->store_dir().string())) << library;
  ASSERT_FALSE(rec.reports.empty());
  for (void* u : rec.users) EXPECT_EQ(u, &rec);
  for (const auto& r : rec.reports) {
    EXPECT_EQ(r.kind, "install");
    EXPECT_EQ(r.target, kTestEp);
  }
  EXPECT_EQ(rec.reports.back().state, EPBROKER_JOB_DONE);
  EXPECT_EQ(rec.reports.back().done, rec.reports.back().total);

  // A lease on it.
  OptionsPtr options(epbroker_session_options_new());
  ASSERT_TRUE(options);
  epbroker_session_options_set_policy(options.get(), EPBROKER_POLICY_PREFER_CPU);
  ASSERT_EQ(epbroker_session_options_add_provider(options.get(), kTestEp), EPBROKER_OK);
  epbroker_session* s = nullptr;
  ASSERT_EQ(epbroker_request_session(c.get(), options.get(), &s), EPBROKER_OK) << last_error();
  SessionPtr session(s);
  // Borrowed until the handle is freed, release or not (read again after the release
  // below: under ASan a string freed by the release would be reported).
  const char* path = epbroker_session_path(s);
  const std::string path_copy = path;
  EXPECT_TRUE(path_copy.starts_with("/org/epbroker/Broker1/session")) << path_copy;
  ASSERT_EQ(epbroker_session_provider_count(s), 1U);
  EXPECT_EQ(epbroker_session_provider(s, 1), nullptr);
  const auto* leased = epbroker_session_provider(s, 0);
  EXPECT_STREQ(epbroker_provider_name(leased), kTestEp);
  EXPECT_EQ(epbroker_provider_state_of(leased), EPBROKER_PROVIDER_READY);
  EXPECT_EQ(epbroker_provider_library_path(leased), library);
  EXPECT_TRUE(fs::exists(epbroker_provider_library_path(leased)));
  EXPECT_EQ(sessions(c.get()), 1U);
  {
    ProvidersPtr keep;
    const auto* p = row(c.get(), kTestEp, keep);
    ASSERT_EQ(epbroker_provider_version_count(p), 1U);
    const auto* v = epbroker_provider_version_info(p, 0);
    EXPECT_STREQ(epbroker_version_info_version(v), "0.1.0");
    EXPECT_STREQ(epbroker_version_info_role(v), "current");
    EXPECT_EQ(epbroker_version_info_leases(v), 1U);
  }

  // Released: the path goes, what was granted stays readable.
  ASSERT_EQ(epbroker_session_release(s), EPBROKER_OK) << last_error();
  EXPECT_STREQ(epbroker_session_path(s), "");
  EXPECT_EQ(std::string(path), path_copy) << "the path returned before the release";
  ASSERT_EQ(epbroker_session_provider_count(s), 1U);
  EXPECT_EQ(epbroker_provider_library_path(epbroker_session_provider(s, 0)), library);
  EXPECT_EQ(epbroker_session_release(s), EPBROKER_OK) << "a second release does nothing";
  EXPECT_TRUE(daemon::wait_until([&] { return sessions(c.get()) == 0; }, 10s));
  session.reset();

  // A lease outlives its client: it ends with the session handle.
  ASSERT_EQ(epbroker_request_session(c.get(), nullptr, &s), EPBROKER_OK) << last_error();
  session.reset(s);
  c.reset();
  auto other = connect();
  EXPECT_EQ(sessions(other.get()), 1U);
  session.reset();
  EXPECT_TRUE(daemon::wait_until([&] { return sessions(other.get()) == 0; }, 10s));

  // A policy outside the enum is refused before anything is asked.
  epbroker_session_options_set_policy(options.get(), static_cast<epbroker_policy>(7));
  s = nullptr;
  EXPECT_EQ(epbroker_request_session(other.get(), options.get(), &s),
            EPBROKER_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(s, nullptr);
  EXPECT_NE(std::string(epbroker_last_error_message()).find("policy 7 "), std::string::npos)
      << last_error();
}

TEST_F(CApiTest, ErrorsCarryTheDaemonsMessageAndName) {
  start();
  auto c = connect();
  ASSERT_TRUE(c);
  ASSERT_EQ(epbroker_refresh(c.get(), nullptr, nullptr, nullptr, nullptr), EPBROKER_OK)
      << last_error();

  auto* sentinel = reinterpret_cast<epbroker_provider*>(0x1);
  epbroker_provider* out = sentinel;
  EXPECT_EQ(epbroker_ensure_ready(c.get(), "no-such-ep", nullptr, nullptr, nullptr, &out),
            EPBROKER_ERR_NOT_FOUND);
  EXPECT_EQ(out, sentinel) << "written only on success";
  EXPECT_STREQ(epbroker_last_error_bus_name(), "org.epbroker.Error.NotFound");
  const std::string message = epbroker_last_error_message();
  EXPECT_FALSE(message.empty());
  // The daemon's own message, as the C++ API gives it.
  const auto e = error_of([&] { client().ensure_ready("no-such-ep"); });
  EXPECT_EQ(e.code(), epbroker::Errc::not_found);
  EXPECT_EQ(e.message(), message);

  EXPECT_EQ(epbroker_ensure_ready(c.get(), nullptr, nullptr, nullptr, nullptr, nullptr),
            EPBROKER_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(epbroker_last_error_message(), "epbroker_ensure_ready: argument 'name' is NULL");
  const char* names[] = {kTestEp, nullptr};
  EXPECT_EQ(epbroker_update(c.get(), names, 2, 1, nullptr, nullptr, nullptr, nullptr),
            EPBROKER_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(epbroker_last_error_message(), "epbroker_update: argument 'names[1]' is NULL");

  EXPECT_EQ(epbroker_reset_remote(c.get(), "no-such-remote"), EPBROKER_ERR_NOT_FOUND);
  EXPECT_STREQ(epbroker_last_error_bus_name(), "org.epbroker.Error.NotFound");
  char* from = nullptr;
  char* to = nullptr;
  EXPECT_EQ(epbroker_rollback(c.get(), kBulkEp, &from, &to), EPBROKER_ERR_NOT_FOUND);
  EXPECT_EQ(from, nullptr);
  EXPECT_EQ(to, nullptr);
  EXPECT_EQ(epbroker_hold(c.get(), kBulkEp), EPBROKER_ERR_NOT_FOUND) << "not installed";
}

}  // namespace
}  // namespace tests::client
