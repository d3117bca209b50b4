#include "catalog/tuf/trusted_set.hpp"

namespace catalog::tuf {
namespace {

std::string v(std::uint64_t n) { return std::to_string(n); }

}  // namespace

Result<TrustedSet> TrustedSet::create(std::string_view root_bytes, TimePoint now) {
  auto md = parse_metadata<Root>(root_bytes);
  if (!md) return std::unexpected(md.error());
  const Root& r = md->signed_;
  if (auto ok = verify_threshold("root", r.roles.at("root"), r.keys, md->canonical_signed,
                                 md->signatures);
      !ok) {
    return std::unexpected(ok.error());
  }
  return TrustedSet(std::move(*md), now);
}

Result<void> TrustedSet::update_root(std::string_view bytes) {
  if (timestamp_) return fail(Errc::invalid_argument, "root update after timestamp");
  auto md = parse_metadata<Root>(bytes);
  if (!md) return std::unexpected(md.error());
  // 1. Signed by the threshold of the root we trust now ...
  const Root& old = root_.signed_;
  if (auto ok = verify_threshold("root (by trusted root)", old.roles.at("root"), old.keys,
                                 md->canonical_signed, md->signatures);
      !ok) {
    return std::unexpected(ok.error());
  }
  // 2. ... and by its own, so a new key set must prove it holds its keys.
  const Root& nr = md->signed_;
  if (auto ok = verify_threshold("root (by new root)", nr.roles.at("root"), nr.keys,
                                 md->canonical_signed, md->signatures);
      !ok) {
    return std::unexpected(ok.error());
  }
  // 3. Exactly the next version: no skipping, no rollback.
  if (nr.version != old.version + 1) {
    return fail(nr.version <= old.version ? Errc::rollback : Errc::version_mismatch,
                "root: expected version " + v(old.version + 1) + ", got " + v(nr.version));
  }
  root_ = std::move(*md);
  return {};
}

Result<void> TrustedSet::check_final_root() const {
  if (root_.signed_.is_expired(now_)) {
    return fail(Errc::expired, "root: version " + v(root_.signed_.version) + " expired at " +
                                   format_expires(root_.signed_.expires));
  }
  return {};
}

Result<void> TrustedSet::update_timestamp(std::string_view bytes, bool* unchanged) {
  if (unchanged) *unchanged = false;
  if (snapshot_) return fail(Errc::invalid_argument, "timestamp update after snapshot");
  if (auto ok = check_final_root(); !ok) return ok;
  auto md = parse_metadata<Timestamp>(bytes);
  if (!md) return std::unexpected(md.error());
  const Root& r = root_.signed_;
  if (auto ok = verify_threshold("timestamp", r.roles.at("timestamp"), r.keys, md->canonical_signed,
                                 md->signatures);
      !ok) {
    return ok;
  }
  const Timestamp& nt = md->signed_;
  if (timestamp_) {
    const Timestamp& ot = timestamp_->signed_;
    if (nt.version < ot.version) {
      return fail(Errc::rollback,
                  "timestamp: version " + v(nt.version) + " < trusted " + v(ot.version));
    }
    if (nt.version == ot.version) {
      // Nothing new: keep the trusted copy (its bytes are what we persisted).
      if (unchanged) *unchanged = true;
      return check_final_timestamp();
    }
    if (nt.snapshot_meta.version < ot.snapshot_meta.version) {
      return fail(Errc::rollback, "timestamp: snapshot version " + v(nt.snapshot_meta.version) +
                                      " < trusted " + v(ot.snapshot_meta.version));
    }
  }
  timestamp_ = std::move(*md);
  return check_final_timestamp();
}

Result<void> TrustedSet::check_final_timestamp() const {
  if (!timestamp_) return fail(Errc::invalid_argument, "no trusted timestamp");
  if (timestamp_->signed_.is_expired(now_)) {
    return fail(Errc::expired, "timestamp: version " + v(timestamp_->signed_.version) +
                                   " expired at " + format_expires(timestamp_->signed_.expires));
  }
  return {};
}

Result<void> TrustedSet::update_snapshot(std::string_view bytes, bool trusted_local) {
  if (!timestamp_) return fail(Errc::invalid_argument, "snapshot update before timestamp");
  if (!targets_.empty()) return fail(Errc::invalid_argument, "snapshot update after targets");
  if (auto ok = check_final_timestamp(); !ok) return ok;
  const MetaFile& pinned = timestamp_->signed_.snapshot_meta;
  // 1. Bytes pinned by the timestamp (our own persisted copy was checked when
  //    it was first accepted and may legitimately predate this timestamp).
  if (!trusted_local) {
    if (auto ok = verify_length_and_hashes("snapshot", bytes, pinned.length, pinned.hashes); !ok) {
      return ok;
    }
  }
  // 2. Signed by the snapshot role.
  auto md = parse_metadata<Snapshot>(bytes);
  if (!md) return std::unexpected(md.error());
  const Root& r = root_.signed_;
  if (auto ok = verify_threshold("snapshot", r.roles.at("snapshot"), r.keys, md->canonical_signed,
                                 md->signatures);
      !ok) {
    return ok;
  }
  // 3. No role may vanish or go back in version (rollback of targets).
  if (snapshot_) {
    for (const auto& [name, old_meta] : snapshot_->signed_.meta) {
      auto it = md->signed_.meta.find(name);
      if (it == md->signed_.meta.end()) {
        return fail(Errc::rollback, "snapshot: " + name + " removed");
      }
      if (it->second.version < old_meta.version) {
        return fail(Errc::rollback, "snapshot: " + name + " version " + v(it->second.version) +
                                        " < trusted " + v(old_meta.version));
      }
    }
  }
  snapshot_ = std::move(*md);
  return check_final_snapshot();
}

Result<void> TrustedSet::check_final_snapshot() const {
  if (!snapshot_) return fail(Errc::invalid_argument, "no trusted snapshot");
  const Snapshot& s = snapshot_->signed_;
  if (s.is_expired(now_)) {
    return fail(Errc::expired,
                "snapshot: version " + v(s.version) + " expired at " + format_expires(s.expires));
  }
  const std::uint64_t want = timestamp_->signed_.snapshot_meta.version;
  if (s.version != want) {
    return fail(Errc::version_mismatch,
                "snapshot: version " + v(s.version) + " but timestamp names " + v(want));
  }
  return {};
}

Result<void> TrustedSet::update_delegated_targets(std::string_view bytes,
                                                  const std::string& role_name,
                                                  const std::string& delegator) {
  if (!snapshot_) return fail(Errc::invalid_argument, "targets update before snapshot");
  if (auto ok = check_final_snapshot(); !ok) return ok;
  // 1. Who may sign this role: root for "targets", the delegator otherwise.
  const KeyMap* keys = nullptr;
  Role role;
  if (role_name == "targets") {
    keys = &root_.signed_.keys;
    role = root_.signed_.roles.at("targets");
  } else {
    const Metadata<Targets>* parent = targets(delegator);
    if (parent == nullptr || !parent->signed_.delegations) {
      return fail(Errc::not_found, role_name + ": delegator " + delegator + " not loaded");
    }
    // A listed role, or the bin of a succinct_roles delegation it names
    // (found by its name alone: 2^bit_length bins are never enumerated).
    auto delegation = parent->signed_.delegations->find(role_name);
    if (!delegation) {
      return fail(Errc::not_found, role_name + ": not delegated by " + delegator);
    }
    keys = &parent->signed_.delegations->keys;
    role = std::move(*delegation);
  }
  // 2. Bytes pinned by snapshot.
  auto pinned = snapshot_->signed_.meta.find(role_name + ".json");
  if (pinned == snapshot_->signed_.meta.end()) {
    return fail(Errc::not_found, "snapshot has no entry for " + role_name + ".json");
  }
  if (auto ok =
          verify_length_and_hashes(role_name, bytes, pinned->second.length, pinned->second.hashes);
      !ok) {
    return ok;
  }
  // 3. Signatures, version as snapshot says (mix-and-match), expiry.
  auto md = parse_metadata<Targets>(bytes);
  if (!md) return std::unexpected(md.error());
  if (auto ok = verify_threshold(role_name, role, *keys, md->canonical_signed, md->signatures);
      !ok) {
    return ok;
  }
  const Targets& t = md->signed_;
  if (t.version != pinned->second.version) {
    return fail(Errc::version_mismatch, role_name + ": version " + v(t.version) +
                                            " but snapshot names " + v(pinned->second.version));
  }
  if (t.is_expired(now_)) {
    return fail(Errc::expired, role_name + ": version " + v(t.version) + " expired at " +
                                   format_expires(t.expires));
  }
  targets_.insert_or_assign(role_name, std::move(*md));
  return {};
}

const Metadata<Targets>* TrustedSet::targets(const std::string& role) const {
  auto it = targets_.find(role);
  return it == targets_.end() ? nullptr : &it->second;
}

}  // namespace catalog::tuf
