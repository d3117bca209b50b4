// The Broker's package lifecycle: the plan of each package (version_plan.hpp)
// applied to the store, holds, rollback, removal, garbage collection, the
// history, remote resets, and leases kept across a restart.
#include <algorithm>
#include <chrono>

#include "catalog/atomic_file.hpp"
#include "catalog/canonical_json.hpp"
#include "daemon/core/broker.hpp"
#include "daemon/core/broker_internal.hpp"
#include "daemon/log/log.hpp"
#include "daemon/log/message_ids.hpp"

namespace epbrokerd::core {

using namespace detail;
using common::HistoryAction;
namespace fs = std::filesystem;

namespace {

constexpr const char* kLeasesFileName = "leases.json";

// The event a history entry is, for the journal: a successful install, update or
// removal (log/message_ids.hpp); "" for the others.
std::string_view message_id_of(const HistoryEntry& e) {
  if (e.result != "ok") return {};
  // A model variant's entry ("VERSION/VARIANT": a package version has no '/'):
  // the catalogued messages are about execution provider packages.
  if (e.from.find('/') != std::string::npos || e.to.find('/') != std::string::npos) return {};
  switch (e.action) {
    case HistoryAction::install:
      return log::kMessageInstalled;
    case HistoryAction::update:
      return log::kMessageUpdated;
    case HistoryAction::remove:
      return log::kMessageRemoved;
    case HistoryAction::downgrade:
    case HistoryAction::rollback:
    case HistoryAction::download:
    case HistoryAction::revoke:
    case HistoryAction::unrevoke:
    case HistoryAction::gc:
    case HistoryAction::hold:
    case HistoryAction::unhold:
    case HistoryAction::remote_reset:
      return {};
  }
  return {};
}

// `job`'s journal fields with the history entry's laid on them.
log::Fields history_log_fields(const HistoryEntry& e, const log::Fields& job) {
  const bool reset = e.action == HistoryAction::remote_reset;  // `name` is the remote's
  return log::with(
      job, {
               {log::kMessageId, std::string(message_id_of(e))},
               {reset ? log::kRemote : log::kPackage, e.name},
               // The version the entry is about: the new one, or the one removed or dropped.
               {log::kVersion, e.to.empty() ? e.from : e.to},
               {log::kFromVersion, !e.to.empty() && e.from != e.to ? e.from : std::string()},
               {log::kCallerUid, std::to_string(e.uid)},
               {log::kError, e.result == "ok" ? std::string() : e.result},
           });
}

}  // namespace

std::int64_t Broker::now() const {
  if (options_.now) return options_.now();
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

PlanSettings Broker::plan_settings() const {
  const auto& d = options_.config.daemon;
  return {.keep_versions = d.keep_versions,
          .keep_for_older_ort = d.keep_for_older_ort,
          .remove_revoked = d.remove_revoked,
          .now = now()};
}

std::vector<InstalledVersion> Broker::installed_versions_locked(const std::string& name) const {
  std::vector<InstalledVersion> out;
  for (const auto& p : store_.versions(name)) {
    InstalledVersion v;
    v.version = p.manifest.ep.version;
    v.ort_min = p.manifest.ep.ort_min.value;
    // The machine is fixed for the broker's life, so is an installed version's
    // compatibility with it (matching looks up required libraries on disk:
    // not once per session).
    const std::string key = p.name() + "/" + p.version();
    auto known = compatible_.find(key);
    if (known == compatible_.end()) {
      known = compatible_
                  .emplace(key, std::holds_alternative<catalog::Match>(catalog::check_compatibility(
                                    machine_, any_ort(), p.manifest.ep)))
                  .first;
    }
    v.compatible = known->second;
    v.leases = store_.lease_count(p.name(), p.version());
    v.pinned = pinned_.contains({p.name(), p.version()});
    out.push_back(std::move(v));
  }
  return out;
}

PackagePlan Broker::plan_locked(const std::string& name) const {
  auto it = lifecycle_.packages.find(name);
  return plan_package(installed_versions_locked(name),
                      it == lifecycle_.packages.end() ? PackageLifecycle{} : it->second,
                      plan_settings());
}

void Broker::save_lifecycle_locked() {
  lifecycle_.prune();
  if (auto ok = save_lifecycle(options_.config.paths.state_dir, lifecycle_); !ok) {
    log::error("lifecycle: cannot save: {}", ok.error().message);
  }
}

void Broker::record(const RequestContext& ctx, HistoryAction action, const std::string& name,
                    const std::string& from, const std::string& to, const std::string& result,
                    const std::string& reason, const log::Fields& job) {
  HistoryEntry e{
      now(),  static_cast<std::uint32_t>(ctx.uid == static_cast<uid_t>(-1) ? 0 : ctx.uid),
      action, name,
      from,   to,
      result, reason};
  log::event(log::Level::info, history_log_fields(e, job), "history: {} {} {} -> {} ({}): {}",
             common::history_action_name(action), name, from.empty() ? "-" : from,
             to.empty() ? "-" : to, result, reason);
  if (auto ok = history_.append(e); !ok) log::error("history: {}", ok.error().message);
}

void Broker::switch_current_locked(const RequestContext& ctx, const std::string& name,
                                   const std::string& from, const std::string& version,
                                   HistoryAction action, const std::string& reason,
                                   const log::Fields& job) {
  lifecycle_.at(name).make_current(version);
  save_lifecycle_locked();
  record(ctx, action, name, from, version, "ok", reason, job);
}

std::vector<VersionRef> Broker::collect_locked(const RequestContext& ctx, const std::string& name) {
  std::vector<std::string> names;
  if (!name.empty()) {
    names.push_back(name);
  } else {
    for (const auto& p : store_.list()) {
      if (names.empty() || names.back() != p.name()) names.push_back(p.name());
    }
  }
  std::vector<VersionRef> removed;
  bool changed = false;
  for (const auto& n : names) {
    for (const auto& v : plan_locked(n).versions) {
      if (!v.collect) continue;
      // A lease taken since the plan was made makes the store refuse (Busy):
      // that version stays, for the next collection.
      auto gone = store_.remove(n, v.version);
      if (!gone) {
        if (gone.error().code != catalog::Errc::busy) {
          record(ctx, HistoryAction::gc, n, v.version, "", result_name(Error(gone.error())),
                 gone.error().message);
        }
        continue;
      }
      lifecycle_.at(n).forget(v.version);
      changed = true;
      removed.push_back({n, v.version, ""});
      record(ctx, HistoryAction::gc, n, v.version, "", "ok",
             "files deleted (" + std::string(common::version_role_name(v.role)) + ": " + v.reason +
                 ")");
    }
  }
  if (changed) {
    save_lifecycle_locked();
    invalidate_providers();
  }
  return removed;
}

Result<void> Broker::hold(const RequestContext& ctx, const std::string& name) {
  return set_hold(ctx, name, true);
}

Result<void> Broker::unhold(const RequestContext& ctx, const std::string& name) {
  return set_hold(ctx, name, false);
}

Result<void> Broker::set_hold(const RequestContext& ctx, const std::string& name, bool held) {
  if (!valid_name(name)) return fail(Errc::InvalidArgument, "invalid package name");
  if (auto ok = options_.authorizer->check(ctx, Action::hold); !ok) return ok;
  {
    std::lock_guard lock(life_mu_);
    if (store_.versions(name).empty()) return fail(Errc::NotFound, name + " is not installed");
    auto& lc = lifecycle_.at(name);
    const bool was = lc.held;
    lc.held = held;
    lc.hold_reason.clear();  // the admin's own hold (or none) from now on
    save_lifecycle_locked();
    const std::string cur = plan_locked(name).current;
    const char* reason = held ? (was ? "held already" : "updates skip it until unhold")
                              : (was ? "updates may change it again" : "was not held");
    record(ctx, held ? HistoryAction::hold : HistoryAction::unhold, name, cur, cur, "ok", reason);
  }
  invalidate_providers();
  if (listener_) listener_->providers_changed();
  return {};
}

Result<UpdateChange> Broker::rollback(const RequestContext& ctx, const std::string& name) {
  if (!valid_name(name)) return fail(Errc::InvalidArgument, "invalid package name");
  if (auto ok = options_.authorizer->check(ctx, Action::downgrade); !ok) {
    return std::unexpected(ok.error());
  }
  UpdateChange change{name, "", "", 0, ""};
  {
    std::lock_guard lock(life_mu_);
    if (store_.versions(name).empty()) return fail(Errc::NotFound, name + " is not installed");
    const auto plan = plan_locked(name);
    const std::string target = plan.rollback;
    if (target.empty()) {
      return fail(Errc::NotFound, "no previous version of " + name + " is kept (keep_versions " +
                                      std::to_string(options_.config.daemon.keep_versions) + ")");
    }
    change.from = plan.current;
    change.to = target;
    lifecycle_.at(name).make_current(target);
    auto& lc = lifecycle_.at(name);
    lc.held = true;
    lc.hold_reason = "rolled back from " + plan.current;
    save_lifecycle_locked();
    record(ctx, HistoryAction::rollback, name, change.from, change.to, "ok",
           "held: `epbrokerctl unhold " + name + "` allows updates again");
    change.reason = "held";
    collect_locked(ctx, name);
  }
  invalidate_providers();
  if (listener_) listener_->providers_changed();
  return change;
}

std::vector<HistoryEntry> Broker::history(const std::string& name) const {
  return history_.read(name);
}

Result<std::vector<VersionRef>> Broker::collect_garbage(const RequestContext& ctx) {
  if (auto ok = options_.authorizer->check(ctx, Action::manage); !ok) {
    return std::unexpected(ok.error());
  }
  std::vector<VersionRef> removed;
  {
    std::lock_guard lock(life_mu_);
    removed = collect_locked(ctx);
    auto models = collect_models_locked(ctx);  // broker_model_lifecycle.cpp
    removed.insert(removed.end(), models.begin(), models.end());
  }
  if (!removed.empty() && listener_) listener_->providers_changed();
  return removed;
}

Result<void> Broker::remove_provider(const RequestContext& ctx, const std::string& name,
                                     RemoveMode mode) {
  if (!valid_name(name)) return fail(Errc::InvalidArgument, "invalid package name");
  if (auto ok = options_.authorizer->check(ctx, Action::manage); !ok) return ok;
  // An install of it that is still running would bring it back: stopped first
  // (its commit, if it wins the race, is not made current: finish_install).
  if (auto job = jobs_.find_active(JobKind::install, name)) job->request_cancel();
  Result<void> out;
  {
    std::lock_guard lock(life_mu_);
    const auto installed = store_.versions(name);
    if (installed.empty()) return fail(Errc::NotFound, name + " is not installed");
    const std::string from = plan_locked(name).current;
    auto& lc = lifecycle_.at(name);
    lc.current.clear();
    lc.previous.clear();
    lc.held = false;
    lc.hold_reason.clear();
    lc.removing.clear();
    for (const auto& p : installed) lc.removing.push_back(p.version());
    save_lifecycle_locked();
    std::size_t leased = 0;
    for (const auto& p : installed) leased += store_.lease_count(name, p.version());
    if (mode == RemoveMode::now) {
      auto gone = store_.remove(name, std::nullopt, /*even_if_leased=*/true);
      if (gone) {
        for (const auto& p : *gone) lifecycle_.at(name).forget(p.version());
        save_lifecycle_locked();
        record(ctx, HistoryAction::remove, name, from, "", "ok",
               "files deleted at once" +
                   (leased ? " (" + std::to_string(leased) + " lease(s) ignored)" : std::string()));
      } else {
        record(ctx, HistoryAction::remove, name, from, "", result_name(Error(gone.error())),
               gone.error().message);
        out = std::unexpected(Error(gone.error()));
      }
    } else {
      record(ctx, HistoryAction::remove, name, from, "", "ok",
             leased ? std::to_string(leased) +
                          " lease(s) held: those files go when the last session ends"
                    : "files deleted");
      collect_locked(ctx, name);
    }
  }
  invalidate_providers();
  if (listener_) listener_->providers_changed();
  return out;
}

Result<void> Broker::reset_remote(const RequestContext& ctx, const std::string& remote) {
  if (auto ok = options_.authorizer->check(ctx, Action::manage); !ok) return ok;
  const config::Remote* r = find_remote(options_.config, remote);
  if (r == nullptr) return fail(Errc::NotFound, "no remote named '" + remote.substr(0, 64) + "'");
  if (jobs_.find_active(JobKind::refresh, "")) {
    return fail(Errc::Busy, "a catalog refresh is running; reset the remote after it ends");
  }
  const fs::path dir = options_.config.paths.state_dir / "remotes" / remote;
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (ec) return fail(Errc::Internal, "cannot delete " + dir.string() + ": " + ec.message());
  record(ctx, HistoryAction::remote_reset, remote, "", "", "ok",
         "trusted metadata dropped; the next refresh starts from " + r->trusted_root.string());
  return {};
}

void Broker::leases_released() {
  std::vector<VersionRef> removed;
  {
    std::lock_guard lock(life_mu_);
    removed = collect_locked(RequestContext{0, ""});
  }
  if (!removed.empty() && listener_) listener_->providers_changed();
}

void Broker::save_leases() const {
  nlohmann::json doc = {{"leases", nlohmann::json::array()}};
  for (const auto& s : sessions_.all()) {
    doc["leases"].push_back(
        {{"owner", s.owner.sender}, {"uid", s.owner.uid}, {"versions", s.leases}});
  }
  (void)catalog::atomic_write_file(options_.config.paths.state_dir / kLeasesFileName, doc.dump(1));
}

void Broker::adopt_leases(const std::function<bool(const std::string& owner)>& alive) {
  const fs::path path = options_.config.paths.state_dir / kLeasesFileName;
  auto text = catalog::read_file(path, 16 << 20);
  std::error_code ec;
  fs::remove(path, ec);
  std::size_t adopted = 0;
  if (text) {
    auto doc = catalog::parse_json(*text);
    if (doc && doc->is_object() && (*doc)["leases"].is_array()) {
      for (const auto& l : (*doc)["leases"]) {
        if (!l.is_object() || !l["owner"].is_string() || !l["versions"].is_array()) continue;
        const std::string owner = l["owner"].get<std::string>();
        if (owner.empty() || !alive(owner)) continue;
        for (const auto& v : l["versions"]) {
          if (!v.is_string()) continue;
          const std::string nv = v.get<std::string>();
          if (const auto m = parse_model_lease_name(nv)) {
            if (store_.acquire_model_lease(m->name, m->version, m->variant, owner)) ++adopted;
            continue;
          }
          const auto slash = nv.find('/');
          if (slash == std::string::npos) continue;
          // Held by the store under the owner's name: client_vanished() ends it.
          if (store_.acquire_lease(nv.substr(0, slash), nv.substr(slash + 1), owner)) ++adopted;
        }
      }
    }
  }
  if (adopted)
    log::info("leases: {} lease(s) of running apps kept from the previous instance", adopted);
  // Whatever no live app holds, and no plan keeps, goes now (a removal or an
  // update that waited for leases when the previous instance stopped).
  leases_released();
}

}  // namespace epbrokerd::core
