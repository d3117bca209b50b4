// The one table of bus error names (org.epbroker.Error.*), shared by the daemon
// (typed errors -> names) and the client library (names -> typed errors). Nothing
// here knows the catalog: the daemon maps catalog codes onto BusError itself
// (daemon/core/error.hpp), so libepbroker links none of the catalog's code.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace common {

// The daemon's one closed set of errors, as callers see them: each is reported as
// org.epbroker.Error.<Name> (bus_error_name()), and libepbroker maps each name back
// to one epbroker::Errc. docs/architecture.md ("Errors") says when each is used.
enum class BusError {
  NotFound,            // no such package, job, session or file
  NotAuthorized,       // polkit or the daemon's policy said no
  InvalidArgument,     // a bad name, option or value
  Incompatible,        // the package cannot run on this machine or with this ORT
  VerificationFailed,  // what a remote served failed a signature/hash/format check
  Network,             // the catalog or a package could not be fetched
  Busy,                // refused while something holds it, or while exiting
  Cancelled,           // the job was cancelled
  DiskFull,            // a write found the disk (or the quota) full
  Internal,            // the daemon failed on its own side: a local I/O error, a bug
};

// Every BusError, in declaration order.
inline constexpr BusError kAllBusErrors[] = {
    BusError::NotFound,     BusError::NotAuthorized,      BusError::InvalidArgument,
    BusError::Incompatible, BusError::VerificationFailed, BusError::Network,
    BusError::Busy,         BusError::Cancelled,          BusError::DiskFull,
    BusError::Internal,
};

// The message of the Busy error with which an instance that is exiting (idle, or
// stopped) refuses a call that would start a job or open a session. After an idle
// decision it leaves only once the bus name was given up, so calling once more
// reaches a new instance; the client library does that on its own.
inline constexpr std::string_view kExitingMessage =
    "epbrokerd is exiting; call again to reach a new instance";

// "org.epbroker.Error.NotFound", ...
std::string_view bus_error_name(BusError e);
// Inverse of bus_error_name(); nullopt for a name of no BusError.
std::optional<BusError> bus_error_from_name(std::string_view name);

}  // namespace common
