// Bus-side error mapping: the only place a daemon error (core::Error) becomes an
// sdbus::Error, named from the one table in common/bus_errors.hpp, and where any
// other exception from the core is turned into one, since sdbus-c++ 1.2 only
// catches sdbus::Error in server callbacks.
#pragma once

#include <sdbus-c++/sdbus-c++.h>

#include <exception>
#include <source_location>
#include <string>
#include <type_traits>
#include <utility>

#include "common/bus_errors.hpp"
#include "daemon/core/error.hpp"

namespace epbrokerd::dbus {

// "org.epbroker.Error.NotFound", ...
std::string bus_error_name_of(const core::Error& e);

[[noreturn]] void throw_bus_error(const core::Error& e);
// The same error, not thrown (for a reply sent later).
sdbus::Error bus_error_of(const core::Error& e);

// A reply (or error) that could not be sent: logged. The caller is usually gone.
void log_unsent_reply(const sdbus::Error& e);

// A bug: an exception the core let out of a call. Logged with where it happened, and
// reported as org.epbroker.Error.Internal (never as the caller's fault).
[[noreturn]] void throw_internal_error(const char* where, const std::exception& e);

// Runs an adaptor body: sdbus::Error passes through, every other exception becomes
// org.epbroker.Error.Internal, logged (never a crash).
template <typename F>
auto guarded(F&& body, std::source_location where = std::source_location::current())
    -> decltype(body()) {
  try {
    return body();
  } catch (const sdbus::Error&) {
    throw;
  } catch (const std::exception& e) {
    throw_internal_error(where.function_name(), e);
  }
}

// Unwraps a Result or throws its error as the mapped bus error.
template <typename T>
T value_or_throw(core::Result<T> r) {
  if (!r) throw_bus_error(r.error());
  if constexpr (!std::is_void_v<T>) return std::move(*r);
}

}  // namespace epbrokerd::dbus
