// Small text helpers shared by the strict parsers of catalog/.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace catalog {

// Number of code points in `s` if it is well-formed UTF-8 (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF); std::nullopt otherwise.
std::optional<std::size_t> utf8_length(std::string_view s);

// `s` in double quotes, safe to embed in a log line or error message: printable
// ASCII is kept (with \" and \\ escaped), every other byte is written as \xNN.
// Input longer than `max_bytes` is cut and marked with "...".
std::string quote_for_message(std::string_view s, std::size_t max_bytes = 64);

}  // namespace catalog
