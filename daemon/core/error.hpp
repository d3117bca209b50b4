// The daemon's errors.
//
// One closed enum, Errc, which is the set of errors callers see
// (common::BusError: each is reported as org.epbroker.Error.<Name> through the one
// name table in common/bus_errors.hpp), a message, and, where the error came from
// the catalog or the store, the catalog's finer code for the log. The core's API
// returns Result<T>; the bus adaptors only convert (daemon/dbus/errors.hpp).
//
// A catalog::Error converts implicitly, through errc_of(), so a catalog::Result can
// be returned where a Result is expected.
#pragma once

#include <expected>
#include <optional>
#include <string>
#include <utility>

#include "catalog/error.hpp"
#include "common/bus_errors.hpp"

namespace epbrokerd::core {

using Errc = common::BusError;

// What a catalog (or store) error is reported as: the one mapping, an exhaustive
// switch. Remote data that failed a check is VerificationFailed; local trouble is
// DiskFull (ENOSPC, EDQUOT) or Internal (other I/O, OpenSSL, a missing libarchive
// filter), never the remote's fault.
Errc errc_of(catalog::Errc code);

struct Error {
  Error(Errc c, std::string m) : code(c), message(std::move(m)) {}
  Error(const catalog::Error& e)  // implicit on purpose: see above
      : code(errc_of(e.code)), message(e.message), cause(e.code) {}

  Errc code;
  std::string message;
  std::optional<catalog::Errc> cause;  // the catalog's code, when it came from there
};

template <typename T>
using Result = std::expected<T, Error>;

inline std::unexpected<Error> fail(Errc code, std::string message) {
  return std::unexpected<Error>(Error(code, std::move(message)));
}

}  // namespace epbrokerd::core
