// libepbroker when the daemon it reaches is exiting: a call that would start a job
// or open a session is refused with Busy (common::kExitingMessage) once the bus name
// was given up, and the library makes it once more, which activates the real
// epbrokerd. The leaving instance is a stand-in owning org.epbroker.Broker1 on the
// private bus (the moment is too short to hit reliably with the real daemon; the
// daemon side is tested by daemon_name_release and IdleExitAnswersEveryCallUnderLoad).
#include <atomic>
#include <map>
#include <tuple>
#include <vector>

#include "common/bus_errors.hpp"
#include "tests/client/client_fixture.hpp"

namespace tests::client {
namespace {

using epbroker::Errc;
using tests::daemon::kBrokerInterface;
using tests::daemon::kBrokerName;
using tests::daemon::kBrokerPath;
using Dicts = std::vector<std::map<std::string, sdbus::Variant>>;

// Owns org.epbroker.Broker1 until its first call, which it refuses with Busy and
// `message`; with `release`, it first sends ReleaseName, as epbrokerd does.
class LeavingInstance {
 public:
  LeavingInstance(const tests::daemon::PrivateBus& bus, std::string message, bool release)
      : conn_(bus.connect()),
        bus_proxy_(sdbus::createProxy(*conn_, "org.freedesktop.DBus", "/org/freedesktop/DBus")),
        object_(sdbus::createObject(*conn_, kBrokerPath)),
        message_(std::move(message)),
        release_(release) {
    object_->registerMethod("RequestSession")
        .onInterface(kBrokerInterface)
        .implementedAs([this](const std::map<std::string, sdbus::Variant>&)
                           -> std::tuple<sdbus::ObjectPath, Dicts> { refuse(); });
    object_->registerMethod("EnsureProvider")
        .onInterface(kBrokerInterface)
        .implementedAs([this](const std::string&) -> sdbus::ObjectPath { refuse(); });
    object_->registerMethod("RefreshCatalog")
        .onInterface(kBrokerInterface)
        .implementedAs([this]() -> sdbus::ObjectPath { refuse(); });
    object_->finishRegistration();
    conn_->requestName(kBrokerName);
  }
  int calls() const { return calls_; }

 private:
  [[noreturn]] void refuse() {
    ++calls_;
    if (release_) {
      bus_proxy_->callMethodAsync("ReleaseName")
          .onInterface("org.freedesktop.DBus")
          .withArguments(std::string(kBrokerName))
          .uponReplyInvoke([](const sdbus::Error*, std::uint32_t) {});
    }
    throw sdbus::Error("org.epbroker.Error.Busy", message_);
  }

  std::unique_ptr<sdbus::IConnection> conn_;
  std::unique_ptr<sdbus::IProxy> bus_proxy_;
  std::unique_ptr<sdbus::IObject> object_;
  std::string message_;
  bool release_;
  std::atomic<int> calls_{0};
};

const std::string kExiting(common::kExitingMessage);

TEST_F(ClientTest, RequestSessionRefusedByAnExitingDaemonIsMadeOnceMore) {
  start({}, /*with_catalog=*/false);
  LeavingInstance leaving(*bus_, kExiting, /*release=*/true);
  ASSERT_TRUE(bus_->daemon_pids().empty()) << "the stand-in, not epbrokerd, owns the name";
  auto c = client();
  auto session = c.request_session();
  EXPECT_EQ(leaving.calls(), 1);
  EXPECT_TRUE(session.active());
  // The second call activated epbrokerd, which granted the session.
  EXPECT_EQ(bus_->daemon_pids().size(), 1U);
  session.release();
}

TEST_F(ClientTest, EnsureReadyRefusedByAnExitingDaemonIsMadeOnceMore) {
  start({}, /*with_catalog=*/false);
  LeavingInstance leaving(*bus_, kExiting, /*release=*/true);
  auto c = client();
  // Answered by epbrokerd (it knows no such provider), not by the stand-in.
  const auto e = error_of([&] { c.ensure_ready("no-such-ep"); });
  EXPECT_EQ(e.code(), Errc::not_found) << e.what();
  EXPECT_EQ(leaving.calls(), 1);
  EXPECT_EQ(bus_->daemon_pids().size(), 1U);
}

TEST_F(ClientTest, RefreshRefusedByAnExitingDaemonIsMadeOnceMore) {
  start();  // with the signed catalog: epbrokerd's refresh succeeds
  LeavingInstance leaving(*bus_, kExiting, /*release=*/true);
  auto c = client();
  EXPECT_GT(c.refresh(), 0U);  // from epbrokerd: the stand-in has no catalog
  EXPECT_EQ(leaving.calls(), 1);
  EXPECT_EQ(c.status().catalog_revision, c.refresh());
}

TEST_F(ClientTest, OtherBusyRefusalsReachTheCaller) {
  // The session cap's Busy, say: not made again.
  start({}, /*with_catalog=*/false);
  LeavingInstance leaving(*bus_, "too many sessions for this client", /*release=*/false);
  auto c = client();
  const auto e = error_of([&] { c.request_session(); });
  EXPECT_EQ(e.code(), Errc::busy) << e.what();
  EXPECT_EQ(e.message(), "too many sessions for this client");
  EXPECT_EQ(leaving.calls(), 1);
  EXPECT_TRUE(bus_->daemon_pids().empty());
}

TEST_F(ClientTest, AnExitingDaemonThatKeepsRefusingIsMadeOnceMoreOnly) {
  // As during a SIGTERM stop waiting for its jobs: the name stays, and so does
  // the refusal, which the caller then sees.
  start({}, /*with_catalog=*/false);
  LeavingInstance stopping(*bus_, kExiting, /*release=*/false);
  auto c = client();
  const auto e = error_of([&] { c.request_session(); });
  EXPECT_EQ(e.code(), Errc::busy) << e.what();
  EXPECT_EQ(e.message(), kExiting);
  EXPECT_EQ(stopping.calls(), 2);
  EXPECT_TRUE(bus_->daemon_pids().empty());
}

}  // namespace
}  // namespace tests::client
