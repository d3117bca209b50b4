// Sessions: RequestSession (the granted views, their leases, installs on request) and
// their release.
#include "daemon/core/broker.hpp"

#include <algorithm>

#include "daemon/core/broker_internal.hpp"

namespace epbrokerd::core {

using namespace detail;
using common::ProviderState;
namespace fs = std::filesystem;

// ---- sessions -------------------------------------------------------------------

Result<SessionGrant> Broker::request_session(const RequestContext& ctx,
                                             const SessionRequest& request) {
  // 1. Validate everything before touching anything.
  if (!common::parse_policy(request.policy)) {
    return fail(Errc::InvalidArgument, "unknown policy '" + request.policy + "'");
  }
  std::optional<catalog::Version> app_ort;
  if (!request.ort_version.empty()) {
    auto v = catalog::parse_version(request.ort_version);
    if (!v) return fail(Errc::InvalidArgument, "ort_version: " + v.error().message);
    app_ort = *v;
  }
  if (request.providers.size() > 64) return fail(Errc::InvalidArgument, "too many providers");
  for (const auto& n : request.providers) {
    if (!valid_name(n)) return fail(Errc::InvalidArgument, "invalid provider name");
  }
  if (request.models) {
    if (request.models->size() > kMaxSessionModels) {
      return fail(Errc::InvalidArgument,
                  "too many models (at most " + std::to_string(kMaxSessionModels) + ")");
    }
    for (const auto& [n, variant] : *request.models) {
      if (!valid_name(n)) return fail(Errc::InvalidArgument, "invalid model name");
      if (!variant.empty() && !valid_variant_id(variant)) {
        return fail(Errc::InvalidArgument, "invalid variant id for model " + n);
      }
    }
  }
  if (sessions_.count_for(ctx.sender) >= options_.config.daemon.max_sessions_per_client) {
    return fail(Errc::Busy, ctx.sender + " holds the per-client maximum of sessions");
  }
  // 2. Which providers: asked-for ones, or every one the catalog or store knows
  //    (the cached views, one row per package; only the granted ones are copied);
  //    with models, only asked-for ones. Which models: each one's variant, and
  //    whether it is installed (broker_model_sessions.cpp).
  const auto views = provider_views();
  auto wanted = [&](const ProviderView& v) {
    return (request.providers.empty() && !request.models) ||
           std::find(request.providers.begin(), request.providers.end(), v.name) !=
               request.providers.end();
  };
  auto asks = plan_session_models(request, app_ort, offers_of(*views));
  // 3. Installs: one authorization for all the packages and models to install,
  //    decided before anything is leased; the call ends here when it must be
  //    asked first (the D-Bus layer asks polkit once and calls again with the
  //    answer).
  std::optional<Result<void>> may_install;
  if (request.download && (std::any_of(views->begin(), views->end(),
                                       [&](const ProviderView& v) {
                                         return v.state == ProviderState::available && wanted(v);
                                       }) ||
                           std::any_of(asks.begin(), asks.end(), [](const ModelAsk& a) {
                             return !a.installed && a.entry.has_value();
                           }))) {
    may_install = options_.authorizer->check(ctx, Action::install);
    if (!*may_install && ctx.authorization && ctx.authorization->wants_asking()) {
      return std::unexpected(may_install->error());
    }
  }
  SessionGrant grant;
  std::vector<store::LeaseId> leases;
  std::vector<std::string> lease_names;
  for (const auto& cached : *views) {
    if (!wanted(cached)) continue;
    ProviderView v = cached;
    if (v.state == ProviderState::ready) {
      // 4. One version per package: the newest installed one the app's ORT can
      //    load, not above the current one; leased under the lifecycle's lock,
      //    so no removal or collection slips between the choice and the lease.
      std::lock_guard lock(life_mu_);
      const auto installed = installed_versions_locked(v.name);
      const auto lc = lifecycle_.get(v.name);
      const auto plan = plan_package(installed, lc, plan_settings());
      const auto choice = grant_version(installed, lc, plan, app_ort);
      const auto package =
          choice.version.empty() ? std::nullopt : store_.find(v.name, choice.version);
      if (!package) {
        v.state = ProviderState::incompatible;
        v.reason = choice.reason.empty() ? "not installed any more" : choice.reason;
        v.library_path.clear();
        v.versions.clear();
      } else {
        if (choice.version != v.version) {
          v.version = package->version();
          v.ort_min = package->manifest.ep.ort_min.text;
          v.ep_names = package->manifest.ep.ep_names;
          v.library_path = package->library_path().string();
          v.size = package->size_bytes();
        }
        if (choice.for_older_ort) {
          // Kept while such apps keep asking (keep_for_older_ort_days from the
          // last request); written at most once an hour per version.
          auto& when = lifecycle_.at(v.name).older_ort[choice.version];
          const auto t = now();
          if (t - when >= 3600) {
            when = t;
            save_lifecycle_locked();
          }
        }
        auto lease = store_.acquire_lease(v.name, v.version, ctx.sender);
        if (!lease) continue;
        leases.push_back(*lease);
        lease_names.push_back(v.name + "/" + v.version);
      }
    } else if (v.state == ProviderState::available && may_install) {
      // (may_install is set when downloads were asked for and one is available.)
      // ensure_provider() decides the authorization again, from the same answer.
      auto job = *may_install ? ensure_provider(ctx, v.name)
                              : Result<std::uint64_t>(std::unexpected(may_install->error()));
      if (job) {
        v.state = ProviderState::installing;
        v.job = *job;
      } else {
        v.reason = job.error().message;
      }
    }
    grant.providers.push_back(std::move(v));
  }
  grant.models =
      grant_models(ctx, request, std::move(asks), app_ort, may_install, leases, lease_names);
  // 5. The lease itself.
  auto id = sessions_.open(ctx, lease_names);
  if (!id) {
    for (auto l : leases) store_.release_lease(l);
    return std::unexpected(id.error());
  }
  {
    std::lock_guard lock(mu_);
    session_leases_[*id] = std::move(leases);
  }
  grant.session = *id;
  return grant;
}

Result<void> Broker::release_session(const RequestContext& ctx, std::uint64_t id) {
  return sessions_.release(ctx, id);
}

std::vector<std::uint64_t> Broker::client_vanished(const std::string& sender) {
  auto ended = sessions_.owner_vanished(sender);
  // Leases adopted from the previous instance (adopt_leases()) are the store's
  // under the owner's name.
  if (store_.release_owner(sender) > 0) leases_released();
  return ended;
}

}  // namespace epbrokerd::core
