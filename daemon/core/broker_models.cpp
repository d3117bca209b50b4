// The models the trusted catalogs list (issue 21): how a refresh reads model cards,
// how catalog.json keeps them, and Broker::catalog_models(). Contracts:
// broker.hpp, broker_internal.hpp.
#include <algorithm>
#include <memory>

#include "catalog/name_binding.hpp"
#include "daemon/core/broker.hpp"
#include "daemon/core/broker_internal.hpp"
#include "daemon/core/variant_plan.hpp"
#include "daemon/log/log.hpp"

namespace epbrokerd::core {

namespace detail {

std::optional<ModelEntry> model_entry(const std::string& remote,
                                      const catalog::tuf::TargetFile& target,
                                      const catalog::ModelTargetLookup& signed_targets) {
  if (!target.custom.is_object() || !target.custom.contains("epbroker")) return std::nullopt;
  auto meta = catalog::parse_model_metadata(target.custom);
  if (!meta) return std::nullopt;  // an EP or runtime package, or not valid metadata
  ModelEntry e{remote, target.path, target.length, std::move(*meta), ""};
  if (auto bound = catalog::check_name_binding(e.meta.name, e.target_path); !bound) {
    e.refused = bound.error().message;
  } else if (auto signed_ok = catalog::check_model_targets(e.meta, signed_targets); !signed_ok) {
    e.refused =
        std::string(catalog::errc_name(signed_ok.error().code)) + ": " + signed_ok.error().message;
  }
  return e;
}

catalog::ModelTargetLookup listing_lookup(const std::vector<catalog::tuf::TargetFile>& targets) {
  auto index =
      std::make_shared<std::map<std::string, const catalog::tuf::TargetFile*, std::less<>>>();
  for (const auto& t : targets) index->emplace(t.path, &t);
  return [index](std::string_view path) -> std::optional<catalog::ModelTargetInfo> {
    const auto it = index->find(path);
    if (it == index->end()) return std::nullopt;
    catalog::ModelTargetInfo info{it->second->length, ""};
    if (auto h = it->second->hashes.find("sha256"); h != it->second->hashes.end()) {
      info.sha256 = h->second;
    }
    return info;
  };
}

catalog::Result<bool> model_withheld(const ModelEntry& e, const WithheldBy& withheld_by) {
  std::vector<std::string> paths{e.target_path};
  for (const auto& v : e.meta.variants) {
    for (const auto& f : v.files) paths.push_back(catalog::model_blob_path(e.meta.name, f.sha256));
  }
  std::sort(paths.begin(), paths.end());
  paths.erase(std::unique(paths.begin(), paths.end()), paths.end());
  for (const auto& p : paths) {
    auto by = withheld_by(p);
    if (!by) return std::unexpected(by.error());
    if (*by) return true;
  }
  return false;
}

catalog::Result<void> keep_withheld_models(std::vector<ModelEntry>& fresh,
                                           std::vector<ModelEntry> previous,
                                           const WithheldBy& withheld_by) {
  std::vector<ModelEntry> kept;
  for (auto& m : fresh) {
    // Refused by its files' check (its name binds): maybe only for want of them.
    if (!m.refused.empty() && catalog::check_name_binding(m.meta.name, m.target_path)) {
      auto withheld = model_withheld(m, withheld_by);
      if (!withheld) return std::unexpected(withheld.error());
      if (*withheld) continue;
    }
    kept.push_back(std::move(m));
  }
  for (auto& m : previous) {
    const bool listed = std::any_of(kept.begin(), kept.end(), [&](const ModelEntry& k) {
      return k.target_path == m.target_path;
    });
    if (listed) continue;
    auto withheld = model_withheld(m, withheld_by);
    if (!withheld) return std::unexpected(withheld.error());
    if (*withheld) kept.push_back(std::move(m));
  }
  fresh = std::move(kept);
  return {};
}

std::map<std::string, std::vector<ModelEntry>> index_models(std::vector<ModelEntry> entries) {
  std::map<std::string, std::string> owner;  // name -> the first remote with a valid version
  for (const auto& e : entries) {
    if (e.refused.empty()) owner.emplace(e.meta.name, e.remote);
  }
  std::map<std::string, std::vector<ModelEntry>> out;
  for (auto& e : entries) {
    if (e.refused.empty() && owner.at(e.meta.name) != e.remote) continue;
    out[e.meta.name].push_back(std::move(e));
  }
  for (auto& [_, versions] : out) {
    std::stable_sort(versions.begin(), versions.end(), [](const auto& a, const auto& b) {
      return b.meta.version.value < a.meta.version.value;
    });
  }
  return out;
}

nlohmann::json model_json(const ModelEntry& e) {
  nlohmann::json j = {{"remote", e.remote},
                      {"target_path", e.target_path},
                      {"length", e.length},
                      {"custom", catalog::to_json(e.meta)}};
  if (!e.refused.empty()) j["refused"] = e.refused;
  return j;
}

std::optional<ModelEntry> model_from_json(const std::string& remote, const nlohmann::json& j) {
  if (!j.is_object()) return std::nullopt;
  const auto path = j.find("target_path");
  const auto length = j.find("length");
  const auto custom = j.find("custom");
  if (path == j.end() || !path->is_string() || length == j.end() || !length->is_number_unsigned() ||
      custom == j.end()) {
    return std::nullopt;
  }
  auto meta = catalog::parse_model_metadata(*custom);
  if (!meta) return std::nullopt;
  ModelEntry e{remote, path->get<std::string>(), length->get<std::uint64_t>(), std::move(*meta),
               ""};
  if (const auto refused = j.find("refused"); refused != j.end() && refused->is_string()) {
    e.refused = refused->get<std::string>();
  }
  if (auto bound = catalog::check_name_binding(e.meta.name, e.target_path); !bound) {
    log::warn("catalog cache: remote {}: refused model target {} claiming model {}: {}", remote,
              e.target_path, e.meta.name, bound.error().message);
    e.refused = bound.error().message;
  } else if (e.refused.empty() && j.contains("refused")) {
    e.refused = "refused by an earlier refresh";  // not a string: still refused
  }
  return e;
}

std::vector<ModelEntry> models_from_cache(const std::string& remote, const nlohmann::json& doc) {
  std::vector<ModelEntry> out;
  const auto models = doc.find("models");
  if (models == doc.end() || !models->is_array()) return out;  // from before models
  for (const auto& j : *models) {
    if (auto e = model_from_json(remote, j)) out.push_back(std::move(*e));
  }
  return out;
}

std::vector<ProviderOffer> offers_of(const std::vector<ProviderView>& views) {
  std::vector<ProviderOffer> out;
  for (const auto& v : views) {
    ProviderOffer o{v.name, v.kind, v.state, v.ep_names, {}, v.vendor, v.devices};
    if (auto ort = catalog::parse_version_text(v.ort_min)) {
      o.ort_min = std::move(*ort);
    } else {
      o.state = common::ProviderState::incompatible;
    }
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace detail

std::vector<ModelEntry> Broker::catalog_models() const {
  std::lock_guard lock(mu_);
  std::vector<ModelEntry> out;
  for (const auto& [_, versions] : models_) out.insert(out.end(), versions.begin(), versions.end());
  return out;
}

bool Broker::has_model(const std::string& name, const std::string& version,
                       const std::string& variant) const {
  return store_.find_model(name, version, variant).has_value();
}

Result<std::vector<ModelListing>> Broker::list_models(const ModelListOptions& options) const {
  std::optional<catalog::Version> app_ort;
  if (!options.ort_version.empty()) {
    auto v = catalog::parse_version(options.ort_version);
    if (!v) {
      return fail(Errc::InvalidArgument, "invalid ONNX Runtime version: " + v.error().message);
    }
    app_ort = *v;
  }
  const auto offers = detail::offers_of(providers());
  std::map<std::pair<std::string, std::string>, std::set<std::string>> installed;
  for (const auto& m : store_.models()) installed[{m.name, m.version}].insert(m.variant);
  std::vector<ModelListing> out;
  for (auto& e : catalog_models()) {
    ModelListing row;
    if (auto it = installed.find({e.name(), e.version()}); it != installed.end()) {
      row.installed = it->second;
    }
    if (!e.refused.empty()) {
      row.plan.reason = "refused: " + e.refused;
    } else if (auto choice = plan_variant(e.meta, devices_, offers,
                                          VariantRequest{options.policy, app_ort, ""})) {
      row.plan = {choice->variant, choice->device, choice->ep, choice->reason};
    } else {
      row.plan.reason = choice.error().message;
    }
    row.entry = std::move(e);
    out.push_back(std::move(row));
  }
  return out;
}

Result<std::uint64_t> Broker::ensure_model(const RequestContext& ctx, const std::string& name,
                                           const ModelInstallOptions& options) {
  // 1. Arguments, then authority, then the catalog.
  if (!detail::valid_name(name)) return fail(Errc::InvalidArgument, "invalid model name");
  std::optional<catalog::Version> app_ort;
  if (!options.ort_version.empty()) {
    auto v = catalog::parse_version(options.ort_version);
    if (!v)
      return fail(Errc::InvalidArgument, "invalid ONNX Runtime version: " + v.error().message);
    app_ort = *v;
  }
  if (auto ok = options_.authorizer->check(ctx, Action::install); !ok) {
    return std::unexpected(ok.error());
  }
  std::optional<ModelEntry> entry;
  std::string refused;  // why the version asked for (or every version) is refused
  {
    std::lock_guard lock(mu_);
    const auto it = models_.find(name);
    if (it == models_.end()) {
      return fail(Errc::NotFound, "no trusted catalog lists a model named '" + name + "'");
    }
    for (const auto& e : it->second) {
      if (!options.version.empty() && e.version() != options.version) continue;
      if (!e.refused.empty()) {
        if (refused.empty()) refused = name + " " + e.version() + " is refused: " + e.refused;
        continue;
      }
      entry = e;  // newest first
      break;
    }
  }
  if (!entry) {
    if (!refused.empty()) return fail(Errc::VerificationFailed, refused);
    return fail(Errc::NotFound,
                "no trusted catalog lists version " + options.version + " of model '" + name + "'");
  }
  // 2. The variant: the one asked for (installed whatever this machine has: it
  //    may be for later, or for another app), else the one planned for this machine.
  std::string variant = options.variant;
  if (!variant.empty()) {
    if (std::ranges::find(entry->meta.variants, variant, &catalog::ModelVariant::id) ==
        entry->meta.variants.end()) {
      return fail(Errc::NotFound, name + " " + entry->version() + " has no variant " + variant);
    }
  } else {
    const auto offers = detail::offers_of(providers());
    auto choice =
        plan_variant(entry->meta, devices_, offers, VariantRequest{options.policy, app_ort, ""});
    if (!choice) return std::unexpected(choice.error());
    variant = choice->variant;
  }
  const std::string target = name + "/" + variant;
  // 3. Installed already: a job that checks it (as Verify does: its files are
  //    hashed) and repairs it when damaged, so callers wait the same way.
  if (auto running = jobs_.find_active(JobKind::model, target)) return running->id();
  if (store_.find_model(name, entry->version(), variant)) {
    auto job = jobs_.create(JobKind::model, target, ctx);
    job->describe(entry->version(), entry->remote);
    spawn([this, job, e = std::move(*entry), v = variant] { run_model_check(job, e, v); });
    return job->id();
  }
  if (!ctx.sender.empty() &&
      jobs_.active_count_for(ctx.sender) >= options_.config.daemon.max_jobs_per_client) {
    return fail(Errc::Busy, ctx.sender + " already runs the per-client maximum of jobs");
  }
  auto job = jobs_.create(JobKind::model, target, ctx);
  job->describe(entry->version(), entry->remote);
  spawn([this, job, e = std::move(*entry), v = variant] { run_model_install(job, e, v); });
  return job->id();
}

void Broker::run_model_check(std::shared_ptr<Job> job, ModelEntry entry, std::string variant) {
  job->set_state(JobState::verifying);
  auto problems = store_.model_problems(
      entry.name(), entry.version(), variant, [&](std::uint64_t done, std::uint64_t total) {
        job->set_progress(done, total);
        return !job->cancel_requested();  // a cancel (or the daemon stopping) ends the check
      });
  if (!problems && problems.error().code == catalog::Errc::not_found) {
    run_model_install(std::move(job), std::move(entry), std::move(variant));  // removed meanwhile
    return;
  }
  if (!problems) {
    job->fail(Error(problems.error()));
    return;
  }
  if (problems->empty()) {
    const auto total = job->snapshot().bytes_total;
    job->set_progress(total, total);
    job->succeed();
    return;
  }
  // Damaged: the package path's rule (the store reinstalls what fails its
  // check), through the committer.
  log::event(log::Level::warn, job_log_fields(job->snapshot()),
             "model {} {} ({}) is damaged, repairing: {}", entry.name(), entry.version(), variant,
             problems->front() + (problems->size() > 1 ? " (and more)" : ""));
  run_model_install(std::move(job), std::move(entry), std::move(variant), std::move(*problems));
}

}  // namespace epbrokerd::core
