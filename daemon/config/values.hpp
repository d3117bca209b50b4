// Internal to daemon/config (the public contract is config.hpp): the value parsers of
// the configuration keys. Those taking a `prefix` ("FILE:LINE: KEY: ", ini.hpp's
// at_key()) start their messages with it; the others' messages have no location.
// Every error is Errc::bad_field.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "catalog/error.hpp"

namespace epbrokerd::config::detail {

using catalog::Result;

// Decimal digits only (no sign, no blanks), at most 19 of them; std::nullopt otherwise.
std::optional<std::uint64_t> parse_uint(std::string_view s);

// parse_uint() within lo..hi.
Result<std::uint64_t> uint_in(std::string_view value, std::uint64_t lo, std::uint64_t hi,
                              const std::string& prefix);

// As uint_in(), with an optional leading '-'.
Result<int> int_in(std::string_view value, int lo, int hi, const std::string& prefix);

// 1/yes/true/on or 0/no/false/off, in any case.
Result<bool> parse_bool(std::string_view value, const std::string& prefix);

// A path: non-empty, at most kMaxPathBytes; a relative one is taken against `base`
// (and normalized lexically). Whether it exists is not checked.
Result<std::filesystem::path> parse_path(std::string_view value, const std::filesystem::path& base,
                                         const std::string& prefix);

// [a-z_][a-z0-9_-]{0,31}
bool is_group_name(std::string_view s);

// [a-z0-9][a-z0-9-]{0,31}
bool is_remote_name(std::string_view s);

// Checks a base URL (see docs/configuration.md); returns it with a trailing '/'.
Result<std::string> check_url(std::string_view url, bool allow_http);

}  // namespace epbrokerd::config::detail
