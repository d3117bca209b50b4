// Typed errors of libepbroker.
//
// Every failing call of the client library throws epbroker::Error (and nothing
// else but std::bad_alloc). Its code is one of the daemon's error kinds
// (org.epbroker.Error.*, mapped through the one name table the daemon uses), or one
// of the client-side kinds below; its message is the daemon's own message when
// the daemon answered, otherwise one written here. This header is C++17 and
// needs no D-Bus headers.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

// The library is built with hidden visibility; this marks what it exports.
#define EPBROKER_API __attribute__((visibility("default")))

namespace epbroker {

enum class Errc {
  // The daemon's kinds (org.epbroker.Error.<Name>).
  not_found,            // NotFound: no such package, job or session
  not_authorized,       // NotAuthorized: polkit or the daemon's policy said no
  invalid_argument,     // InvalidArgument: a bad name, option or value
  incompatible,         // Incompatible: the package cannot run on this machine
  verification_failed,  // VerificationFailed: signature, hash or manifest check failed
  network,              // Network: the catalog or package could not be fetched
  busy,                 // Busy: refused while held (a session lease, a limit, a
                        // daemon stopping; one that exits when idle is asked again)
  cancelled,            // Cancelled: the job was cancelled (or the wait was)
  // Client-side kinds.
  unavailable,  // no bus, or the daemon cannot be reached / started, or it went away
  timeout,      // the daemon did not answer in time
  protocol,     // an answer this library does not understand (version skew)
  // The daemon's kinds added since (at the end, so that the values above keep theirs).
  disk_full,  // DiskFull: the daemon's disk (or quota) is full; free space, try again
  internal,   // Internal: the daemon failed on its own side (a local I/O error, a bug)
};

// Stable names, used in epbrokerctl's JSON: "NotFound", "NotAuthorized", ...,
// "Cancelled", "DiskFull", "Internal" (the daemon's names without the prefix),
// "Unavailable", "Timeout", "Protocol".
EPBROKER_API std::string_view errc_name(Errc code) noexcept;

class EPBROKER_API Error : public std::runtime_error {
 public:
  // `bus_name`: the D-Bus error name received ("org.epbroker.Error.NotFound",
  // "org.freedesktop.DBus.Error.ServiceUnknown", ...), "" for a local error.
  Error(Errc code, std::string message, std::string bus_name = {});

  Errc code() const noexcept { return code_; }
  // The message alone (what() is the same text).
  const std::string& message() const noexcept { return message_; }
  const std::string& bus_name() const noexcept { return bus_name_; }

 private:
  Errc code_;
  std::string message_;
  std::string bus_name_;
};

}  // namespace epbroker
