// What every bus client may read of an error a job ended with: Job1.Error and
// ErrorMessage are readable by anyone on the bus, and so is the history's reason.
//
// Served bytes reach a message in two ways only: through catalog::quote_for_message()
// (every string the catalog's checks name of what a remote served: a field value,
// a JSON key, an archive entry, a link target, a manifest field: always one
// double-quoted span, \" and \\ escaped), and never through net/ (its messages name
// the URL asked, an HTTP status, a redirect target's origin and libcurl's account
// of the transport, never a byte of a body: net/curl_fetcher.hpp). So the public
// message is the full one with every double-quoted span replaced by "<hidden>",
// except for network errors (net/'s own words, kept whole). The full message goes to
// the journal (Job::fail).
#pragma once

#include <string>
#include <string_view>

#include "daemon/core/error.hpp"

namespace epbrokerd::core {

inline constexpr std::string_view kHiddenQuote = "\"<hidden>\"";

// `e.message` as every bus client may read it (see above).
std::string public_message(const Error& e);

// `text` with every double-quoted span (from a '"' to the next '"' not escaped by
// '\', or to the end) and the "..." that marks a cut one replaced by kHiddenQuote.
std::string hide_quoted(std::string_view text);

}  // namespace epbrokerd::core
