#include "common/bus_errors.hpp"

#include <array>
#include <utility>

namespace common {
namespace {

constexpr std::array<std::pair<BusError, std::string_view>, 8> kNames{{
    {BusError::NotFound, "org.epbroker.Error.NotFound"},
    {BusError::NotAuthorized, "org.epbroker.Error.NotAuthorized"},
    {BusError::InvalidArgument, "org.epbroker.Error.InvalidArgument"},
    {BusError::Incompatible, "org.epbroker.Error.Incompatible"},
    {BusError::VerificationFailed, "org.epbroker.Error.VerificationFailed"},
    {BusError::Network, "org.epbroker.Error.Network"},
    {BusError::Busy, "org.epbroker.Error.Busy"},
    {BusError::Cancelled, "org.epbroker.Error.Cancelled"},
}};

}  // namespace

std::string_view bus_error_name(BusError e) {
  for (const auto& [code, name] : kNames) {
    if (code == e) return name;
  }
  return "org.epbroker.Error.InvalidArgument";
}

std::optional<BusError> bus_error_from_name(std::string_view name) {
  for (const auto& [code, n] : kNames) {
    if (n == name) return code;
  }
  return std::nullopt;
}

BusError to_bus_error(const catalog::Error& e) {
  switch (catalog::error_kind(e.code)) {
    case catalog::ErrorKind::NotFound:
      return BusError::NotFound;
    case catalog::ErrorKind::InvalidArgument:
      return BusError::InvalidArgument;
    case catalog::ErrorKind::Network:
      return BusError::Network;
    case catalog::ErrorKind::Incompatible:
      return BusError::Incompatible;
    case catalog::ErrorKind::VerificationFailed:
      return BusError::VerificationFailed;
    case catalog::ErrorKind::NotAuthorized:
      return BusError::NotAuthorized;
    case catalog::ErrorKind::Busy:
      return BusError::Busy;
    case catalog::ErrorKind::Cancelled:
      return BusError::Cancelled;
  }
  return BusError::InvalidArgument;
}

}  // namespace common
