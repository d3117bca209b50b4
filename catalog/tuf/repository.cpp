#include "catalog/tuf/repository.hpp"

#include <algorithm>
#include <charconv>

#include "catalog/atomic_file.hpp"
#include "catalog/canonical_json.hpp"
#include "catalog/crypto/hash.hpp"

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

namespace {

constexpr const char* kTopRoles[] = {"root", "timestamp", "snapshot", "targets"};

MetaFile metafile_for(std::uint64_t version, const std::string& bytes, bool pin) {
  MetaFile m;
  m.version = version;
  if (pin) {
    m.length = bytes.size();
    m.hashes["sha256"] = crypto::sha256_hex(bytes);
  }
  return m;
}

std::string metadata_name(const std::string& role, std::uint64_t version, bool consistent) {
  return "metadata/" + (consistent ? std::to_string(version) + "." : std::string()) + role +
         ".json";
}

}  // namespace

Result<Repository> Repository::create(TimePoint now, std::size_t root_keys,
                                      std::uint64_t root_threshold, bool consistent_snapshot) {
  if (root_keys == 0 || root_threshold == 0 || root_threshold > root_keys) {
    return fail(Errc::invalid_argument, "root threshold must be between 1 and the number of keys");
  }
  Repository repo;
  repo.root.consistent_snapshot = consistent_snapshot;
  for (const char* role : kTopRoles) {
    const std::size_t n = std::string_view(role) == "root" ? root_keys : 1;
    Role r;
    r.threshold = std::string_view(role) == "root" ? root_threshold : 1;
    for (std::size_t i = 0; i < n; ++i) {
      auto key = crypto::PrivateKey::generate();
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
  if (ec) return fail(Errc::io, "read " + meta.string() + ": " + ec.message());
  if (best == 0) return fail(Errc::not_found, meta.string() + ": no N.root.json");
  auto read_role = [&](const std::string& file) { return read_file(meta / file, 50'000'000); };
  auto root_bytes = read_role(std::to_string(best) + ".root.json");
  if (!root_bytes) return std::unexpected(root_bytes.error());
  auto root_md = parse_metadata<Root>(*root_bytes);
  if (!root_md) return std::unexpected(root_md.error());
  repo.root = std::move(root_md->signed_);
  const bool consistent = repo.root.consistent_snapshot;
  // 2. timestamp -> snapshot -> targets -> delegated, each as the previous names it.
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
    auto bytes = read_role(metadata_name(role, mf.version, consistent).substr(9));
    if (!bytes) return std::unexpected(bytes.error());
    auto md = parse_metadata<Targets>(*bytes);
    if (!md) return std::unexpected(md.error());
    if (role == "targets") {
      repo.targets = std::move(md->signed_);
    } else {
      repo.delegated.emplace(role, std::move(md->signed_));
    }
    repo.published_.insert(role);
  }
  for (const char* role : kTopRoles) repo.published_.insert(role);
  return repo;
}

void Repository::add_signing_key(crypto::PrivateKey key) {
  const std::string id = Key::from_public(key.public_key()).keyid();
  keys_.insert_or_assign(id, std::move(key));
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

Result<void> Repository::add_delegation(const std::string& name,
                                        const std::vector<std::string>& paths,
                                        crypto::PrivateKey key, bool terminating) {
  if (delegated.contains(name) || name == "targets" || name.empty()) {
    return fail(Errc::invalid_argument, "role '" + name + "' exists or is reserved");
  }
  if (!targets.delegations) targets.delegations = Delegations{};
  Key pub = Key::from_public(key.public_key());
  const std::string id = pub.keyid();
  targets.delegations->keys.emplace(id, pub);
  DelegatedRole r;
  r.name = name;
  r.keyids = {id};
  r.threshold = 1;
  r.terminating = terminating;
  r.paths = paths;
  targets.delegations->roles.push_back(std::move(r));
  keys_.insert_or_assign(id, std::move(key));
  delegated.emplace(name, Targets{});
  dirty_roles_.insert("targets");
  dirty_roles_.insert(name);
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

Result<std::string> Repository::sign_json(const json& signed_json,
                                          const std::vector<std::string>& keyids,
                                          const std::vector<std::string>& extra_keyids) const {
  auto canon = canonical_json(signed_json);
  if (!canon) return std::unexpected(canon.error());
  json sigs = json::array();
  std::set<std::string> done;
  for (const auto* ids : {&keyids, &extra_keyids}) {
    for (const auto& id : *ids) {
      auto k = keys_.find(id);
      if (k == keys_.end() || !done.insert(id).second) continue;
      auto sig = k->second.sign(*canon);
      if (!sig) return std::unexpected(sig.error());
      const std::string hex = crypto::to_hex(std::span<const unsigned char>(
          reinterpret_cast<const unsigned char*>(sig->data()), sig->size()));
      sigs.push_back(json{{"keyid", id}, {"sig", hex}});
    }
  }
  json envelope = {{"signatures", sigs}, {"signed", signed_json}};
  return envelope.dump(1) + "\n";
}

Result<std::string> Repository::sign_role(const std::string& role) const {
  if (role == "root") {
    return sign_json(to_json(root), root.roles.at("root").keyids, previous_root_keyids_);
  }
  if (role == "timestamp") return sign_json(to_json(timestamp), root.roles.at("timestamp").keyids);
  if (role == "snapshot") return sign_json(to_json(snapshot), root.roles.at("snapshot").keyids);
  if (role == "targets") return sign_json(to_json(targets), root.roles.at("targets").keyids);
  auto it = delegated.find(role);
  if (it == delegated.end() || !targets.delegations) {
    return fail(Errc::not_found, "no role '" + role + "'");
  }
  for (const auto& d : targets.delegations->roles) {
    if (d.name == role) return sign_json(to_json(it->second), d.keyids);
  }
  return fail(Errc::not_found, "role '" + role + "' is not delegated");
}

namespace {

// Refuses to publish metadata that clients would reject for lack of signatures.
Result<void> check_signed(const std::string& role_name, const Role& role, const KeyMap& keys,
                          const std::string& bytes) {
  auto doc = parse_json(bytes);
  if (!doc) return std::unexpected(doc.error());
  auto canon = canonical_json((*doc)["signed"]);
  if (!canon) return std::unexpected(canon.error());
  std::vector<Signature> sigs;
  for (const auto& s : (*doc)["signatures"]) {
    sigs.push_back(Signature{s.value("keyid", ""), s.value("sig", "")});
  }
  if (auto ok = verify_threshold(role_name, role, keys, *canon, sigs); !ok) {
    return fail(Errc::bad_signature, "cannot sign " + role_name +
                                         ": the signing keys given do not meet its threshold (" +
                                         ok.error().message + ")");
  }
  return {};
}

}  // namespace

Result<void> Repository::write_root(const FileWriter& out) {
  auto bytes = sign_role("root");
  if (!bytes) return std::unexpected(bytes.error());
  if (auto ok = check_signed("root", root.roles.at("root"), root.keys, *bytes); !ok) return ok;
  if (auto ok = out(metadata_name("root", root.version, true), *bytes); !ok) return ok;
  if (auto ok = out("metadata/root.json", *bytes); !ok) return ok;
  previous_root_keyids_.clear();
  root_dirty_ = false;
  published_.insert("root");
  return {};
}

Result<void> Repository::write_targets_role(const FileWriter& out, const std::string& role,
                                            TimePoint now) {
  Targets& t = role == "targets" ? targets : delegated.at(role);
  if (published_.contains(role)) ++t.version;
  t.expires = now + targets_lifetime;
  auto bytes = sign_role(role);
  if (!bytes) return std::unexpected(bytes.error());
  if (role == "targets") {
    if (auto ok = check_signed(role, root.roles.at("targets"), root.keys, *bytes); !ok) return ok;
  } else {
    for (const auto& d : targets.delegations->roles) {
      if (d.name != role) continue;
      if (auto ok = check_signed(role, d, targets.delegations->keys, *bytes); !ok) return ok;
    }
  }
  if (auto ok = out(metadata_name(role, t.version, root.consistent_snapshot), *bytes); !ok) {
    return ok;
  }
  snapshot.meta[role + ".json"] = metafile_for(t.version, *bytes, pin_hashes);
  published_.insert(role);
  return {};
}

Result<void> Repository::write_snapshot_and_timestamp(const FileWriter& out, TimePoint now) {
  if (published_.contains("snapshot")) ++snapshot.version;
  snapshot.expires = now + snapshot_lifetime;
  auto sn = sign_role("snapshot");
  if (!sn) return std::unexpected(sn.error());
  if (auto ok = check_signed("snapshot", root.roles.at("snapshot"), root.keys, *sn); !ok) return ok;
  if (auto ok = out(metadata_name("snapshot", snapshot.version, root.consistent_snapshot), *sn);
      !ok) {
    return ok;
  }
  if (published_.contains("timestamp")) ++timestamp.version;
  timestamp.expires = now + timestamp_lifetime;
  timestamp.snapshot_meta = metafile_for(snapshot.version, *sn, pin_hashes);
  auto ts = sign_role("timestamp");
  if (!ts) return std::unexpected(ts.error());
  if (auto ok = check_signed("timestamp", root.roles.at("timestamp"), root.keys, *ts); !ok) {
    return ok;
  }
  // The timestamp goes last: it is what makes the new state visible to clients.
  if (auto ok = out("metadata/timestamp.json", *ts); !ok) return ok;
  published_.insert("snapshot");
  published_.insert("timestamp");
  return {};
}

namespace {

// Runs `build` against a writer that only collects files, then writes them in
// order: a publish that fails half-way (e.g. a missing key) writes nothing.
Result<void> staged(const FileWriter& out,
                    const std::function<Result<void>(const FileWriter&)>& build) {
  std::vector<std::pair<std::string, std::string>> files;
  FileWriter collect = [&](const std::string& rel, const std::string& bytes) -> Result<void> {
    files.emplace_back(rel, bytes);
    return {};
  };
  if (auto ok = build(collect); !ok) return ok;
  for (const auto& [rel, bytes] : files) {
    if (auto ok = out(rel, bytes); !ok) return ok;
  }
  return {};
}

}  // namespace

Result<void> Repository::publish(const FileWriter& out, TimePoint now) {
  return staged(out, [&](const FileWriter& w) { return publish_unstaged(w, now); });
}

Result<void> Repository::publish_timestamp(const FileWriter& out, TimePoint now) {
  return staged(out, [&](const FileWriter& w) { return write_snapshot_and_timestamp(w, now); });
}

Result<void> Repository::publish_unstaged(const FileWriter& out, TimePoint now) {
  // 1. Target files first: metadata must never name a file not yet served.
  for (const auto& [rel, bytes] : pending_files_) {
    if (auto ok = out(rel, bytes); !ok) return ok;
  }
  pending_files_.clear();
  // 2. Root (a new version only when something in it changed).
  if (root_dirty_) {
    if (published_.contains("root")) ++root.version;
    root.expires = now + root_lifetime;
    if (auto ok = write_root(out); !ok) return ok;
  }
  // 3. Changed targets roles, delegated ones first (top-level lists their keys).
  for (const auto& role : std::set<std::string>(dirty_roles_)) {
    if (role == "targets") continue;
    if (auto ok = write_targets_role(out, role, now); !ok) return ok;
  }
  if (dirty_roles_.contains("targets")) {
    if (auto ok = write_targets_role(out, "targets", now); !ok) return ok;
  }
  dirty_roles_.clear();
  // 4. Snapshot, then timestamp.
  return write_snapshot_and_timestamp(out, now);
}

}  // namespace catalog::tuf
