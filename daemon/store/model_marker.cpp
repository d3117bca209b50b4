// The model marker (.epbroker-model.json, model_store.hpp), what an installed
// variant is made of, and index.json with the models.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "catalog/atomic_file.hpp"
#include "catalog/json_fields.hpp"
#include "daemon/store/model_store.hpp"
#include "daemon/store/store.hpp"
#include "daemon/store/store_impl.hpp"

namespace epbrokerd::store {
namespace {

namespace fs = std::filesystem;
using catalog::Errc;
using catalog::fail;
using catalog::Result;
using nlohmann::json;

}  // namespace

std::uint64_t InstalledModel::size_bytes() const {
  std::uint64_t total = 0;
  for (const auto& f : files) total += f.size;
  return total;
}

const catalog::ModelVariant* find_variant(const catalog::ModelMetadata& m, std::string_view id) {
  for (const auto& v : m.variants) {
    if (v.id == id) return &v;
  }
  return nullptr;
}

bool is_blob_name(std::string_view hex) {
  return hex.size() == 64 && std::all_of(hex.begin(), hex.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::string to_text(const ModelMarker& marker) {
  json j = json::object();
  j["store_format"] = kModelStoreFormat;
  j["installed_at"] = marker.installed_at.time_since_epoch().count();
  j["metadata"] = catalog::to_json(marker.model.metadata);
  j["variant"] = marker.model.variant;
  j["remote"] = marker.model.remote;
  j["target"] = marker.model.target;
  return j.dump(2) + "\n";
}

Result<ModelMarker> parse_model_marker(std::string_view text) {
  // 1. Bounded, well-formed JSON object with exactly the known keys.
  if (text.size() > kMaxModelMarkerBytes) {
    return fail(Errc::too_large,
                "model marker larger than " + std::to_string(kMaxModelMarkerBytes) + " bytes");
  }
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return fail(Errc::malformed, "model marker is not JSON");
  if (!j.is_object()) return fail(Errc::bad_field, "model marker: expected an object");
  for (const auto& [key, value] : j.items()) {
    if (key != "store_format" && key != "installed_at" && key != "metadata" && key != "variant" &&
        key != "remote" && key != "target") {
      return fail(Errc::bad_field, "model marker: unknown key '" + key + "'");
    }
  }
  // 2. Format, install time, strings.
  auto format = catalog::json::uint_field(j, "store_format", "store_format");
  if (!format) return std::unexpected(std::move(format.error()));
  if (*format != static_cast<std::uint64_t>(kModelStoreFormat)) {
    return fail(Errc::unsupported, "store_format " + std::to_string(*format) + " unknown");
  }
  auto at = catalog::json::uint_field(j, "installed_at", "installed_at");
  if (!at) return std::unexpected(std::move(at.error()));
  if (*at > static_cast<std::uint64_t>(INT64_MAX / 2)) {
    return fail(Errc::bad_field, "installed_at: out of range");
  }
  ModelMarker out;
  out.installed_at =
      std::chrono::sys_seconds(std::chrono::seconds(static_cast<std::chrono::seconds::rep>(*at)));
  for (auto [key, field] :
       {std::pair{"variant", &out.model.variant}, std::pair{"remote", &out.model.remote},
        std::pair{"target", &out.model.target}}) {
    auto v = catalog::json::string_field(j, key, key);
    if (!v) return std::unexpected(std::move(v.error()));
    *field = std::move(*v);
  }
  // 3. The metadata, through the strict parser; the variant must be one of it.
  auto m = catalog::json::object_field(j, "metadata", "metadata");
  if (!m) return std::unexpected(std::move(m.error()));
  auto meta = catalog::parse_model_metadata(**m);
  if (!meta) {
    meta.error().message = "metadata: " + meta.error().message;
    return std::unexpected(std::move(meta.error()));
  }
  out.model.metadata = std::move(*meta);
  if (find_variant(out.model.metadata, out.model.variant) == nullptr) {
    return fail(Errc::bad_field, "variant: '" + out.model.variant + "' is not in the metadata");
  }
  return out;
}

namespace detail {

InstalledModel installed_model(const ModelMarker& marker, const fs::path& root) {
  const catalog::ModelMetadata& m = marker.model.metadata;
  const catalog::ModelVariant* v = find_variant(m, marker.model.variant);
  InstalledModel out{.name = m.name,
                     .version = m.version.text,
                     .variant = marker.model.variant,
                     .metadata = m,
                     .root = root,
                     .main = v ? root / v->main : root,
                     .files = v ? v->files : std::vector<catalog::ModelFile>{},
                     .installed_at = marker.installed_at,
                     .remote = marker.model.remote,
                     .target = marker.model.target};
  return out;
}

}  // namespace detail

namespace {

// index.json for `entries` and `model_entries`: "models" only when some are
// installed, so that a store without models keeps the index.json of earlier
// releases byte for byte.
std::string full_index_text(const std::map<detail::Key, detail::Entry>& entries,
                            const std::map<detail::ModelKey, detail::ModelEntry>& model_entries) {
  std::vector<InstalledPackage> packages;
  packages.reserve(entries.size());
  for (const auto& [key, e] : entries) packages.push_back(e.package);
  std::string text = index_text(std::move(packages));
  if (model_entries.empty()) return text;
  json j = json::parse(text);
  json list = json::array();
  for (const auto& [key, e] : model_entries) {  // by name, version, variant
    const InstalledModel& im = e.model;
    list.push_back(json{{"name", im.name},
                        {"version", im.version},
                        {"variant", im.variant},
                        {"installed_at", im.installed_at.time_since_epoch().count()},
                        {"size", im.size_bytes()},
                        {"remote", im.remote},
                        {"target", im.target}});
  }
  j["models"] = std::move(list);
  return j.dump(2) + "\n";
}

}  // namespace

Result<void> Store::Impl::write_index(
    const std::map<detail::Key, detail::Entry>& entries,
    const std::map<detail::ModelKey, detail::ModelEntry>& model_entries) const {
  return catalog::atomic_write_file(store / kIndexFileName,
                                    full_index_text(entries, model_entries));
}

std::string Store::Impl::current_index_text() const { return full_index_text(index, models); }

}  // namespace epbrokerd::store
