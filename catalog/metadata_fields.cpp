#include "catalog/metadata_fields.hpp"

#include <algorithm>

#include "catalog/ep_metadata.hpp"
#include "catalog/json_fields.hpp"
#include "catalog/text.hpp"

namespace catalog::metadata {

namespace {

using nlohmann::json;

bool is_identifier(std::string_view key) {
  return !key.empty() && key.size() <= 64 && std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

bool is_path_char(char c) {
  return is_alnum(c) || c == '.' || c == '_' || c == '+' || c == '/' || c == '-';
}

// Decodes the code point at s[i] of well-formed UTF-8 and advances i.
std::uint32_t next_code_point(std::string_view s, std::size_t& i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  std::size_t len = 1;
  std::uint32_t cp = b0;
  if (b0 >= 0xF0) {
    len = 4;
    cp = b0 & 0x07u;
  } else if (b0 >= 0xE0) {
    len = 3;
    cp = b0 & 0x0Fu;
  } else if (b0 >= 0xC0) {
    len = 2;
    cp = b0 & 0x1Fu;
  }
  for (std::size_t k = 1; k < len && i + k < s.size(); ++k) {
    cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3Fu);
  }
  i += len;
  return cp;
}

// Code points that must not reach a terminal from free text: C0 and C1 controls,
// DEL, line/paragraph separators and the bidirectional overrides/isolates
// (text-direction spoofing).
bool is_unsafe_code_point(std::uint32_t cp, bool allow_newline_tab) {
  if (allow_newline_tab && (cp == '\n' || cp == '\t')) return false;
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 ||
         (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

}  // namespace

// ---- messages and paths --------------------------------------------------------

std::unexpected<Error> bad(const std::string& path, std::string_view what) {
  return fail(Errc::bad_field, path + ": " + std::string(what));
}

std::unexpected<Error> wrong_type(const std::string& path, std::string_view expected,
                                  const json& got) {
  return ::catalog::json::wrong_type(path, expected, got);
}

std::string member_path(const std::string& parent, std::string_view key) {
  if (is_identifier(key)) return parent + "." + std::string(key);
  return parent + "[" + quote_for_message(key) + "]";
}

std::string index_path(const std::string& parent, std::size_t i) {
  return parent + "[" + std::to_string(i) + "]";
}

std::string describe_char(char c) { return quote_for_message(std::string_view(&c, 1)); }

// ---- character classes ---------------------------------------------------------

bool is_lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool is_alnum(char c) { return is_lower_alnum(c) || (c >= 'A' && c <= 'Z'); }
bool is_name_char(char c) { return is_lower_alnum(c) || c == '.' || c == '_' || c == '-'; }
bool is_ep_name_char(char c) { return is_alnum(c) || c == '_' || c == '.' || c == '-'; }

// ---- typed readers -------------------------------------------------------------

Result<std::string> read_string(const json& v, const std::string& path, std::size_t& chars) {
  const auto* s = v.get_ptr<const json::string_t*>();
  if (s == nullptr) return wrong_type(path, "string", v);
  const auto len = utf8_length(*s);
  if (!len) return bad(path, "invalid UTF-8");
  chars = *len;
  return *s;
}

Result<std::string> read_token(const json& v, const std::string& path, std::size_t max,
                               bool (*allowed)(char), std::string_view charset) {
  std::size_t chars = 0;
  auto s = read_string(v, path, chars);
  if (!s) return s;
  if (s->empty()) return bad(path, "empty");
  if (chars > max) return bad(path, "longer than " + std::to_string(max) + " characters");
  for (std::size_t i = 0; i < s->size(); ++i) {
    if (!allowed((*s)[i])) {
      return bad(path, "invalid character " + describe_char((*s)[i]) + " at offset " +
                           std::to_string(i) + " (allowed: " + std::string(charset) + ")");
    }
  }
  return s;
}

Result<std::string> read_text(const json& v, const std::string& path, std::size_t max,
                              bool allow_empty, bool allow_newline_tab) {
  std::size_t chars = 0;
  auto s = read_string(v, path, chars);
  if (!s) return s;
  if (!allow_empty && s->empty()) return bad(path, "empty");
  if (chars > max) return bad(path, "longer than " + std::to_string(max) + " characters");
  for (std::size_t i = 0; i < s->size();) {
    const std::size_t at = i;
    if (is_unsafe_code_point(next_code_point(*s, i), allow_newline_tab)) {
      return bad(path, "control or bidirectional character at offset " + std::to_string(at));
    }
  }
  return s;
}

Result<VersionText> read_version(const json& v, const std::string& path) {
  std::size_t chars = 0;
  auto s = read_string(v, path, chars);
  if (!s) return std::unexpected(std::move(s.error()));
  auto parsed = parse_version_text(*s);
  if (!parsed) return bad(path, parsed.error().message);
  return parsed;
}

Result<std::uint64_t> read_uint(const json& v, const std::string& path, std::uint64_t min,
                                std::uint64_t max) {
  const auto out_of_range = [&] {
    return bad(path, "out of range " + std::to_string(min) + ".." + std::to_string(max));
  };
  if (const auto* u = v.get_ptr<const json::number_unsigned_t*>()) {
    if (*u < min || *u > max) return out_of_range();
    return std::uint64_t{*u};
  }
  if (const auto* i = v.get_ptr<const json::number_integer_t*>()) {
    // nlohmann stores non-negative integers as unsigned when parsed, but a value
    // built in code may hold a non-negative signed integer.
    if (*i < 0) return out_of_range();
    const auto u = static_cast<std::uint64_t>(*i);
    if (u < min || u > max) return out_of_range();
    return u;
  }
  return wrong_type(path, "integer", v);
}

Result<std::string> read_package_name(const json& v, const std::string& path) {
  auto r = read_token(v, path, kMaxPackageNameLength, is_name_char, "[a-z0-9._-]");
  if (!r) return r;
  if (!is_lower_alnum(r->front())) return bad(path, "must start with [a-z0-9]");
  return r;
}

Result<std::string> read_library_path(const json& v, const std::string& path,
                                      std::size_t max_bytes) {
  std::size_t chars = 0;
  auto s = read_string(v, path, chars);
  if (!s) return s;
  const std::string& p = *s;
  if (p.empty()) return bad(path, "empty");
  if (p.size() > max_bytes) {
    return bad(path, "longer than " + std::to_string(max_bytes) + " characters");
  }
  if (p.find('\0') != std::string::npos) return bad(path, "contains a NUL byte");
  if (p.find('\\') != std::string::npos) return bad(path, "contains a backslash");
  if (p.front() == '/') return bad(path, "absolute path (must be relative to the package)");
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (!is_path_char(p[i])) {
      return bad(path, "invalid character " + describe_char(p[i]) + " at offset " +
                           std::to_string(i) + " (allowed: [A-Za-z0-9._+/-])");
    }
  }
  std::size_t start = 0;
  while (true) {
    const std::size_t slash = p.find('/', start);
    const std::string_view part = std::string_view(p).substr(
        start, slash == std::string::npos ? std::string::npos : slash - start);
    if (part.empty()) return bad(path, "empty path component");
    if (part == ".") return bad(path, "'.' path component");
    if (part == "..") return bad(path, "'..' path component");
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return s;
}

Result<int> read_schema(const json& v, const std::string& path, int min, int max) {
  if (!v.is_number_integer()) return wrong_type(path, "integer", v);
  // Compared in the stored representation: no conversion can wrap a huge value
  // into the known range.
  const bool known = v.is_number_unsigned() ? v.get_ref<const json::number_unsigned_t&>() >=
                                                      static_cast<json::number_unsigned_t>(min) &&
                                                  v.get_ref<const json::number_unsigned_t&>() <=
                                                      static_cast<json::number_unsigned_t>(max)
                                            : v.get_ref<const json::number_integer_t&>() >= min &&
                                                  v.get_ref<const json::number_integer_t&>() <= max;
  if (!known) {
    const std::string knows =
        min == max ? std::to_string(min) : std::to_string(min) + ".." + std::to_string(max);
    return fail(Errc::unsupported,
                path + ": unsupported schema " + v.dump() + " (this build knows " + knows + ")");
  }
  return v.is_number_unsigned() ? static_cast<int>(v.get_ref<const json::number_unsigned_t&>())
                                : static_cast<int>(v.get_ref<const json::number_integer_t&>());
}

// ---- containers ----------------------------------------------------------------

Result<void> check_array(const json& v, const std::string& path, std::size_t min, std::size_t max) {
  if (!v.is_array()) return wrong_type(path, "array", v);
  if (v.size() < min) {
    return bad(path, "needs at least " + std::to_string(min) + (min == 1 ? " entry" : " entries"));
  }
  if (v.size() > max) {
    return bad(path,
               "too many entries (" + std::to_string(v.size()) + " > " + std::to_string(max) + ")");
  }
  return {};
}

Result<void> check_object(const json& obj, const std::string& path,
                          std::span<const std::string_view> known) {
  if (!obj.is_object()) return wrong_type(path, "object", obj);
  for (const auto& item : obj.items()) {
    const std::string& key = item.key();
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      return bad(member_path(path, key), "unknown key");
    }
  }
  return {};
}

const json* find_member(const json& obj, const char* key) {
  const auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

Result<const json*> require_member(const json& obj, const std::string& path, const char* key) {
  const json* v = find_member(obj, key);
  if (v == nullptr) return bad(member_path(path, key), "missing");
  return v;
}

}  // namespace catalog::metadata
