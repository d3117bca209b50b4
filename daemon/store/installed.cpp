#include "daemon/store/installed.hpp"

#include <algorithm>
#include <tuple>

#include <nlohmann/json.hpp>

#include "catalog/ep_metadata.hpp"
#include "catalog/json_fields.hpp"

namespace epbrokerd::store {
namespace {

using catalog::Errc;
using catalog::fail;
using nlohmann::json;

bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool is_name_char(char c) { return is_name_start(c) || c == '.' || c == '_' || c == '-'; }

std::string dump(const json& j) { return j.dump(2) + "\n"; }

}  // namespace

std::filesystem::path InstalledPackage::library_path() const { return root / manifest.ep.library; }

std::uint64_t InstalledPackage::size_bytes() const {
  std::uint64_t total = 0;
  for (const auto& f : manifest.files) total += f.size;
  return total;
}

std::string to_text(const SavedManifest& saved) {
  json j = json::object();
  j["store_format"] = kStoreFormat;
  j["installed_at"] = saved.installed_at.time_since_epoch().count();
  j["manifest"] = catalog::package::to_json(saved.manifest);
  return dump(j);
}

catalog::Result<SavedManifest> parse_saved_manifest(std::string_view text) {
  // 1. Bounded, well-formed JSON object with exactly the known keys.
  if (text.size() > kMaxSavedManifestBytes) {
    return fail(Errc::too_large,
                "saved manifest larger than " + std::to_string(kMaxSavedManifestBytes) + " bytes");
  }
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return fail(Errc::malformed, "saved manifest is not JSON");
  if (!j.is_object()) return fail(Errc::bad_field, "saved manifest: expected an object");
  for (const auto& [key, value] : j.items()) {
    if (key != "store_format" && key != "installed_at" && key != "manifest") {
      return fail(Errc::bad_field, "saved manifest: unknown key '" + key + "'");
    }
  }
  // 2. Format, then install time.
  auto format = catalog::json::uint_field(j, "store_format", "store_format");
  if (!format) return std::unexpected(std::move(format.error()));
  if (*format != static_cast<std::uint64_t>(kStoreFormat)) {
    return fail(Errc::unsupported, "store_format " + std::to_string(*format) + " unknown");
  }
  auto at = catalog::json::uint_field(j, "installed_at", "installed_at");
  if (!at) return std::unexpected(std::move(at.error()));
  if (*at > static_cast<std::uint64_t>(INT64_MAX / 2)) {
    return fail(Errc::bad_field, "installed_at: out of range");
  }
  // 3. The package manifest, through the strict manifest parser.
  auto m = catalog::json::object_field(j, "manifest", "manifest");
  if (!m) return std::unexpected(std::move(m.error()));
  auto manifest = catalog::package::parse_manifest((*m)->dump());
  if (!manifest) {
    manifest.error().message = "manifest: " + manifest.error().message;
    return std::unexpected(std::move(manifest.error()));
  }
  return SavedManifest{
      std::move(*manifest),
      std::chrono::sys_seconds(std::chrono::seconds(static_cast<std::chrono::seconds::rep>(*at)))};
}

std::string index_text(std::vector<InstalledPackage> packages) {
  std::sort(packages.begin(), packages.end(), [](const auto& a, const auto& b) {
    return std::tie(a.name(), a.version()) < std::tie(b.name(), b.version());
  });
  json list = json::array();
  for (const InstalledPackage& p : packages) {
    json e = json::object();
    e["name"] = p.name();
    e["version"] = p.version();
    e["installed_at"] = p.installed_at.time_since_epoch().count();
    e["size"] = p.size_bytes();
    e["manifest"] = catalog::package::to_json(p.manifest);
    list.push_back(std::move(e));
  }
  json j = json::object();
  j["index_version"] = kIndexVersion;
  j["packages"] = std::move(list);
  return dump(j);
}

bool is_storable_name(std::string_view name) {
  if (name.empty() || name.size() > catalog::kMaxPackageNameLength) return false;
  if (!is_name_start(name.front())) return false;
  if (!std::all_of(name.begin(), name.end(), is_name_char)) return false;
  return name != kIndexFileName;
}

}  // namespace epbrokerd::store
