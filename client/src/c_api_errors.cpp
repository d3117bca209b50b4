// The C API's status codes, the per-thread last error, and the translation of C++
// exceptions into both.
#include <cstdlib>
#include <new>

#include "client/src/c_api.hpp"
#include "epbroker/version.hpp"

namespace epbroker::capi {
namespace {

// The header promises status = Errc + 1 for every Errc value; a new Errc needs a new
// status at the end of the C enum (status_of's switch then stops compiling).
static_assert(EPBROKER_ERR_NOT_FOUND == static_cast<int>(Errc::not_found) + 1);
static_assert(EPBROKER_ERR_NOT_AUTHORIZED == static_cast<int>(Errc::not_authorized) + 1);
static_assert(EPBROKER_ERR_INVALID_ARGUMENT == static_cast<int>(Errc::invalid_argument) + 1);
static_assert(EPBROKER_ERR_INCOMPATIBLE == static_cast<int>(Errc::incompatible) + 1);
static_assert(EPBROKER_ERR_VERIFICATION_FAILED == static_cast<int>(Errc::verification_failed) + 1);
static_assert(EPBROKER_ERR_NETWORK == static_cast<int>(Errc::network) + 1);
static_assert(EPBROKER_ERR_BUSY == static_cast<int>(Errc::busy) + 1);
static_assert(EPBROKER_ERR_CANCELLED == static_cast<int>(Errc::cancelled) + 1);
static_assert(EPBROKER_ERR_UNAVAILABLE == static_cast<int>(Errc::unavailable) + 1);
static_assert(EPBROKER_ERR_TIMEOUT == static_cast<int>(Errc::timeout) + 1);
static_assert(EPBROKER_ERR_PROTOCOL == static_cast<int>(Errc::protocol) + 1);
static_assert(EPBROKER_ERR_DISK_FULL == static_cast<int>(Errc::disk_full) + 1);
static_assert(EPBROKER_ERR_INTERNAL == static_cast<int>(Errc::internal) + 1);

// The thread's last error. `fallback`, when set, replaces `message` (a static text for
// when even the message could not be copied).
struct LastError {
  std::string message;
  std::string bus_name;
  const char* fallback = nullptr;
};

LastError& last_error() noexcept {
  thread_local LastError error;
  return error;
}

// errc_name()'s word (a string literal, so data() ends in a NUL): epbrokerctl's names.
const char* name_of(Errc code) noexcept { return errc_name(code).data(); }

}  // namespace

epbroker_status status_of(Errc code) noexcept {
  switch (code) {
    case Errc::not_found:
      return EPBROKER_ERR_NOT_FOUND;
    case Errc::not_authorized:
      return EPBROKER_ERR_NOT_AUTHORIZED;
    case Errc::invalid_argument:
      return EPBROKER_ERR_INVALID_ARGUMENT;
    case Errc::incompatible:
      return EPBROKER_ERR_INCOMPATIBLE;
    case Errc::verification_failed:
      return EPBROKER_ERR_VERIFICATION_FAILED;
    case Errc::network:
      return EPBROKER_ERR_NETWORK;
    case Errc::busy:
      return EPBROKER_ERR_BUSY;
    case Errc::cancelled:
      return EPBROKER_ERR_CANCELLED;
    case Errc::unavailable:
      return EPBROKER_ERR_UNAVAILABLE;
    case Errc::timeout:
      return EPBROKER_ERR_TIMEOUT;
    case Errc::protocol:
      return EPBROKER_ERR_PROTOCOL;
    case Errc::disk_full:
      return EPBROKER_ERR_DISK_FULL;
    case Errc::internal:
      return EPBROKER_ERR_INTERNAL;
  }
  return EPBROKER_ERR_PROTOCOL;  // not an Errc value: an answer we do not understand
}

epbroker_status fail(epbroker_status status, const std::string& message,
                     const std::string& bus_name) noexcept {
  LastError& e = last_error();
  try {
    e.message = message;
    e.bus_name = bus_name;
    e.fallback = nullptr;
  } catch (...) {
    // Copying needed memory that is not there: keep a static message.
    e.message.clear();
    e.bus_name.clear();
    e.fallback = "out of memory (while recording an error)";
  }
  return status;
}

epbroker_status fail_current(const char* function) noexcept {
  // Each handler records the error; none lets anything escape. The strings built here
  // may themselves fail to allocate: the outer catch covers that.
  try {
    try {
      throw;
    } catch (const NullArgument& e) {
      const std::string element = e.index < 0 ? "" : "[" + std::to_string(e.index) + "]";
      return fail(EPBROKER_ERR_INVALID_ARGUMENT,
                  std::string(function) + ": argument '" + e.name + element + "' is NULL");
    } catch (const Error& e) {
      return fail(status_of(e.code()), e.message(), e.bus_name());
    } catch (const std::bad_alloc&) {
      return fail(EPBROKER_ERR_NO_MEMORY, "out of memory");
    } catch (const std::exception& e) {
      // The C++ API throws only Error and bad_alloc: anything else is a bug here.
      return fail(EPBROKER_ERR_INTERNAL,
                  std::string(function) + ": unexpected exception: " + e.what());
    }
  } catch (...) {
  }
  LastError& e = last_error();
  e.message.clear();
  e.bus_name.clear();
  e.fallback = "out of memory (while recording an error)";
  return EPBROKER_ERR_NO_MEMORY;
}

}  // namespace epbroker::capi

using epbroker::Errc;
using epbroker::capi::last_error;
using epbroker::capi::name_of;

extern "C" {

const char* epbroker_status_name(epbroker_status status) {
  switch (status) {
    case EPBROKER_OK:
      return "OK";
    case EPBROKER_ERR_NOT_FOUND:
      return name_of(Errc::not_found);
    case EPBROKER_ERR_NOT_AUTHORIZED:
      return name_of(Errc::not_authorized);
    case EPBROKER_ERR_INVALID_ARGUMENT:
      return name_of(Errc::invalid_argument);
    case EPBROKER_ERR_INCOMPATIBLE:
      return name_of(Errc::incompatible);
    case EPBROKER_ERR_VERIFICATION_FAILED:
      return name_of(Errc::verification_failed);
    case EPBROKER_ERR_NETWORK:
      return name_of(Errc::network);
    case EPBROKER_ERR_BUSY:
      return name_of(Errc::busy);
    case EPBROKER_ERR_CANCELLED:
      return name_of(Errc::cancelled);
    case EPBROKER_ERR_UNAVAILABLE:
      return name_of(Errc::unavailable);
    case EPBROKER_ERR_TIMEOUT:
      return name_of(Errc::timeout);
    case EPBROKER_ERR_PROTOCOL:
      return name_of(Errc::protocol);
    case EPBROKER_ERR_DISK_FULL:
      return name_of(Errc::disk_full);
    case EPBROKER_ERR_INTERNAL:
      return name_of(Errc::internal);
    case EPBROKER_ERR_NO_MEMORY:
      return "NoMemory";
  }
  return "Unknown";  // a value outside the enum (from a caller's cast)
}

const char* epbroker_last_error_message(void) {
  const auto& e = last_error();
  return e.fallback ? e.fallback : e.message.c_str();
}

const char* epbroker_last_error_bus_name(void) {
  const auto& e = last_error();
  return e.fallback ? "" : e.bus_name.c_str();
}

void epbroker_string_free(char* string) { std::free(string); }

const char* epbroker_version(void) { return EPBROKER_VERSION_STRING; }

}  // extern "C"
