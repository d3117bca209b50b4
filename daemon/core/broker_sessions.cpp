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
  if (sessions_.count_for(ctx.sender) >= options_.config.daemon.max_sessions_per_client) {
    return fail(Errc::Busy, ctx.sender + " holds the per-client maximum of sessions");
  }
  // 2. Which providers: asked-for ones, or every one the catalog or store knows
  //    (the cached views; only the granted ones are copied).
  const auto views = provider_views();
  SessionGrant grant;
  std::vector<store::LeaseId> leases;
  std::vector<std::string> lease_names;
  for (const auto& cached : *views) {
    if (!request.providers.empty() && std::find(request.providers.begin(), request.providers.end(),
                                                cached.name) == request.providers.end()) {
      continue;
    }
    ProviderView v = cached;
    if (app_ort && v.state == ProviderState::ready) {
      // The app's ORT against the installed package's minimum (a ready view's
      // ort_min comes from the installed manifest).
      auto ort_min = catalog::parse_version(v.ort_min);
      if (ort_min && *ort_min > *app_ort) {
        v.state = ProviderState::incompatible;
        v.reason = "needs ONNX Runtime >= " + v.ort_min + ", app has " + request.ort_version;
        v.library_path.clear();
      }
    }
    if (v.state == ProviderState::ready) {
      auto lease = store_.acquire_lease(v.name, v.version, ctx.sender);
      if (!lease) continue;
      leases.push_back(*lease);
      lease_names.push_back(v.name + "/" + v.version);
    } else if (v.state == ProviderState::available && request.download) {
      auto job = ensure_provider(ctx, v.name);
      if (job) {
        v.state = ProviderState::installing;
        v.job = *job;
      } else {
        v.reason = job.error().message;
      }
    }
    grant.providers.push_back(std::move(v));
  }
  // 3. The lease itself.
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
  return sessions_.owner_vanished(sender);
}

}  // namespace epbrokerd::core
