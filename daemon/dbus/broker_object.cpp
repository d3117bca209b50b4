#include "daemon/dbus/broker_object.hpp"

#include <stdexcept>

#include "common/wire.hpp"
#include "daemon/core/broker.hpp"
#include "daemon/dbus/convert.hpp"
#include "daemon/dbus/errors.hpp"
#include "daemon/dbus/lifecycle.hpp"
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

void BrokerObject::RemoveProvider(const std::string& name) {
  guarded([&] {
    const auto call = service_.enter_call(getObject(), "RemoveProvider", false);
    const auto ctx = Service::context_of(getObject());
    value_or_throw(service_.broker().remove_provider(ctx, name));
    log::info("removed {} for {} (uid {})", name, ctx.sender, ctx.uid);
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

namespace {

// a{sv} -> SessionRequest: known keys only, each of its type, bounded.
core::SessionRequest parse_session_options(const std::map<std::string, sdbus::Variant>& opts) {
  core::SessionRequest r;
  if (opts.size() > 8) throw_bus_error({core::Errc::InvalidArgument, "too many options"});
  for (const auto& [key, value] : opts) {
    const std::string sig = value.peekValueType();
    auto expect = [&](const char* want) {
      if (sig != want) {
        throw_bus_error({core::Errc::InvalidArgument,
                         "option '" + key + "' must have type " + want + ", not " + sig});
      }
    };
    if (key == common::key::policy) {
      expect("s");
      r.policy = value.get<std::string>();
    } else if (key == common::key::ort_version) {
      expect("s");
      r.ort_version = value.get<std::string>();
    } else if (key == common::key::providers) {
      expect("as");
      r.providers = value.get<std::vector<std::string>>();
    } else if (key == common::key::download) {
      expect("b");
      r.download = value.get<bool>();
    } else {
      throw_bus_error({core::Errc::InvalidArgument, "unknown option '" + key.substr(0, 64) + "'"});
    }
  }
  if (r.policy.size() > 64 || r.ort_version.size() > 64) {
    throw_bus_error({core::Errc::InvalidArgument, "option value too long"});
  }
  return r;
}

}  // namespace

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
