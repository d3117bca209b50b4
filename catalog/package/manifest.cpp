#include "catalog/package/manifest.hpp"

#include <algorithm>
#include <array>
#include <exception>
#include <set>
#include <unordered_set>
#include <utility>

#include <nlohmann/json.hpp>

#include "catalog/json_fields.hpp"
#include "catalog/text.hpp"

namespace catalog::package {
namespace {

using nlohmann::json;

constexpr std::array<std::string_view, 3> kTopKeys = {"manifest_version", "epbroker", "files"};
constexpr std::array<std::string_view, 4> kFileKeys = {"path", "size", "sha256", "mode"};

std::unexpected<Error> bad(const std::string& path, std::string_view what) {
  return fail(Errc::bad_field, path + ": " + std::string(what));
}

std::unexpected<Error> wrong_type(const std::string& path, std::string_view expected,
                                  const json& got) {
  return ::catalog::json::wrong_type(path, expected, got);
}

// Checks that `obj` is an object with no key outside `known`.
template <std::size_t N>
Result<void> check_keys(const json& obj, const std::string& path,
                        const std::array<std::string_view, N>& known) {
  if (!obj.is_object()) return wrong_type(path, "object", obj);
  for (const auto& item : obj.items()) {
    if (std::find(known.begin(), known.end(), item.key()) == known.end()) {
      const std::string where = path.empty() ? quote_for_message(item.key())
                                             : path + "[" + quote_for_message(item.key()) + "]";
      return bad(where, "unknown key");
    }
  }
  return {};
}

std::string join(const std::string& parent, std::string_view key) {
  return parent.empty() ? std::string(key) : parent + "." + std::string(key);
}

Result<const json*> require(const json& obj, const std::string& parent, const char* key) {
  const auto it = obj.find(key);
  if (it == obj.end()) return bad(join(parent, key), "missing");
  return &*it;
}

// A non-negative JSON integer (floats and negative numbers are refused).
Result<std::uint64_t> read_uint(const json& v, const std::string& path) {
  if (const auto* u = v.get_ptr<const json::number_unsigned_t*>()) return *u;
  if (const auto* i = v.get_ptr<const json::number_integer_t*>()) {
    if (*i < 0) return bad(path, "negative");
    return static_cast<std::uint64_t>(*i);
  }
  return wrong_type(path, "non-negative integer", v);
}

bool is_lower_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

Result<FileEntry> read_file_entry(const json& v, const std::string& path) {
  if (auto ok = check_keys(v, path, kFileKeys); !ok) return std::unexpected(std::move(ok.error()));
  FileEntry out;
  // 1. path: a string, safe, not the manifest itself.
  {
    auto p = require(v, path, "path");
    if (!p) return std::unexpected(std::move(p.error()));
    const std::string field = join(path, "path");
    const auto* s = (*p)->get_ptr<const json::string_t*>();
    if (s == nullptr) return wrong_type(field, "string", **p);
    if (auto problem = path_problem(*s)) return bad(field, *problem);
    if (*s == kManifestName) return bad(field, "manifest.json must not list itself");
    out.path = *s;
  }
  // 2. size.
  {
    auto p = require(v, path, "size");
    if (!p) return std::unexpected(std::move(p.error()));
    auto n = read_uint(**p, join(path, "size"));
    if (!n) return std::unexpected(std::move(n.error()));
    out.size = *n;
  }
  // 3. sha256: 64 lower-case hex digits.
  {
    auto p = require(v, path, "sha256");
    if (!p) return std::unexpected(std::move(p.error()));
    const std::string field = join(path, "sha256");
    const auto* s = (*p)->get_ptr<const json::string_t*>();
    if (s == nullptr) return wrong_type(field, "string", **p);
    if (s->size() != 64 || !std::all_of(s->begin(), s->end(), is_lower_hex)) {
      return bad(field, "expected 64 lower-case hex digits");
    }
    out.sha256 = *s;
  }
  // 4. mode: 493 (0755) or 420 (0644), nothing else.
  {
    auto p = require(v, path, "mode");
    if (!p) return std::unexpected(std::move(p.error()));
    const std::string field = join(path, "mode");
    auto n = read_uint(**p, field);
    if (!n) return std::unexpected(std::move(n.error()));
    if (*n != kExecutableMode && *n != kRegularMode) {
      return bad(field, "must be 493 (0755) or 420 (0644), got " + std::to_string(*n));
    }
    out.executable = *n == kExecutableMode;
  }
  return out;
}

Result<Manifest> parse_document(const json& doc) {
  // 1. The version first: a later version may have keys this build does not know.
  if (!doc.is_object()) return wrong_type("manifest", "object", doc);
  auto version = require(doc, "", "manifest_version");
  if (!version) return std::unexpected(std::move(version.error()));
  {
    const json& v = **version;
    if (!v.is_number_integer()) return wrong_type("manifest_version", "integer", v);
    const bool known = v.is_number_unsigned()
                           ? v.get_ref<const json::number_unsigned_t&>() == 1u
                           : v.get_ref<const json::number_integer_t&>() == kManifestVersion;
    if (!known) {
      return fail(Errc::unsupported, "manifest_version: unsupported version " + v.dump() +
                                         " (this build knows " + std::to_string(kManifestVersion) +
                                         ")");
    }
  }
  if (auto ok = check_keys(doc, "", kTopKeys); !ok) return std::unexpected(std::move(ok.error()));

  Manifest m;
  // 2. The EP metadata, with the catalog's own strict parser.
  {
    auto ep = require(doc, "", "epbroker");
    if (!ep) return std::unexpected(std::move(ep.error()));
    json custom = json::object();
    custom[std::string(kEpMetadataKey)] = **ep;
    auto parsed = parse_ep_metadata(custom);
    if (!parsed) return std::unexpected(std::move(parsed.error()));
    m.ep = std::move(*parsed);
  }
  // 3. The files: bounded, each valid, strictly sorted (hence unique).
  auto files = require(doc, "", "files");
  if (!files) return std::unexpected(std::move(files.error()));
  const json& list = **files;
  if (!list.is_array()) return wrong_type("files", "array", list);
  if (list.empty()) return bad("files", "needs at least 1 entry (the EP library)");
  if (list.size() > kMaxManifestFiles) {
    return fail(Errc::too_many, "files: too many entries (" + std::to_string(list.size()) + " > " +
                                    std::to_string(kMaxManifestFiles) + ")");
  }
  m.files.reserve(list.size());
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string path = "files[" + std::to_string(i) + "]";
    auto entry = read_file_entry(list[i], path);
    if (!entry) return std::unexpected(std::move(entry.error()));
    if (!m.files.empty()) {
      const std::string& prev = m.files.back().path;
      if (entry->path == prev) {
        return bad(path + ".path", "duplicate path " + quote_for_message(entry->path));
      }
      if (entry->path < prev) {
        return bad(path + ".path", quote_for_message(entry->path) + " is not sorted after " +
                                       quote_for_message(prev) + " (byte order)");
      }
    }
    m.files.push_back(std::move(*entry));
  }
  // 4. No file is also a directory of another ("a" and "a/b").
  std::unordered_set<std::string_view> names;
  names.reserve(m.files.size());
  for (const FileEntry& f : m.files) names.insert(f.path);
  for (std::size_t i = 0; i < m.files.size(); ++i) {
    const std::string_view p = m.files[i].path;
    for (std::size_t slash = p.find('/'); slash != std::string_view::npos;
         slash = p.find('/', slash + 1)) {
      if (names.contains(p.substr(0, slash))) {
        return bad("files[" + std::to_string(i) + "].path",
                   quote_for_message(p) + " is inside " + quote_for_message(p.substr(0, slash)) +
                       ", which is listed as a file");
      }
    }
  }
  // 5. The EP library is one of the files.
  if (!names.contains(m.ep.library)) {
    return bad(std::string(kEpMetadataKey) + ".library",
               quote_for_message(m.ep.library) + " is not listed in files");
  }
  return m;
}

// JSON text of one field of the EP metadata, for mismatch messages.
std::string field_text(const json& obj, const char* key) {
  const auto it = obj.find(key);
  if (it == obj.end()) return "(absent)";
  std::string s = it->dump(-1, ' ', true);
  if (s.size() > 200) s = s.substr(0, 200) + "...";
  return s;
}

}  // namespace

