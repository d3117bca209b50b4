// Typed errors of the catalog layer.
//
// Every public function of catalog/ returns Result<T>; no exception crosses the
// API. The daemon maps Errc onto the org.epbroker.Error.* names in one table
// (see error_kind()).
#pragma once

#include <chrono>
#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace catalog {

enum class Errc {
  invalid_argument,  // caller passed something unusable (bad path, bad option)
  malformed,         // bytes are not well-formed JSON / metadata / PEM
  bad_field,         // a field is missing, mistyped, out of range or unsafe
  unsupported,       // unknown schema version, spec version, key type, hash
  bad_signature,     // signature threshold not met
  expired,           // metadata expired (freeze attack)
  rollback,          // version went backwards (rollback attack)
  version_mismatch,  // version differs from what snapshot/timestamp pin
  length_mismatch,   // more (or fewer) bytes than the signed length
  hash_mismatch,     // bytes do not hash to the signed value
  not_found,         // target or role unknown
  network,           // fetch failed (transport, HTTP status)
  io,                // local filesystem error
  crypto,            // OpenSSL failed unexpectedly
  too_many,          // a bound was exceeded (root rotations, delegations, archive entries)
  too_large,         // a size bound was exceeded (file, total, expansion ratio, manifest)
  unsafe_entry,      // an archive entry that must not be extracted (path, type, mode)
  // A package's manifest disagrees with its signed catalog entry.
  manifest_mismatch,
  not_authorized,  // the caller may not do this (polkit or uid policy said no)
  busy,            // refused while something holds it (a session lease, a job)
  cancelled,       // a job was cancelled
};

// Coarse kinds shared with the bus error names org.epbroker.Error.*.
enum class ErrorKind {
  NotFound,
  InvalidArgument,
  VerificationFailed,
  Network,
  Incompatible,
  NotAuthorized,
  Busy,
  Cancelled,
};

// A typed error: a code plus a human-readable message naming what failed.
struct Error {
  Errc code;
  std::string message;
  // Errc::network only: how long the server asked us to wait before asking
  // again (HTTP 503/429 with Retry-After); retries honour it up to a cap
  // (catalog/tuf/mirrors.hpp). Unset: no such request.
  std::optional<std::chrono::seconds> retry_after{};
};

template <typename T>
using Result = std::expected<T, Error>;

// Convenience for `return fail(Errc::x, "...")` inside functions returning Result<T>.
inline std::unexpected<Error> fail(Errc code, std::string message) {
  return std::unexpected<Error>(Error{code, std::move(message)});
}

// Stable lower-case name of a code ("hash_mismatch"), for logs and CLI output.
std::string_view errc_name(Errc code);

// The coarse kind the daemon reports for a code.
ErrorKind error_kind(Errc code);

}  // namespace catalog
