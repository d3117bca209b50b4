// The one table of bus error names (org.epbroker.Error.*), shared by the daemon
// (typed errors -> names) and the client library (names -> typed errors).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "catalog/error.hpp"

namespace common {

enum class BusError {
  NotFound,
  NotAuthorized,
  InvalidArgument,
  Incompatible,
  VerificationFailed,
  Network,
  Busy,
  Cancelled,
};

// The message of the Busy error with which an instance that is exiting (idle, or
// stopped) refuses a call that would start a job or open a session. After an idle
// decision it leaves only once the bus name was given up, so calling once more
// reaches a new instance; the client library does that on its own.
inline constexpr std::string_view kExitingMessage =
    "epbrokerd is exiting; call again to reach a new instance";

// "org.epbroker.Error.NotFound", ...
std::string_view bus_error_name(BusError e);
// Inverse of bus_error_name(); nullopt for a name not in the table.
std::optional<BusError> bus_error_from_name(std::string_view name);
// The bus error a catalog/daemon error is reported as.
BusError to_bus_error(const catalog::Error& e);

}  // namespace common
