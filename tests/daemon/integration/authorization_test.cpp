// polkit never blocks the bus thread (issue 17, item 5), against a stand-in polkit
// authority on the private bus (fake_polkit.hpp) and callers of another uid:
//   - while one caller's CheckAuthorization is pending (the stand-in holds it, as
//     an agent whose user never answers), other callers' ListProviders and
//     RequestSession are answered, before that check ends;
//   - a check that is never answered ends the call with NotAuthorized after
//     authorization_timeout_sec, and polkit is told to cancel it;
//   - RequestSession(download) for several packages asks polkit once, and not at
//     all when nothing needs installing.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>
#include <vector>

#include "tests/daemon/integration/fake_polkit.hpp"
#include "tests/daemon/integration/fixture.hpp"

namespace tests::daemon {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uid_t kNobody = 65534;

class AuthorizationTest : public CatalogTest {
 protected:
  // The daemon's bound on polkit's answer (before it starts).
  void authorization_timeout(unsigned seconds) {
    std::ofstream(bus_->config_dir() / "epbroker.conf", std::ios::app)
        << "authorization_timeout_sec = " << seconds << "\n";
  }

  // bus_client (bus_client.cpp) as uid 65534: `call METHOD [ARG]`.
  Child as_nobody(const std::vector<std::string>& args) {
    // Copied once: a copy over a running one fails (ETXTBSY).
    if (client_.empty()) client_ = client_for_others(*bus_);
    std::vector<std::string> argv = {"setpriv",
                                     "--reuid=" + std::to_string(kNobody),
                                     "--regid=" + std::to_string(kNobody),
                                     "--clear-groups",
                                     client_.string(),
                                     bus_->address()};
    argv.insert(argv.end(), args.begin(), args.end());
    return start_child(argv);
  }

  // RequestSession({providers: test-ep bulk-ep, download: true}) through busctl
  // as uid 65534 (its connection, and so the session, ends when it returns).
  CommandResult session_with_downloads() {
    return bus_->busctl(
        {"call", kBrokerName, kBrokerPath, kBrokerInterface, "RequestSession", "a{sv}", "2",
         "providers", "as", "2", kTestEp, kBulkEp, "download", "b", "true"},
        kNobody);
  }

