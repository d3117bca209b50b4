#include "catalog/error.hpp"

namespace catalog {

std::string_view errc_name(Errc code) {
  switch (code) {
    case Errc::invalid_argument:
      return "invalid_argument";
    case Errc::malformed:
      return "malformed";
    case Errc::bad_field:
      return "bad_field";
    case Errc::unsupported:
      return "unsupported";
    case Errc::bad_signature:
      return "bad_signature";
    case Errc::expired:
      return "expired";
    case Errc::rollback:
      return "rollback";
    case Errc::version_mismatch:
      return "version_mismatch";
    case Errc::length_mismatch:
      return "length_mismatch";
    case Errc::hash_mismatch:
      return "hash_mismatch";
    case Errc::not_found:
      return "not_found";
    case Errc::network:
      return "network";
    case Errc::io:
      return "io";
    case Errc::crypto:
      return "crypto";
    case Errc::too_many:
      return "too_many";
    case Errc::too_large:
      return "too_large";
    case Errc::unsafe_entry:
      return "unsafe_entry";
    case Errc::manifest_mismatch:
      return "manifest_mismatch";
    case Errc::not_authorized:
      return "not_authorized";
    case Errc::busy:
      return "busy";
    case Errc::cancelled:
      return "cancelled";
  }
  return "unknown";
}

ErrorKind error_kind(Errc code) {
  switch (code) {
    case Errc::invalid_argument:
      return ErrorKind::InvalidArgument;
    case Errc::not_found:
      return ErrorKind::NotFound;
    case Errc::network:
      return ErrorKind::Network;
    case Errc::unsupported:
      return ErrorKind::Incompatible;
    case Errc::not_authorized:
      return ErrorKind::NotAuthorized;
    case Errc::busy:
      return ErrorKind::Busy;
    case Errc::cancelled:
      return ErrorKind::Cancelled;
    case Errc::too_large:
    case Errc::unsafe_entry:
    case Errc::manifest_mismatch:
      return ErrorKind::VerificationFailed;
    default:
      return ErrorKind::VerificationFailed;
  }
}

}  // namespace catalog
