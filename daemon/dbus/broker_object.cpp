#include "daemon/dbus/broker_object.hpp"

#include <stdexcept>

#include "common/wire.hpp"
#include "daemon/core/broker.hpp"
#include "daemon/dbus/convert.hpp"
#include "daemon/dbus/errors.hpp"
#include "daemon/dbus/lifecycle.hpp"
#include "daemon/dbus/options.hpp"
#include "daemon/dbus/service.hpp"
#include "daemon/log/log.hpp"

namespace epbrokerd::dbus {

using Dicts = std::vector<std::map<std::string, sdbus::Variant>>;

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

sdbus::ObjectPath BrokerObject::EnsureProvider(const std::string& name) {
  return guarded([&] {
    const auto call = service_.enter_call(getObject(), "EnsureProvider", true);
    const auto id =
        value_or_throw(service_.broker().ensure_provider(Service::context_of(getObject()), name));
    return service_.publish_job(id);
  });
}

sdbus::ObjectPath BrokerObject::InstallProvider(const std::string& name, const Options& options) {
  return guarded([&] {
    const auto call = service_.enter_call(getObject(), "InstallProvider", true);
    const auto install = parse_install_options(options);
    const auto ctx = Service::context_of(getObject());
    const auto id = value_or_throw(service_.broker().install_provider(ctx, name, install));
    log::info("install {}@{}{} for {} (uid {}): job {}", name,
              install.version.empty() ? std::string("newest") : install.version,
              install.allow_older ? " (older allowed)" : "", ctx.sender, ctx.uid, id);
    return service_.publish_job(id);
  });
}

Dicts BrokerObject::Update(const std::vector<std::string>& names, const Options& options) {
  return guarded([&] {
    const auto call = service_.enter_call(getObject(), "Update", true);
    check_update_names(names);
    const auto update = parse_update_options(options);
    const auto ctx = Service::context_of(getObject());
    const auto changes = value_or_throw(service_.broker().update(ctx, names, update.dry_run));
    Dicts out;
    std::size_t moving = 0;
    for (const auto& c : changes) {
      if (c.job != 0) service_.publish_job(c.job);
      if (c.from != c.to) {
        ++moving;
        log::info("update{} {}: {} -> {} for {} (uid {}){}", update.dry_run ? " (dry run)" : "",
                  c.name, c.from, c.to, ctx.sender, ctx.uid,
                  c.job != 0 ? ": job " + std::to_string(c.job) : std::string());
      }
      out.push_back(to_dict(c));
    }
    log::info("update{} for {} (uid {}): {} of {} package(s) move",
              update.dry_run ? " (dry run)" : "", ctx.sender, ctx.uid, moving, changes.size());
    return out;
  });
}

void BrokerObject::Hold(const std::string& name) {
  guarded([&] {
    const auto call = service_.enter_call(getObject(), "Hold", false);
    const auto ctx = Service::context_of(getObject());
    value_or_throw(service_.broker().hold(ctx, name));
    log::info("held {} for {} (uid {})", name, ctx.sender, ctx.uid);
  });
}

void BrokerObject::Unhold(const std::string& name) {
  guarded([&] {
    const auto call = service_.enter_call(getObject(), "Unhold", false);
    const auto ctx = Service::context_of(getObject());
    value_or_throw(service_.broker().unhold(ctx, name));
    log::info("unheld {} for {} (uid {})", name, ctx.sender, ctx.uid);
  });
}

std::tuple<std::string, std::string> BrokerObject::Rollback(const std::string& name) {
  return guarded([&] {
    const auto call = service_.enter_call(getObject(), "Rollback", false);
    const auto ctx = Service::context_of(getObject());
    auto change = value_or_throw(service_.broker().rollback(ctx, name));
    log::info("rolled {} back from {} to {} for {} (uid {})", name, change.from, change.to,
              ctx.sender, ctx.uid);
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

Dicts BrokerObject::CollectGarbage() {
  return guarded([&] {
    const auto call = service_.enter_call(getObject(), "CollectGarbage", false);
    const auto ctx = Service::context_of(getObject());
    const auto removed = value_or_throw(service_.broker().collect_garbage(ctx));
    Dicts out;
    for (const auto& r : removed) {
      log::info("gc: removed {} {} for {} (uid {})", r.name, r.version, ctx.sender, ctx.uid);
      out.push_back(to_dict(r));
    }
    log::info("gc for {} (uid {}): {} version(s) removed", ctx.sender, ctx.uid, removed.size());
    return out;
  });
}

void BrokerObject::RemoveProvider(const std::string& name) {
  guarded([&] {
    const auto call = service_.enter_call(getObject(), "RemoveProvider", false);
    const auto ctx = Service::context_of(getObject());
    value_or_throw(service_.broker().remove_provider(ctx, name, core::RemoveMode::deferred));
    log::info("removed {} for {} (uid {})", name, ctx.sender, ctx.uid);
  });
}

void BrokerObject::RemoveProviderNow(const std::string& name) {
  guarded([&] {
    const auto call = service_.enter_call(getObject(), "RemoveProviderNow", false);
    const auto ctx = Service::context_of(getObject());
    value_or_throw(service_.broker().remove_provider(ctx, name, core::RemoveMode::now));
    log::info("removed {} at once (leases or not) for {} (uid {})", name, ctx.sender, ctx.uid);
  });
}

void BrokerObject::ResetRemote(const std::string& name) {
  guarded([&] {
    const auto call = service_.enter_call(getObject(), "ResetRemote", false);
    const auto ctx = Service::context_of(getObject());
    value_or_throw(service_.broker().reset_remote(ctx, name));
    log::info(
        "remote {}: trusted metadata dropped, re-anchored at its configured root for {} "
        "(uid {})",
        name, ctx.sender, ctx.uid);
  });
}

sdbus::ObjectPath BrokerObject::RefreshCatalog() {
  return guarded([&] {
    const auto call = service_.enter_call(getObject(), "RefreshCatalog", true);
    const auto id = value_or_throw(service_.broker().refresh(Service::context_of(getObject())));
    return service_.publish_job(id);
  });
}

Dicts BrokerObject::Verify() {
  return guarded([&] {
    const auto call = service_.enter_call(getObject(), "Verify", false);
    Dicts out;
    for (const auto& r : service_.broker().verify()) {
      if (!r.ok) log::warn("verify: {} {} is damaged: {}", r.name, r.version, r.problem);
      out.push_back(to_dict(r));
    }
    return out;
  });
}

void BrokerObject::RequestSession(sdbus::Result<sdbus::ObjectPath, Dicts>&& result,
                                  std::map<std::string, sdbus::Variant> options) {
  // Set once the reply is out: from then on a failure is logged, not answered.
  bool replied = false;
  try {
    guarded([&] {
      // 1. Admit, validate and grant: a failure here is the reply.
      const auto call = service_.enter_call(getObject(), "RequestSession", true);
      const auto request = parse_session_options(options);
      const auto ctx = Service::context_of(getObject());
      auto grant = value_or_throw(service_.broker().request_session(ctx, request));
      try {
        for (const auto& p : grant.providers) {
          if (p.job != 0) service_.publish_job(p.job);
        }
        // 2. Answer. The owner's next call on the session is dispatched after this
        //    handler returns, so by then step 3 has registered the object. The
        //    reply is written here rather than by result.returnResults(): that
        //    takes the providers as Variants, one message each, built and copied
        //    per value, which cost more than the rest of the call. The message
        //    being processed is this method call (sdbus-c++ dispatches it as one).
        const auto* incoming =
            static_cast<const sdbus::MethodCall*>(getObject().getCurrentlyProcessedMessage());
        if (incoming == nullptr) throw std::logic_error("RequestSession outside its dispatch");
        auto reply = incoming->createReply();
        reply << sdbus::ObjectPath(session_path(grant.session));
        append_providers(reply, grant.providers);
        reply.send();
      } catch (...) {
        // Not answered with the session: it must not outlive this call.
        (void)service_.broker().release_session(ctx, grant.session);
        throw;
      }
      replied = true;
      // 3. The session object and its InterfacesAdded, off the caller's clock.
      service_.publish_session(grant.session, ctx);
    });
  } catch (const sdbus::Error& e) {
    if (!replied) {
      result.returnError(e);
    } else {
      log::warn("RequestSession: answered, then failed: {}: {}", e.getName(), e.getMessage());
    }
  }
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
