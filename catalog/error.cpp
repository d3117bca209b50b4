#include "catalog/error.hpp"

#include <cerrno>

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
    case Errc::no_space:
      return "no_space";
    case Errc::crypto:
      return "crypto";
    case Errc::unavailable:
      return "unavailable";
    case Errc::too_many:
      return "too_many";
    case Errc::too_large:
      return "too_large";
    case Errc::unsafe_entry:
      return "unsafe_entry";
    case Errc::manifest_mismatch:
      return "manifest_mismatch";
    case Errc::busy:
      return "busy";
    case Errc::cancelled:
      return "cancelled";
  }
  return "unknown";  // not an Errc value (a cast): the switch above names every one
}

Errc errno_code(int err) { return err == ENOSPC || err == EDQUOT ? Errc::no_space : Errc::io; }

}  // namespace catalog
