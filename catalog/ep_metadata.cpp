#include "catalog/ep_metadata.hpp"

#include <algorithm>
#include <array>
#include <exception>
#include <functional>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "catalog/json_fields.hpp"
#include "catalog/text.hpp"

namespace catalog {

namespace {

using nlohmann::json;

constexpr std::array<std::string_view, 12> kTopKeys = {
    "schema", "name",    "kind",    "version",  "ep_names", "vendor",
    "arch",   "ort_min", "library", "supports", "requires", "description"};
constexpr std::array<std::string_view, 5> kSupportKeys = {"type", "vendor_ids", "device_ids",
                                                          "driver", "driver_min"};
constexpr std::array<std::string_view, 2> kArches = {"x86_64", "aarch64"};

// ---- messages and paths --------------------------------------------------------

std::unexpected<Error> bad(const std::string& path, std::string_view what) {
  return fail(Errc::bad_field, path + ": " + std::string(what));
}

std::unexpected<Error> wrong_type(const std::string& path, std::string_view expected,
                                  const json& got) {
  return ::catalog::json::wrong_type(path, expected, got);
}

bool is_identifier(std::string_view key) {
  return !key.empty() && key.size() <= 64 && std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
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
bool is_path_char(char c) {
  return is_alnum(c) || c == '.' || c == '_' || c == '+' || c == '/' || c == '-';
}
bool is_driver_char(char c) { return is_lower_alnum(c) || c == '_' || c == '-'; }
bool is_soname_char(char c) { return is_alnum(c) || c == '.' || c == '_' || c == '+' || c == '-'; }

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

// ---- typed readers -------------------------------------------------------------

// A string value, valid UTF-8; returns its length in code points via `chars`.
Result<std::string> read_string(const json& v, const std::string& path, std::size_t& chars) {
  const auto* s = v.get_ptr<const json::string_t*>();
  if (s == nullptr) return wrong_type(path, "string", v);
  const auto len = utf8_length(*s);
  if (!len) return bad(path, "invalid UTF-8");
  chars = *len;
  return *s;
}

// A non-empty ASCII string of at most `max` characters drawn from `allowed`.
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

// Free text of at most `max` characters without control or bidi characters.
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

Result<std::uint16_t> read_pci_id(const json& v, const std::string& path) {
  constexpr std::uint64_t kMax = 0xFFFF;
  if (const auto* u = v.get_ptr<const json::number_unsigned_t*>()) {
    if (*u > kMax) return bad(path, "out of range 0..65535");
    return static_cast<std::uint16_t>(*u);
  }
  if (const auto* i = v.get_ptr<const json::number_integer_t*>()) {
    if (*i < 0 || static_cast<std::uint64_t>(*i) > kMax) return bad(path, "out of range 0..65535");
    return static_cast<std::uint16_t>(*i);
  }
  return wrong_type(path, "integer", v);
}

// Checks that `v` is an array of min..max entries.
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

// Checks that `obj` is an object with no key outside `known`.
template <std::size_t N>
Result<void> check_object(const json& obj, const std::string& path,
                          const std::array<std::string_view, N>& known) {
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

// ---- field parsers -------------------------------------------------------------

Result<std::string> read_library_path(const json& v, const std::string& path) {
  std::size_t chars = 0;
  auto s = read_string(v, path, chars);
  if (!s) return s;
  const std::string& p = *s;
  if (p.empty()) return bad(path, "empty");
  if (p.size() > kMaxLibraryPathLength) {
    return bad(path, "longer than " + std::to_string(kMaxLibraryPathLength) + " characters");
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

Result<std::vector<std::uint16_t>> read_pci_ids(const json& v, const std::string& path) {
  if (auto ok = check_array(v, path, 0, kMaxPciIds); !ok) {
    return std::unexpected(std::move(ok.error()));
  }
  std::vector<std::uint16_t> ids;
  ids.reserve(v.size());
  std::size_t i = 0;
  for (const json& e : v) {
    auto id = read_pci_id(e, index_path(path, i++));
    if (!id) return std::unexpected(std::move(id.error()));
    ids.push_back(*id);
  }
  return ids;
}

Result<DeviceSupport> read_support(const json& v, const std::string& path) {
  if (auto ok = check_object(v, path, kSupportKeys); !ok) {
    return std::unexpected(std::move(ok.error()));
  }
  DeviceSupport out;
  auto type_v = require_member(v, path, "type");
  if (!type_v) return std::unexpected(std::move(type_v.error()));
  {
    const std::string type_path = member_path(path, "type");
    std::size_t chars = 0;
    auto name = read_string(**type_v, type_path, chars);
    if (!name) return std::unexpected(std::move(name.error()));
    const auto type = parse_device_type(*name);
    if (!type) {
      return bad(type_path,
                 "unknown device type " + quote_for_message(*name) + " (known: cpu, gpu, npu)");
    }
    out.type = *type;
  }
  if (const json* ids = find_member(v, "vendor_ids")) {
    auto r = read_pci_ids(*ids, member_path(path, "vendor_ids"));
    if (!r) return std::unexpected(std::move(r.error()));
    out.vendor_ids = std::move(*r);
  }
  if (const json* ids = find_member(v, "device_ids")) {
    auto r = read_pci_ids(*ids, member_path(path, "device_ids"));
    if (!r) return std::unexpected(std::move(r.error()));
    out.device_ids = std::move(*r);
  }
  if (const json* d = find_member(v, "driver")) {
    auto r = read_token(*d, member_path(path, "driver"), kMaxDriverNameLength, is_driver_char,
                        "[a-z0-9_-]");
    if (!r) return std::unexpected(std::move(r.error()));
    out.driver = std::move(*r);
  }
  if (const json* d = find_member(v, "driver_min")) {
    const std::string min_path = member_path(path, "driver_min");
    auto r = read_version(*d, min_path);
    if (!r) return std::unexpected(std::move(r.error()));
    if (!out.driver) return bad(min_path, "requires \"driver\"");
    out.driver_min = std::move(*r);
  }
  return out;
}

// Runs `read` on each entry of the array at path, which must hold min..max entries.
template <typename T, typename Read>
Result<std::vector<T>> read_list(const json& v, const std::string& path, std::size_t min,
                                 std::size_t max, Read read) {
  if (auto ok = check_array(v, path, min, max); !ok) {
    return std::unexpected(std::move(ok.error()));
  }
  std::vector<T> out;
  out.reserve(v.size());
  std::size_t i = 0;
  for (const json& e : v) {
    auto r = read(e, index_path(path, i++));
    if (!r) return std::unexpected(std::move(r.error()));
    out.push_back(std::move(*r));
  }
  return out;
}

Result<EpMetadata> parse_object(const json& obj, const std::string& path) {
  if (!obj.is_object()) return wrong_type(path, "object", obj);

  // Schema first: a newer schema may have keys this build does not know.
  auto schema_v = require_member(obj, path, "schema");
  if (!schema_v) return std::unexpected(std::move(schema_v.error()));
  {
    const json& s = **schema_v;
    const std::string schema_path = member_path(path, "schema");
    if (!s.is_number_integer()) return wrong_type(schema_path, "integer", s);
    const bool known = s.is_number_unsigned() ? s.get_ref<const json::number_unsigned_t&>() == 1u
                                              : s.get_ref<const json::number_integer_t&>() == 1;
    if (!known) {
      return fail(Errc::unsupported, schema_path + ": unsupported schema " + s.dump() +
                                         " (this build knows " + std::to_string(kEpMetadataSchema) +
                                         ")");
    }
  }
  if (auto ok = check_object(obj, path, kTopKeys); !ok) {
    return std::unexpected(std::move(ok.error()));
  }

  EpMetadata m;
  // Each required member, in schema order.
  auto member = [&](const char* key) { return require_member(obj, path, key); };
#define EPB_TRY(var, expr) \
  auto var = (expr);       \
  if (!var) return std::unexpected(std::move(var.error()))

  {
    EPB_TRY(v, member("name"));
    EPB_TRY(r, read_token(**v, member_path(path, "name"), kMaxPackageNameLength, is_name_char,
                          "[a-z0-9._-]"));
    if (!is_lower_alnum(r->front())) {
      return bad(member_path(path, "name"), "must start with [a-z0-9]");
    }
    m.name = std::move(*r);
  }
  if (const json* v = find_member(obj, "kind")) {
    const std::string kind_path = member_path(path, "kind");
    std::size_t chars = 0;
    EPB_TRY(r, read_string(*v, kind_path, chars));
    if (*r == "execution_provider") {
      m.kind = PackageKind::execution_provider;
    } else if (*r == "runtime") {
      m.kind = PackageKind::runtime;
    } else {
      return bad(kind_path,
                 "unknown kind " + quote_for_message(*r) + " (known: execution_provider, runtime)");
    }
  }
  {
    EPB_TRY(v, member("version"));
    EPB_TRY(r, read_version(**v, member_path(path, "version")));
    m.version = std::move(*r);
  }
  {
    EPB_TRY(v, member("ep_names"));
    const std::string list_path = member_path(path, "ep_names");
    // A runtime may list no EP (its built-in ones are informational).
    const std::size_t min_names = m.kind == PackageKind::runtime ? 0 : 1;
    EPB_TRY(r, read_list<std::string>(
                   **v, list_path, min_names, kMaxEpNames, [](const json& e, const std::string& p) {
                     return read_token(e, p, kMaxEpNameLength, is_ep_name_char, "[A-Za-z0-9_.-]");
                   }));
    for (std::size_t i = 0; i < r->size(); ++i) {
      for (std::size_t k = 0; k < i; ++k) {
        if ((*r)[i] == (*r)[k]) return bad(index_path(list_path, i), "duplicate EP name");
      }
    }
    m.ep_names = std::move(*r);
  }
  {
    EPB_TRY(v, member("vendor"));
    EPB_TRY(r, read_text(**v, member_path(path, "vendor"), kMaxVendorLength,
                         /*allow_empty=*/false, /*allow_newline_tab=*/false));
    m.vendor = std::move(*r);
  }
  {
    EPB_TRY(v, member("arch"));
    const std::string arch_path = member_path(path, "arch");
    std::size_t chars = 0;
    EPB_TRY(r, read_string(**v, arch_path, chars));
    if (std::find(kArches.begin(), kArches.end(), *r) == kArches.end()) {
      return bad(arch_path,
                 "unknown architecture " + quote_for_message(*r) + " (known: x86_64, aarch64)");
    }
    m.arch = std::move(*r);
  }
  {
    EPB_TRY(v, member("ort_min"));
    EPB_TRY(r, read_version(**v, member_path(path, "ort_min")));
    m.ort_min = std::move(*r);
  }
  {
    EPB_TRY(v, member("library"));
    EPB_TRY(r, read_library_path(**v, member_path(path, "library")));
    m.library = std::move(*r);
  }
  {
    EPB_TRY(v, member("supports"));
    EPB_TRY(r, read_list<DeviceSupport>(**v, member_path(path, "supports"), 1, kMaxSupports,
                                        read_support));
    m.supports = std::move(*r);
  }
  if (const json* v = find_member(obj, "requires")) {
    EPB_TRY(r, read_list<std::string>(*v, member_path(path, "requires"), 0, kMaxRequires,
                                      [](const json& e, const std::string& p) {
                                        return read_token(e, p, kMaxSonameLength, is_soname_char,
                                                          "[A-Za-z0-9._+-]");
                                      }));
    m.required_sonames = std::move(*r);
  }
  if (const json* v = find_member(obj, "description")) {
    EPB_TRY(r, read_text(*v, member_path(path, "description"), kMaxDescriptionLength,
                         /*allow_empty=*/true, /*allow_newline_tab=*/true));
    m.description = std::move(*r);
  }
#undef EPB_TRY
  return m;
}

}  // namespace

std::string_view package_kind_name(PackageKind k) {
  return k == PackageKind::runtime ? "runtime" : "execution_provider";
}

Result<EpMetadata> parse_ep_metadata(const nlohmann::json& custom) {
  try {
    if (!custom.is_object()) return wrong_type("custom", "object", custom);
    const nlohmann::json* obj = find_member(custom, kEpMetadataKey.data());
    if (obj == nullptr) return bad(std::string(kEpMetadataKey), "missing");
    return parse_object(*obj, std::string(kEpMetadataKey));
  } catch (const std::exception& e) {
    // Not expected (the readers avoid throwing accessors); memory exhaustion at most.
    return fail(Errc::bad_field, std::string(kEpMetadataKey) + ": " + e.what());
  }
}

nlohmann::json to_json(const EpMetadata& m) {
  nlohmann::json o = nlohmann::json::object();
  o["schema"] = kEpMetadataSchema;
  o["name"] = m.name;
  if (m.kind != PackageKind::execution_provider) o["kind"] = std::string(package_kind_name(m.kind));
  o["version"] = m.version.text;
  o["ep_names"] = m.ep_names;
  o["vendor"] = m.vendor;
  o["arch"] = m.arch;
  o["ort_min"] = m.ort_min.text;
  o["library"] = m.library;
  nlohmann::json supports = nlohmann::json::array();
  for (const DeviceSupport& s : m.supports) {
    nlohmann::json e = nlohmann::json::object();
    e["type"] = std::string(device_type_name(s.type));
    if (!s.vendor_ids.empty()) e["vendor_ids"] = s.vendor_ids;
    if (!s.device_ids.empty()) e["device_ids"] = s.device_ids;
    if (s.driver) e["driver"] = *s.driver;
    if (s.driver_min) e["driver_min"] = s.driver_min->text;
    supports.push_back(std::move(e));
  }
  o["supports"] = std::move(supports);
  if (!m.required_sonames.empty()) o["requires"] = m.required_sonames;
  if (!m.description.empty()) o["description"] = m.description;
  nlohmann::json custom = nlohmann::json::object();
  custom[std::string(kEpMetadataKey)] = std::move(o);
  return custom;
}

Result<EpMetadata> parse_ep_metadata_text(std::string_view json_text) {
  auto doc = ::catalog::json::parse_strict(json_text, "EP metadata", kMaxEpMetadataTextBytes);
  if (!doc) return std::unexpected(std::move(doc.error()));
  return parse_ep_metadata(*doc);
}

}  // namespace catalog
