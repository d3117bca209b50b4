// Typed errors of the catalog layer.
//
// Every public function of catalog/ returns Result<T>; no exception crosses the
// API. Errc is the catalog's own closed set of codes, fine-grained for its callers
// (tools, tests, the store); the daemon maps each onto the bus error it reports in
// one exhaustive switch (daemon/core/error.hpp), and knows its own concepts
// (authorization, the daemon's state) itself.
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
  io,                // local filesystem error (other than no_space)
  no_space,          // a write found the filesystem full (ENOSPC) or the quota used (EDQUOT)
  crypto,            // OpenSSL failed unexpectedly
  unavailable,       // this system lacks what the work needs (libarchive without zstd)
  too_many,          // a count bound was exceeded (root rotations, delegations, entries)
  too_large,         // a size bound in bytes was exceeded (file, total, ratio, manifest)
  unsafe_entry,      // an archive entry that must not be extracted (path, type, mode)
  // A package's manifest disagrees with its signed catalog entry.
  manifest_mismatch,
  busy,       // refused while something holds it (a download's lock, a store's lock)
  cancelled,  // the caller's cancel hook asked the work to stop
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

// The code for a failed system call's errno: no_space for ENOSPC and EDQUOT, io
// otherwise (callers that tell ENOENT apart do so first).
Errc errno_code(int err);

}  // namespace catalog
