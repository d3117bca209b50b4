#include "daemon/core/public_error.hpp"

#include <algorithm>

namespace epbrokerd::core {

std::string hide_quoted(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    if (text[i] != '"') {
      out.push_back(text[i++]);
      continue;
    }
    // A quoted span: up to the next unescaped '"' (or the end of the text).
    ++i;
    while (i < text.size() && text[i] != '"') i += text[i] == '\\' ? 2U : 1U;
    i = std::min(i + 1, text.size());
    if (text.substr(i).starts_with("...")) i += 3;  // quote_for_message()'s cut mark
    out += kHiddenQuote;
  }
  return out;
}

std::string public_message(const Error& e) {
  if (!e.cause) return e.message;  // the core's own words: no remote in them
  using C = catalog::Errc;
  switch (*e.cause) {
    // net/'s messages, whole: the URL asked, the HTTP status, a redirect target's
    // origin, libcurl's account of the transport (and for a mirror list, one such
    // message per mirror: a network error is picked only when every mirror's is one).
    case C::network:
      return e.message;
    // Everything else may name what a remote served (or, for not_found, a mirror
    // list whose other entries did), or local paths built from it.
    case C::invalid_argument:
    case C::not_found:
    case C::unsupported:
    case C::busy:
    case C::cancelled:
    case C::no_space:
    case C::io:
    case C::crypto:
    case C::unavailable:
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
      return hide_quoted(e.message);
  }
  return hide_quoted(e.message);  // not a catalog::Errc value (a cast)
}

}  // namespace epbrokerd::core
