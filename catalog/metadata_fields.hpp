// Strict readers shared by the parsers of the package metadata carried in a TUF
// target's custom["epbroker"] (catalog/ep_metadata.hpp, catalog/model_metadata.hpp).
// Internal to catalog/: not part of any public contract.
//
// Every reader checks one JSON value and, when it is refused, returns
// Errc::bad_field with a message that starts with the value's field path
// ("epbroker.supports[1].vendor_ids[0]: out of range 0..65535"). Paths are built
// with member_path()/index_path(). Nothing here throws (the readers use only
// non-throwing accessors; memory exhaustion aside).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "catalog/error.hpp"
#include "catalog/version.hpp"

namespace catalog::metadata {

// ---- messages and paths --------------------------------------------------------

// Errc::bad_field "path: what".
std::unexpected<Error> bad(const std::string& path, std::string_view what);
// Errc::bad_field "path: expected EXPECTED, got TYPE".
std::unexpected<Error> wrong_type(const std::string& path, std::string_view expected,
                                  const nlohmann::json& got);

// "parent.key" when key is [A-Za-z0-9_]{1,64}, else parent["key"] with the key
// quoted by quote_for_message() (so served bytes never reach a message raw).
std::string member_path(const std::string& parent, std::string_view key);
// "parent[i]".
std::string index_path(const std::string& parent, std::size_t i);
// One byte, quoted for a message.
std::string describe_char(char c);

// ---- character classes ---------------------------------------------------------

bool is_lower_alnum(char c);   // [a-z0-9]
bool is_alnum(char c);         // [A-Za-z0-9]
bool is_name_char(char c);     // [a-z0-9._-]: package names
bool is_ep_name_char(char c);  // [A-Za-z0-9_.-]: EP registration names

// ---- typed readers -------------------------------------------------------------

// A string value, valid UTF-8; its length in code points is stored in `chars`.
Result<std::string> read_string(const nlohmann::json& v, const std::string& path,
                                std::size_t& chars);

// A non-empty ASCII string of at most `max` characters, each accepted by
// `allowed`; `charset` describes the allowed set in the message ("[a-z0-9_-]").
Result<std::string> read_token(const nlohmann::json& v, const std::string& path, std::size_t max,
                               bool (*allowed)(char), std::string_view charset);

// Free text of at most `max` code points with no control character (C0, DEL, C1),
// line/paragraph separator or bidirectional override/isolate; `\n` and `\t` are
// allowed only with `allow_newline_tab`, the empty string only with `allow_empty`.
Result<std::string> read_text(const nlohmann::json& v, const std::string& path, std::size_t max,
                              bool allow_empty, bool allow_newline_tab);

// A version string (catalog/version.hpp), kept with its text.
Result<VersionText> read_version(const nlohmann::json& v, const std::string& path);

// An integer in min..max (a float, even 1.0, is a wrong type): "out of range MIN..MAX".
Result<std::uint64_t> read_uint(const nlohmann::json& v, const std::string& path, std::uint64_t min,
                                std::uint64_t max);

// A package name: [a-z0-9][a-z0-9._-]{0,63} (kMaxPackageNameLength).
Result<std::string> read_package_name(const nlohmann::json& v, const std::string& path);

// A relative path of at most `max_bytes` bytes of [A-Za-z0-9._+/-], with no
// empty, "." or ".." component (so no leading, trailing or doubled '/').
Result<std::string> read_library_path(const nlohmann::json& v, const std::string& path,
                                      std::size_t max_bytes);

// The schema number: an integer (else bad_field); returns it when it is in
// min..max, else Errc::unsupported "path: unsupported schema N (this build knows
// MIN..MAX)" (or "knows N" when min == max).
Result<int> read_schema(const nlohmann::json& v, const std::string& path, int min, int max);

// ---- containers ----------------------------------------------------------------

// `v` is an array of min..max entries.
Result<void> check_array(const nlohmann::json& v, const std::string& path, std::size_t min,
                         std::size_t max);

// `obj` is an object with no key outside `known` ("path.key: unknown key").
Result<void> check_object(const nlohmann::json& obj, const std::string& path,
                          std::span<const std::string_view> known);

// The member `key` of object `obj`, or nullptr when absent.
const nlohmann::json* find_member(const nlohmann::json& obj, const char* key);
// The member `key` of object `obj`; "path.key: missing" when absent.
Result<const nlohmann::json*> require_member(const nlohmann::json& obj, const std::string& path,
                                             const char* key);

// Runs `read(entry, entry_path)` on each entry of the array `v`, which must hold
// min..max entries; the first error is returned.
template <typename T, typename Read>
Result<std::vector<T>> read_list(const nlohmann::json& v, const std::string& path, std::size_t min,
                                 std::size_t max, Read read) {
  if (auto ok = check_array(v, path, min, max); !ok) {
    return std::unexpected(std::move(ok.error()));
  }
  std::vector<T> out;
  out.reserve(v.size());
  std::size_t i = 0;
  for (const nlohmann::json& e : v) {
    auto r = read(e, index_path(path, i++));
    if (!r) return std::unexpected(std::move(r.error()));
    out.push_back(std::move(*r));
  }
  return out;
}

}  // namespace catalog::metadata