std::optional<std::string> path_problem(std::string_view path, std::size_t max_bytes) {
  if (path.empty()) return "empty path";
  if (path.size() > max_bytes) {
    return "path longer than " + std::to_string(max_bytes) + " bytes (" +
           std::to_string(path.size()) + ")";
  }
  if (path.find('\0') != std::string_view::npos) return "NUL byte in path";
  if (!utf8_length(path)) return "path is not valid UTF-8";
  for (std::size_t i = 0; i < path.size(); ++i) {
    const auto c = static_cast<unsigned char>(path[i]);
    // C1 controls U+0080..U+009F are 0xC2 0x80..0x9F in (already valid) UTF-8.
    const bool c1 = c == 0xC2 && i + 1 < path.size() &&
                    static_cast<unsigned char>(path[i + 1]) >= 0x80 &&
                    static_cast<unsigned char>(path[i + 1]) <= 0x9F;
    if (c < 0x20 || c == 0x7F || c1) {
      return "control character at offset " + std::to_string(i);
    }
    if (c == '\\') return "backslash at offset " + std::to_string(i);
  }
  if (path.front() == '/') return "absolute path";
  std::size_t start = 0;
  while (true) {
    const std::size_t slash = path.find('/', start);
    const std::string_view part = path.substr(
        start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (part.empty()) return "empty path component";
    if (part == ".") return "'.' path component";
    if (part == "..") return "'..' path component";
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return std::nullopt;
}

Result<Manifest> parse_manifest(std::string_view text) {
  auto doc = ::catalog::json::parse_strict(text, "manifest", kMaxManifestBytes);
  if (!doc) return std::unexpected(std::move(doc.error()));
  return parse_document(*doc);
}

nlohmann::json to_json(const Manifest& m) {
  json files = json::array();
  for (const FileEntry& f : m.files) {
    files.push_back({{"path", f.path},
                     {"size", f.size},
                     {"sha256", f.sha256},
                     {"mode", f.executable ? kExecutableMode : kRegularMode}});
  }
  json out = json::object();
  out["manifest_version"] = kManifestVersion;
  out["epbroker"] = catalog::to_json(m.ep)[std::string(kEpMetadataKey)];
  out["files"] = std::move(files);
  return out;
}

std::string to_text(const Manifest& m) {
  // nlohmann's object keeps keys sorted, so the text is deterministic.
  return to_json(m).dump(2, ' ', /*ensure_ascii=*/false) + "\n";
}

Result<void> check_manifest_matches(const Manifest& m, const EpMetadata& signed_meta) {
  const EpMetadata& a = m.ep;
  const EpMetadata& b = signed_meta;
  const char* differing = nullptr;
  // 1. Field by field, in schema order, so the message names the first difference.
  if (a.name != b.name) {
    differing = "name";
  } else if (a.version.text != b.version.text) {
    differing = "version";
  } else if (a.ep_names != b.ep_names) {
    differing = "ep_names";
  } else if (a.vendor != b.vendor) {
    differing = "vendor";
  } else if (a.arch != b.arch) {
    differing = "arch";
  } else if (a.ort_min.text != b.ort_min.text) {
    differing = "ort_min";
  } else if (a.library != b.library) {
    differing = "library";
  } else if (a.supports != b.supports) {
    differing = "supports";
  } else if (a.required_sonames != b.required_sonames) {
    differing = "requires";
  } else if (a.description != b.description) {
    differing = "description";
  } else if (!(a == b)) {
    differing = "(other field)";
  }
  if (differing == nullptr) return {};
  // 2. Both values, as JSON, for the message.
  const json ja = catalog::to_json(a)[std::string(kEpMetadataKey)];
  const json jb = catalog::to_json(b)[std::string(kEpMetadataKey)];
  return fail(Errc::manifest_mismatch,
              "manifest.json disagrees with the signed catalog entry: epbroker." +
                  std::string(differing) + " is " + field_text(ja, differing) +
                  " in the package but " + field_text(jb, differing) + " in the catalog");
}

}  // namespace catalog::package
