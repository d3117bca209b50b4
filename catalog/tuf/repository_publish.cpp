// Repository: signing (with keys held apart), staging and publishing.
#include <algorithm>

#include "catalog/atomic_file.hpp"
#include "catalog/canonical_json.hpp"
#include "catalog/crypto/hash.hpp"
#include "catalog/tuf/repository.hpp"
#include "catalog/tuf/repository_layout.hpp"

namespace catalog::tuf {

using layout::metadata_name;
using layout::staged_name;

using nlohmann::json;

namespace {

MetaFile metafile_for(std::uint64_t version, const std::string& bytes, bool pin) {
  MetaFile m;
  m.version = version;
  if (pin) {
    m.length = bytes.size();
    m.hashes["sha256"] = crypto::sha256_hex(bytes);
  }
  return m;
}

// The signatures and canonical `signed` bytes of an envelope sign_json() made.
Result<std::pair<std::string, std::vector<Signature>>> envelope_parts(const std::string& bytes) {
  auto doc = parse_json(bytes);
  if (!doc) return std::unexpected(doc.error());
  auto canon = canonical_json((*doc)["signed"]);
  if (!canon) return std::unexpected(canon.error());
  std::vector<Signature> sigs;
  for (const auto& s : (*doc)["signatures"]) {
    sigs.push_back(Signature{s.value("keyid", ""), s.value("sig", "")});
  }
  return std::pair{*canon, std::move(sigs)};
}

// Refuses to publish metadata that clients would reject for lack of signatures.
Result<void> check_signed(const std::string& role_name, const Role& role, const KeyMap& keys,
                          const std::string& bytes) {
  auto parts = envelope_parts(bytes);
  if (!parts) return std::unexpected(parts.error());
  if (auto ok = verify_threshold(role_name, role, keys, parts->first, parts->second); !ok) {
    return fail(Errc::bad_signature, "cannot sign " + role_name +
                                         ": the signing keys given do not meet its threshold (" +
                                         ok.error().message + ")");
  }
  return {};
}

std::optional<crypto::Scheme> scheme_of(const Key& k) {
  if (k.scheme == "ed25519") return crypto::Scheme::ed25519;
  if (k.scheme == "ecdsa-sha2-nistp256") return crypto::Scheme::ecdsa_sha2_nistp256;
  if (k.scheme == "rsassa-pss-sha256") return crypto::Scheme::rsassa_pss_sha256;
  if (k.scheme == "rsa-pkcs1v15-sha256") return crypto::Scheme::rsa_pkcs1v15_sha256;
  return std::nullopt;
}

}  // namespace

// --- keys ----------------------------------------------------------------------

void Repository::add_signing_key(crypto::PrivateKey key) {
  const std::string id = Key::from_public(key.public_key()).keyid();
  keys_.insert_or_assign(id, std::move(key));
}

const Key* Repository::find_key(const std::string& keyid) const {
  if (auto it = root.keys.find(keyid); it != root.keys.end()) return &it->second;
  if (trusted_root_) {
    if (auto it = trusted_root_->keys.find(keyid); it != trusted_root_->keys.end()) {
      return &it->second;
    }
  }
  if (targets.delegations) {
    if (auto it = targets.delegations->keys.find(keyid); it != targets.delegations->keys.end()) {
      return &it->second;
    }
  }
  return nullptr;
}

const crypto::PrivateKey* Repository::signing_key_for(const std::string& keyid) const {
  if (auto it = keys_.find(keyid); it != keys_.end()) return &it->second;
  // Listed under another key id or scheme (e.g. rsa-pkcs1v15): match the public key.
  const Key* k = find_key(keyid);
  if (k == nullptr) return nullptr;
  auto pub = k->public_key();
  if (!pub) return nullptr;
  for (const auto& [_, priv] : keys_) {
    const auto mine = priv.public_key();
    if (mine.type == pub->type && mine.raw == pub->raw) return &priv;
  }
  return nullptr;
}

bool Repository::can_sign(const std::string& role) const {
  const Role* r = nullptr;
  if (auto it = root.roles.find(role); it != root.roles.end()) r = &it->second;
  if (r == nullptr && targets.delegations) {
    for (const auto& d : targets.delegations->roles) {
      if (d.name == role) r = &d;
    }
  }
  if (r == nullptr) return false;
  std::set<std::string> have;
  for (const auto& id : r->keyids) {
    const Key* k = find_key(id);
    if (k != nullptr && signing_key_for(id) != nullptr) have.insert(k->identity());
  }
  return have.size() >= r->threshold;
}

// --- signing -------------------------------------------------------------------

Result<std::string> Repository::sign_json(const std::string& role, const json& signed_json,
                                          const std::vector<std::string>& keyids,
                                          const std::vector<std::string>& extra_keyids) const {
  auto canon = canonical_json(signed_json);
  if (!canon) return std::unexpected(canon.error());
  json sigs = json::array();
  std::set<std::string> done;
  // 1. Signatures collected earlier for exactly this content (other holders').
  if (auto it = staged_canonical_.find(role);
      it != staged_canonical_.end() && it->second == *canon) {
    for (const auto& s : staged_signatures_.at(role)) {
      const bool listed =
          std::find(keyids.begin(), keyids.end(), s.keyid) != keyids.end() ||
          std::find(extra_keyids.begin(), extra_keyids.end(), s.keyid) != extra_keyids.end();
      if (listed && done.insert(s.keyid).second) {
        sigs.push_back(json{{"keyid", s.keyid}, {"sig", s.sig}});
      }
    }
  }
  // 2. Ours, with the scheme each key is listed with.
  for (const auto* ids : {&keyids, &extra_keyids}) {
    for (const auto& id : *ids) {
      if (done.contains(id)) continue;
      const crypto::PrivateKey* priv = signing_key_for(id);
      const Key* listed = find_key(id);
      if (priv == nullptr || listed == nullptr) continue;
      auto scheme = scheme_of(*listed);
      if (!scheme) continue;
      auto sig = priv->sign(*canon, *scheme);
      if (!sig) return std::unexpected(sig.error());
      done.insert(id);
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
    // The trusted root's keys sign too: clients check root N+1 against N.
    std::vector<std::string> extra = previous_root_keyids_;
    if (trusted_root_) {
      for (const auto& id : trusted_root_->roles.at("root").keyids) extra.push_back(id);
    }
    return sign_json(role, to_json(root), root.roles.at("root").keyids, extra);
  }
  if (role == "timestamp" || role == "snapshot" || role == "targets") {
    const json j = role == "timestamp"  ? to_json(timestamp)
                   : role == "snapshot" ? to_json(snapshot)
                                        : to_json(targets);
    return sign_json(role, j, root.roles.at(role).keyids);
  }
  auto it = delegated.find(role);
  if (it == delegated.end() || !targets.delegations) {
    return fail(Errc::not_found, "no role '" + role + "'");
  }
  for (const auto& d : targets.delegations->roles) {
    if (d.name == role) return sign_json(role, to_json(it->second), d.keyids);
  }
  return fail(Errc::not_found, "role '" + role + "' is not delegated");
}

// --- publishing ----------------------------------------------------------------

Result<bool> Repository::settle_role(const FileWriter& out, const std::string& role, bool stage,
                                     bool online, PublishReport& report) {
  auto bytes = sign_role(role);
  if (!bytes) return std::unexpected(bytes.error());
  auto parts = envelope_parts(*bytes);
  if (!parts) return std::unexpected(parts.error());
  RoleOutcome o;
  o.role = role;
  // 1. The thresholds it must meet: its own; for root also the trusted root's.
  const Role* r = nullptr;
  const KeyMap* keys = &root.keys;
  if (role == "root" || role == "targets") {
    r = &root.roles.at(role);
    o.version = role == "root" ? root.version : targets.version;
  } else {
    for (const auto& d : targets.delegations->roles) {
      if (d.name == role) r = &d;
    }
    keys = &targets.delegations->keys;
    o.version = delegated.at(role).version;
  }
  o.threshold = r->threshold;
  o.signers = count_signers(*r, *keys, parts->first, parts->second);
  bool met = o.signers >= o.threshold;
  if (role == "root" && trusted_root_ && trusted_root_->version < root.version) {
    const Role& old = trusted_root_->roles.at("root");
    o.trusted_threshold = old.threshold;
    o.trusted_signers = count_signers(old, trusted_root_->keys, parts->first, parts->second);
    met = met && o.trusted_signers >= o.trusted_threshold;
  }
  // 2. Published when signed enough (and, when staging, the snapshot can
  //    follow), unless it delegates to a role clients could not load yet.
  std::string unpublished_delegate;
  if (role == "targets" && targets.delegations) {
    for (const auto& d : targets.delegations->roles) {
      if (!published_.contains(d.name)) unpublished_delegate = d.name;
    }
  }
  if (met && (online || !stage) && unpublished_delegate.empty()) {
    if (role == "root") {
      if (auto ok = out(metadata_name("root", root.version, true), *bytes); !ok) {
        return std::unexpected(ok.error());
      }
      if (auto ok = out("metadata/root.json", *bytes); !ok) return std::unexpected(ok.error());
      previous_root_keyids_.clear();
      root_dirty_ = false;
    } else {
      const Targets& t = role == "targets" ? targets : delegated.at(role);
      if (auto ok = out(metadata_name(role, t.version, root.consistent_snapshot), *bytes); !ok) {
        return std::unexpected(ok.error());
      }
      snapshot.meta[role + ".json"] = metafile_for(t.version, *bytes, pin_hashes);
    }
    published_.insert(role);
    restaged_.erase(role);
    o.published = true;
    report.roles.push_back(o);
    return true;
  }
  // A role this run changed but no key given signs is refused, not staged
  // (a forgotten --keys must not leave a silent half-publish), unless it is
  // new and waits for holders elsewhere by design.
  const bool changed = role == "root" ? root_dirty_ : dirty_roles_.contains(role);
  if (!stage || (changed && o.signers == 0 && !awaiting_holders_.contains(role))) {
    return fail(Errc::bad_signature,
                "cannot sign " + role + ": the signing keys given do not meet its threshold (" +
                    std::to_string(o.signers) + " of " + std::to_string(o.threshold) +
                    (o.trusted_threshold ? ", trusted root " + std::to_string(o.trusted_signers) +
                                               " of " + std::to_string(o.trusted_threshold)
                                         : std::string()) +
                    ")");
  }
  // 3. Otherwise staged, with every signature it has so far.
  if (auto ok = out(staged_name(role), *bytes); !ok) return std::unexpected(ok.error());
  restaged_.insert(role);
  if (report.waiting_for.empty()) {
    report.waiting_for = !met ? "more signatures of " + role + " ('sign " + role + " --key K')"
                         : !unpublished_delegate.empty()
                             ? "the delegated role " + unpublished_delegate +
                                   " to be signed ('sign " + unpublished_delegate + " --key K')"
                             : "the snapshot and timestamp keys (run 'timestamp' with them)";
  }
  report.roles.push_back(o);
  return false;
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
  PublishReport report;
  return staged(out, [&](const FileWriter& w) { return publish_unstaged(w, now, false, report); });
}

Result<void> Repository::publish_timestamp(const FileWriter& out, TimePoint now) {
  return staged(out, [&](const FileWriter& w) { return write_snapshot_and_timestamp(w, now); });
}

Result<Repository::PublishReport> Repository::publish_or_stage(const std::filesystem::path& dir,
                                                               TimePoint now) {
  PublishReport report;
  const auto was_staged = restaged_;
  if (auto ok = staged(directory_writer(dir),
                       [&](const FileWriter& w) { return publish_unstaged(w, now, true, report); });
      !ok) {
    return std::unexpected(ok.error());
  }
  // Staged files of what went out are done with; removed only after the
  // published files are in place, so a crash leaves them to sign again.
  for (const auto& role : was_staged) {
    if (restaged_.contains(role)) continue;
    std::error_code ec;
    std::filesystem::remove(dir / staged_name(role), ec);
    if (ec)
      return fail(Errc::io, "remove " + (dir / staged_name(role)).string() + ": " + ec.message());
  }
  return report;
}

Result<Repository::PublishReport> Repository::sign_staged(const std::filesystem::path& dir,
                                                          const std::string& role,
                                                          crypto::PrivateKey key, TimePoint now) {
  if (!restaged_.contains(role)) {
    return fail(Errc::not_found, "nothing of " + role + " is staged (" +
                                     (dir / staged_name(role)).string() + " does not exist)");
  }
  // 1. The key must be one the role's signatures can count.
  std::vector<std::string> ids;
  if (role == "root") {
    ids = root.roles.at("root").keyids;
    if (trusted_root_) {
      for (const auto& id : trusted_root_->roles.at("root").keyids) ids.push_back(id);
    }
  } else if (auto it = root.roles.find(role); it != root.roles.end()) {
    ids = it->second.keyids;
  } else if (targets.delegations) {
    for (const auto& d : targets.delegations->roles) {
      if (d.name == role) ids = d.keyids;
    }
  }
  const auto pub = key.public_key();
  const bool listed = std::any_of(ids.begin(), ids.end(), [&](const std::string& id) {
    const Key* k = find_key(id);
    auto kp = k ? k->public_key() : Result<crypto::PublicKey>(std::unexpected(Error{}));
    return kp && kp->type == pub.type && kp->raw == pub.raw;
  });
  if (!listed) {
    return fail(Errc::invalid_argument, "the key given is not a key of " + role);
  }
  add_signing_key(std::move(key));
  // 2. Sign what is staged (unchanged) and publish whatever is now complete.
  return publish_or_stage(dir, now);
}

Result<void> Repository::publish_unstaged(const FileWriter& out, TimePoint now, bool stage,
                                          PublishReport& report) {
  const bool online = can_sign("snapshot") && can_sign("timestamp");
  // 1. Target files first: metadata must never name a file not yet served.
  for (const auto& [rel, bytes] : pending_files_) {
    if (auto ok = out(rel, bytes); !ok) return ok;
  }
  pending_files_.clear();
  // 2. Root (a new version only when something in it changed; a staged one
  //    already has its new version, and keeps its expiry unless changed).
  if (root_dirty_ || restaged_.contains("root")) {
    if (root_dirty_) {
      if (published_.contains("root") && !restaged_.contains("root")) ++root.version;
      root.expires = now + root_lifetime;
    }
    const auto previous_targets = trusted_root_ ? trusted_root_->roles.at("targets") : Role{};
    auto done = settle_role(out, "root", stage, online, report);
    if (!done) return std::unexpected(done.error());
    // Nothing else goes out before the root it is checked against.
    if (!*done) return {};
    // Targets signed by keys the old root listed must be re-signed.
    const Role& now_targets = root.roles.at("targets");
    if (trusted_root_ && (now_targets.keyids != previous_targets.keyids ||
                          now_targets.threshold != previous_targets.threshold)) {
      dirty_roles_.insert("targets");
    }
    trusted_root_ = root;
  }
  // 3. Changed or staged targets roles, delegated ones first (top-level lists their keys).
  std::set<std::string> roles = dirty_roles_;
  for (const auto& r : restaged_) {
    if (r != "root") roles.insert(r);
  }
  std::vector<std::string> order;
  for (const auto& r : roles) {
    if (r != "targets") order.push_back(r);
  }
  if (roles.contains("targets")) order.push_back("targets");
  for (const auto& role : order) {
    Targets& t = role == "targets" ? targets : delegated.at(role);
    if (dirty_roles_.contains(role)) {
      if (published_.contains(role) && !restaged_.contains(role)) ++t.version;
      t.expires = now + targets_lifetime;
    }
    if (auto done = settle_role(out, role, stage, online, report); !done) {
      return std::unexpected(done.error());
    }
  }
  dirty_roles_.clear();
  // 4. Snapshot, then timestamp, with the keys that sign them.
  if (stage && !online) {
    if (report.waiting_for.empty()) report.waiting_for = "the snapshot and timestamp keys";
    return {};
  }
  if (auto ok = write_snapshot_and_timestamp(out, now); !ok) return ok;
  report.snapshot_published = true;
  return {};
}

}  // namespace catalog::tuf
