// libepbroker's C API for the package lifecycle, against a live epbrokerd on a private
// bus: verify, hold and unhold, update (dry run, then with progress), rollback (its
// owned strings), history, gc and remove.
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "epbroker/epbroker.h"
#include "tests/client/c_api_fixture.hpp"

namespace tests::client {
namespace {

using namespace capi;

// The kinds of the progress reports, in order; `user` is a std::vector<std::string>.
void record_kind(const epbroker_progress* p, void* user) {
  static_cast<std::vector<std::string>*>(user)->push_back(std::string(epbroker_progress_kind(p)) +
                                                          " " + epbroker_progress_state_name(p));
}

class CApiLifecycleTest : public capi::CApiClientTest {
 protected:
  // start(), with automatic updates off: the test updates itself.
  ClientPtr start_manual() {
    start();
    std::ofstream(bus_->config_dir() / "epbroker.conf", std::ios::app) << "auto_update = off\n";
    return connect();
  }
};

TEST_F(CApiLifecycleTest, VerifyHoldUpdateRollbackHistoryGcRemove) {
  auto c = start_manual();
  ASSERT_TRUE(c);
  ASSERT_EQ(epbroker_refresh(c.get(), nullptr, nullptr, nullptr, nullptr), EPBROKER_OK)
      << last_error();
  ASSERT_EQ(epbroker_ensure_ready(c.get(), kTestEp, nullptr, nullptr, nullptr, nullptr),
            EPBROKER_OK)
      << last_error();

  // verify: a job with progress; the one installed version is intact.
  std::vector<std::string> kinds;
  epbroker_verify_list* verified = nullptr;
  std::int64_t finished = 0;
  ASSERT_EQ(epbroker_verify(c.get(), record_kind, &kinds, nullptr, &verified, &finished),
            EPBROKER_OK)
      << last_error();
  std::unique_ptr<epbroker_verify_list, Freer<epbroker_verify_list_free>> keep_verified(verified);
  ASSERT_EQ(epbroker_verify_list_size(verified), 1U);
  const auto* v = epbroker_verify_list_get(verified, 0);
  EXPECT_STREQ(epbroker_verify_result_name(v), kTestEp);
  EXPECT_STREQ(epbroker_verify_result_version(v), "0.1.0");
  EXPECT_EQ(epbroker_verify_result_ok(v), 1);
  EXPECT_STREQ(epbroker_verify_result_problem(v), "");
  EXPECT_GT(finished, 0);
  ASSERT_FALSE(kinds.empty());
  EXPECT_EQ(kinds.back(), "verify done");

  // hold, unhold.
  ProvidersPtr keep;
  ASSERT_EQ(epbroker_hold(c.get(), kTestEp), EPBROKER_OK) << last_error();
  EXPECT_EQ(epbroker_provider_held(row(c.get(), kTestEp, keep)), 1);
  ASSERT_EQ(epbroker_unhold(c.get(), kTestEp), EPBROKER_OK) << last_error();
  EXPECT_EQ(epbroker_provider_held(row(c.get(), kTestEp, keep)), 0);

  // A newer version: update lists it (dry run), then installs it with progress.
  catalog_->publish_version(kTestEp, "0.2.0");
  ASSERT_EQ(epbroker_refresh(c.get(), nullptr, nullptr, nullptr, nullptr), EPBROKER_OK)
      << last_error();
  EXPECT_STREQ(epbroker_provider_update_available(row(c.get(), kTestEp, keep)), "0.2.0");
  const char* names[] = {kTestEp};
  epbroker_update_list* updates = nullptr;
  ASSERT_EQ(epbroker_update(c.get(), names, 1, 1, nullptr, nullptr, nullptr, &updates), EPBROKER_OK)
      << last_error();
  UpdatesPtr keep_updates(updates);
  ASSERT_EQ(epbroker_update_list_size(updates), 1U);
  const auto* u = epbroker_update_list_get(updates, 0);
  EXPECT_STREQ(epbroker_update_change_name(u), kTestEp);
  EXPECT_STREQ(epbroker_update_change_from(u), "0.1.0");
  EXPECT_STREQ(epbroker_update_change_to(u), "0.2.0");
  EXPECT_STREQ(epbroker_update_change_job(u), "") << "a dry run starts nothing";
  EXPECT_STREQ(epbroker_provider_version(row(c.get(), kTestEp, keep)), "0.1.0");

  kinds.clear();
  ASSERT_EQ(epbroker_update(c.get(), nullptr, 0, 0, record_kind, &kinds, nullptr, &updates),
            EPBROKER_OK)
      << last_error();
  keep_updates.reset(updates);
  ASSERT_EQ(epbroker_update_list_size(updates), 1U);
  EXPECT_STRNE(epbroker_update_change_job(epbroker_update_list_get(updates, 0)), "");
  ASSERT_FALSE(kinds.empty());
  EXPECT_EQ(kinds.back(), "install done");
  EXPECT_STREQ(epbroker_provider_version(row(c.get(), kTestEp, keep)), "0.2.0");

  // rollback: the versions come back as strings the caller frees.
  char* from = nullptr;
  char* to = nullptr;
  ASSERT_EQ(epbroker_rollback(c.get(), kTestEp, &from, &to), EPBROKER_OK) << last_error();
  ASSERT_NE(from, nullptr);
  ASSERT_NE(to, nullptr);
  EXPECT_STREQ(from, "0.2.0");
  EXPECT_STREQ(to, "0.1.0");
  epbroker_string_free(from);
  epbroker_string_free(to);
  const auto* p = row(c.get(), kTestEp, keep);
  EXPECT_STREQ(epbroker_provider_version(p), "0.1.0");
  EXPECT_EQ(epbroker_provider_held(p), 1) << "a rollback holds the package";
  EXPECT_STRNE(epbroker_provider_hold_reason(p), "");

  // history: what happened, oldest first.
  epbroker_history_list* history = nullptr;
  ASSERT_EQ(epbroker_history(c.get(), kTestEp, &history), EPBROKER_OK) << last_error();
  std::unique_ptr<epbroker_history_list, Freer<epbroker_history_list_free>> keep_history(history);
  std::set<std::string> actions;
  bool rolled_back = false;
  for (size_t i = 0; i < epbroker_history_list_size(history); ++i) {
    const auto* h = epbroker_history_list_get(history, i);
    EXPECT_STREQ(epbroker_history_entry_name(h), kTestEp);
    EXPECT_GT(epbroker_history_entry_time(h), 0);
    EXPECT_STREQ(epbroker_history_entry_result(h), "ok");
    actions.insert(epbroker_history_entry_action(h));
    rolled_back |= std::string(epbroker_history_entry_action(h)) == "rollback" &&
                   std::string(epbroker_history_entry_from(h)) == "0.2.0" &&
                   std::string(epbroker_history_entry_to(h)) == "0.1.0";
  }
  for (const char* a : {"install", "hold", "unhold", "rollback"}) {
    EXPECT_TRUE(actions.count(a)) << a;
  }
  EXPECT_TRUE(rolled_back);
  const size_t ours = epbroker_history_list_size(history);
  ASSERT_EQ(epbroker_history(c.get(), nullptr, &history), EPBROKER_OK) << last_error();
  keep_history.reset(history);
  EXPECT_GE(epbroker_history_list_size(history), ours) << "every package's history";

  // gc deletes nothing that is kept; remove, then nothing left to remove.
  epbroker_removed_list* removed = nullptr;
  ASSERT_EQ(epbroker_gc(c.get(), &removed), EPBROKER_OK) << last_error();
  std::unique_ptr<epbroker_removed_list, Freer<epbroker_removed_list_free>> keep_removed(removed);
  for (size_t i = 0; i < epbroker_removed_list_size(removed); ++i) {
    const auto* r = epbroker_removed_list_get(removed, i);
    EXPECT_STREQ(epbroker_removed_name(r), kTestEp);
    EXPECT_STRNE(epbroker_removed_version(r), "0.1.0") << "the current version";
  }
  ASSERT_EQ(epbroker_remove(c.get(), kTestEp, 0), EPBROKER_OK) << last_error();
  EXPECT_NE(epbroker_provider_state_of(row(c.get(), kTestEp, keep)), EPBROKER_PROVIDER_READY);
  EXPECT_EQ(epbroker_remove(c.get(), kTestEp, 1), EPBROKER_ERR_NOT_FOUND) << last_error();
  EXPECT_STREQ(epbroker_last_error_bus_name(), "org.epbroker.Error.NotFound");
}

}  // namespace
}  // namespace tests::client
