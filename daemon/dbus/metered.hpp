// Whether the network connection is metered, as NetworkManager says: its
// Metered property (NM_METERED: 0 unknown, 1 yes, 2 no, 3 guess-yes, 4 guess-no)
// on /org/freedesktop/NetworkManager, interface org.freedesktop.NetworkManager,
// service org.freedesktop.NetworkManager. Automatic downloads wait while it is
// (BrokerOptions::metered); explicit admin commands do not.
#pragma once

#include <sdbus-c++/sdbus-c++.h>

#include <chrono>
#include <functional>
#include <string>

namespace epbrokerd::dbus {

inline constexpr const char* kNetworkManagerName = "org.freedesktop.NetworkManager";
inline constexpr const char* kNetworkManagerPath = "/org/freedesktop/NetworkManager";
inline constexpr const char* kNetworkManagerInterface = "org.freedesktop.NetworkManager";

// How long one question to the bus may take; network_metered() asks two.
inline constexpr std::chrono::milliseconds kMeteredCallTimeout{400};

// True when NetworkManager says "yes" or "guess-yes". False when it says
// anything else, is not on the bus (it is not activated for this: a stopped
// NetworkManager is not started), or does not answer in time: any error.
//
// Makes synchronous calls on `conn`: never call it on a connection whose event
// loop may be blocked meanwhile by the caller (e.g. the daemon's own connection
// from a worker thread while the bus thread waits for that worker); use
// metered_probe(), which opens its own connection.
bool network_metered(sdbus::IConnection& conn);

// For BrokerOptions::metered: each call opens a connection of its own to the bus
// at `bus_address` (the system bus when empty), asks network_metered() on it,
// and closes it; false when the bus cannot be reached. Safe from any thread, and
// independent of the daemon's connection and its event loop.
std::function<bool()> metered_probe(std::string bus_address);

}  // namespace epbrokerd::dbus
