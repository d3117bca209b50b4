// The effective uid of a bus caller, remembered by unique name.
//
// sd-bus has no uid in a message from dbus-daemon: each credentials query is a
// synchronous GetConnectionUnixUser round trip to the bus, which would double
// the latency of every call. A bus never reuses a unique name and a
// connection's uid is fixed when it connects, so the first answer for a name
// stays right for as long as the name exists; names are forgotten when their
// owner leaves the bus (NameOwnerChanged), and the whole table is dropped if it
// ever grows past kMaxCallerUids (so a missed signal costs a lookup, not memory).
#pragma once

#include <sdbus-c++/sdbus-c++.h>
#include <sys/types.h>

#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_map>

namespace epbrokerd::dbus {

inline constexpr std::size_t kMaxCallerUids = 4096;

class CallerUids {
 public:
  // The sender's effective uid as the bus reports it (sdbus::Message::getCredsEuid()
  // on first sight of a sender; throws sdbus::Error as that does).
  uid_t of(const sdbus::Message& msg);
  // The unique name `sender` left the bus.
  void forget(const std::string& sender);
  std::size_t size() const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::string, uid_t> uids_;
};

// The process's one table (the daemon serves one bus connection).
CallerUids& caller_uids();

}  // namespace epbrokerd::dbus
