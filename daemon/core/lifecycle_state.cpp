#include "daemon/core/lifecycle_state.hpp"

#include <algorithm>
#include <set>
#include <system_error>

#include "catalog/atomic_file.hpp"
#include "catalog/json_fields.hpp"

namespace epbrokerd::core {

namespace fs = std::filesystem;
using catalog::Errc;
using nlohmann::json;
namespace cj = catalog::json;

namespace {

constexpr std::size_t kMaxLifecycleBytes = 16 << 20;

json to_json(const PackageLifecycle& p) {
  json j = json::object();
  if (!p.current.empty()) j["current"] = p.current;
  if (!p.previous.empty()) j["previous"] = p.previous;
  if (p.held) j["held"] = true;
  if (!p.hold_reason.empty()) j["hold_reason"] = p.hold_reason;
  if (!p.revoked.empty()) j["revoked"] = p.revoked;
  if (!p.removing.empty()) j["removing"] = p.removing;
  if (!p.older_ort.empty()) j["older_ort"] = p.older_ort;
  return j;
}

catalog::Result<std::vector<std::string>> string_list(const json& v, const std::string& path) {
  if (!v.is_array()) return cj::wrong_type(path, "array", v);
  std::vector<std::string> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    auto s = cj::as_string(v[i], path + "[" + std::to_string(i) + "]");
    if (!s) return std::unexpected(s.error());
    out.push_back(std::move(*s));
  }
  return out;
}

catalog::Result<PackageLifecycle> package_from(const json& j, const std::string& path) {
  if (!j.is_object()) return cj::wrong_type(path, "object", j);
  PackageLifecycle p;
  for (const auto& [key, v] : j.items()) {
    const std::string at = cj::join(path, key);
    if (key == "current" || key == "hold_reason") {
      auto s = cj::as_string(v, at);
      if (!s) return std::unexpected(s.error());
      (key == "current" ? p.current : p.hold_reason) = std::move(*s);
    } else if (key == "previous" || key == "removing") {
      auto l = string_list(v, at);
      if (!l) return std::unexpected(l.error());
      (key == "previous" ? p.previous : p.removing) = std::move(*l);
    } else if (key == "held") {
      if (!v.is_boolean()) return cj::wrong_type(at, "boolean", v);
      p.held = v.get<bool>();
    } else if (key == "revoked") {
      if (!v.is_object()) return cj::wrong_type(at, "object", v);
      for (const auto& [ver, why] : v.items()) {
        auto s = cj::as_string(why, cj::join(at, ver));
        if (!s) return std::unexpected(s.error());
        p.revoked[ver] = std::move(*s);
      }
    } else if (key == "older_ort") {
      if (!v.is_object()) return cj::wrong_type(at, "object", v);
      for (const auto& [ver, when] : v.items()) {
        if (!when.is_number_integer()) return cj::wrong_type(cj::join(at, ver), "integer", when);
        p.older_ort[ver] = when.get<std::int64_t>();
      }
    } else {
      return cj::field_error(at, "unknown key");
    }
  }
  return p;
}

}  // namespace

bool PackageLifecycle::is_removing(const std::string& version) const {
  return std::find(removing.begin(), removing.end(), version) != removing.end();
}

void PackageLifecycle::make_current(const std::string& version) {
  if (!current.empty() && current != version) previous.insert(previous.begin(), current);
  std::erase(previous, version);
  // A version appears once, at its most recent place.
  std::set<std::string> seen;
  std::erase_if(previous, [&](const std::string& v) { return !seen.insert(v).second; });
  std::erase(removing, version);
  current = version;
}

void PackageLifecycle::forget(const std::string& version) {
  if (current == version) current.clear();
  std::erase(previous, version);
  std::erase(removing, version);
  revoked.erase(version);
  older_ort.erase(version);
}

PackageLifecycle LifecycleState::get(const std::string& name) const {
  auto it = packages.find(name);
  return it == packages.end() ? PackageLifecycle{} : it->second;
}

void LifecycleState::prune() {
  std::erase_if(packages, [](const auto& kv) { return kv.second.empty(); });
}

std::string to_text(const LifecycleState& state) {
  json packages = json::object();
  for (const auto& [name, p] : state.packages) {
    if (!p.empty()) packages[name] = to_json(p);
  }
  json doc = {{"lifecycle_version", kLifecycleVersion}, {"packages", packages}};
  return doc.dump(2) + "\n";
}

catalog::Result<LifecycleState> parse_lifecycle(std::string_view text) {
  auto doc = cj::parse_strict(text, "lifecycle", kMaxLifecycleBytes);
  if (!doc) return std::unexpected(doc.error());
  if (!doc->is_object()) return cj::wrong_type("lifecycle", "object", *doc);
  auto version = cj::uint_field(*doc, "lifecycle_version", "");
  if (!version) return std::unexpected(version.error());
  if (*version != kLifecycleVersion) {
    return catalog::fail(Errc::unsupported,
                         "lifecycle_version " + std::to_string(*version) + " is not supported");
  }
  LifecycleState state;
  for (const auto& [key, v] : doc->items()) {
    if (key == "lifecycle_version") continue;
    if (key != "packages") return cj::field_error(key, "unknown key");
    if (!v.is_object()) return cj::wrong_type("packages", "object", v);
    for (const auto& [name, p] : v.items()) {
      auto parsed = package_from(p, cj::join("packages", name));
      if (!parsed) return std::unexpected(parsed.error());
      state.packages[name] = std::move(*parsed);
    }
  }
  return state;
}

LifecycleState load_lifecycle(const fs::path& state_dir, std::optional<catalog::Error>* problem) {
  const fs::path path = state_dir / kLifecycleFileName;
  std::error_code ec;
  if (!fs::exists(path, ec)) return {};
  auto text = catalog::read_file(path, kMaxLifecycleBytes);
  auto state = text ? parse_lifecycle(*text)
                    : catalog::Result<LifecycleState>(std::unexpected(text.error()));
  if (state) return std::move(*state);
  // Kept for people to look at; the daemon goes on as with no lifecycle.
  fs::rename(path, state_dir / (std::string(kLifecycleFileName) + ".bad"), ec);
  if (problem) *problem = state.error();
  return {};
}

catalog::Result<void> save_lifecycle(const fs::path& state_dir, const LifecycleState& state) {
  return catalog::atomic_write_file(state_dir / kLifecycleFileName, to_text(state));
}

}  // namespace epbrokerd::core
