// Which version to install, and what happens once it is in: EnsureProvider,
// install NAME[@VERSION], update, the end of every install job (the version
// becomes current), and what a refresh changes (revocation, automatic updates).
#include <algorithm>

#include "daemon/core/broker.hpp"
#include "daemon/core/broker_internal.hpp"
#include "daemon/core/public_error.hpp"
#include "daemon/log/log.hpp"

namespace epbrokerd::core {

using namespace detail;
using common::HistoryAction;

namespace {

// "1.2.0, 1.3.0" (ascending by value).
std::string version_list(std::vector<catalog::VersionText> versions) {
  std::sort(versions.begin(), versions.end(),
            [](const auto& a, const auto& b) { return a.value < b.value; });
  std::string out;
  for (const auto& v : versions) out += (out.empty() ? "" : ", ") + v.text;
  return out.empty() ? "none" : out;
}

}  // namespace

std::vector<CatalogEntry> Broker::entries_of(const std::string& name) const {
  std::vector<CatalogEntry> out;
  std::lock_guard lock(mu_);
  for (const auto& e : catalog_) {
    if (e.meta.name == name) out.push_back(e);
  }
  return out;
}

std::optional<CatalogEntry> Broker::newest_entry(const std::string& name,
                                                 std::string* reason) const {
  std::optional<CatalogEntry> best;
  for (auto& e : entries_of(name)) {
    auto c = catalog::check_compatibility(machine_, any_ort(), e.meta);
    if (auto* ex = std::get_if<catalog::Exclusion>(&c)) {
      if (reason && !best) *reason = ex->message;
      continue;
    }
    if (!best || best->meta.version.value < e.meta.version.value) best = std::move(e);
  }
  return best;
}

Result<std::uint64_t> Broker::start_install(const RequestContext& ctx, CatalogEntry entry,
                                            InstallIntent intent) {
  // One install per package however many callers ask.
  if (auto running = jobs_.find_active(JobKind::install, entry.meta.name)) return running->id();
  if (!ctx.sender.empty() &&
      jobs_.active_count_for(ctx.sender) >= options_.config.daemon.max_jobs_per_client) {
    return fail(Errc::Busy, ctx.sender + " already runs the per-client maximum of jobs");
  }
  auto job = jobs_.create(JobKind::install, entry.meta.name, ctx);
  job->describe(entry.meta.version.text, entry.remote);
  invalidate_providers();  // NAME is installing now
  // In the store already (staged, removing, kept): only the switch is left.
  if (store_.find(entry.meta.name, entry.meta.version.text)) {
    finish_install(*job, entry, intent, *store_.find(entry.meta.name, entry.meta.version.text));
    job->succeed();
    if (listener_) listener_->providers_changed();
    return job->id();
  }
  {
    std::lock_guard lock(life_mu_);
    pinned_.insert({entry.meta.name, entry.meta.version.text});
  }
  spawn([this, job, e = std::move(entry), i = std::move(intent)] { run_install(job, e, i); });
  return job->id();
}

void Broker::finish_install(const Job& job, const CatalogEntry& entry, const InstallIntent& intent,
                            const catalog::Result<store::InstalledPackage>& installed) {
  const std::string& name = entry.meta.name;
  const std::string& version = entry.meta.version.text;
  const auto fields = job_log_fields(job.snapshot());
  std::lock_guard lock(life_mu_);
  pinned_.erase({name, version});
  if (!installed) {
    record(intent.ctx, intent.action, name, intent.from, version,
           result_name(Error(installed.error())), public_message(Error(installed.error())), fields);
    return;
  }
  // A removal (or anything else) cancelled it after the commit: it stays out of
  // use, and the next collection takes it.
  if (job.cancel_requested()) {
    record(intent.ctx, intent.action, name, intent.from, version, "Cancelled",
           "cancelled after the files were committed; not made current", fields);
    collect_locked(intent.ctx, name);
    return;
  }
  if (!intent.make_current) {
    record(intent.ctx, HistoryAction::download, name, intent.from, version, "ok",
           "downloaded; `epbrokerctl update " + name + "` makes it current", fields);
    return;
  }
  switch_current_locked(intent.ctx, name, intent.from, version, intent.action,
                        intent.ctx.sender.empty() ? "automatic update" : "", fields);
  if (intent.hold) {
    auto& lc = lifecycle_.at(name);
    lc.held = true;
    lc.hold_reason = "downgraded from " + intent.from;
    save_lifecycle_locked();
  }
  collect_locked(intent.ctx, name);
}

Result<std::uint64_t> Broker::ensure_provider(const RequestContext& ctx, const std::string& name) {
  // 1. Arguments, then authority, then the catalog.
  if (!valid_name(name)) return fail(Errc::InvalidArgument, "invalid package name");
  if (auto ok = options_.authorizer->check(ctx, Action::install); !ok) {
    return std::unexpected(ok.error());
  }
  std::string current;
  {
    std::lock_guard lock(life_mu_);
    current = plan_locked(name).current;
  }
  std::string reason;
  auto entry = newest_entry(name, &reason);
  if (current.empty() && !entry) {
    if (!reason.empty()) return fail(Errc::Incompatible, name + ": " + reason);
    return fail(Errc::NotFound, "no trusted catalog lists a package named '" + name + "'");
  }
  // 2. Ready already: a job that is done at once, so callers wait the same way.
  if (!current.empty()) {
    if (auto running = jobs_.find_active(JobKind::install, name)) return running->id();
    auto job = jobs_.create(JobKind::install, name, ctx);
    job->succeed();
    return job->id();
  }
  return start_install(ctx, std::move(*entry), {HistoryAction::install, "", true, false, ctx});
}

Result<std::uint64_t> Broker::install_provider(const RequestContext& ctx, const std::string& name,
                                               const InstallOptions& options) {
  // 1. Arguments.
  if (!valid_name(name)) return fail(Errc::InvalidArgument, "invalid package name");
  std::optional<catalog::Version> wanted;
  if (!options.version.empty()) {
    auto v = catalog::parse_version(options.version);
    if (!v) return fail(Errc::InvalidArgument, "version: " + v.error().message);
    wanted = *v;
  }
  // 2. Which entry: the given version, or the newest compatible one.
  const auto entries = entries_of(name);
  std::vector<catalog::VersionText> offered;
  for (const auto& e : entries) offered.push_back(e.meta.version);
  std::optional<CatalogEntry> entry;
  if (wanted) {
    for (const auto& e : entries) {
      if (e.meta.version.text == options.version || (!entry && e.meta.version.value == *wanted)) {
        entry = e;
      }
    }
    if (!entry) {
      return fail(Errc::NotFound,
                  entries.empty()
                      ? "no trusted catalog lists a package named '" + name + "'"
                      : name + " has no version " + options.version +
                            " in the trusted catalogs; available: " + version_list(offered));
    }
    auto c = catalog::check_compatibility(machine_, any_ort(), entry->meta);
    if (auto* ex = std::get_if<catalog::Exclusion>(&c)) {
      return fail(Errc::Incompatible, name + " " + options.version + ": " + ex->message);
    }
  } else {
    std::string reason;
    entry = newest_entry(name, &reason);
    if (!entry) {
      if (!reason.empty()) return fail(Errc::Incompatible, name + ": " + reason);
      return fail(Errc::NotFound, "no trusted catalog lists a package named '" + name + "'");
    }
  }
  // 3. Against the current version: newer is an update, older a downgrade.
  std::string current;
  bool held = false;
  {
    std::lock_guard lock(life_mu_);
    current = plan_locked(name).current;
    held = lifecycle_.get(name).held;
  }
  const auto cur = catalog::parse_version(current);
  const bool older = cur && entry->meta.version.value < *cur;
  const bool same = current == entry->meta.version.text;
  if (older && !options.allow_older) {
    return fail(Errc::InvalidArgument,
                name + " " + entry->meta.version.text + " is older than the current version " +
                    current + ": a downgrade needs --allow-older (or `epbrokerctl rollback " +
                    name + "` for the previous version)");
  }
  const Action action = older ? Action::downgrade : Action::install;
  if (auto ok = options_.authorizer->check(ctx, action); !ok) return std::unexpected(ok.error());
  // 4. Nothing to change: the current version, or a held package without an
  //    explicit version. A job that is done at once.
  if (same || (held && !wanted)) {
    auto job = jobs_.create(JobKind::install, name, ctx);
    job->succeed();
    return job->id();
  }
  InstallIntent intent;
  intent.action = current.empty() ? HistoryAction::install
                  : older         ? HistoryAction::downgrade
                                  : HistoryAction::update;
  intent.from = current;
  intent.hold = older;
  intent.ctx = ctx;
  return start_install(ctx, std::move(*entry), std::move(intent));
}

Result<std::vector<UpdateChange>> Broker::update(const RequestContext& ctx,
                                                 const std::vector<std::string>& names,
                                                 bool dry_run) {
  // 1. Arguments, authority, and which packages.
  if (names.size() > 64) return fail(Errc::InvalidArgument, "too many package names");
  for (const auto& n : names) {
    if (!valid_name(n)) return fail(Errc::InvalidArgument, "invalid package name");
  }
  if (auto ok = options_.authorizer->check(ctx, Action::update); !ok) {
    return std::unexpected(ok.error());
  }
  std::vector<std::string> todo = names;
  if (todo.empty()) {
    for (const auto& p : store_.list()) {
      if (todo.empty() || todo.back() != p.name()) todo.push_back(p.name());
    }
  }
  std::vector<UpdateChange> out;
  for (const auto& name : todo) {
    UpdateChange change{name, "", "", 0, ""};
    bool held = false;
    {
      std::lock_guard lock(life_mu_);
      if (store_.versions(name).empty()) {
        if (!names.empty()) return fail(Errc::NotFound, name + " is not installed");
        continue;
      }
      change.from = plan_locked(name).current;
      const auto lc = lifecycle_.get(name);
      held = lc.held;
      if (change.from.empty() && !lc.removing.empty()) continue;  // removed
      if (held) change.reason = lc.hold_reason.empty() ? "held" : "held: " + lc.hold_reason;
    }
    change.to = change.from;
    // 2. The newest compatible version, if newer than the current one.
    std::string why;
    auto entry = newest_entry(name, &why);
    const auto cur = catalog::parse_version(change.from);
    if (held) {
      out.push_back(std::move(change));
      continue;
    }
    if (!entry || (cur && !(*cur < entry->meta.version.value))) {
      change.reason = entry ? "newest already" : "no compatible version in the catalogs";
      out.push_back(std::move(change));
      continue;
    }
    change.to = entry->meta.version.text;
    if (dry_run) {
      change.reason = store_.find(name, change.to) ? "downloaded already" : "would download";
      out.push_back(std::move(change));
      continue;
    }
    // 3. One install job per package (done at once when it is in the store).
    auto job = start_install(ctx, std::move(*entry),
                             {change.from.empty() ? HistoryAction::install : HistoryAction::update,
                              change.from, true, false, ctx});
    if (!job) return std::unexpected(job.error());
    change.job = *job;
    out.push_back(std::move(change));
  }
  return out;
}

void Broker::after_refresh() {
  const RequestContext daemon{0, ""};
  std::vector<std::string> names;
  for (const auto& p : store_.list()) {
    if (names.empty() || names.back() != p.name()) names.push_back(p.name());
  }
  // 1. Revocation: an installed version no trusted catalog lists any more.
  {
    std::lock_guard lock(life_mu_);
    bool changed = false;
    for (const auto& name : names) {
      const auto listed = entries_of(name);
      for (const auto& p : store_.versions(name)) {
        const bool is_listed = std::any_of(listed.begin(), listed.end(), [&](const auto& e) {
          return e.meta.version.text == p.version();
        });
        auto& lc = lifecycle_.at(name);
        const bool was = lc.is_revoked(p.version());
        if (is_listed == !was) continue;
        const std::string before = plan_locked(name).current;
        if (!is_listed) {
          lc.revoked[p.version()] = "withdrawn: no trusted catalog lists it any more";
          record(daemon, HistoryAction::revoke, name, p.version(), "", "ok",
                 lc.revoked[p.version()]);
        } else {
          lc.revoked.erase(p.version());
          record(daemon, HistoryAction::unrevoke, name, "", p.version(), "ok",
                 "a trusted catalog lists it again");
        }
        changed = true;
        // A revoked current: the plan falls back to the newest usable version.
        const std::string after = plan_locked(name).current;
        if (after != before && !after.empty()) {
          lifecycle_.at(name).make_current(after);
          record(daemon, HistoryAction::rollback, name, before, after, "ok",
                 before + " was revoked");
        }
      }
    }
    if (changed) {
      save_lifecycle_locked();
      collect_locked(daemon);
      invalidate_providers();
    }
  }
  // 2. Automatic updates of installed, unheld packages.
  const auto mode = options_.config.daemon.auto_update;
  if (mode == config::AutoUpdate::off) return;
  if (options_.metered && options_.metered()) {
    log::info("auto update: the connection is metered; downloads wait for the next refresh");
    return;
  }
  for (const auto& name : names) {
    std::string current;
    std::string base;  // what the new version must be newer than
    {
      std::lock_guard lock(life_mu_);
      const auto lc = lifecycle_.get(name);
      if (lc.held) continue;
      current = plan_locked(name).current;
      base = current;
      // No current version: removed or incompatible ones are left alone; a
      // package whose every version was revoked gets the fix its publisher
      // released since.
      const auto installed = store_.versions(name);
      if (current.empty()) {
        const bool all_revoked = std::all_of(installed.begin(), installed.end(),
                                             [&](auto& p) { return lc.is_revoked(p.version()); });
        if (!all_revoked || installed.empty()) continue;
        base = installed.front().version();
      }
    }
    auto entry = newest_entry(name, nullptr);
    const auto cur = catalog::parse_version(base);
    if (!entry || !cur || !(*cur < entry->meta.version.value)) continue;
    const bool install = mode == config::AutoUpdate::install;
    if (!install && store_.find(name, entry->meta.version.text)) continue;  // downloaded already
    auto job = start_install(daemon, std::move(*entry),
                             {HistoryAction::update, current, install, false, daemon});
    if (!job) log::warn("auto update of {}: {}", name, job.error().message);
  }
  if (listener_) listener_->providers_changed();
}

}  // namespace epbrokerd::core