  std::filesystem::path client_;
};

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST_F(AuthorizationTest, PendingCheckHoldsUpNoOtherCaller) {
  start();
  authorization_timeout(120);  // far beyond the test: the stand-in answers when told
  FakePolkit polkit(*bus_, FakePolkit::Mode::hold);
  refresh();  // root: never asked
  EXPECT_TRUE(polkit.checks().empty());

  // 1. Nobody's EnsureProvider: the daemon asks polkit, which holds the check.
  Child waiting = as_nobody({"call", "EnsureProvider", kTestEp});
  ASSERT_TRUE(polkit.wait_checks(1, 20s)) << "the daemon did not ask polkit";
  const auto check = polkit.checks().front();
  EXPECT_EQ(check.action, "org.epbroker.install");
  EXPECT_EQ(check.subject_kind, "system-bus-name");
  EXPECT_EQ(check.flags, 1U) << "user interaction allowed";

  // 2. Meanwhile root and another nobody are served.
  const auto t0 = Clock::now();
  EXPECT_FALSE(broker_->ListProviders().empty());
  const auto [session, granted] = broker_->RequestSession({});
  const auto served_in = Clock::now() - t0;
  Child other = as_nobody({"call", "ListProviders"});
  EXPECT_TRUE(other.read_line(20s).value_or("").starts_with("ok ")) << "ListProviders of nobody";
  // ... all before the pending check ended: its caller has no answer yet, and
  // the stand-in still holds it.
  EXPECT_FALSE(waiting.read_line(1ms).has_value()) << "the pending call was answered first";
  EXPECT_EQ(polkit.pending(), 1U);
  std::cout << "[ figures ] ListProviders + RequestSession of root while a polkit check is "
               "pending: "
            << std::chrono::duration_cast<std::chrono::microseconds>(served_in).count() << " us\n";

  // 3. polkit says no: the waiting call ends with NotAuthorized, asked once.
  EXPECT_EQ(polkit.answer(false), 1U);
  const auto line = waiting.read_line(20s).value_or("");
  EXPECT_TRUE(
      line.starts_with("error org.epbroker.Error.NotAuthorized: polkit refused "
                       "org.epbroker.install"))
      << line;
  EXPECT_EQ(polkit.checks().size(), 1U);

  // 4. Granted, the same call starts the install.
  polkit.set_mode(FakePolkit::Mode::grant);
  Child allowed = as_nobody({"call", "EnsureProvider", kTestEp});
  const auto job = allowed.read_line(20s).value_or("");
  EXPECT_TRUE(job.starts_with("ok /org/epbroker/Broker1/job/")) << job;
  EXPECT_EQ(polkit.checks().size(), 2U);
  if (job.starts_with("ok ")) {
    EXPECT_EQ(wait_job(*conn_, job.substr(3)), "done");
  }
}

TEST_F(AuthorizationTest, UnansweredCheckIsRefusedAtTheBound) {
  start();
  authorization_timeout(1);
  FakePolkit polkit(*bus_, FakePolkit::Mode::hold);  // never answers by itself
  refresh();
  Child waiting = as_nobody({"call", "RemoveProvider", kTestEp});
  const auto line = waiting.read_line(30s).value_or("");
  EXPECT_TRUE(
      line.starts_with("error org.epbroker.Error.NotAuthorized: polkit did not answer "
                       "about org.epbroker.manage within 1 s"))
      << line;
  ASSERT_EQ(polkit.checks().size(), 1U);
  // The daemon told polkit to drop it (an authentication dialog closes).
  const std::string id = polkit.checks().front().cancellation_id;
  EXPECT_FALSE(id.empty());
  EXPECT_TRUE(wait_until(
      [&] {
        const auto c = polkit.cancelled();
        return std::find(c.begin(), c.end(), id) != c.end();
      },
      10s))
      << "no CancelCheckAuthorization(" << id << ")";
  // The daemon goes on: root's calls, and the next check, as usual.
  EXPECT_FALSE(broker_->ListProviders().empty());
}

TEST_F(AuthorizationTest, SessionWithDownloadsAsksOnce) {
  start();
  authorization_timeout(120);
  FakePolkit polkit(*bus_, FakePolkit::Mode::deny);
  refresh();

  // 1. Refused: one check for both packages, each carrying the refusal.
  auto r = session_with_downloads();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(polkit.checks().size(), 1U) << r.out;
  EXPECT_EQ(polkit.checks()[0].action, "org.epbroker.install");
  EXPECT_EQ(count(r.out, "polkit refused org.epbroker.install"), 2U) << r.out;
  EXPECT_EQ(count(r.out, "s \"installing\""), 0U) << r.out;

  // 2. Granted: one more check, both installs start.
  polkit.set_mode(FakePolkit::Mode::grant);
  r = session_with_downloads();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(polkit.checks().size(), 2U) << r.out;
  EXPECT_EQ(count(r.out, "s \"installing\""), 2U) << r.out;
  // (How the installs end is not this test's business: root completes them.)
  EXPECT_TRUE(wait_until(
      [&] {
        return str(provider(kTestEp), "state") != "installing" &&
               str(provider(kBulkEp), "state") != "installing";
      },
      60s));
  for (const char* name : {kTestEp, kBulkEp}) {
    if (str(provider(name), "state") != "ready") install(name);
  }

  // 3. Nothing left to install: polkit is not asked at all.
  r = session_with_downloads();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(count(r.out, "s \"ready\""), 2U) << r.out;
  EXPECT_EQ(polkit.checks().size(), 2U);
}

}  // namespace
}  // namespace tests::daemon
