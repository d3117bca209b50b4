// Bus-side error mapping: the only place a catalog::Error becomes an
// sdbus::Error (named from the one table in common/bus_errors.hpp), and where
// any other exception from the core is turned into one, since sdbus-c++ 1.2
// only catches sdbus::Error in server callbacks.
#pragma once

#include <sdbus-c++/sdbus-c++.h>

#include <exception>
#include <string>

#include "catalog/error.hpp"
#include "common/bus_errors.hpp"

namespace epbrokerd::dbus {

[[noreturn]] inline void throw_bus_error(const catalog::Error& e) {
  throw sdbus::Error(std::string(common::bus_error_name(common::to_bus_error(e))), e.message);
}

// Runs an adaptor body: sdbus::Error passes through, every other exception
// becomes org.epbroker.Error.InvalidArgument with its message (never a crash).
template <typename F>
auto guarded(F&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const sdbus::Error&) {
    throw;
  } catch (const std::exception& e) {
    throw sdbus::Error(std::string(common::bus_error_name(common::BusError::InvalidArgument)),
                       std::string("internal error: ") + e.what());
  }
}

// Unwraps a Result or throws its error as the mapped bus error.
template <typename T>
T value_or_throw(catalog::Result<T> r) {
  if (!r) throw_bus_error(r.error());
  if constexpr (!std::is_void_v<T>) return std::move(*r);
}

}  // namespace epbrokerd::dbus
