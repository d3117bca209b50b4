#include "client/src/connection.hpp"

#include <array>
#include <string_view>
#include <utility>

#include "common/bus_errors.hpp"

namespace epbroker::detail {

BrokerProxy::BrokerProxy(sdbus::IConnection& bus) : ProxyInterfaces(bus, kBusName, kBrokerPath) {
  // No registerProxy(): see the class comment.
}

BrokerProxy::~BrokerProxy() { unregisterProxy(); }

Connection::Connection(std::string addr) : address(std::move(addr)) {
  try {
    bus = address.empty() ? sdbus::createSystemBusConnection()
                          : sdbus::createSessionBusConnectionWithAddress(address);
    broker = std::make_unique<BrokerProxy>(*bus);
  } catch (const sdbus::Error& e) {
    throw Error(Errc::unavailable,
                "cannot connect to " + (address.empty() ? std::string("the system bus") : address) +
                    ": " + e.getMessage(),
                e.getName());
  }
}

Connection::~Connection() {
  broker.reset();
  bus.reset();
}

namespace {

Errc errc_of(common::BusError e) {
  switch (e) {
    case common::BusError::NotFound:
      return Errc::not_found;
    case common::BusError::NotAuthorized:
      return Errc::not_authorized;
    case common::BusError::InvalidArgument:
      return Errc::invalid_argument;
    case common::BusError::Incompatible:
      return Errc::incompatible;
    case common::BusError::VerificationFailed:
      return Errc::verification_failed;
    case common::BusError::Network:
      return Errc::network;
    case common::BusError::Busy:
      return Errc::busy;
    case common::BusError::Cancelled:
      return Errc::cancelled;
    case common::BusError::DiskFull:
      return Errc::disk_full;
    case common::BusError::Internal:
      return Errc::internal;
  }
  return Errc::protocol;  // not a BusError value
}

// D-Bus's own error names (the bus, sd-bus and errno-derived ones) by what they
// mean for a caller of the daemon.
constexpr std::array<std::pair<std::string_view, Errc>, 12> kDbusErrors{{
    {"org.freedesktop.DBus.Error.ServiceUnknown", Errc::unavailable},  // not installed
    {"org.freedesktop.DBus.Error.NameHasNoOwner", Errc::unavailable},
    {"org.freedesktop.DBus.Error.NoServer", Errc::unavailable},
    {"org.freedesktop.DBus.Error.Disconnected", Errc::unavailable},
    {"org.freedesktop.DBus.Error.NoNetwork", Errc::unavailable},
    {"org.freedesktop.DBus.Error.LimitsExceeded", Errc::busy},
    {"org.freedesktop.DBus.Error.NoReply", Errc::timeout},
    {"org.freedesktop.DBus.Error.Timeout", Errc::timeout},
    {"org.freedesktop.DBus.Error.TimedOut", Errc::timeout},
    {"org.freedesktop.DBus.Error.AccessDenied", Errc::not_authorized},  // bus policy
    {"org.freedesktop.DBus.Error.AuthFailed", Errc::not_authorized},
    {"org.freedesktop.DBus.Error.InteractiveAuthorizationRequired", Errc::not_authorized},
}};

}  // namespace

bool is_exiting(const sdbus::Error& e) {
  return common::bus_error_from_name(e.getName()) == common::BusError::Busy &&
         e.getMessage() == common::kExitingMessage;
}

Error to_error(const sdbus::Error& e) {
  const std::string& name = e.getName();
  if (auto kind = common::bus_error_from_name(name)) {
    return Error(errc_of(*kind), e.getMessage(), name);
  }
  for (const auto& [n, code] : kDbusErrors) {
    if (n == name) return Error(code, e.getMessage(), name);
  }
  // Activation failures: org.freedesktop.DBus.Error.Spawn.ExecFailed, .ChildExited, ...
  if (std::string_view(name).starts_with("org.freedesktop.DBus.Error.Spawn.")) {
    return Error(Errc::unavailable, "epbrokerd could not be started: " + e.getMessage(), name);
  }
  return Error(Errc::protocol, e.getMessage(), name);
}

}  // namespace epbroker::detail
