#include "daemon/dbus/metered.hpp"

#include <cstdint>
#include <memory>

#include "daemon/log/log.hpp"

namespace epbrokerd::dbus {

namespace {

// NM_METERED_YES and NM_METERED_GUESS_YES.
constexpr std::uint32_t kMeteredYes = 1;
constexpr std::uint32_t kMeteredGuessYes = 3;

}  // namespace

bool network_metered(sdbus::IConnection& conn) {
  try {
    // 1. Is it running? Asking it directly would activate a stopped one.
    auto bus = sdbus::createProxy(conn, "org.freedesktop.DBus", "/org/freedesktop/DBus");
    bool running = false;
    bus->callMethod("NameHasOwner")
        .onInterface("org.freedesktop.DBus")
        .withTimeout(kMeteredCallTimeout)
        .withArguments(std::string(kNetworkManagerName))
        .storeResultsTo(running);
    if (!running) {
      log::debug("metered: {} is not on the bus: not metered", kNetworkManagerName);
      return false;
    }
    // 2. Its Metered property.
    auto nm = sdbus::createProxy(conn, kNetworkManagerName, kNetworkManagerPath);
    sdbus::Variant value;
    nm->callMethod("Get")
        .onInterface("org.freedesktop.DBus.Properties")
        .withTimeout(kMeteredCallTimeout)
        .withArguments(std::string(kNetworkManagerInterface), std::string("Metered"))
        .storeResultsTo(value);
    if (value.peekValueType() != "u") {
      log::debug("metered: NetworkManager's Metered has type {}: not metered",
                 value.peekValueType());
      return false;
    }
    const auto metered = value.get<std::uint32_t>();
    log::debug("metered: NetworkManager says Metered={}", metered);
    return metered == kMeteredYes || metered == kMeteredGuessYes;
  } catch (const sdbus::Error& e) {
    log::debug("metered: cannot ask NetworkManager ({}: {}): not metered", e.getName(),
               e.getMessage());
    return false;
  }
}

std::function<bool()> metered_probe(std::string bus_address) {
  return [address = std::move(bus_address)] {
    std::unique_ptr<sdbus::IConnection> conn;
    try {
      conn = address.empty() ? sdbus::createSystemBusConnection()
                             : sdbus::createSessionBusConnectionWithAddress(address);
    } catch (const sdbus::Error& e) {
      log::debug("metered: cannot connect to the bus ({}): not metered", e.getMessage());
      return false;
    }
    return network_metered(*conn);
  };
}

}  // namespace epbrokerd::dbus
