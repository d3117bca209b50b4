// The Broker's catalog state: the cache of what trusted catalogs list, the provider
// views computed from it and the store, and the refresh job.
#include "daemon/core/broker.hpp"

#include <algorithm>
#include <chrono>

#include "catalog/atomic_file.hpp"
#include "catalog/canonical_json.hpp"
#include "catalog/name_binding.hpp"
#include "catalog/tuf/updater.hpp"

#include "daemon/core/broker_internal.hpp"
#include "daemon/log/log.hpp"
#include "daemon/log/message_ids.hpp"

namespace epbrokerd::core {

using namespace detail;
using common::ProviderState;
namespace fs = std::filesystem;

// ---- catalog ------------------------------------------------------------------

void Broker::load_catalog_cache() {
  // The trusted TUF metadata under state/remotes/<name>/metadata is the truth;
  // catalog.json is what the last successful refresh derived from it.
  std::vector<CatalogEntry> entries;
  std::vector<ModelEntry> models;
  for (const auto& remote : options_.config.remotes) {
    const fs::path cache =
        options_.config.paths.state_dir / "remotes" / remote.name / "catalog.json";
    auto text = catalog::read_file(cache, 16 << 20);
    if (!text) continue;
    auto doc = catalog::parse_json(*text);
    if (!doc || !doc->is_object() || !(*doc)["entries"].is_array()) continue;
    // The name binding is checked again (catalog/name_binding.hpp): a file an
    // older daemon wrote may list what this one refuses. What it refused stays
    // refused, whatever the file says.
    for (const char* list : {"entries", "refused"}) {
      if (!(*doc)[list].is_array()) continue;
      for (const auto& e : (*doc)[list]) {
        auto meta = catalog::parse_ep_metadata(e.value("custom", nlohmann::json()));
        if (!meta) continue;
        CatalogEntry entry{remote.name, e.value("target_path", ""), e.value("length", 0ULL),
                           std::move(*meta)};
        auto bound = catalog::check_name_binding(entry.meta.name, entry.target_path);
        if (!bound) {
          log::warn("catalog cache: remote {}: refused target {} claiming package name {}: {}",
                    remote.name, entry.target_path, entry.meta.name, bound.error().message);
          refused_.push_back({std::move(entry), bound.error().message});
        } else if (list == std::string_view("entries")) {
          entries.push_back(std::move(entry));
        }
      }
    }
    for (auto& m : models_from_cache(remote.name, *doc)) models.push_back(std::move(m));
    revision_ = std::max<std::uint64_t>(revision_, (*doc).value("revision", 0ULL));
    expires_ = (*doc).value("expires", "");
  }
  catalog_ = drop_shadowed(std::move(entries));
  models_ = index_models(std::move(models));
  // The last refresh is when the oldest enabled remote's catalog.json was written
  // (every remote is refreshed together); none yet, or a remote never refreshed:
  // no time, so an automatic refresh is due at once.
  std::optional<fs::file_time_type> oldest;
  bool all = true;
  for (const auto& remote : options_.config.remotes) {
    if (!remote.enabled) continue;
    std::error_code ec;
    const auto t = fs::last_write_time(
        options_.config.paths.state_dir / "remotes" / remote.name / "catalog.json", ec);
    if (ec) {
      all = false;
      break;
    }
    if (!oldest || t < *oldest) oldest = t;
  }
  if (all && oldest) {
    last_refresh_ = std::chrono::time_point_cast<std::chrono::system_clock::duration>(
        std::chrono::file_clock::to_sys(*oldest));
  }
}

std::optional<std::chrono::system_clock::time_point> Broker::last_refresh() const {
  std::lock_guard lock(mu_);
  return last_refresh_;
}

std::uint64_t Broker::auto_refresh() {
  if (auto running = jobs_.find_active(JobKind::refresh, "")) return running->id();
  // The daemon's own job: no caller to authorize (uid 0, no bus name).
  auto job = jobs_.create(JobKind::refresh, "", RequestContext{0, ""});
  spawn([this, job] { run_refresh(job); });
  return job->id();
}

ProviderView Broker::view_of(const CatalogEntry* entry,
                             const std::optional<store::InstalledPackage>& installed) const {
  ProviderView v;
  const catalog::EpMetadata& m = installed ? installed->manifest.ep : entry->meta;
  v.name = m.name;
  v.kind = m.kind == catalog::PackageKind::runtime ? common::PackageKind::runtime
                                                   : common::PackageKind::execution_provider;
  v.ep_names = m.ep_names;
  v.version = m.version.text;
  v.ort_min = m.ort_min.text;
  v.vendor = m.vendor;
  v.remote = entry ? entry->remote : "";
  auto c = catalog::check_compatibility(machine_, any_ort(), m);
  if (auto* match = std::get_if<catalog::Match>(&c)) v.devices = match->device_ids;
  if (installed) {
    v.state = ProviderState::ready;
    v.size = installed->size_bytes();
    v.library_path = installed->library_path().string();
  } else if (auto* ex = std::get_if<catalog::Exclusion>(&c)) {
    v.state = ProviderState::incompatible;
    v.reason = ex->message;
    v.size = entry->length;
  } else {
    v.state = ProviderState::available;
    v.size = entry->length;
  }
  if (auto job = jobs_.find_active(JobKind::install, v.name); job && !installed) {
    v.state = ProviderState::installing;
    v.job = job->id();
  }
  return v;
}

std::vector<ProviderView> Broker::providers() const {
  auto out = *provider_views();
  // Lease counts change with every session, which must not recompute the views
  // (sessions come far more often than anything else): read live here.
  for (auto& v : out) {
    for (auto& ver : v.versions) ver.leases = store_.lease_count(v.name, ver.version);
  }
  return out;
}

std::shared_ptr<const std::vector<ProviderView>> Broker::provider_views() const {
  std::lock_guard lock(views_mu_);
  // The generation is read before computing: a change made meanwhile bumps it
  // again, so the views computed here are never taken for newer than they are.
  const std::uint64_t gen = providers_gen_.load();
  if (views_ && views_gen_ == gen) return views_;
  views_ = std::make_shared<const std::vector<ProviderView>>(compute_providers());
  views_gen_ = gen;
  return views_;
}

std::vector<ProviderView> Broker::compute_providers() const {
  std::vector<CatalogEntry> entries;
  {
    std::lock_guard lock(mu_);
    entries = catalog_;
  }
  // Every package name the store or a catalog knows, installed ones first.
  std::vector<std::string> names;
  for (const auto& p : store_.list()) {
    if (std::find(names.begin(), names.end(), p.name()) == names.end()) names.push_back(p.name());
  }
  for (const auto& e : entries) {
    if (std::find(names.begin(), names.end(), e.meta.name) == names.end()) {
      names.push_back(e.meta.name);
    }
  }
  std::vector<ProviderView> out;
  for (const auto& name : names) {
    // 1. The catalog's newest entry compatible with this machine (else the newest).
    const CatalogEntry* newest = nullptr;
    const CatalogEntry* newest_any = nullptr;
    for (const auto& e : entries) {
      if (e.meta.name != name) continue;
      if (!newest_any || newest_any->meta.version.value < e.meta.version.value) newest_any = &e;
      if (!std::holds_alternative<catalog::Match>(
              catalog::check_compatibility(machine_, any_ort(), e.meta))) {
        continue;
      }
      if (!newest || newest->meta.version.value < e.meta.version.value) newest = &e;
    }
    // 2. The lifecycle's view of what is installed.
    PackagePlan plan;
    PackageLifecycle lc;
    {
      std::lock_guard lock(life_mu_);
      plan = plan_locked(name);
      lc = lifecycle_.get(name);
    }
    const auto installed = store_.versions(name);
    const auto installed_at = [&](const std::string& version) {
      std::optional<store::InstalledPackage> found;
      for (const auto& p : installed) {
        if (p.version() == version) found = p;
      }
      return found;
    };
    const auto entry_at = [&](const std::string& version) -> const CatalogEntry* {
      for (const auto& e : entries) {
        if (e.meta.name == name && e.meta.version.text == version) return &e;
      }
      return nullptr;
    };
    ProviderView v;
    if (!plan.current.empty()) {
      v = view_of(entry_at(plan.current), installed_at(plan.current));
    } else if (!installed.empty() && std::all_of(installed.begin(), installed.end(), [&](auto& p) {
                 return lc.is_revoked(p.version());
               })) {
      // Installed, but every version withdrawn: shown, never granted.
      v = view_of(nullptr, installed.front());
      v.state = ProviderState::revoked;
      v.library_path.clear();
      v.reason = lc.revoked.at(installed.front().version());
    } else if (newest || newest_any) {
      v = view_of(newest ? newest : newest_any, std::nullopt);
    } else {
      v = view_of(nullptr, installed.front());  // e.g. not compatible with this machine any more
      v.state = ProviderState::incompatible;
      v.library_path.clear();
      v.reason = "no installed version is compatible with this machine";
    }
    // 3. The lifecycle's columns, for installed packages.
    if (!installed.empty()) {
      for (const auto& pv : plan.versions) {
        v.versions.push_back({pv.version, pv.role, pv.reason, pv.leases});
      }
      // Against the current version; with none (all revoked), the newest installed.
      const auto cur =
          catalog::parse_version(plan.current.empty() ? installed.front().version() : plan.current);
      const bool removed = plan.current.empty() && !lc.removing.empty();
      if (newest && !removed && (!cur || *cur < newest->meta.version.value)) {
        v.update_available = newest->meta.version.text;
      }
      v.held = lc.held;
      v.hold_reason = lc.hold_reason;
    }
    out.push_back(std::move(v));
  }
  // 4. Refused claims (catalog/name_binding.hpp), one row per name, only for
  //    names nothing above has: a claim never hides or replaces a valid package.
  std::vector<RefusedEntry> refused;
  {
    std::lock_guard lock(mu_);
    refused = refused_;
  }
  for (const auto& r : refused) {
    if (std::find(names.begin(), names.end(), r.entry.meta.name) != names.end()) continue;
    names.push_back(r.entry.meta.name);
    ProviderView v = view_of(&r.entry, std::nullopt);
    v.state = ProviderState::refused;
    v.reason = r.reason;
    v.devices.clear();
    v.job = 0;
    out.push_back(std::move(v));
  }
  return out;
}

std::uint64_t Broker::catalog_revision() const {
  std::lock_guard lock(mu_);
  return revision_;
}

std::string Broker::catalog_expires() const {
  std::lock_guard lock(mu_);
  return expires_;
}

Result<std::uint64_t> Broker::refresh(const RequestContext& ctx) {
  if (auto ok = options_.authorizer->check(ctx, Action::manage); !ok) {
    return std::unexpected(ok.error());
  }
  if (auto running = jobs_.find_active(JobKind::refresh, "")) return running->id();
  auto job = jobs_.create(JobKind::refresh, "", ctx);
  spawn([this, job] { run_refresh(job); });
  return job->id();
}

catalog::Result<Broker::RemoteCatalog> Broker::refresh_remote(const config::Remote& remote,
                                                              Job& job) {
  auto fetcher = options_.fetcher_factory(remote);
  auto ucfg = updater_config(options_.config, remote, job);
  if (auto ok = ensure_trusted_root(remote, ucfg.metadata_dir); !ok) {
    return std::unexpected(ok.error());
  }
  catalog::tuf::Updater updater(ucfg, *fetcher);
  if (job.cancel_requested()) return catalog::fail(catalog::Errc::cancelled, "cancelled");
  // A delegated role that fails does not fail the listing: see below.
  auto listing = updater.list_targets();
  if (!listing) {
    // "0 of 1 required signatures are valid" alone does not say that the admin
    // replaced the trusted root file: say so, and how to re-anchor.
    auto err = listing.error();
    if (auto changed = anchor_changed(remote, ucfg.metadata_dir)) err.message += "; " + *changed;
    return std::unexpected(err);
  }
  if (auto changed = anchor_changed(remote, ucfg.metadata_dir)) {
    log::warn("refresh: {}", *changed);
  }
  RemoteCatalog out;
  const auto add = [&](CatalogEntry e) {
    // Issue 17: a name is trusted only from its own path namespace "NAME/", so
    // a role delegated other paths cannot take it over (catalog/name_binding.hpp).
    if (auto bound = catalog::check_name_binding(e.meta.name, e.target_path); !bound) {
      log::warn("refresh: remote {}: refused target {} claiming package name {}: {}", remote.name,
                e.target_path, e.meta.name, bound.error().message);
      out.refused.push_back({std::move(e), bound.error().message});
      return;
    }
    out.entries.push_back(std::move(e));
  };
  const auto signed_targets = listing_lookup(listing->targets);
  for (const auto& t : listing->targets) {
    // Targets without (valid) EP metadata are not providers; model cards
    // (parse_ep_metadata(): unsupported) are models; the rest is skipped.
    if (t.custom.is_null() || !t.custom.contains("epbroker")) continue;
    auto meta = catalog::parse_ep_metadata(t.custom);
    if (meta) {
      add({remote.name, t.path, t.length, std::move(*meta)});
    } else if (auto model = model_entry(remote.name, t, signed_targets)) {
      out.models.push_back(std::move(*model));
    }
  }
  // Issue 17, item 6: delegated roles that failed (unreachable, or refused by a
  // TUF check) affect only the packages under their paths: those whose search
  // meets a failed role keep their previous entries (as a failing remote keeps
  // its list), the others are what the roles that verified say now.
  if (!listing->failed.empty()) {
    std::vector<CatalogEntry> previous;
    std::vector<RefusedEntry> previous_refused;
    std::vector<ModelEntry> previous_models;
    {
      std::lock_guard lock(mu_);
      for (const auto& [_, versions] : models_) {
        std::copy_if(versions.begin(), versions.end(), std::back_inserter(previous_models),
                     [&](const ModelEntry& m) { return m.remote == remote.name; });
      }
      for (const auto& e : catalog_) {
        if (e.remote == remote.name) previous.push_back(e);
      }
      for (const auto& r : refused_) {
        if (r.entry.remote == remote.name) previous_refused.push_back(r);
      }
    }
    for (auto& e : previous) {
      auto by = updater.withheld_by(e.target_path);
      if (!by) return std::unexpected(by.error());
      if (*by) out.entries.push_back(std::move(e));
    }
    for (auto& r : previous_refused) {
      auto by = updater.withheld_by(r.entry.target_path);
      if (!by) return std::unexpected(by.error());
      if (*by) out.refused.push_back(std::move(r));
    }
    // A model whose card or files a failed role withholds is not refused for
    // that: its previous entry, if any, stays.
    if (auto ok =
            keep_withheld_models(out.models, std::move(previous_models),
                                 [&](const std::string& p) { return updater.withheld_by(p); });
        !ok) {
      return std::unexpected(ok.error());
    }
    std::string message;
    for (const auto& f : listing->failed) {
      std::string paths;
      for (const auto& p : f.paths) paths += (paths.empty() ? "" : ", ") + p;
      const std::string one = "delegated role " + f.name + " (paths " + paths +
                              ") failed: " + std::string(catalog::errc_name(f.error.code)) + ": " +
                              f.error.message;
      log::warn("refresh: remote {}: {}; its packages keep their previous entries", remote.name,
                one);
      message += (message.empty() ? "" : "; ") + one;
    }
    out.failed_roles = catalog::Error{listing->failed.front().error.code,
                                      message +
                                          " (the packages under its paths keep their "
                                          "previous entries; the others are updated)"};
  }
  // Derived cache for the next start (see load_catalog_cache()).
  const auto* ts = updater.trusted()->timestamp() ? &*updater.trusted()->timestamp() : nullptr;
  nlohmann::json doc = {{"revision", updater.trusted()->snapshot()->signed_.version},
                        {"expires", ts ? catalog::tuf::format_expires(ts->signed_.expires) : ""},
                        {"entries", nlohmann::json::array()},
                        {"refused", nlohmann::json::array()},
                        {"models", nlohmann::json::array()}};
  for (const auto& e : out.entries) doc["entries"].push_back(entry_json(e));
  for (const auto& r : out.refused) doc["refused"].push_back(entry_json(r.entry));
  for (const auto& m : out.models) {
    if (!m.refused.empty()) {
      log::warn("refresh: remote {}: refused model target {} claiming model {} {}: {}", remote.name,
                m.target_path, m.meta.name, m.meta.version.text, m.refused);
    }
    doc["models"].push_back(model_json(m));
  }
  (void)catalog::atomic_write_file(
      options_.config.paths.state_dir / "remotes" / remote.name / "catalog.json", doc.dump(1));
  {
    std::lock_guard lock(mu_);
    revision_ = std::max(revision_, updater.trusted()->snapshot()->signed_.version);
    if (ts) expires_ = catalog::tuf::format_expires(ts->signed_.expires);
  }
  return out;
}

void Broker::run_refresh(std::shared_ptr<Job> job) {
  job->set_state(JobState::downloading);
  // Remotes in priority order. A remote whose refresh fails (unreachable, or
  // serving something its trusted metadata refuses) keeps what it listed
  // before: one bad remote neither empties nor freezes the others' catalogs.
  // A remote whose delegated roles partly failed is refreshed (what failed
  // keeps its entries; see refresh_remote()), and the job still fails, naming
  // the roles.
  std::vector<std::vector<CatalogEntry>> fresh;
  std::vector<RefusedEntry> refused;
  std::vector<ModelEntry> models;
  std::optional<catalog::Error> first_error;
  bool any_ok = false;
  for (const auto& remote : options_.config.remotes) {
    if (!remote.enabled) continue;
    auto listed = refresh_remote(remote, *job);
    if (listed) {
      any_ok = true;
      if (listed->failed_roles && !first_error) {
        first_error = *listed->failed_roles;
        first_error->message = "remote " + remote.name + ": " + first_error->message;
      }
      fresh.push_back(std::move(listed->entries));
      std::move(listed->refused.begin(), listed->refused.end(), std::back_inserter(refused));
      std::move(listed->models.begin(), listed->models.end(), std::back_inserter(models));
      continue;
    }
    if (listed.error().code != catalog::Errc::cancelled) {
      // The event an admin filters on (log/message_ids.hpp), one per remote.
      const auto fields =
          log::with(job_log_fields(job->snapshot()),
                    {{log::kMessageId, std::string(log::kMessageRefreshFailed)},
                     {log::kRemote, remote.name},
                     {log::kError, std::string(result_name(Error(listed.error())))}});
      log::event(log::Level::warn, fields,
                 "refresh: remote {} failed: {}; its packages keep their previous entries",
                 remote.name, listed.error().message);
    }
    if (!first_error) {
      first_error = listed.error();
      first_error->message = "remote " + remote.name + ": " + first_error->message;
    }
    std::vector<CatalogEntry> kept;
    std::lock_guard lock(mu_);
    for (const auto& e : catalog_) {
      if (e.remote == remote.name) kept.push_back(e);
    }
    for (const auto& r : refused_) {
      if (r.entry.remote == remote.name) refused.push_back(r);
    }
    for (const auto& [_, versions] : models_) {
      std::copy_if(versions.begin(), versions.end(), std::back_inserter(models),
                   [&](const ModelEntry& m) { return m.remote == remote.name; });
    }
    fresh.push_back(std::move(kept));
  }
  std::uint64_t rev = 0;
  if (any_ok || !first_error) {
    std::vector<CatalogEntry> all;
    for (auto& list : fresh) std::move(list.begin(), list.end(), std::back_inserter(all));
    std::lock_guard lock(mu_);
    catalog_ = drop_shadowed(std::move(all));
    refused_ = std::move(refused);
    models_ = index_models(std::move(models));
    rev = revision_;
    if (!first_error) last_refresh_ = std::chrono::system_clock::now();
  }
  if (any_ok || !first_error) invalidate_providers();
  // Revocations and automatic updates follow what the catalogs list now, before
  // the refresh job ends (its waiters then see their outcome).
  if (any_ok) after_refresh();
  if (first_error) {
    job->fail(*first_error);
  } else {
    job->succeed();
  }
  if (listener_ && (any_ok || !first_error)) {
    listener_->catalog_changed(rev);
    listener_->providers_changed();
  }
}

}  // namespace epbrokerd::core
