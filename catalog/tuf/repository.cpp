#include "catalog/tuf/repository.hpp"

#include <algorithm>

#include "catalog/atomic_file.hpp"
#include "catalog/crypto/hash.hpp"
#include "catalog/tuf/repository_layout.hpp"

namespace catalog::tuf {

using nlohmann::json;

FileWriter directory_writer(const std::filesystem::path& root) {
  return [root](const std::string& rel, const std::string& bytes) -> Result<void> {
    const auto path = root / rel;
    std::error_code ec;
    std::filesystem::create_directories(path.parent_path(), ec);
    if (ec) return fail(Errc::io, "create " + path.parent_path().string() + ": " + ec.message());
    return atomic_write_file(path, bytes);
  };
}

namespace {}  // namespace

Result<Repository> Repository::create(TimePoint now, std::size_t root_keys,
                                      std::uint64_t root_threshold, bool consistent_snapshot,
                                      crypto::KeyType key_type) {
  if (root_keys == 0 || root_threshold == 0 || root_threshold > root_keys) {
    return fail(Errc::invalid_argument, "root threshold must be between 1 and the number of keys");
  }
  Repository repo;
  repo.root.consistent_snapshot = consistent_snapshot;
  for (const char* role : layout::kTopRoles) {
    const std::size_t n = std::string_view(role) == "root" ? root_keys : 1;
    Role r;
    r.threshold = std::string_view(role) == "root" ? root_threshold : 1;
    for (std::size_t i = 0; i < n; ++i) {
      auto key = crypto::PrivateKey::generate(key_type);
      if (!key) return std::unexpected(key.error());
      Key pub = Key::from_public(key->public_key());
      const std::string id = pub.keyid();
      repo.root.keys.emplace(id, pub);
      r.keyids.push_back(id);
      repo.keys_.emplace(id, std::move(*key));
    }
    repo.root.roles.emplace(role, std::move(r));
  }
  repo.root.expires = now + repo.root_lifetime;
  repo.root_dirty_ = true;
  repo.dirty_roles_.insert("targets");
  return repo;
}

Result<void> Repository::add_target(const std::string& path, std::string bytes, json custom,
                                    const std::string& role) {
  // Target paths end up in URLs and file names of every TUF client, some of
  // which do not percent-encode them: allow only characters that need no
  // encoding, in non-empty segments other than "." and "..".
  bool safe = !path.empty() && path.size() <= 255;
  std::size_t seg_start = 0;
  for (std::size_t i = 0; safe && i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') {
      const std::string_view seg(path.data() + seg_start, i - seg_start);
      safe = !seg.empty() && seg != "." && seg != "..";
      seg_start = i + 1;
      continue;
    }
    const char c = path[i];
    safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-' || c == '+';
  }
  if (!safe) {
    return fail(Errc::invalid_argument,
                "unsafe target path '" + path +
                    "': use non-empty segments of [A-Za-z0-9._+-] separated by '/'");
  }
  Targets* t = role == "targets" ? &targets : nullptr;
  if (auto it = delegated.find(role); it != delegated.end()) t = &it->second;
  if (t == nullptr) return fail(Errc::not_found, "no targets role '" + role + "'");
  // A delegated role is trusted only for its paths: clients would ignore the rest.
  if (role != "targets") {
    const auto& roles = targets.delegations->roles;
    auto d = std::find_if(roles.begin(), roles.end(),
                          [&](const DelegatedRole& r) { return r.name == role; });
    if (d == roles.end() || !d->is_delegated_path(path)) {
      return fail(Errc::invalid_argument,
                  "'" + path + "' is outside the paths delegated to '" + role + "'");
    }
  }
  TargetFile f;
  f.path = path;
  f.length = bytes.size();
  f.hashes["sha256"] = crypto::sha256_hex(bytes);
  f.custom = std::move(custom);
  std::string rel = path;
  if (root.consistent_snapshot) {
    auto slash = rel.rfind('/');
    rel = slash == std::string::npos
              ? f.hashes["sha256"] + "." + rel
              : rel.substr(0, slash + 1) + f.hashes["sha256"] + "." + rel.substr(slash + 1);
  }
  pending_files_.insert_or_assign("targets/" + rel, std::move(bytes));
  t->targets.insert_or_assign(path, std::move(f));
  dirty_roles_.insert(role);
  return {};
}

Result<void> Repository::remove_target(const std::string& path, const std::string& role) {
  Targets* t = role == "targets" ? &targets : nullptr;
  if (auto it = delegated.find(role); it != delegated.end()) t = &it->second;
  if (t == nullptr) return fail(Errc::not_found, "no targets role '" + role + "'");
  if (t->targets.erase(path) == 0) return fail(Errc::not_found, "no target '" + path + "'");
  dirty_roles_.insert(role);
  return {};
}

