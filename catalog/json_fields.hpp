// Exception-free, strict access to fields of a parsed JSON object.
//
// Each getter names the full field path in its error ("signed.roles.root.threshold:
// expected unsigned integer"), so a rejected document says exactly what was wrong.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "catalog/error.hpp"

namespace catalog::json {

using nlohmann::json;

// Parses `text` as one JSON document, strictly: at most `max_bytes` (else Errc::too_large,
// "WHAT larger than N bytes (SIZE)"), valid JSON (else Errc::malformed, "WHAT is not
// valid JSON"), and no object with a key twice (else Errc::malformed, "WHAT JSON has a
// duplicate key "K""): two parsers could otherwise read different values. Deep nesting
// is an error, not a crash. `what` names the document ("manifest", "EP metadata").
Result<json> parse_strict(std::string_view text, std::string_view what, std::size_t max_bytes);

// Error with Errc::bad_field and "path: what".
std::unexpected<Error> field_error(std::string_view path, std::string_view what);

// `obj` must be an object; `key` must be present unless the getter is optional.
Result<const json*> object_field(const json& obj, std::string_view key, std::string_view path);
Result<const json*> array_field(const json& obj, std::string_view key, std::string_view path);
Result<std::string> string_field(const json& obj, std::string_view key, std::string_view path);
Result<std::uint64_t> uint_field(const json& obj, std::string_view key, std::string_view path);
Result<bool> bool_field(const json& obj, std::string_view key, std::string_view path);

// nullopt when absent; error when present with the wrong type.
Result<std::optional<std::uint64_t>> optional_uint_field(const json& obj, std::string_view key,
                                                         std::string_view path);
Result<const json*> optional_object_field(const json& obj, std::string_view key,
                                          std::string_view path);  // nullptr when absent

// Value checks for array elements and map values.
Result<std::string> as_string(const json& v, std::string_view path);
Result<std::uint64_t> as_uint(const json& v, std::string_view path);

std::string join(std::string_view path, std::string_view key);

// "null", "boolean", "integer", "float", "string", "array", "object" (else "other").
std::string_view type_name(const json& v);
// Errc::bad_field "path: expected EXPECTED, got TYPE".
std::unexpected<Error> wrong_type(std::string_view path, std::string_view expected,
                                  const json& got);

}  // namespace catalog::json
