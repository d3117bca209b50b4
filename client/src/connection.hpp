// libepbroker internals: the bus connection a Client and its Sessions share, the
// generated Broker1 proxy on it, and the mapping of sdbus::Error to
// epbroker::Error. Nothing here is installed.
#pragma once

#include <sdbus-c++/sdbus-c++.h>

#include <cstdint>
#include <memory>
#include <string>

#include "epbroker/error.hpp"
#include "generated/dbus/Broker1_proxy.h"

namespace epbroker::detail {

inline constexpr const char* kBusName = "org.epbroker.Broker1";
inline constexpr const char* kBrokerPath = "/org/epbroker/Broker1";
inline constexpr const char* kBrokerInterface = "org.epbroker.Broker1";

// Broker1 methods and properties, plus Properties.GetAll and
// ObjectManager.GetManagedObjects on the broker's root object. It never calls
// registerProxy(): the library consumes no Broker1 signal, and a subscription
// would queue unread messages on a connection that an idle application does not
// read (the bus may then drop it, ending its sessions).
class BrokerProxy final
    : public sdbus::ProxyInterfaces<org::epbroker::Broker1_proxy, sdbus::Properties_proxy,
                                    sdbus::ObjectManager_proxy> {
 public:
  explicit BrokerProxy(sdbus::IConnection& bus);
  ~BrokerProxy();
  // For calls made by hand (Client::request_session, Client::ensure_model).
  sdbus::IProxy& raw() { return getProxy(); }

 private:
  void onProvidersChanged() override {}
  void onCatalogChanged(const uint64_t&) override {}
  void onPropertiesChanged(const std::string&, const std::map<std::string, sdbus::Variant>&,
                           const std::vector<std::string>&) override {}
  void onInterfacesAdded(
      const sdbus::ObjectPath&,
      const std::map<std::string, std::map<std::string, sdbus::Variant>>&) override {}
  void onInterfacesRemoved(const sdbus::ObjectPath&, const std::vector<std::string>&) override {}
};

// One bus connection with no event-loop thread: calls are synchronous on the
// caller's thread, and waits drive the connection themselves (job_wait.hpp).
struct Connection {
  // Connects to `address`, or the system bus when empty; throws Error(unavailable).
  explicit Connection(std::string address);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  std::string address;
  std::unique_ptr<sdbus::IConnection> bus;
  std::unique_ptr<BrokerProxy> broker;  // destroyed before `bus`
};

// The epbroker::Error for a D-Bus error: org.epbroker.Error.* through the shared
// table (common/bus_errors), D-Bus's own errors by kind, anything else `protocol`.
Error to_error(const sdbus::Error& e);

// Runs `body`; an sdbus::Error it throws is rethrown as epbroker::Error.
template <typename F>
auto checked(F&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const sdbus::Error& e) {
    throw to_error(e);
  }
}

// The method timeout of calls that delete files (CollectGarbage, RemoveModel):
// longer than a method call may take by default.
inline constexpr std::uint64_t kDeletingCallTimeoutUsec = 600ULL * 1000 * 1000;

// Runs `body` (a generated call, which takes the connection's default method
// timeout) with the method timeout raised to `usec`, then puts it back.
template <typename F>
auto with_method_timeout(Connection& conn, std::uint64_t usec, F&& body) -> decltype(body()) {
  const auto previous = conn.bus->getMethodCallTimeout();
  conn.bus->setMethodCallTimeout(usec);
  try {
    auto r = body();
    conn.bus->setMethodCallTimeout(previous);
    return r;
  } catch (...) {
    conn.bus->setMethodCallTimeout(previous);
    throw;
  }
}

// Whether `e` is the daemon refusing a call because it is exiting
// (common::kExitingMessage).
bool is_exiting(const sdbus::Error& e);

// checked() for a call that starts a job or opens a session: refused because the
// daemon is exiting, it is made once more, which reaches (activates) a new
// instance. Once only: a daemon stopped by SIGTERM keeps refusing until its jobs
// are cancelled, and that Busy is the caller's to see.
template <typename F>
auto checked_starting(F&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const sdbus::Error& e) {
    if (!is_exiting(e)) throw to_error(e);
  }
  return checked(body);
}

}  // namespace epbroker::detail
