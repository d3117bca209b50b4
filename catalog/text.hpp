// Small text helpers shared by the strict parsers of catalog/.
#pragma once

#include <cstddef>
#include <cstdint>
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

// `s` without the leading and trailing bytes that are in `blanks` (by default ASCII
// whitespace: space, \t, \n, \r, \v, \f).
std::string_view trim(std::string_view s, std::string_view blanks = " \t\n\r\v\f");

// Permission bits (mode & 07777) in octal with a leading 0 and at least 4 digits, for
// messages: "0644", "0755", "04755".
std::string mode_text(std::uint32_t mode);

}  // namespace catalog
