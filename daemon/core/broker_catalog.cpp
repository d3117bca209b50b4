// The Broker's catalog state: the cache of what trusted catalogs list, the provider
// views computed from it and the store, and the refresh job.
#include "daemon/core/broker.hpp"

#include <algorithm>
#include <chrono>

#include "catalog/atomic_file.hpp"
#include "catalog/canonical_json.hpp"
#include "catalog/tuf/updater.hpp"

#include "daemon/core/broker_internal.hpp"

namespace epbrokerd::core {

using namespace detail;
using common::ProviderState;
namespace fs = std::filesystem;

// ---- catalog ------------------------------------------------------------------

void Broker::load_catalog_cache() {
  // The trusted TUF metadata under state/remotes/<name>/metadata is the truth;
  // catalog.json is what the last successful refresh derived from it.
  std::vector<CatalogEntry> entries;
  for (const auto& remote : options_.config.remotes) {
    const fs::path cache =
        options_.config.paths.state_dir / "remotes" / remote.name / "catalog.json";
    auto text = catalog::read_file(cache, 16 << 20);
    if (!text) continue;
    auto doc = catalog::parse_json(*text);
    if (!doc || !doc->is_object() || !(*doc)["entries"].is_array()) continue;
    for (const auto& e : (*doc)["entries"]) {
      auto meta = catalog::parse_ep_metadata(e.value("custom", nlohmann::json()));
      if (!meta) continue;
      entries.push_back(
          {remote.name, e.value("target_path", ""), e.value("length", 0ULL), std::move(*meta)});
    }
    revision_ = std::max<std::uint64_t>(revision_, (*doc).value("revision", 0ULL));
    expires_ = (*doc).value("expires", "");
  }
  catalog_ = drop_shadowed(std::move(entries));
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

std::optional<CatalogEntry> Broker::best_entry(const std::string& name, std::string* reason) const {
  std::optional<CatalogEntry> best;
  std::lock_guard lock(mu_);
  for (const auto& e : catalog_) {
    if (e.meta.name != name) continue;
    auto c = catalog::check_compatibility(machine_, any_ort(), e.meta);
    if (auto* ex = std::get_if<catalog::Exclusion>(&c)) {
      if (reason && !best) *reason = ex->message;
      continue;
    }
    if (!best || best->meta.version.value < e.meta.version.value) best = e;
  }
  return best;
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

std::vector<ProviderView> Broker::providers() const { return *provider_views(); }

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
  std::vector<ProviderView> out;
  std::vector<std::string> seen;
  // 1. Installed packages (newest version of each name).
  for (const auto& p : store_.list()) {
    const auto* entry = [&]() -> const CatalogEntry* {
      for (const auto& e : entries) {
        if (e.meta.name == p.name() && e.meta.version.text == p.version()) return &e;
      }
      return nullptr;
    }();
    out.push_back(view_of(entry, p));
    seen.push_back(p.name() + "/" + p.version());
  }
  // 2. Catalog entries not installed.
  for (const auto& e : entries) {
    const std::string key = e.meta.name + "/" + e.meta.version.text;
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    seen.push_back(key);
    out.push_back(view_of(&e, std::nullopt));
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

catalog::Result<std::vector<CatalogEntry>> Broker::refresh_remote(const config::Remote& remote,
                                                                  Job& job) {
  auto fetcher = options_.fetcher_factory(remote);
  auto ucfg = updater_config(options_.config, remote, job);
  if (auto ok = ensure_trusted_root(remote, ucfg.metadata_dir); !ok) {
    return std::unexpected(ok.error());
  }
  catalog::tuf::Updater updater(ucfg, *fetcher);
  if (job.cancel_requested()) return catalog::fail(catalog::Errc::cancelled, "cancelled");
  auto targets = updater.all_targets();
  if (!targets) return std::unexpected(targets.error());
  std::vector<CatalogEntry> out;
  for (const auto& t : *targets) {
    // Targets without (valid) EP metadata are not providers; skipped.
    if (t.custom.is_null() || !t.custom.contains("epbroker")) continue;
    auto meta = catalog::parse_ep_metadata(t.custom);
    if (!meta) continue;
    out.push_back({remote.name, t.path, t.length, std::move(*meta)});
  }
  // Derived cache for the next start (see load_catalog_cache()).
  const auto* ts = updater.trusted()->timestamp() ? &*updater.trusted()->timestamp() : nullptr;
  nlohmann::json doc = {{"revision", updater.trusted()->snapshot()->signed_.version},
                        {"expires", ts ? catalog::tuf::format_expires(ts->signed_.expires) : ""},
                        {"entries", nlohmann::json::array()}};
  for (const auto& e : out) doc["entries"].push_back(entry_json(e));
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
  std::vector<std::vector<CatalogEntry>> fresh;
  std::optional<catalog::Error> first_error;
  bool any_ok = false;
  for (const auto& remote : options_.config.remotes) {
    if (!remote.enabled) continue;
    auto entries = refresh_remote(remote, *job);
    if (entries) {
      any_ok = true;
      fresh.push_back(std::move(*entries));
      continue;
    }
    if (!first_error) {
      first_error = entries.error();
      first_error->message = "remote " + remote.name + ": " + first_error->message;
    }
    std::vector<CatalogEntry> kept;
    std::lock_guard lock(mu_);
    for (const auto& e : catalog_) {
      if (e.remote == remote.name) kept.push_back(e);
    }
    fresh.push_back(std::move(kept));
  }
  std::uint64_t rev = 0;
  if (any_ok || !first_error) {
    std::vector<CatalogEntry> all;
    for (auto& list : fresh) std::move(list.begin(), list.end(), std::back_inserter(all));
    std::lock_guard lock(mu_);
    catalog_ = drop_shadowed(std::move(all));
    rev = revision_;
    if (!first_error) last_refresh_ = std::chrono::system_clock::now();
  }
  if (any_ok || !first_error) invalidate_providers();
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
