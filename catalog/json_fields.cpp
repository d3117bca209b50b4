#include "catalog/json_fields.hpp"

#include <exception>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "catalog/text.hpp"

namespace catalog::json {

std::string join(std::string_view path, std::string_view key) {
  if (path.empty()) return std::string(key);
  std::string s(path);
  s += '.';
  s += key;
  return s;
}

std::unexpected<Error> field_error(std::string_view path, std::string_view what) {
  return fail(Errc::bad_field, std::string(path) + ": " + std::string(what));
}

std::string_view type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "integer";
    case json::value_t::number_float:
      return "float";
    case json::value_t::string:
      return "string";
    case json::value_t::array:
      return "array";
    case json::value_t::object:
      return "object";
    default:
      return "other";
  }
}

std::unexpected<Error> wrong_type(std::string_view path, std::string_view expected,
                                  const json& got) {
  return field_error(path,
                     "expected " + std::string(expected) + ", got " + std::string(type_name(got)));
}

namespace {

Result<const json*> lookup(const json& obj, std::string_view key, std::string_view path) {
  if (!obj.is_object()) return field_error(path, "expected object");
  auto it = obj.find(key);
  if (it == obj.end()) return field_error(join(path, key), "missing");
  return &*it;
}

}  // namespace

Result<const json*> object_field(const json& obj, std::string_view key, std::string_view path) {
  auto v = lookup(obj, key, path);
  if (!v) return v;
  if (!(*v)->is_object()) return field_error(join(path, key), "expected object");
  return v;
}

Result<const json*> array_field(const json& obj, std::string_view key, std::string_view path) {
  auto v = lookup(obj, key, path);
  if (!v) return v;
  if (!(*v)->is_array()) return field_error(join(path, key), "expected array");
  return v;
}

Result<std::string> as_string(const json& v, std::string_view path) {
  if (!v.is_string()) return field_error(path, "expected string");
  return v.get<std::string>();
}

Result<std::uint64_t> as_uint(const json& v, std::string_view path) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  if (v.is_number_integer() && v.get<std::int64_t>() >= 0) {
    return static_cast<std::uint64_t>(v.get<std::int64_t>());
  }
  return field_error(path, "expected non-negative integer");
}

Result<std::string> string_field(const json& obj, std::string_view key, std::string_view path) {
  auto v = lookup(obj, key, path);
  if (!v) return std::unexpected(v.error());
  return as_string(**v, join(path, key));
}

Result<std::uint64_t> uint_field(const json& obj, std::string_view key, std::string_view path) {
  auto v = lookup(obj, key, path);
  if (!v) return std::unexpected(v.error());
  return as_uint(**v, join(path, key));
}

Result<bool> bool_field(const json& obj, std::string_view key, std::string_view path) {
  auto v = lookup(obj, key, path);
  if (!v) return std::unexpected(v.error());
  if (!(*v)->is_boolean()) return field_error(join(path, key), "expected boolean");
  return (*v)->get<bool>();
}

Result<std::optional<std::uint64_t>> optional_uint_field(const json& obj, std::string_view key,
                                                         std::string_view path) {
  if (!obj.is_object()) return field_error(path, "expected object");
  if (!obj.contains(key)) return std::optional<std::uint64_t>{};
  auto v = as_uint(obj.at(std::string(key)), join(path, key));
  if (!v) return std::unexpected(v.error());
  return std::optional<std::uint64_t>(*v);
}

Result<const json*> optional_object_field(const json& obj, std::string_view key,
                                          std::string_view path) {
  if (!obj.is_object()) return field_error(path, "expected object");
  auto it = obj.find(key);
  if (it == obj.end()) return static_cast<const json*>(nullptr);
  if (!it->is_object()) return field_error(join(path, key), "expected object");
  return &*it;
}

Result<json> parse_strict(std::string_view text, std::string_view what, std::size_t max_bytes) {
  const std::string name(what);
  if (text.size() > max_bytes) {
    return fail(Errc::too_large, name + " larger than " + std::to_string(max_bytes) + " bytes (" +
                                     std::to_string(text.size()) + ")");
  }
  try {
    // Keys seen in each object still open, innermost last.
    std::vector<std::set<std::string>> open_objects;
    std::optional<std::string> duplicate;
    const json::parser_callback_t track = [&](int, json::parse_event_t event, json& parsed) {
      switch (event) {
        case json::parse_event_t::object_start:
          open_objects.emplace_back();
          break;
        case json::parse_event_t::object_end:
          if (!open_objects.empty()) open_objects.pop_back();
          break;
        case json::parse_event_t::key:
          if (const auto* key = parsed.get_ptr<const json::string_t*>();
              key != nullptr && !open_objects.empty() && !duplicate &&
              !open_objects.back().insert(*key).second) {
            duplicate = *key;
          }
          break;
        case json::parse_event_t::array_start:
        case json::parse_event_t::array_end:
        case json::parse_event_t::value:
          break;
      }
      return true;
    };
    json doc = json::parse(text.begin(), text.end(), track, /*allow_exceptions=*/false);
    if (doc.is_discarded()) return fail(Errc::malformed, name + " is not valid JSON");
    if (duplicate) {
      return fail(Errc::malformed,
                  name + " JSON has a duplicate key " + quote_for_message(*duplicate));
    }
    return doc;
  } catch (const std::exception& e) {
    return fail(Errc::malformed, name + " is not valid JSON: " + e.what());
  }
}

}  // namespace catalog::json
