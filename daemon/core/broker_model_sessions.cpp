// Models in sessions (RequestSession's option "models"): which variant and
// version each asked-for model gets, its lease, or the install that brings it.
// The providers' part is broker_sessions.cpp; contracts: broker.hpp.
#include <algorithm>

#include "daemon/core/broker.hpp"
#include "daemon/core/broker_internal.hpp"
#include "daemon/core/variant_plan.hpp"

namespace epbrokerd::core {

using common::ProviderState;

namespace {

// Whether an app with `app_ort` (unset: not checked) can load variant `v`.
bool loads(const std::optional<catalog::Version>& app_ort, const catalog::ModelVariant& v) {
  return !app_ort || !(*app_ort < v.ort_min.value);
}

std::vector<std::string> device_names(const catalog::ModelVariant& v) {
  std::vector<std::string> out;
  for (const auto d : v.devices) out.emplace_back(catalog::device_type_name(d));
  return out;
}

// The installed variants of model `name` (`variant` only, unless ""), newest
// version first.
std::vector<store::InstalledModel> installed_of(const store::Store& store, const std::string& name,
                                                const std::string& variant) {
  std::vector<store::InstalledModel> out;
  for (auto& m : store.models()) {
    if (m.name == name && (variant.empty() || m.variant == variant)) out.push_back(std::move(m));
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return b.metadata.version.value < a.metadata.version.value;
  });
  return out;
}

}  // namespace

std::vector<Broker::ModelAsk> Broker::plan_session_models(
    const SessionRequest& request, const std::optional<catalog::Version>& app_ort,
    const std::vector<ProviderOffer>& offers) const {
  std::vector<ModelAsk> out;
  if (!request.models) return out;
  const auto policy = common::parse_policy(request.policy).value_or(common::Policy::default_policy);
  for (const auto& [name, asked] : *request.models) {
    ModelAsk a;
    a.name = name;
    a.variant = asked;
    ModelGrant& g = a.grant;
    g.name = name;
    std::vector<ModelEntry> listed;  // newest first
    {
      std::lock_guard lock(mu_);
      if (const auto it = models_.find(name); it != models_.end()) listed = it->second;
    }
    const auto installed = installed_of(store_, name, "");
    const auto newest_valid =
        std::ranges::find_if(listed, [](const ModelEntry& e) { return e.refused.empty(); });
    if (listed.empty() && installed.empty()) {
      g.state = ProviderState::incompatible;
      g.reason = "no trusted catalog lists a model named '" + name + "', and none is installed";
      out.push_back(std::move(a));
      continue;
    }
    // 1. The variant: the one asked for, else the one planned for this machine
    //    from the newest valid version the catalogs list (else the newest
    //    installed one), as ListModels' "planned" and EnsureModel say.
    if (a.variant.empty()) {
      const catalog::ModelMetadata* meta = nullptr;
      if (newest_valid != listed.end()) {
        meta = &newest_valid->meta;
      } else if (!installed.empty()) {
        meta = &installed.front().metadata;
      }
      if (meta == nullptr) {
        g.state = ProviderState::refused;
        g.reason = name + " " + listed.front().version() + " is refused: " + listed.front().refused;
        out.push_back(std::move(a));
        continue;
      }
      auto choice = plan_variant(*meta, devices_, offers, VariantRequest{policy, app_ort, ""});
      if (!choice) {
        g.state = ProviderState::incompatible;
        g.reason = choice.error().message;
        out.push_back(std::move(a));
        continue;
      }
      a.variant = choice->variant;
    }
    g.variant = a.variant;
    // 2. Installed already: a version holding it that the app can load.
    for (const auto& m : installed) {
      const auto* v = store::find_variant(m.metadata, a.variant);
      if (m.variant != a.variant || v == nullptr || !loads(app_ort, *v)) continue;
      a.installed = true;
      g.version = m.version;
      g.devices = device_names(*v);
      g.eps = v->eps;
      break;
    }
    // 3. Else what an install would bring: the newest valid version listing
    //    that variant which the app can load.
    std::string why;
    for (const auto& e : listed) {
      if (!e.refused.empty()) {
        if (why.empty()) why = name + " " + e.version() + " is refused: " + e.refused;
        continue;
      }
      const auto* v = store::find_variant(e.meta, a.variant);
      if (v == nullptr) continue;
      if (!loads(app_ort, *v)) {
        if (why.empty()) {
          why = name + " " + e.version() + " variant " + a.variant + " needs ONNX Runtime " +
                v->ort_min.text + " or newer";
        }
        continue;
      }
      a.entry = e;
      break;
    }
    if (a.installed) {
      // Leased in grant_models(); this says why not, should that fail.
      g.state = a.entry ? ProviderState::available : ProviderState::incompatible;
      g.reason = "not installed any more";
    } else if (a.entry) {
      const auto* v = store::find_variant(a.entry->meta, a.variant);
      g.version = a.entry->version();
      g.devices = device_names(*v);
      g.eps = v->eps;
      g.state = ProviderState::available;
      g.reason = "not installed (a session with download installs it)";
    } else if (newest_valid == listed.end() && !listed.empty() && installed.empty()) {
      g.state = ProviderState::refused;
      g.reason = why;
    } else {
      g.state = ProviderState::incompatible;
      g.reason = !why.empty()
                     ? why
                     : "no installed or listed version of " + name + " has variant " + a.variant;
    }
    out.push_back(std::move(a));
  }
  return out;
}

std::vector<ModelGrant> Broker::grant_models(
    const RequestContext& ctx, const SessionRequest& request, std::vector<ModelAsk> asks,
    const std::optional<catalog::Version>& app_ort, const std::optional<Result<void>>& may_install,
    std::vector<store::LeaseId>& leases, std::vector<std::string>& lease_names) {
  std::vector<ModelGrant> out;
  for (auto& a : asks) {
    ModelGrant g = std::move(a.grant);
    if (a.installed) {
      // The newest installed version holding the variant that the app can load,
      // chosen and leased under the lifecycle's lock: no removal or collection
      // slips between the choice and the lease.
      std::lock_guard lock(life_mu_);
      for (const auto& m : installed_of(store_, a.name, a.variant)) {
        const auto* v = store::find_variant(m.metadata, a.variant);
        if (v == nullptr || !loads(app_ort, *v)) continue;
        auto lease = store_.acquire_model_lease(m.name, m.version, m.variant, ctx.sender);
        if (!lease) continue;
        leases.push_back(*lease);
        lease_names.push_back(detail::model_lease_name(m.name, m.version, m.variant));
        g.version = m.version;
        g.state = ProviderState::ready;
        g.path = m.root;
        g.main = m.main;
        g.files.clear();
        for (const auto& f : m.files) g.files.push_back(f.path);
        g.devices = device_names(*v);
        g.eps = v->eps;
        g.reason.clear();
        break;
      }
    }
    if (g.state == ProviderState::available && a.entry && may_install) {
      // (may_install is set when downloads were asked for and something is to
      // install.) ensure_model() decides the authorization again, from the same
      // answer.
      ModelInstallOptions o;
      o.version = a.entry->version();
      o.variant = a.variant;
      o.policy = common::parse_policy(request.policy).value_or(common::Policy::default_policy);
      o.ort_version = request.ort_version;
      auto job = *may_install ? ensure_model(ctx, a.name, o)
                              : Result<std::uint64_t>(std::unexpected(may_install->error()));
      if (job) {
        g.version = a.entry->version();
        g.state = ProviderState::installing;
        g.job = *job;
        g.reason.clear();
      } else {
        g.reason = job.error().message;
      }
    }
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace epbrokerd::core
