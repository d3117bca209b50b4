// polkit never blocks the bus thread (issue 17, item 5), against a stand-in polkit
// authority on the private bus (fake_polkit.hpp) and callers of another uid:
//   - while one caller's CheckAuthorization is pending (the stand-in holds it, as
//     an agent whose user never answers), other callers' ListProviders and
//     RequestSession are answered, before that check ends;
//   - a check that is never answered ends the call with NotAuthorized after
//     authorization_timeout_sec, and polkit is told to cancel it;
//   - RequestSession(download) for several packages asks polkit once, and not at
//     all when nothing needs installing;
//   - issue 18: with the daemon running as its own user (not root), as on a real
//     system, polkit answers it only because the policy names that user the
//     actions' owner (org.freedesktop.policykit.owner): without the annotation a
//     user polkit grants is refused.
#include <gtest/gtest.h>
#include <pwd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/daemon/integration/fake_polkit.hpp"
#include "tests/daemon/integration/fixture.hpp"

namespace tests::daemon {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uid_t kNobody = 65534;
// The uid the daemon runs as in the tests where it runs as its own user: the
// system user "daemon" (uid 1 on Debian), standing for user epbroker. Any uid but
// root's and the callers' (65534) would do, as long as the system knows it:
// dbus-daemon refuses connections of uids without a passwd entry.
uid_t daemon_uid() {
  const struct passwd* pw = ::getpwnam("daemon");
  return pw != nullptr ? pw->pw_uid : static_cast<uid_t>(-1);
}

// The user systemd/epbroker.sysusers creates, which epbrokerd.service runs as.
std::string daemon_user() {
  std::ifstream in(std::filesystem::path(EPBROKER_INTEGRATION_SOURCE_DIR) /
                   "systemd/epbroker.sysusers");
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string type;
    std::string name;
    if (words >> type >> name && type == "u") return name;
  }
  return {};
}

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

// Issue 18: polkitd (0.103 and later) answers CheckAuthorization about another
// user's process only to root or to an owner of the action; epbrokerd runs as user
// epbroker. The daemon runs as daemon_uid() here, standing for that user in the
// stand-in polkit's user database.
class PolkitOwnerTest : public AuthorizationTest {
 protected:
  void SetUp() override {
    AuthorizationTest::SetUp();
    if (IsSkipped()) return;
    if (daemon_uid() == static_cast<uid_t>(-1) || daemon_uid() == 0 || daemon_uid() == kNobody) {
      GTEST_SKIP() << "needs system user 'daemon' (not root, not nobody) to run epbrokerd as";
    }
  }
  void start_as_daemon_user() {
    PrivateBusOptions options;
    options.daemon_uid = daemon_uid();
    start(std::move(options));
    // The catalog's trusted root, where the daemon's user can read it (the
    // catalog's directory is the test's own).
    const auto root = bus_->config_dir() / "test-root.json";
    std::filesystem::copy_file(catalog_->trusted_root(), root);
    std::filesystem::permissions(root, std::filesystem::perms::owner_read |
                                           std::filesystem::perms::group_read |
                                           std::filesystem::perms::others_read);
    bus_->add_remote("test", catalog_->metadata_url(), catalog_->targets_url(), root);
    authorization_timeout(120);
  }
  FakePolkitPolicy policy(std::filesystem::path file) const {
    const std::string user = daemon_user();
    EXPECT_FALSE(user.empty()) << "no u line in systemd/epbroker.sysusers";
    return FakePolkitPolicy{std::move(file), {{user, daemon_uid()}}};
  }
};

TEST_F(PolkitOwnerTest, TheDaemonsUserOwnsEveryAction) {
  const auto owners = polkit_action_owners(policy(installed_polkit_policy()));
  for (const char* action :
       {"org.epbroker.install", "org.epbroker.update", "org.epbroker.downgrade",
        "org.epbroker.hold", "org.epbroker.manage"}) {
    ASSERT_TRUE(owners.contains(action)) << action;
    EXPECT_EQ(owners.at(action), std::vector<uid_t>{daemon_uid()})
        << action << ": org.freedesktop.policykit.owner must name unix-user:" << daemon_user();
  }
}

TEST_F(PolkitOwnerTest, AGrantedUserInstallsWhenTheDaemonOwnsTheAction) {
  start_as_daemon_user();
  FakePolkit polkit(*bus_, FakePolkit::Mode::grant, policy(installed_polkit_policy()));
  refresh();  // root: never asked
  Child allowed = as_nobody({"call", "EnsureProvider", kTestEp});
  const auto job = allowed.read_line(20s).value_or("");
  ASSERT_TRUE(job.starts_with("ok /org/epbroker/Broker1/job/")) << job;
  EXPECT_EQ(wait_job(*conn_, job.substr(3)), "done");
  ASSERT_EQ(polkit.checks().size(), 1U);
  const auto check = polkit.checks().front();
  EXPECT_EQ(check.caller_uid, daemon_uid()) << "the daemon did not run as its own user";
  EXPECT_EQ(check.subject_uid, kNobody);
  EXPECT_FALSE(check.untrusted);
}

TEST_F(PolkitOwnerTest, WithoutTheOwnerAnnotationPolkitRefusesToAnswerTheDaemon) {
  start_as_daemon_user();
  // The policy as it was before issue 18: no org.freedesktop.policykit.owner.
  const auto file = bus_->root() / "org.epbroker.policy";
  {
    std::ifstream in(installed_polkit_policy());
    std::ostringstream text;
    text << in.rdbuf();
    std::ofstream(file) << std::regex_replace(
        text.str(),
        std::regex(" *<annotate key=\"org.freedesktop.policykit.owner\">[^<]*"
                   "</annotate>\n"),
        "");
  }
  ASSERT_TRUE(polkit_action_owners(policy(file)).at("org.epbroker.install").empty());
  FakePolkit polkit(*bus_, FakePolkit::Mode::grant, policy(file));  // it would grant
  refresh();
  Child refused = as_nobody({"call", "EnsureProvider", kTestEp});
  const auto line = refused.read_line(20s).value_or("");
  EXPECT_TRUE(
      line.starts_with("error org.epbroker.Error.NotAuthorized: polkit could not be "
                       "asked about org.epbroker.install: Only trusted callers (e.g. "
                       "uid 0 or an action owner)"))
      << line;
  ASSERT_EQ(polkit.checks().size(), 1U);
  EXPECT_TRUE(polkit.checks().front().untrusted);
  EXPECT_EQ(str(provider(kTestEp), "state"), "available");
  // The daemon says in its log what is wrong.
  EXPECT_NE(bus_->log().find("org.freedesktop.policykit.owner"), std::string::npos) << bus_->log();
}

}  // namespace
}  // namespace tests::daemon
