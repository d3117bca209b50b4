// Repository::load: the published state of a repository directory, and what
// staged/ holds on top of it.
#include <charconv>

#include "catalog/atomic_file.hpp"
#include "catalog/tuf/repository.hpp"
#include "catalog/tuf/repository_layout.hpp"

namespace catalog::tuf {

using layout::kTopRoles;
using layout::metadata_name;
using layout::staged_name;

Result<Repository> Repository::load(const std::filesystem::path& dir) {
  const auto meta = dir / "metadata";
  Repository repo;
  // 1. The highest N.root.json is the current root.
  std::uint64_t best = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(meta, ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.ends_with(".root.json")) continue;
    std::uint64_t n = 0;
    auto [p, err] = std::from_chars(name.data(), name.data() + name.size(), n);
    if (err == std::errc() && std::string_view(p) == ".root.json") best = std::max(best, n);
  }
  if (best == 0) {
    // 2. Never published: only a staged root v1 (create_with_root_keys) loads.
    if (!std::filesystem::exists(dir / staged_name("root"))) {
      return fail(Errc::not_found, meta.string() + ": no N.root.json");
    }
    repo.dirty_roles_.insert("targets");
    if (auto ok = repo.load_staged(dir); !ok) return std::unexpected(ok.error());
    return repo;
  }
  auto read_role = [&](const std::string& file) { return read_file(meta / file, 50'000'000); };
  auto root_bytes = read_role(std::to_string(best) + ".root.json");
  if (!root_bytes) return std::unexpected(root_bytes.error());
  auto root_md = parse_metadata<Root>(*root_bytes);
  if (!root_md) return std::unexpected(root_md.error());
  repo.root = std::move(root_md->signed_);
  repo.trusted_root_ = repo.root;
  const bool consistent = repo.root.consistent_snapshot;
  // 3. timestamp -> snapshot -> targets -> delegated, each as the previous names it.
  auto ts_bytes = read_role("timestamp.json");
  if (!ts_bytes) return std::unexpected(ts_bytes.error());
  auto ts = parse_metadata<Timestamp>(*ts_bytes);
  if (!ts) return std::unexpected(ts.error());
  repo.timestamp = std::move(ts->signed_);
  repo.pin_hashes = repo.timestamp.snapshot_meta.length.has_value();
  auto sn_bytes = read_role(
      metadata_name("snapshot", repo.timestamp.snapshot_meta.version, consistent).substr(9));
  if (!sn_bytes) return std::unexpected(sn_bytes.error());
  auto sn = parse_metadata<Snapshot>(*sn_bytes);
  if (!sn) return std::unexpected(sn.error());
  repo.snapshot = std::move(sn->signed_);
  for (const auto& [file, mf] : repo.snapshot.meta) {
    const std::string role = file.substr(0, file.size() - 5);  // strip ".json"
    if (role == "root") continue;  // some repositories list root.json too; nothing to load
    if (!layout::storable_role_name(role)) {
      return fail(Errc::unsupported, "snapshot lists role '" + role +
                                         "', whose name this publisher cannot store as a file");
    }
    auto bytes = read_role(metadata_name(role, mf.version, consistent).substr(9));
    if (!bytes) return std::unexpected(bytes.error());
    auto md = parse_metadata<Targets>(*bytes);
    if (!md) return std::unexpected(md.error());
    if (role == "targets") {
      repo.targets = std::move(md->signed_);
    } else {
      repo.delegated.insert_or_assign(role, std::move(md->signed_));
    }
    repo.published_.insert(role);
  }
  for (const char* role : kTopRoles) repo.published_.insert(role);
  // 4. Staged metadata on top.
  if (auto ok = repo.load_staged(dir); !ok) return std::unexpected(ok.error());
  return repo;
}

Result<void> Repository::load_staged(const std::filesystem::path& dir) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir / "staged", ec)) {
    const std::string file = entry.path().filename().string();
    if (!file.ends_with(".json")) continue;
    const std::string role = file.substr(0, file.size() - 5);
    if (role != "root" && !layout::storable_role_name(role)) {
      return fail(Errc::bad_field, file + ": not a role name this publisher stores");
    }
    auto bytes = read_file(entry.path(), 50'000'000);
    if (!bytes) return std::unexpected(bytes.error());
    std::vector<Signature> sigs;
    std::string canon;
    if (role == "root") {
      auto md = parse_metadata<Root>(*bytes);
      if (!md) return fail(md.error().code, file + ": " + md.error().message);
      root = std::move(md->signed_);
      sigs = std::move(md->signatures);
      canon = std::move(md->canonical_signed);
    } else if (role == "timestamp" || role == "snapshot") {
      return fail(Errc::bad_field, file + ": " + role + " is never staged");
    } else {
      auto md = parse_metadata<Targets>(*bytes);
      if (!md) return fail(md.error().code, file + ": " + md.error().message);
      if (role == "targets") {
        targets = std::move(md->signed_);
      } else {
        delegated.insert_or_assign(role, std::move(md->signed_));
      }
      sigs = std::move(md->signatures);
      canon = std::move(md->canonical_signed);
    }
    restaged_.insert(role);
    staged_signatures_[role] = std::move(sigs);
    staged_canonical_[role] = std::move(canon);
  }
  // A missing staged/ is the usual case; any other failure to list it is not.
  if (ec && ec != std::errc::no_such_file_or_directory) {
    return fail(Errc::io, "read " + (dir / "staged").string() + ": " + ec.message());
  }
  return {};
}

}  // namespace catalog::tuf
