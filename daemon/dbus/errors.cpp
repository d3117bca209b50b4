#include "daemon/dbus/errors.hpp"

#include "daemon/log/log.hpp"

namespace epbrokerd::dbus {

std::string bus_error_name_of(const core::Error& e) {
  return std::string(common::bus_error_name(e.code));
}

sdbus::Error bus_error_of(const core::Error& e) { return {bus_error_name_of(e), e.message}; }

void throw_bus_error(const core::Error& e) { throw bus_error_of(e); }

void log_unsent_reply(const sdbus::Error& e) {
  log::warn("cannot send a reply: {}: {}", e.getName(), e.getMessage());
}

void throw_internal_error(const char* where, const std::exception& e) {
  log::error("internal error in {}: {}", where, e.what());
  throw sdbus::Error(std::string(common::bus_error_name(common::BusError::Internal)),
                     std::string("internal error: ") + e.what());
}

}  // namespace epbrokerd::dbus
