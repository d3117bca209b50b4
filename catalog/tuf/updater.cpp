#include "catalog/tuf/updater.hpp"

#include <algorithm>
#include <set>

#include "catalog/atomic_file.hpp"

namespace catalog::tuf {

std::string url_quote(std::string_view s, bool keep_slash) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '.' || c == '_' || c == '~' || (keep_slash && c == '/');
    if (unreserved) {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 0xF]);
    }
  }
  return out;
}

namespace {

std::string with_slash(std::string s) {
  if (s.empty() || s.back() != '/') s.push_back('/');
  return s;
}

// "<digits>.root": the stem of a root chain file Updater persists.
bool is_root_chain_file(std::string_view stem) {
  constexpr std::string_view suffix = ".root";
  if (!stem.ends_with(suffix) || stem.size() == suffix.size()) return false;
  stem.remove_suffix(suffix.size());
  return std::all_of(stem.begin(), stem.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

std::vector<std::string> delegation_paths(const DelegatedRole& d) {
  if (d.paths) return *d.paths;
  std::vector<std::string> out;
  if (d.path_hash_prefixes) {
    for (const auto& p : *d.path_hash_prefixes) out.push_back("hash:" + p);
  }
  if (d.bin && d.bin->bit_length >= 1 && d.bin->bit_length <= 32) {
    const std::uint32_t bits = d.bin->bit_length;
    std::string text;
    if (bits % 4 == 0) {
      static constexpr char hex[] = "0123456789abcdef";
      for (std::uint32_t i = bits / 4; i-- > 0;)
        text.push_back(hex[(d.bin->index >> (4 * i)) & 0xF]);
      out.push_back("hash:" + text);
    } else {
      for (std::uint32_t i = bits; i-- > 0;) text.push_back((d.bin->index >> i) & 1 ? '1' : '0');
      out.push_back("hash-bits:" + text);
    }
  }
  return out;
}

Updater::Updater(UpdaterConfig config, Fetcher& fetcher)
    : config_(std::move(config)),
      fetcher_(fetcher),
      now_(config_.now
               ? *config_.now
               : std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now())) {
  mirrors_.push_back({config_.metadata_base_url, config_.target_base_url});
  mirrors_.insert(mirrors_.end(), config_.mirrors.begin(), config_.mirrors.end());
  for (auto& m : mirrors_) {
    m.metadata_base_url = with_slash(m.metadata_base_url);
    m.target_base_url = with_slash(m.target_base_url);
  }
}

std::string Updater::metadata_url(std::size_t mirror, const std::string& role,
                                  std::optional<std::uint64_t> version) const {
  std::string name = version ? std::to_string(*version) + "." + role : role;
  return mirrors_[mirror].metadata_base_url + url_quote(name, false) + ".json";
}

Result<std::string> Updater::fetch_metadata(
    const std::string& role, std::optional<std::uint64_t> version, std::uint64_t cap,
    const std::function<Result<void>(const std::string&)>& accept) {
  std::string accepted;
  auto ok = try_mirrors(mirrors_.size(), config_.retry, config_.cancel, [&](std::size_t i) {
    auto bytes = fetcher_.fetch_bytes(metadata_url(i, role, version), cap);
    if (!bytes) return Result<void>(std::unexpected(bytes.error()));
    if (auto verified = accept(*bytes); !verified) return verified;
    accepted = std::move(*bytes);
    return Result<void>();
  });
  if (!ok) return std::unexpected(ok.error());
  return accepted;
}

std::optional<std::string> Updater::read_local(const std::string& role) const {
  auto bytes = read_file(config_.metadata_dir / (url_quote(role, false) + ".json"),
                         config_.max_targets_length);
  if (!bytes) return std::nullopt;
  return std::move(*bytes);
}

Result<void> Updater::persist(const std::string& role, const std::string& bytes) const {
  return atomic_write_file(config_.metadata_dir / (url_quote(role, false) + ".json"), bytes);
}

Result<void> Updater::load_root() {
  auto bytes = read_file(config_.metadata_dir / "root.json", config_.max_root_length);
  if (!bytes) {
    return fail(bytes.error().code == Errc::not_found ? Errc::not_found : bytes.error().code,
                "no trusted root: " + bytes.error().message);
  }
  auto set = TrustedSet::create(*bytes, now_);
  if (!set) return std::unexpected(set.error());
  trusted_.emplace(std::move(*set));
  return {};
}

Result<void> Updater::update_root_chain() {
  // Keys of the roles whose rotation invalidates our local timestamp/snapshot.
  const Root& initial = trusted_->root().signed_;
  auto role_keys = [](const Root& r, const char* name) {
    const Role& role = r.roles.at(name);
    std::set<std::string> pubs;
    for (const auto& id : role.keyids) {
      if (auto k = r.keys.find(id); k != r.keys.end()) pubs.insert(k->second.identity());
    }
    return std::make_pair(pubs, role.threshold);
  };
  const auto ts_before = role_keys(initial, "timestamp");
  const auto sn_before = role_keys(initial, "snapshot");

  const std::uint64_t lower = initial.version + 1;
  const std::uint64_t upper = lower + config_.max_root_rotations;
  for (std::uint64_t next = lower; next < upper; ++next) {
    auto bytes = fetch_metadata("root", next, config_.max_root_length,
                                [&](const std::string& b) { return trusted_->update_root(b); });
    if (!bytes) {
      // No next version published (on any mirror): the chain ends here.
      if (bytes.error().code == Errc::not_found) break;
      return std::unexpected(bytes.error());
    }
    if (auto ok = persist("root", *bytes); !ok) return ok;
    // The chain stays on disk too ("<N>.root.json"): another verifier starting
    // from an older trusted root (the commit helper) walks it from here.
    if (auto ok = persist(std::to_string(next) + ".root", *bytes); !ok) return ok;
  }
  // Fast-forward recovery (spec 5.3.11): after a rotation of timestamp or
  // snapshot keys, our persisted copies may carry versions an attacker pushed
  // high with the old keys; forget them so the new keys can start over. Done
  // before the freeze check: the rotated roots are persisted already, so a
  // later update starts from them and would no longer see the rotation.
  const Root& final_root = trusted_->root().signed_;
  if (role_keys(final_root, "timestamp") != ts_before ||
      role_keys(final_root, "snapshot") != sn_before) {
    std::error_code ec;
    std::filesystem::remove(config_.metadata_dir / "timestamp.json", ec);
    std::filesystem::remove(config_.metadata_dir / "snapshot.json", ec);
  }
  return trusted_->check_final_root();
}

Result<void> Updater::update_timestamp() {
  // 1. Our last trusted copy, if still valid, is the rollback reference.
  if (auto local = read_local("timestamp")) {
    (void)trusted_->update_timestamp(*local);  // an invalid local copy is just ignored
  }
  // 2. The new one (never versioned in the URL).
  bool unchanged = false;
  auto bytes = fetch_metadata(
      "timestamp", std::nullopt, config_.max_timestamp_length,
      [&](const std::string& b) { return trusted_->update_timestamp(b, &unchanged); });
  if (!bytes) return std::unexpected(bytes.error());
  if (!unchanged) return persist("timestamp", *bytes);
  return {};
}

Result<void> Updater::update_snapshot() {
  // 1. A persisted snapshot still valid for this timestamp saves a download.
  if (auto local = read_local("snapshot")) {
    if (trusted_->update_snapshot(*local, /*trusted_local=*/true)) return {};
  }
  // 2. Fetch the version the timestamp names, capped at its signed length.
  const MetaFile& pinned = trusted_->timestamp()->signed_.snapshot_meta;
  const std::uint64_t cap = pinned.length.value_or(config_.max_snapshot_length);
  const bool consistent = trusted_->root().signed_.consistent_snapshot;
  auto bytes =
      fetch_metadata("snapshot", consistent ? std::optional(pinned.version) : std::nullopt, cap,
                     [&](const std::string& b) { return trusted_->update_snapshot(b); });
  if (!bytes) return std::unexpected(bytes.error());
  return persist("snapshot", *bytes);
}

Result<const Metadata<Targets>*> Updater::load_targets(const std::string& role,
                                                       const std::string& delegator) {
  if (const auto* loaded = trusted_->targets(role)) return loaded;
  if (auto failed = failed_roles_.find(role); failed != failed_roles_.end()) {
    return std::unexpected(failed->second);
  }
  if (auto unlisted = unlisted_bins_.find(delegator); unlisted != unlisted_bins_.end()) {
    return std::unexpected(unlisted->second);  // only bins are delegated by it
  }
  auto loaded = load_targets_once(role, delegator);
  if (!loaded && loaded.error().code != Errc::cancelled)
    failed_roles_.emplace(role, loaded.error());
  return loaded;
}

Result<const Metadata<Targets>*> Updater::load_targets_once(const std::string& role,
                                                            const std::string& delegator) {
  // 0. Its local file must be its own: "<N>.root.json" holds the root chain.
  if (role != "targets" && is_root_chain_file(url_quote(role, false))) {
    return fail(Errc::unsupported,
                "delegated role '" + role + "': its metadata file name is the root chain's");
  }
  // 1. A persisted copy that still matches what snapshot pins.
  if (auto local = read_local(role)) {
    if (trusted_->update_delegated_targets(*local, role, delegator)) {
      return trusted_->targets(role);
    }
  }
  // 2. Fetch the pinned version, capped at its signed length.
  const auto& meta = trusted_->snapshot()->signed_.meta;
  auto pinned = meta.find(role + ".json");
  if (pinned == meta.end()) {
    return fail(Errc::not_found, "snapshot has no entry for " + role + ".json");
  }
  const std::uint64_t cap = pinned->second.length.value_or(config_.max_targets_length);
  const bool consistent = trusted_->root().signed_.consistent_snapshot;
  auto bytes = fetch_metadata(
      role, consistent ? std::optional(pinned->second.version) : std::nullopt, cap,
      [&](const std::string& b) { return trusted_->update_delegated_targets(b, role, delegator); });
  if (!bytes) return std::unexpected(bytes.error());
  if (auto ok = persist(role, *bytes); !ok) return std::unexpected(ok.error());
  return trusted_->targets(role);
}

Result<void> Updater::refresh() {
  if (refreshed_) return fail(Errc::invalid_argument, "refresh() already ran on this Updater");
  refreshed_ = true;
  // 1. root chain → 2. timestamp → 3. snapshot → 4. top-level targets.
  if (auto ok = load_root(); !ok) return ok;
  if (auto ok = update_root_chain(); !ok) return ok;
  if (auto ok = update_timestamp(); !ok) return ok;
  if (auto ok = update_snapshot(); !ok) return ok;
  if (auto t = load_targets("targets", "root"); !t) return std::unexpected(t.error());
  return {};
}

Result<TargetFile> Updater::get_targetinfo(const std::string& target_path) {
  auto found = search(target_path, /*tolerate=*/false, nullptr);
  if (!found) return std::unexpected(found.error());
  if (!*found)
    return fail(Errc::not_found, "target '" + target_path + "' is not in trusted metadata");
  return std::move(**found);
}

Result<std::optional<TargetFile>> Updater::search(const std::string& target_path, bool tolerate,
                                                  std::string* withheld_by) {
  if (!refreshed_) {
    if (auto ok = refresh(); !ok) return std::unexpected(ok.error());
  }
  if (!trusted_ || !trusted_->targets("targets")) {
    return fail(Errc::invalid_argument, "refresh did not complete");
  }
  // Pre-order depth-first walk of the delegation graph, as spec 5.6.7 asks.
  std::vector<std::pair<std::string, std::string>> to_visit{{"targets", "root"}};
  std::set<std::pair<std::string, std::string>> visited;
  std::uint32_t budget = config_.max_delegations + 1;  // +1: top-level targets itself
  while (budget > 0 && !to_visit.empty()) {
    auto [role, parent] = to_visit.back();
    to_visit.pop_back();
    if (!visited.insert({role, parent}).second) continue;
    auto md = load_targets(role, parent);
    if (!md) {
      // The failed role comes first in the search for this path: what it (or a
      // role under it) would say is unknown, and the roles after it must not
      // answer in its place. The search ends here either way.
      if (!tolerate || md.error().code == Errc::cancelled) return std::unexpected(md.error());
      if (withheld_by) *withheld_by = role;
      return std::nullopt;
    }
    const Targets& t = (*md)->signed_;
    if (auto it = t.targets.find(target_path); it != t.targets.end()) return it->second;
    if (t.delegations) {
      // The listed roles covering the path, or its one hash bin (never all bins).
      std::vector<std::pair<std::string, std::string>> children;
      for (const auto& d : t.delegations->roles_for_target(target_path)) {
        children.emplace_back(d.name, role);
        if (d.terminating) {
          to_visit.clear();
          break;
        }
      }
      to_visit.insert(to_visit.end(), children.rbegin(), children.rend());
    }
    --budget;
  }
  return std::nullopt;
}

Result<std::optional<std::string>> Updater::withheld_by(const std::string& target_path) {
  std::string role;
  auto found = search(target_path, /*tolerate=*/true, &role);
  if (!found) return std::unexpected(found.error());
  if (*found || role.empty()) return std::nullopt;
  return role;
}

Result<std::vector<TargetFile>> Updater::all_targets() {
  auto listing = list_targets();
  if (!listing) return std::unexpected(listing.error());
  if (!listing->failed.empty()) return std::unexpected(listing->failed.front().error);
  return std::move(listing->targets);
}

Result<TargetListing> Updater::list_targets() {
  if (!refreshed_) {
    if (auto ok = refresh(); !ok) return std::unexpected(ok.error());
  }
  if (!trusted_ || !trusted_->targets("targets")) {
    return fail(Errc::invalid_argument, "refresh did not complete");
  }
  TargetListing out;
  // 1. Candidates: every path some reachable role that loads lists. A role
  //    that fails is recorded with the delegation that names it; what it
  //    delegates further cannot be seen. At most max_listed_roles roles load:
  //    the ones past it fail with Errc::too_many (remembered, so a search for
  //    their paths meets the same failure and withholds them).
  std::set<std::string> candidates;
  struct Visit {
    std::string role;
    std::string parent;
    std::optional<DelegatedRole> delegation;  // nullopt for "targets"
  };
  auto record = [&](const Visit& v, const Error& e) {
    out.failed.push_back(
        {v.role, v.parent,
         v.delegation ? delegation_paths(*v.delegation) : std::vector<std::string>{}, e});
  };
  std::vector<Visit> to_visit;
  to_visit.push_back({"targets", "root", std::nullopt});
  std::set<std::string> visited;
  std::uint32_t budget = config_.max_listed_roles;
  const std::string cap_reached =
      "not loaded: a listing loads at most " + std::to_string(config_.max_listed_roles) + " roles";
  while (!to_visit.empty()) {
    Visit v = std::move(to_visit.back());
    to_visit.pop_back();
    if (!visited.insert(v.role).second) continue;
    if (budget == 0 && !trusted_->targets(v.role)) {
      const Error e{Errc::too_many, v.role + ": " + cap_reached};
      failed_roles_.emplace(v.role, e);
      record(v, e);
      continue;
    }
    if (budget > 0) --budget;
    auto md = load_targets(v.role, v.parent);
    if (!md) {
      if (md.error().code == Errc::cancelled) return std::unexpected(md.error());
      record(v, md.error());
      continue;
    }
    const Targets& t = (*md)->signed_;
    for (const auto& [path, _] : t.targets) candidates.insert(path);
    if (!t.delegations) continue;
    if (const auto& s = t.delegations->succinct_roles) {
      // Every bin, lowest first, or none: a delegation of more bins than the
      // listing may still load fails as a whole (its bins' paths withheld)
      // rather than listing an arbitrary part of it.
      if (s->bin_count() > budget) {
        const Error e{Errc::too_many,
                      v.role + ": " + std::to_string(s->bin_count()) + " hash bins " + cap_reached};
        unlisted_bins_.insert_or_assign(v.role, e);
        const auto last = static_cast<std::uint32_t>(s->bin_count() - 1);
        out.failed.push_back({s->bin_name(0) + ".." + s->bin_name(last), v.role, {"hash:*"}, e});
        continue;
      }
      for (std::uint64_t i = s->bin_count(); i-- > 0;) {
        DelegatedRole bin = s->bin(static_cast<std::uint32_t>(i));
        std::string name = bin.name;
        to_visit.push_back({std::move(name), v.role, std::move(bin)});
      }
    } else {
      for (auto it = t.delegations->roles.rbegin(); it != t.delegations->roles.rend(); ++it) {
        to_visit.push_back({it->name, v.role, *it});
      }
    }
  }
  // 2. A candidate counts only as the search for it resolves it: every
  //    delegation on the way must cover the path (a role cannot widen what its
  //    delegator was trusted for), terminating delegations end the search, the
  //    highest-priority role wins, and a failed role on the way withholds it.
  for (const auto& path : candidates) {
    std::string withheld;
    auto info = search(path, /*tolerate=*/true, &withheld);
    if (!info) return std::unexpected(info.error());
    if (*info) {
      out.targets.push_back(std::move(**info));
    } else if (!withheld.empty()) {
      out.withheld.emplace(path, withheld);
    }
  }
  return out;
}

}  // namespace catalog::tuf
