#include "catalog/canonical_json.hpp"

#include <limits>

#include "catalog/json_fields.hpp"

namespace catalog {
namespace {

void append_string(std::string& out, const std::string& s) {
  out.push_back('"');
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('"');
}

Result<void> append(std::string& out, const nlohmann::json& v) {
  using T = nlohmann::json::value_t;
  switch (v.type()) {
    case T::null:
      out += "null";
      return {};
    case T::boolean:
      out += v.get<bool>() ? "true" : "false";
      return {};
    case T::number_integer:
      out += std::to_string(v.get<std::int64_t>());
      return {};
    case T::number_unsigned:
      out += std::to_string(v.get<std::uint64_t>());
      return {};
    case T::string:
      append_string(out, v.get_ref<const std::string&>());
      return {};
    case T::array: {
      out.push_back('[');
      bool first = true;
      for (const auto& e : v) {
        if (!first) out.push_back(',');
        first = false;
        if (auto r = append(out, e); !r) return r;
      }
      out.push_back(']');
      return {};
    }
    case T::object: {
      // nlohmann's object is a std::map<std::string, ...>: byte-wise key order,
      // which for UTF-8 equals code-point order.
      out.push_back('{');
      bool first = true;
      for (const auto& [k, e] : v.items()) {
        if (!first) out.push_back(',');
        first = false;
        append_string(out, k);
        out.push_back(':');
        if (auto r = append(out, e); !r) return r;
      }
      out.push_back('}');
      return {};
    }
    case T::number_float:
      return fail(Errc::malformed, "canonical JSON has no floating-point numbers");
    case T::binary:
    case T::discarded:
      break;
  }
  return fail(Errc::malformed, "value not representable in canonical JSON");
}

// Nesting bound for parse_json. The parser itself is iterative, but copying
// and canonical_json() recurse once per level, so a hostile
// document of a few hundred KB of '[' would overflow the stack.
constexpr std::size_t kMaxDepth = 512;

// Structural nesting depth of `text` exceeds kMaxDepth (exact for valid JSON;
// invalid JSON is rejected by the parser anyway).
bool too_deep(std::string_view text) {
  std::size_t depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxDepth) return true;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return false;
}

}  // namespace

Result<std::string> canonical_json(const nlohmann::json& value) {
  std::string out;
  if (auto r = append(out, value); !r) return std::unexpected(r.error());
  return out;
}

Result<nlohmann::json> parse_json(std::string_view text, std::string_view what) {
  // nlohmann stops at a NUL byte as if at end of input ("[1]\0junk" parses);
  // a NUL can never occur in JSON text.
  if (text.find('\0') != std::string_view::npos) return fail(Errc::malformed, "NUL byte in JSON");
  if (too_deep(text)) return fail(Errc::malformed, "JSON nested too deeply");
  // No size bound of its own: callers read bounded bytes (metadata caps).
  return json::parse_strict(text, what, std::numeric_limits<std::size_t>::max());
}

}  // namespace catalog
