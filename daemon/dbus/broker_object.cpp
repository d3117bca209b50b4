#include "daemon/dbus/broker_object.hpp"

#include <algorithm>
#include <charconv>
#include <memory>
#include <optional>
#include <stdexcept>

#include "common/wire.hpp"
#include "daemon/core/broker.hpp"
#include "daemon/dbus/authorized_call.hpp"
#include "daemon/dbus/convert.hpp"
#include "daemon/dbus/errors.hpp"
#include "daemon/dbus/lifecycle.hpp"
#include "daemon/dbus/options.hpp"
#include "daemon/dbus/service.hpp"
#include "daemon/log/log.hpp"

namespace epbrokerd::dbus {

using Dicts = std::vector<std::map<std::string, sdbus::Variant>>;

namespace {

// N of job_path(N); nullopt for any other path.
std::optional<std::uint64_t> job_id_of(const std::string& path) {
  const std::string prefix = job_path(0).substr(0, job_path(0).size() - 1);
  if (!path.starts_with(prefix) || path.size() == prefix.size()) return std::nullopt;
  std::uint64_t id = 0;
  const char* end = path.data() + path.size();
  const auto [p, ec] = std::from_chars(path.data() + prefix.size(), end, id);
  if (ec != std::errc() || p != end) return std::nullopt;
  return id;
}

}  // namespace

BrokerObject::BrokerObject(sdbus::IConnection& conn, Service& service)
    : AdaptorInterfaces(conn, kObjectPath), service_(service) {
  registerAdaptor();
}

BrokerObject::~BrokerObject() { unregisterAdaptor(); }

Dicts BrokerObject::ListDevices() {
  return guarded([&] {
    const auto call = service_.enter_call(getObject(), "ListDevices", false);
    Dicts out;
    for (const auto& d : service_.broker().devices()) out.push_back(to_dict(d));
    return out;
  });
}

Dicts BrokerObject::ListProviders() {
  return guarded([&] {
    const auto call = service_.enter_call(getObject(), "ListProviders", false);
    Dicts out;
    for (const auto& p : service_.broker().providers()) out.push_back(to_dict_cached(p));
    return out;
  });
}

void BrokerObject::EnsureProvider(sdbus::Result<sdbus::ObjectPath>&& result, std::string name) {
  authorized(
      service_, getObject(), "EnsureProvider", true, std::move(result),
      [this, name = std::move(name)](const core::RequestContext& ctx) {
        return service_.broker().ensure_provider(ctx, name);
      },
      [this](std::uint64_t id) { return service_.publish_job(id); });
}

Dicts BrokerObject::ListModels(const Options& options) {
  return guarded([&] {
    const auto call = service_.enter_call(getObject(), "ListModels", false);
    const auto listed =
        value_or_throw(service_.broker().list_models(parse_model_list_options(options)));
    Dicts out;
    for (const auto& m : listed) out.push_back(to_dict(m));
    return out;
  });
}

void BrokerObject::EnsureModel(sdbus::Result<sdbus::ObjectPath>&& result, std::string name,
                               Options options) {
  // A bad option is refused before anyone is asked.
  std::optional<core::ModelInstallOptions> install;
  try {
    guarded([&] { install = parse_model_install_options(options); });
  } catch (const sdbus::Error& e) {
    answer_error(result, e);
    return;
  }
  authorized(
      service_, getObject(), "EnsureModel", true, std::move(result),
      [this, name = std::move(name), install = *install](const core::RequestContext& ctx) {
        auto id = service_.broker().ensure_model(ctx, name, install);
        if (id) {
          log::info("ensure model {}{}{} for {} (uid {}): job {}", name,
                    install.version.empty() ? std::string() : "@" + install.version,
                    install.variant.empty() ? std::string() : "/" + install.variant, ctx.sender,
                    ctx.uid, *id);
        }
        return id;
      },
      [this](std::uint64_t id) { return service_.publish_job(id); });
}

void BrokerObject::InstallProvider(sdbus::Result<sdbus::ObjectPath>&& result, std::string name,
                                   Options options) {
  // A bad option is refused before anyone is asked.
  std::optional<core::InstallOptions> install;
  try {
    guarded([&] { install = parse_install_options(options); });
  } catch (const sdbus::Error& e) {
    answer_error(result, e);
    return;
  }
  authorized(
      service_, getObject(), "InstallProvider", true, std::move(result),
      [this, name = std::move(name), install = *install](const core::RequestContext& ctx) {
        auto id = service_.broker().install_provider(ctx, name, install);
        if (id) {
          log::info("install {}@{}{} for {} (uid {}): job {}", name,
                    install.version.empty() ? std::string("newest") : install.version,
                    install.allow_older ? " (older allowed)" : "", ctx.sender, ctx.uid, *id);
        }
        return id;
      },
      [this](std::uint64_t id) { return service_.publish_job(id); });
}

void BrokerObject::Update(sdbus::Result<Dicts>&& result, std::vector<std::string> names,
                          Options options) {
  std::optional<UpdateOptions> update;
  try {
    guarded([&] {
      check_update_names(names);
      update = parse_update_options(options);
    });
  } catch (const sdbus::Error& e) {
    answer_error(result, e);
    return;
  }
  const bool dry_run = update->dry_run;
  authorized(
      service_, getObject(), "Update", true, std::move(result),
      [this, names = std::move(names), dry_run](const core::RequestContext& ctx) {
        auto changes = service_.broker().update(ctx, names, dry_run);
        if (!changes) return changes;
        std::size_t moving = 0;
        for (const auto& c : *changes) {
          if (c.from == c.to) continue;
          ++moving;
          log::info("update{} {}: {} -> {} for {} (uid {}){}", dry_run ? " (dry run)" : "", c.name,
                    c.from, c.to, ctx.sender, ctx.uid,
                    c.job != 0 ? ": job " + std::to_string(c.job) : std::string());
        }
        log::info("update{} for {} (uid {}): {} of {} package(s) move", dry_run ? " (dry run)" : "",
                  ctx.sender, ctx.uid, moving, changes->size());
        return changes;
      },
      [this](std::vector<core::UpdateChange> changes) {
        Dicts out;
        for (const auto& c : changes) {
          if (c.job != 0) service_.publish_job(c.job);
          out.push_back(to_dict(c));
        }
        return out;
      });
}

void BrokerObject::Hold(sdbus::Result<>&& result, std::string name) {
  authorized(
      service_, getObject(), "Hold", false, std::move(result),
      [this, name = std::move(name)](const core::RequestContext& ctx) {
        auto ok = service_.broker().hold(ctx, name);
        if (ok) log::info("held {} for {} (uid {})", name, ctx.sender, ctx.uid);
        return ok;
      },
      [] {});
}

void BrokerObject::Unhold(sdbus::Result<>&& result, std::string name) {
  authorized(
      service_, getObject(), "Unhold", false, std::move(result),
      [this, name = std::move(name)](const core::RequestContext& ctx) {
        auto ok = service_.broker().unhold(ctx, name);
        if (ok) log::info("unheld {} for {} (uid {})", name, ctx.sender, ctx.uid);
        return ok;
      },
      [] {});
}

void BrokerObject::Rollback(sdbus::Result<std::string, std::string>&& result, std::string name) {
  authorized(
      service_, getObject(), "Rollback", false, std::move(result),
      [this, name = std::move(name)](const core::RequestContext& ctx) {
        auto change = service_.broker().rollback(ctx, name);
        if (change) {
          log::info("rolled {} back from {} to {} for {} (uid {})", name, change->from, change->to,
                    ctx.sender, ctx.uid);
        }
        return change;
      },
      [](core::UpdateChange change) {
        return std::tuple<std::string, std::string>(std::move(change.from), std::move(change.to));
      });
}

Dicts BrokerObject::History(const std::string& name) {
  return guarded([&] {
    const auto call = service_.enter_call(getObject(), "History", false);
    Dicts out;
    for (const auto& e : service_.broker().history(name)) out.push_back(to_dict(e));
    return out;
  });
}

void BrokerObject::CollectGarbage(sdbus::Result<Dicts>&& result) {
  authorized(
      service_, getObject(), "CollectGarbage", false, std::move(result),
      [this](const core::RequestContext& ctx) {
        auto removed = service_.broker().collect_garbage(ctx);
        if (!removed) return removed;
        for (const auto& r : *removed) {
          if (r.variant.empty()) {
            log::info("gc: removed {} {} for {} (uid {})", r.name, r.version, ctx.sender, ctx.uid);
          } else {
            log::info("gc: removed model {} {} variant {} for {} (uid {})", r.name, r.version,
                      r.variant, ctx.sender, ctx.uid);
          }
        }
        log::info("gc for {} (uid {}): {} version(s) removed", ctx.sender, ctx.uid,
                  removed->size());
        return removed;
      },
      [](std::vector<core::VersionRef> removed) {
        Dicts out;
        for (const auto& r : removed) out.push_back(to_dict(r));
        return out;
      });
}

void BrokerObject::RemoveModel(sdbus::Result<Dicts>&& result, std::string name, Options options) {
  // A bad option is refused before anyone is asked.
  std::optional<core::ModelRemoveOptions> remove;
  try {
    guarded([&] { remove = parse_model_remove_options(options); });
  } catch (const sdbus::Error& e) {
    answer_error(result, e);
    return;
  }
  authorized(
      service_, getObject(), "RemoveModel", false, std::move(result),
      [this, name = std::move(name), remove = *remove](const core::RequestContext& ctx) {
        auto removed = service_.broker().remove_model(ctx, name, remove);
        if (removed) {
          for (const auto& r : *removed) {
            log::info("removed model {} {} variant {}{} for {} (uid {})", r.name, r.version,
                      r.variant, remove.now ? " (leases or not)" : "", ctx.sender, ctx.uid);
          }
        }
        return removed;
      },
      [](std::vector<core::VersionRef> removed) {
        Dicts out;
        for (const auto& r : removed) out.push_back(to_removed_model_dict(r));
        return out;
      });
}

void BrokerObject::RemoveProvider(sdbus::Result<>&& result, std::string name) {
  authorized(
      service_, getObject(), "RemoveProvider", false, std::move(result),
      [this, name = std::move(name)](const core::RequestContext& ctx) {
        auto ok = service_.broker().remove_provider(ctx, name, core::RemoveMode::deferred);
        if (ok) log::info("removed {} for {} (uid {})", name, ctx.sender, ctx.uid);
        return ok;
      },
      [] {});
}

void BrokerObject::RemoveProviderNow(sdbus::Result<>&& result, std::string name) {
  authorized(
      service_, getObject(), "RemoveProviderNow", false, std::move(result),
      [this, name = std::move(name)](const core::RequestContext& ctx) {
        auto ok = service_.broker().remove_provider(ctx, name, core::RemoveMode::now);
        if (ok) {
          log::info("removed {} at once (leases or not) for {} (uid {})", name, ctx.sender,
                    ctx.uid);
        }
        return ok;
      },
      [] {});
}

void BrokerObject::ResetRemote(sdbus::Result<>&& result, std::string name) {
  authorized(
      service_, getObject(), "ResetRemote", false, std::move(result),
      [this, name = std::move(name)](const core::RequestContext& ctx) {
        auto ok = service_.broker().reset_remote(ctx, name);
        if (ok) {
          log::info(
              "remote {}: trusted metadata dropped, re-anchored at its configured root for {} "
              "(uid {})",
              name, ctx.sender, ctx.uid);
        }
        return ok;
      },
      [] {});
}

void BrokerObject::RefreshCatalog(sdbus::Result<sdbus::ObjectPath>&& result) {
  authorized(
      service_, getObject(), "RefreshCatalog", true, std::move(result),
      [this](const core::RequestContext& ctx) { return service_.broker().refresh(ctx); },
      [this](std::uint64_t id) { return service_.publish_job(id); });
}

void BrokerObject::StartVerify(sdbus::Result<sdbus::ObjectPath>&& result) {
  authorized(
      service_, getObject(), "StartVerify", true, std::move(result),
      [this](const core::RequestContext& ctx) { return service_.broker().start_verify(ctx); },
      [this](std::uint64_t id) { return service_.publish_job(id); });
}

std::tuple<uint64_t, Dicts> BrokerObject::VerifyResults(const sdbus::ObjectPath& job) {
  return guarded([&] {
    const auto call = service_.enter_call(getObject(), "VerifyResults", false);
    const auto id = job_id_of(job);
    if (!id) throw_bus_error({core::Errc::NotFound, "no verification job at " + job.substr(0, 96)});
    const auto run = value_or_throw(service_.broker().verify_results(*id));
    Dicts out;
    for (const auto& r : run.results) out.push_back(to_dict(r));
    return std::tuple<uint64_t, Dicts>(
        static_cast<uint64_t>(std::max<std::int64_t>(0, run.finished_at)), std::move(out));
  });
}

void BrokerObject::Verify(sdbus::Result<Dicts>&& result) {
  // Not a call that starts work: while the daemon stops it still joins a running
  // verification or gets the latest result (Broker::start_verify's may_start).
  auto res = std::make_shared<sdbus::Result<Dicts>>(std::move(result));
  std::shared_ptr<CallScope> scope;
  core::RequestContext ctx;
  try {
    guarded([&] {
      scope = std::make_shared<CallScope>(service_.enter_call(getObject(), "Verify", false));
      ctx = Service::context_of(getObject());
    });
  } catch (const sdbus::Error& e) {
    answer_error(*res, e);
    return;
  }
  auto attempt = [this, res, scope](const core::RequestContext& c) -> bool {
    try {
      return guarded([&] {
        const bool may_start = !service_.lifecycle().stopping();
        auto id = service_.broker().start_verify(c, may_start);
        if (!id && c.authorization->wants_asking()) return false;
        if (!id && !may_start) throw service_.exiting_refusal(c, "Verify");
        if (!id) throw_bus_error(id.error());
        const std::uint64_t job = *id;
        service_.publish_job(job);
        // The call stays counted (scope) until the job's result is sent.
        service_.when_verified(job, [res, scope](core::Result<core::VerifyRun> run) {
          if (!run) {
            answer_error(*res, bus_error_of(run.error()));
            return;
          }
          Dicts out;
          for (const auto& r : run->results) out.push_back(to_dict(r));
          try {
            res->returnResults(out);
          } catch (const sdbus::Error& e) {
            log_unsent_reply(e);
          }
        });
        return true;
      });
    } catch (const sdbus::Error& e) {
      answer_error(*res, e);
      return true;
    }
  };
  service_.run_authorized(std::move(ctx), std::move(attempt),
                          [res](const sdbus::Error& e) { answer_error(*res, e); });
}

void BrokerObject::RequestSession(sdbus::Result<sdbus::ObjectPath, Dicts>&& result,
                                  Options options) {
  // 1. Admit and validate: a failure here is the reply.
  auto res = std::make_shared<sdbus::Result<sdbus::ObjectPath, Dicts>>(std::move(result));
  std::shared_ptr<CallScope> scope;
  core::RequestContext ctx;
  core::SessionRequest request;
  std::optional<sdbus::MethodCall> incoming;
  try {
    guarded([&] {
      scope = std::make_shared<CallScope>(service_.enter_call(getObject(), "RequestSession", true));
      request = parse_session_options(options);
      ctx = Service::context_of(getObject());
      // The reply is built from the call (see 3), maybe after polkit answered,
      // when the message being processed is another one: kept now.
      const auto* msg =
          static_cast<const sdbus::MethodCall*>(getObject().getCurrentlyProcessedMessage());
      if (msg == nullptr) throw std::logic_error("RequestSession outside its dispatch");
      incoming = *msg;
    });
  } catch (const sdbus::Error& e) {
    answer_error(*res, e);
    return;
  }
  auto attempt = [this, res, scope, request,
                  call = std::move(*incoming)](const core::RequestContext& c) -> bool {
    // Set once the reply is out: from then on a failure is logged, not answered.
    bool replied = false;
    try {
      return guarded([&] {
        // 2. Grant (downloads: one authorization for all, maybe asked first).
        auto granted = service_.broker().request_session(c, request);
        if (!granted && c.authorization->wants_asking()) return false;
        if (!granted) throw_bus_error(granted.error());
        const core::SessionGrant& grant = *granted;
        try {
          for (const auto& p : grant.providers) {
            if (p.job != 0) service_.publish_job(p.job);
          }
          for (const auto& m : grant.models) {
            if (m.job != 0) service_.publish_job(m.job);
          }
          // 3. Answer. The owner's next call on the session is dispatched after
          //    this, so by then step 4 has registered the object. The reply is
          //    written here rather than by returnResults(): that takes the
          //    providers as Variants, one message each, built and copied per
          //    value, which cost more than the rest of the call.
          auto reply = call.createReply();
          reply << sdbus::ObjectPath(session_path(grant.session));
          append_providers(reply, grant.providers, grant.models);
          reply.send();
        } catch (...) {
          // Not answered with the session: it must not outlive this call.
          (void)service_.broker().release_session(c, grant.session);
          throw;
        }
        replied = true;
        // 4. The session object and its InterfacesAdded, off the caller's clock.
        service_.publish_session(grant.session, c);
        return true;
      });
    } catch (const sdbus::Error& e) {
      if (!replied) {
        answer_error(*res, e);
      } else {
        log::warn("RequestSession: answered, then failed: {}: {}", e.getName(), e.getMessage());
      }
      return true;
    }
  };
  service_.run_authorized(std::move(ctx), std::move(attempt),
                          [res](const sdbus::Error& e) { answer_error(*res, e); });
}

std::string BrokerObject::Version() { return EPBROKER_VERSION; }

std::string BrokerObject::DaemonState() {
  return guarded([&] { return std::string(daemon_state_name(service_.lifecycle().state())); });
}

uint64_t BrokerObject::CatalogRevision() {
  return guarded([&] { return service_.broker().catalog_revision(); });
}

std::string BrokerObject::CatalogExpires() {
  return guarded([&] { return service_.broker().catalog_expires(); });
}

}  // namespace epbrokerd::dbus
