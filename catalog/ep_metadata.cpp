#include "catalog/ep_metadata.hpp"

#include <algorithm>
#include <array>
#include <exception>
#include <functional>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "catalog/json_fields.hpp"
#include "catalog/metadata_fields.hpp"
#include "catalog/text.hpp"

namespace catalog {

namespace {

using nlohmann::json;
using namespace ::catalog::metadata;  // the shared strict readers

constexpr std::array<std::string_view, 12> kTopKeys = {
    "schema", "name",    "kind",    "version",  "ep_names", "vendor",
    "arch",   "ort_min", "library", "supports", "requires", "description"};
constexpr std::array<std::string_view, 5> kSupportKeys = {"type", "vendor_ids", "device_ids",
                                                          "driver", "driver_min"};
constexpr std::array<std::string_view, 2> kArches = {"x86_64", "aarch64"};

bool is_driver_char(char c) { return is_lower_alnum(c) || c == '_' || c == '-'; }
bool is_soname_char(char c) { return is_alnum(c) || c == '.' || c == '_' || c == '+' || c == '-'; }

Result<std::uint16_t> read_pci_id(const json& v, const std::string& path) {
  auto id = read_uint(v, path, 0, 0xFFFF);
  if (!id) return std::unexpected(std::move(id.error()));
  return static_cast<std::uint16_t>(*id);
}

// ---- field parsers -------------------------------------------------------------

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

Result<EpMetadata> parse_object(const json& obj, const std::string& path) {
  if (!obj.is_object()) return wrong_type(path, "object", obj);

  // Schema first: a newer schema may have keys this build does not know.
  auto schema_v = require_member(obj, path, "schema");
  if (!schema_v) return std::unexpected(std::move(schema_v.error()));
  auto schema =
      read_schema(**schema_v, member_path(path, "schema"), kMinEpMetadataSchema, kEpMetadataSchema);
  if (!schema) return std::unexpected(std::move(schema.error()));
  // Kind next: a model's keys are not an EP's, and a caller listing providers
  // must be able to tell "not an EP package" (skip it) from "a broken one".
  if (const json* kind = find_member(obj, "kind");
      kind != nullptr && kind->is_string() && kind->get_ref<const std::string&>() == "model") {
    const std::string kind_path = member_path(path, "kind");
    if (*schema < 2) return bad(kind_path, "kind \"model\" needs schema 2");
    return fail(Errc::unsupported, kind_path +
                                       ": a model package, not an EP package (read it with "
                                       "parse_model_metadata())");
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
    EPB_TRY(r, read_package_name(**v, member_path(path, "name")));
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
    EPB_TRY(r, read_library_path(**v, member_path(path, "library"), kMaxLibraryPathLength));
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
  // Schema 1, not kEpMetadataSchema: an EP package reads the same in both, and
  // brokers that know only schema 1 must still read what publishers write now.
  o["schema"] = kMinEpMetadataSchema;
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
