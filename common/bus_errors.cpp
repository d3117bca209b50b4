#include "common/bus_errors.hpp"

namespace common {

// The one table of names. An exhaustive switch: a new BusError does not compile
// until it has its name.
std::string_view bus_error_name(BusError e) {
  switch (e) {
    case BusError::NotFound:
      return "org.epbroker.Error.NotFound";
    case BusError::NotAuthorized:
      return "org.epbroker.Error.NotAuthorized";
    case BusError::InvalidArgument:
      return "org.epbroker.Error.InvalidArgument";
    case BusError::Incompatible:
      return "org.epbroker.Error.Incompatible";
    case BusError::VerificationFailed:
      return "org.epbroker.Error.VerificationFailed";
    case BusError::Network:
      return "org.epbroker.Error.Network";
    case BusError::Busy:
      return "org.epbroker.Error.Busy";
    case BusError::Cancelled:
      return "org.epbroker.Error.Cancelled";
    case BusError::DiskFull:
      return "org.epbroker.Error.DiskFull";
    case BusError::Internal:
      return "org.epbroker.Error.Internal";
  }
  return "org.epbroker.Error.Internal";  // not a BusError value (a cast)
}

std::optional<BusError> bus_error_from_name(std::string_view name) {
  for (const BusError e : kAllBusErrors) {
    if (bus_error_name(e) == name) return e;
  }
  return std::nullopt;
}

}  // namespace common
