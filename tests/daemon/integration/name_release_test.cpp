// dbus/name_release on a private dbus-daemon: a refusal sent after before_reply()
// reaches its caller only after the bus has handed the name on, so the caller's next
// call goes to the next owner. Two plain connections stand in for the leaving and
// the next instance (the next one waits in the bus's queue for the name).
#include "daemon/dbus/name_release.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <functional>

#include "tests/daemon/integration/private_bus.hpp"

namespace tests::daemon {
namespace {

constexpr const char* kName = "org.epbroker.test.NameRelease";
constexpr const char* kPath = "/org/epbroker/test";
constexpr const char* kInterface = "org.epbroker.test.Instance";

// One "instance": owns (or queues for) kName and answers Who() on kPath.
class Instance {
 public:
  Instance(const PrivateBus& bus, std::function<std::string()> who)
      : conn_(bus.connect()), object_(sdbus::createObject(*conn_, kPath)) {
    object_->registerMethod("Who").onInterface(kInterface).implementedAs(std::move(who));
    object_->finishRegistration();
  }
  // org.freedesktop.DBus.RequestName with no flags: 1 primary owner, 2 in queue.
  std::uint32_t request_name() {
    auto bus = sdbus::createProxy(*conn_, "org.freedesktop.DBus", "/org/freedesktop/DBus");
    std::uint32_t reply = 0;
    bus->callMethod("RequestName")
        .onInterface("org.freedesktop.DBus")
        .withArguments(std::string(kName), std::uint32_t{0})
        .storeResultsTo(reply);
    return reply;
  }
  sdbus::IConnection& connection() { return *conn_; }

 private:
  std::unique_ptr<sdbus::IConnection> conn_;
  std::unique_ptr<sdbus::IObject> object_;
};

std::string who(sdbus::IProxy& proxy) {
  std::string answer;
  proxy.callMethod("Who").onInterface(kInterface).storeResultsTo(answer);
  return answer;
}

// What the caller sees: the answer, or the error's name.
std::string call(sdbus::IProxy& proxy) {
  try {
    return who(proxy);
  } catch (const sdbus::Error& e) {
    return e.getName();
  }
}

TEST(NameRelease, ARefusalAfterBeforeReplyReachesTheCallerOnceTheNameMovedOn) {
  PrivateBus bus;
  std::atomic<bool> release_first{false};
  std::unique_ptr<epbrokerd::dbus::NameRelease> release;
  Instance leaving(bus, [&]() -> std::string {
    if (release_first) release->before_reply();
    throw sdbus::Error("org.epbroker.Error.Busy", "exiting");
  });
  release = std::make_unique<epbrokerd::dbus::NameRelease>(leaving.connection(), kName);
  ASSERT_EQ(leaving.request_name(), 1U);
  Instance next(bus, [] { return std::string("next"); });
  ASSERT_EQ(next.request_name(), 2U) << "the next instance should wait in the queue";

  auto caller = bus.connect();
  auto proxy = sdbus::createProxy(*caller, kName, kPath);
  // Without the release, calling again reaches the leaving instance again: what
  // this test guards against.
  EXPECT_EQ(call(*proxy), "org.epbroker.Error.Busy");
  EXPECT_EQ(call(*proxy), "org.epbroker.Error.Busy");
  EXPECT_FALSE(release->started());
  EXPECT_FALSE(release->wait(10ms)) << "nothing was sent yet";

  release_first = true;
  EXPECT_EQ(call(*proxy), "org.epbroker.Error.Busy");
  EXPECT_TRUE(release->started());
  // No wait, no retry loop: the refusal came after the bus processed ReleaseName.
  EXPECT_EQ(call(*proxy), "next");
  EXPECT_TRUE(release->wait(5s));
  // The main loop's start() afterwards sends nothing more and still finds it done.
  release->start();
  EXPECT_TRUE(release->wait(5s));
}

TEST(NameRelease, StartReleasesWithoutARefusedCall) {
  PrivateBus bus;
  Instance leaving(bus, [] { return std::string("leaving"); });
  epbrokerd::dbus::NameRelease release(leaving.connection(), kName);
  ASSERT_EQ(leaving.request_name(), 1U);
  Instance next(bus, [] { return std::string("next"); });
  ASSERT_EQ(next.request_name(), 2U);

  auto caller = bus.connect();
  auto proxy = sdbus::createProxy(*caller, kName, kPath);
  EXPECT_EQ(call(*proxy), "leaving");
  release.start();
  ASSERT_TRUE(release.wait(5s));
  EXPECT_EQ(call(*proxy), "next");
  // A refused call after that sends no second ReleaseName (which would be
  // harmless, but is not needed).
  release.before_reply();
  EXPECT_EQ(call(*proxy), "next");
}

TEST(NameRelease, ANameThatIsNotOursIsNotOursAfterwards) {
  // The bus answers "not owner" (3): the wait still ends, with true, since the
  // point (the name is not ours) holds.
  PrivateBus bus;
  Instance owner(bus, [] { return std::string("owner"); });
  ASSERT_EQ(owner.request_name(), 1U);
  Instance other(bus, [] { return std::string("other"); });
  epbrokerd::dbus::NameRelease release(other.connection(), kName);
  release.start();
  EXPECT_TRUE(release.wait(5s));
  auto caller = bus.connect();
  auto proxy = sdbus::createProxy(*caller, kName, kPath);
  EXPECT_EQ(call(*proxy), "owner");
}

}  // namespace
}  // namespace tests::daemon
