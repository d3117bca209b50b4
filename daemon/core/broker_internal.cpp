#include "daemon/core/broker_internal.hpp"

#include <map>
#include <regex>

#include "catalog/atomic_file.hpp"
#include "catalog/crypto/hash.hpp"
#include "daemon/hardware/libraries.hpp"

// Contracts: broker_internal.hpp.
namespace epbrokerd::core::detail {

namespace fs = std::filesystem;

std::string result_name(const Error& e) {
  const std::string full(common::bus_error_name(e.code));
  const auto dot = full.rfind('.');
  return dot == std::string::npos ? full : full.substr(dot + 1);
}

bool valid_name(const std::string& name) {
  static const std::regex re("[a-z0-9][a-z0-9._-]{0,63}");
  return std::regex_match(name, re);
}

bool valid_variant_id(const std::string& id) {
  static const std::regex re("[a-z0-9][a-z0-9._-]{0,31}");
  return std::regex_match(id, re);
}

namespace {
constexpr std::string_view kModelLeasePrefix = "model:";
}  // namespace

std::string model_lease_name(const std::string& name, const std::string& version,
                             const std::string& variant) {
  return std::string(kModelLeasePrefix) + name + "/" + version + "/" + variant;
}

std::optional<ModelLeaseName> parse_model_lease_name(const std::string& text) {
  if (!text.starts_with(kModelLeasePrefix)) return std::nullopt;
  const std::string rest = text.substr(kModelLeasePrefix.size());
  const auto first = rest.find('/');
  const auto last = rest.rfind('/');
  if (first == std::string::npos || first == last) return std::nullopt;
  ModelLeaseName out{rest.substr(0, first), rest.substr(first + 1, last - first - 1),
                     rest.substr(last + 1)};
  if (!valid_name(out.name) || out.version.empty() || !valid_variant_id(out.variant)) {
    return std::nullopt;
  }
  return out;
}

catalog::Version any_ort() { return catalog::parse_version("9999.0.0").value(); }

catalog::MachineInfo machine_info(const std::vector<hardware::Device>& devices,
                                  const hardware::Roots& roots) {
  catalog::MachineInfo m = hardware::to_machine_info(devices);
  m.has_library = [locator = hardware::LibraryLocator(roots.system, m.arch)](
                      const std::string& soname) { return locator.has(soname); };
  return m;
}

std::vector<CatalogEntry> drop_shadowed(std::vector<CatalogEntry> entries) {
  std::map<std::string, std::string> owner;  // name -> remote
  std::vector<CatalogEntry> out;
  for (auto& e : entries) {
    const auto [it, first] = owner.emplace(e.meta.name, e.remote);
    if (first || it->second == e.remote) out.push_back(std::move(e));
  }
  return out;
}

nlohmann::json entry_json(const CatalogEntry& e) {
  return {{"remote", e.remote},
          {"target_path", e.target_path},
          {"length", e.length},
          {"custom", catalog::to_json(e.meta)}};
}

const config::Remote* find_remote(const config::Config& c, const std::string& name) {
  for (const auto& r : c.remotes) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

catalog::tuf::UpdaterConfig updater_config(const config::Config& c, const config::Remote& r,
                                           const Job& job) {
  catalog::tuf::UpdaterConfig u;
  u.metadata_dir = c.paths.state_dir / "remotes" / r.name / "metadata";
  // The primary, then the configured mirrors in order (catalog/tuf/mirrors.hpp
  // says which failures fall through to the next).
  u.metadata_base_url = r.primary.metadata_url;
  u.target_base_url = r.primary.targets_url;
  for (const auto& m : r.mirrors) u.mirrors.push_back({m.metadata_url, m.targets_url});
  // Transient failures: fetch_attempts rounds over the mirrors (default 4), 200 ms
  // doubling to 5 s between them, or what a 503's Retry-After asks (capped); an
  // interrupted target resumes from its partial file.
  u.retry = {.attempts = c.daemon.fetch.attempts,
             .initial_backoff = std::chrono::milliseconds(200),
             .max_backoff = std::chrono::seconds(5),
             .max_retry_after = c.daemon.fetch.max_retry_after};
  u.cancel = [&job] { return job.cancel_requested(); };
  u.target_dir = c.paths.cache_dir / "downloads" / r.name;
  return u;
}

namespace {
constexpr const char* kAnchorFileName = "trusted_root.sha256";
}  // namespace

catalog::Result<void> ensure_trusted_root(const config::Remote& r, const fs::path& metadata_dir) {
  if (fs::exists(metadata_dir / "root.json")) return {};
  auto root = catalog::read_file(r.trusted_root, 512'000);
  if (!root) return std::unexpected(root.error());
  std::error_code ec;
  fs::create_directories(metadata_dir, ec);
  if (ec)
    return catalog::fail(catalog::errno_code(ec.value()),
                         "create " + metadata_dir.string() + ": " + ec.message());
  if (auto ok = catalog::atomic_write_file(metadata_dir.parent_path() / kAnchorFileName,
                                           catalog::crypto::sha256_hex(*root) + "\n");
      !ok) {
    return ok;
  }
  return catalog::atomic_write_file(metadata_dir / "root.json", *root);
}

std::optional<std::string> anchor_changed(const config::Remote& r, const fs::path& metadata_dir) {
  auto root = catalog::read_file(r.trusted_root, 512'000);
  if (!root) return std::nullopt;  // the refresh says what is wrong with it
  const std::string configured = catalog::crypto::sha256_hex(*root) + "\n";
  const fs::path anchor = metadata_dir.parent_path() / kAnchorFileName;
  auto recorded = catalog::read_file(anchor, 1024);
  if (!recorded) {
    if (fs::exists(metadata_dir / "root.json"))
      (void)catalog::atomic_write_file(anchor, configured);
    return std::nullopt;
  }
  if (*recorded == configured) return std::nullopt;
  return "the configured trusted_root " + r.trusted_root.string() + " of remote " + r.name +
         " is not the root this remote was first trusted with; if its publisher started over "
         "with a new root, run `epbrokerctl remote reset " +
         r.name + "` to trust the configured one (then refresh)";
}

}  // namespace epbrokerd::core::detail
