// Client's model calls (Broker1.ListModels, EnsureModel, RemoveModel and
// RequestSession's `models` option; see dbus/org.epbroker.Broker1.xml) and
// ModelLease.
#include <algorithm>
#include <filesystem>
#include <utility>

#include "client/src/connection.hpp"
#include "client/src/convert.hpp"
#include "client/src/job_wait.hpp"
#include "client/src/store_path.hpp"
#include "common/wire.hpp"
#include "epbroker/client.hpp"

namespace epbroker {

using detail::checked;

namespace {

namespace fs = std::filesystem;

// The Errc for a model a session did not grant "ready", by its state.
Errc errc_for(const std::string& state) {
  const auto s = common::parse_provider_state(state);
  if (!s) return Errc::protocol;
  switch (*s) {
    case common::ProviderState::available:  // not installed (and not asked to install)
      return Errc::not_found;
    case common::ProviderState::installing:  // another caller's install runs
      return Errc::busy;
    case common::ProviderState::incompatible:
      return Errc::incompatible;
    case common::ProviderState::refused:
      return Errc::verification_failed;
    case common::ProviderState::ready:
    case common::ProviderState::revoked:
      break;
  }
  return Errc::protocol;
}

// "" when the files of a ready grant may be handed to the app: its directory and
// main file inside the store this library trusts (store_path.hpp; a compromised
// daemon cannot point the app elsewhere), the main file inside the directory, and
// every file relative to it without leaving it. Else why not.
std::string refuse_model_files(const detail::GrantedModel& g) {
  const std::string store = detail::trusted_store_dir();
  if (auto why = detail::refuse_store_dir(g.path, store); !why.empty()) return why;
  if (auto why = detail::refuse_library_path(g.main, store); !why.empty()) return why;
  std::error_code ec;
  const fs::path dir = fs::canonical(g.path, ec);
  const fs::path main = ec ? fs::path() : fs::canonical(g.main, ec);
  if (ec) return g.main + " cannot be resolved: " + ec.message();
  const fs::path rel = main.lexically_relative(dir);
  if (rel.empty() || *rel.begin() == "..") return g.main + " is outside " + g.path;
  for (const auto& f : g.files) {
    const fs::path p(f);
    if (f.empty() || p.is_absolute() ||
        std::any_of(p.begin(), p.end(), [](const fs::path& part) { return part == ".."; })) {
      return "file '" + f + "' is not a path inside " + g.path;
    }
  }
  return "";
}

// The grant of model `name` in a session asked for it alone, checked: ready, the
// variant and version asked for, files inside the store. Throws Error.
detail::GrantedModel checked_grant(detail::SessionGrants grants, const std::string& name,
                                   const std::string& variant, const ModelOptions& options) {
  const auto it = std::find_if(grants.models.begin(), grants.models.end(),
                               [&](const detail::GrantedModel& g) { return g.name == name; });
  if (it == grants.models.end()) {
    throw Error(Errc::protocol, "epbrokerd granted no model '" + name + "' in the session");
  }
  detail::GrantedModel g = std::move(*it);
  const std::string what = name + (g.variant.empty() ? "" : " " + g.variant);
  if (g.state != common::provider_state_name(common::ProviderState::ready)) {
    const Errc code = errc_for(g.state);
    std::string message = what + " is " + (g.state.empty() ? "not granted" : g.state);
    if (!g.reason.empty()) message += ": " + g.reason;
    if (code == Errc::not_found && !options.download) message += " (not installed)";
    throw Error(code, message);
  }
  if (!variant.empty() && g.variant != variant) {
    throw Error(Errc::protocol, "epbrokerd granted variant '" + g.variant + "' of " + name +
                                    " for variant '" + variant + "'");
  }
  if (!options.version.empty() && g.version != options.version) {
    throw Error(Errc::not_found, "a session gets the newest installed version of " + what + ", " +
                                     g.version + ", not " + options.version +
                                     " (remove_model() the newer one to lease this one)");
  }
  if (auto why = refuse_model_files(g); !why.empty()) {
    throw Error(Errc::verification_failed, "refused the daemon's files for " + what + ": " + why);
  }
  return g;
}

// "NAME/VARIANT" (a model job's Target) -> VARIANT; "" when it is not `name`'s.
std::string variant_of_target(const std::string& target, const std::string& name) {
  const std::string prefix = name + "/";
  return target.starts_with(prefix) ? target.substr(prefix.size()) : std::string();
}

// Broker1.EnsureModel, and its job waited for (see Client::ensure_ready); returns
// the variant it installed (or found installed).
std::string run_model_job(detail::Connection& conn, const std::string& name,
                          const ModelOptions& options, const ProgressCallback& on_progress,
                          const CancelToken& cancel) {
  if (cancel.cancelled()) throw Error(Errc::cancelled, "cancelled before the install started");
  detail::JobWatch watch(conn);  // before the call: the job may move on at once
  const auto opts = detail::to_ensure_model_options(options);
  const std::string job =
      detail::checked_starting([&] { return conn.broker->EnsureModel(name, opts); });
  const Progress done = detail::wait_for_job(watch, job, on_progress, cancel);
  std::string variant = variant_of_target(done.target, name);
  if (variant.empty()) {
    throw Error(Errc::protocol,
                "model job " + job + " names no variant of " + name + ": '" + done.target + "'");
  }
  if (!options.variant.empty() && variant != options.variant) {
    throw Error(Errc::protocol, "model job " + job + " installed variant " + variant + " of " +
                                    name + " for variant " + options.variant);
  }
  return variant;
}

const std::string kNone;
const std::vector<std::string> kNoList;

}  // namespace

// ---- Client -------------------------------------------------------------------------

std::vector<ModelInfo> Client::models(Policy policy, const std::string& ort_version) {
  const auto opts = detail::to_list_models_options(policy, ort_version);
  const auto dicts = checked([&] { return conn_->broker->ListModels(opts); });
  std::vector<ModelInfo> out;
  out.reserve(dicts.size());
  for (const auto& d : dicts) out.push_back(detail::to_model_info(d));
  return out;
}

InstalledModel Client::install_model(const std::string& name, const ModelOptions& options,
                                     const ProgressCallback& on_progress,
                                     const CancelToken& cancel) {
  const std::string variant = run_model_job(*conn_, name, options, on_progress, cancel);
  // The newest version holding it, or the one asked for (models() lists newest first).
  for (const auto& m : models(options.policy, options.ort_version)) {
    if (m.name != name || (!options.version.empty() && m.version != options.version)) continue;
    for (const auto& v : m.variants) {
      if (v.id == variant && v.installed) return InstalledModel{m.name, m.version, v.id, v.size};
    }
  }
  // Removed again between the job's end and this call.
  throw Error(Errc::not_found,
              name + " " + variant + " was installed but is no longer listed as installed");
}

ModelLease Client::ensure_model(const std::string& name, const ModelOptions& options,
                                const ProgressCallback& on_progress, const CancelToken& cancel) {
  ModelOptions asked = options;
  if (options.download) {
    // The session asks for the variant the job installed (the planned one when
    // none was given), not for a new plan.
    asked.variant = run_model_job(*conn_, name, options, on_progress, cancel);
  }
  // By hand, as request_session() does (the reply's dicts read without Variants).
  auto reply = detail::checked_starting([&] {
    auto& proxy = conn_->broker->raw();
    auto call = proxy.createMethodCall(detail::kBrokerInterface, "RequestSession");
    call << detail::to_model_session_options(name, asked);
    return proxy.callMethod(call);
  });
  sdbus::ObjectPath path;
  checked([&] { reply >> path; });
  // Held from here: a failed check below releases the lease on the way out.
  Session session(conn_, path, {});
  auto grants = checked([&] { return detail::read_session_grants(reply); });
  auto grant = checked_grant(std::move(grants), name, asked.variant, options);
  ModelLease lease;
  lease.model_ = std::make_unique<detail::GrantedModel>(std::move(grant));
  lease.session_ = std::move(session);
  return lease;
}

std::vector<RemovedModel> Client::remove_model(const std::string& name, const std::string& version,
                                               const std::string& variant, bool now) {
  const auto opts = detail::to_remove_model_options(version, variant, now);
  const auto dicts = checked([&] {
    return detail::with_method_timeout(*conn_, detail::kDeletingCallTimeoutUsec,
                                       [&] { return conn_->broker->RemoveModel(name, opts); });
  });
  std::vector<RemovedModel> out;
  out.reserve(dicts.size());
  for (const auto& d : dicts) out.push_back(detail::to_removed_model(d));
  return out;
}

// ---- ModelLease -----------------------------------------------------------------------

ModelLease::ModelLease() noexcept = default;
ModelLease::~ModelLease() = default;  // ~Session releases, errors ignored
ModelLease::ModelLease(ModelLease&& other) noexcept = default;
ModelLease& ModelLease::operator=(ModelLease&& other) noexcept = default;

const std::string& ModelLease::name() const noexcept { return model_ ? model_->name : kNone; }
const std::string& ModelLease::version() const noexcept { return model_ ? model_->version : kNone; }
const std::string& ModelLease::variant() const noexcept { return model_ ? model_->variant : kNone; }
const std::string& ModelLease::path() const noexcept { return model_ ? model_->path : kNone; }
const std::string& ModelLease::main() const noexcept { return model_ ? model_->main : kNone; }
const std::vector<std::string>& ModelLease::files() const noexcept {
  return model_ ? model_->files : kNoList;
}
const std::vector<std::string>& ModelLease::devices() const noexcept {
  return model_ ? model_->devices : kNoList;
}
const std::vector<std::string>& ModelLease::eps() const noexcept {
  return model_ ? model_->eps : kNoList;
}
const std::string& ModelLease::session_path() const noexcept { return session_.path(); }
bool ModelLease::active() const noexcept { return session_.active(); }

void ModelLease::release() { session_.release(); }

}  // namespace epbroker
