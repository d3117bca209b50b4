// Internal to daemon/config (the public contract is config.hpp): reading a
// configuration file and splitting it into sections and `key = value` entries, with
// the strict syntax of docs/configuration.md. Every message starts "FILE:LINE: ".
#pragma once

#include <cstddef>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/error.hpp"

namespace epbrokerd::config::detail {

using catalog::Result;

struct Entry {
  std::string key;
  std::string value;
  std::size_t line = 0;
};

struct Section {
  std::string name;
  std::size_t line = 0;
  std::vector<Entry> entries;
};

// The file's bytes (a regular file of at most kMaxFileBytes); std::nullopt if it does
// not exist. Errc::io if it cannot be opened, read or is not a regular file,
// Errc::too_large past kMaxFileBytes.
Result<std::optional<std::string>> read_config_file(const std::filesystem::path& path);

// Splits `text` into sections; only `allowed` section names are accepted. `hint` is
// added to the message for an unknown section. Errc::bad_field for any syntax error.
Result<std::vector<Section>> parse_ini(std::string_view text, const std::string& file,
                                       std::initializer_list<std::string_view> allowed,
                                       std::string_view hint);

// Error message prefix for a line: "FILE:LINE: ".
std::string at(const std::string& file, std::size_t line);
// Error message prefix for a value: "FILE:LINE: KEY: ".
std::string at_key(const std::string& file, const Entry& e);

// Blanks around keys and values: spaces and tabs only (a carriage return is refused
// where the line is read, not trimmed away).
std::string_view trim(std::string_view s);

// [a-z0-9]
bool is_lower_alnum(char c);

}  // namespace epbrokerd::config::detail