namespace {

// Role names become file names and URL path segments in every client; only
// names that need no quoting anywhere are published.
Result<void> check_role_name(const std::string& name) {
  if (!layout::storable_role_name(name)) {
    return fail(Errc::invalid_argument,
                "role name '" + name + "': use 1 to 128 characters of [A-Za-z0-9._+-]");
  }
  static constexpr std::string_view kReserved[] = {"root", "timestamp", "snapshot", "targets"};
  if (std::find(std::begin(kReserved), std::end(kReserved), name) != std::end(kReserved)) {
    return fail(Errc::invalid_argument, "role name '" + name + "' is reserved");
  }
  return {};
}

}  // namespace

Result<Repository> Repository::create_with_root_keys(
    TimePoint now, const std::vector<crypto::PublicKey>& root_keys, std::uint64_t root_threshold,
    bool consistent_snapshot, crypto::KeyType key_type) {
  if (root_keys.empty() || root_threshold == 0 || root_threshold > root_keys.size()) {
    return fail(Errc::invalid_argument, "root threshold must be between 1 and the number of keys");
  }
  auto repo = create(now, 1, 1, consistent_snapshot, key_type);
  if (!repo) return repo;
  // The generated root key goes; the holders' public keys take its place.
  Role& r = repo->root.roles.at("root");
  const std::string generated = r.keyids.front();
  repo->root.keys.erase(generated);
  repo->keys_.erase(generated);
  r.keyids.clear();
  for (const auto& pub : root_keys) {
    Key k = Key::from_public(pub);
    const std::string id = k.keyid();
    if (std::find(r.keyids.begin(), r.keyids.end(), id) != r.keyids.end()) {
      return fail(Errc::invalid_argument, "root key " + id.substr(0, 16) + "... given twice");
    }
    repo->root.keys.emplace(id, std::move(k));
    r.keyids.push_back(id);
  }
  r.threshold = root_threshold;
  repo->awaiting_holders_.insert("root");
  return repo;
}

Result<void> Repository::add_delegation(const std::string& name,
                                        const std::vector<std::string>& paths,
                                        crypto::PrivateKey key, bool terminating) {
  const auto pub = key.public_key();
  if (auto ok = add_delegation(name, paths, pub, terminating); !ok) return ok;
  awaiting_holders_.erase(name);
  add_signing_key(std::move(key));
  return {};
}

Result<void> Repository::add_delegation(const std::string& name,
                                        const std::vector<std::string>& paths,
                                        const crypto::PublicKey& key, bool terminating) {
  if (auto ok = check_role_name(name); !ok) return ok;
  if (delegated.contains(name)) return fail(Errc::invalid_argument, "role '" + name + "' exists");
  if (paths.empty()) return fail(Errc::invalid_argument, "a delegation needs at least one path");
  if (!targets.delegations) targets.delegations = Delegations{};
  Key pub = Key::from_public(key);
  const std::string id = pub.keyid();
  targets.delegations->keys.emplace(id, pub);
  DelegatedRole r;
  r.name = name;
  r.keyids = {id};
  r.threshold = 1;
  r.terminating = terminating;
  r.paths = paths;
  targets.delegations->roles.push_back(std::move(r));
  delegated.emplace(name, Targets{});
  dirty_roles_.insert("targets");
  dirty_roles_.insert(name);
  awaiting_holders_.insert(name);  // until add_delegation(PrivateKey) adds the key
  return {};
}

Result<void> Repository::rotate(const std::string& role, crypto::PrivateKey new_key) {
  auto it = root.roles.find(role);
  if (it == root.roles.end()) return fail(Errc::not_found, "no top-level role '" + role + "'");
  Key pub = Key::from_public(new_key.public_key());
  const std::string id = pub.keyid();
  // 1. The old root keys sign the new root too (clients check N+1 against N).
  if (role == "root") {
    for (const auto& old : it->second.keyids) previous_root_keyids_.push_back(old);
  }
  // 2. Drop keys no role uses any more, then install the new one.
  const auto old_ids = it->second.keyids;
  it->second.keyids = {id};
  it->second.threshold = 1;
  for (const auto& old : old_ids) {
    bool used = std::any_of(root.roles.begin(), root.roles.end(), [&](const auto& r) {
      return std::find(r.second.keyids.begin(), r.second.keyids.end(), old) !=
             r.second.keyids.end();
    });
    if (!used) root.keys.erase(old);
  }
  root.keys.insert_or_assign(id, pub);
  keys_.insert_or_assign(id, std::move(new_key));
  root_dirty_ = true;
  if (role == "targets") dirty_roles_.insert("targets");
  return {};
}

}  // namespace catalog::tuf
