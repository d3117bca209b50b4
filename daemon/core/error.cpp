#include "daemon/core/error.hpp"

namespace epbrokerd::core {

Errc errc_of(catalog::Errc code) {
  using C = catalog::Errc;
  switch (code) {
    case C::invalid_argument:
      return Errc::InvalidArgument;
    case C::not_found:
      return Errc::NotFound;
    case C::network:
      return Errc::Network;
    // A package or metadata version this build cannot use.
    case C::unsupported:
      return Errc::Incompatible;
    case C::busy:
      return Errc::Busy;
    case C::cancelled:
      return Errc::Cancelled;
    case C::no_space:
      return Errc::DiskFull;
    // Local: the daemon's disk, OpenSSL, libarchive. Not the remote's fault.
    case C::io:
    case C::crypto:
    case C::unavailable:
      return Errc::Internal;
    // What a remote served (metadata, a package) failed a check.
    case C::malformed:
    case C::bad_field:
    case C::bad_signature:
    case C::expired:
    case C::rollback:
    case C::version_mismatch:
    case C::length_mismatch:
    case C::hash_mismatch:
    case C::too_many:
    case C::too_large:
    case C::unsafe_entry:
    case C::manifest_mismatch:
      return Errc::VerificationFailed;
  }
  return Errc::Internal;  // not a catalog::Errc value (a cast)
}

}  // namespace epbrokerd::core
