// Installed models' lifecycle: RemoveModel and the models' part of
// CollectGarbage. Both run under life_mu_, as session leases are taken, so no
// lease slips between the check and the removal. Contracts: broker.hpp.
#include <algorithm>

#include "daemon/core/broker.hpp"
#include "daemon/core/broker_internal.hpp"
#include "daemon/log/log.hpp"

namespace epbrokerd::core {

using namespace detail;
using common::HistoryAction;

Result<std::vector<VersionRef>> Broker::remove_model(const RequestContext& ctx,
                                                     const std::string& name,
                                                     const ModelRemoveOptions& options) {
  // 1. Arguments, then authority.
  if (!valid_name(name)) return fail(Errc::InvalidArgument, "invalid model name");
  if (!options.version.empty() && (!catalog::parse_version(options.version) ||
                                   options.version.find('/') != std::string::npos)) {
    return fail(Errc::InvalidArgument, "invalid model version");
  }
  if (!options.variant.empty() && !valid_variant_id(options.variant)) {
    return fail(Errc::InvalidArgument, "invalid variant id");
  }
  if (auto ok = options_.authorizer->check(ctx, Action::manage); !ok) {
    return std::unexpected(ok.error());
  }
  std::string what = "model " + name;
  if (!options.version.empty()) what += " " + options.version;
  if (!options.variant.empty()) what += " variant " + options.variant;
  const auto version =
      options.version.empty() ? std::nullopt : std::optional<std::string_view>(options.version);
  const auto variant =
      options.variant.empty() ? std::nullopt : std::optional<std::string_view>(options.variant);
  std::vector<VersionRef> removed;
  {
    // 2. What matches, and its leases, under the lock sessions lease under.
    std::lock_guard lock(life_mu_);
    std::size_t matching = 0;
    std::size_t leased = 0;
    for (const auto& m : store_.models()) {
      if (m.name != name || (version && m.version != *version) ||
          (variant && m.variant != *variant)) {
        continue;
      }
      ++matching;
      leased += store_.model_lease_count(m.name, m.version, m.variant);
    }
    if (matching == 0) return fail(Errc::NotFound, what + " is not installed");
    if (leased > 0 && !options.now) {
      return fail(Errc::Busy, what + " is in use: " + std::to_string(leased) +
                                  " lease(s); nothing removed (now removes it anyway)");
    }
    // 3. All or nothing; files a remaining variant shares stay (the store).
    auto gone = store_.remove_model(name, version, variant, options.now);
    if (!gone) {
      const Error err(gone.error());
      record(ctx, HistoryAction::remove, name, "", "", result_name(err), what + ": " + err.message);
      return std::unexpected(err);
    }
    for (const auto& m : *gone) {
      removed.push_back({m.name, m.version, m.variant});
      record(
          ctx, HistoryAction::remove, name, m.version + "/" + m.variant, "", "ok",
          "model variant removed" +
              (leased > 0 ? " (" + std::to_string(leased) + " lease(s) ignored)" : std::string()));
    }
  }
  if (!removed.empty() && listener_) listener_->providers_changed();
  return removed;
}

std::vector<VersionRef> Broker::collect_models_locked(const RequestContext& ctx) {
  const auto installed = store_.models();
  // The newest installed version of each (model, variant id).
  std::map<std::pair<std::string, std::string>, const store::InstalledModel*> newest;
  for (const auto& m : installed) {
    auto& n = newest[{m.name, m.variant}];
    if (n == nullptr || n->metadata.version.value < m.metadata.version.value) n = &m;
  }
  std::vector<VersionRef> removed;
  for (const auto& m : installed) {
    const auto* n = newest.at({m.name, m.variant});
    if (!(m.metadata.version.value < n->metadata.version.value)) continue;
    if (store_.model_lease_count(m.name, m.version, m.variant) > 0) continue;
    auto gone =
        store_.remove_model(m.name, std::string_view(m.version), std::string_view(m.variant));
    const std::string from = m.version + "/" + m.variant;
    if (!gone) {
      // A lease taken meanwhile (Busy): it stays, for the next collection.
      if (gone.error().code != catalog::Errc::busy) {
        record(ctx, HistoryAction::gc, m.name, from, "", result_name(Error(gone.error())),
               gone.error().message);
      }
      continue;
    }
    removed.push_back({m.name, m.version, m.variant});
    record(ctx, HistoryAction::gc, m.name, from, "", "ok",
           "model variant files deleted (superseded by " + n->version + ")");
  }
  return removed;
}

}  // namespace epbrokerd::core
