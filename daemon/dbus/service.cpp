#include "daemon/dbus/service.hpp"

#include "common/bus_errors.hpp"
#include "daemon/dbus/convert.hpp"
#include "daemon/dbus/errors.hpp"

namespace epbrokerd::dbus {

using Dicts = std::vector<std::map<std::string, sdbus::Variant>>;

core::RequestContext Service::context_of(sdbus::IObject& object) {
  core::RequestContext ctx;
  if (const sdbus::Message* msg = object.getCurrentlyProcessedMessage()) {
    // The effective uid as the bus reports it: /proc-based lookups fail under
    // ProtectProc=invisible and PrivateUsers=yes.
    ctx.uid = msg->getCredsEuid();
    ctx.sender = msg->getSender();
  }
  return ctx;
}

// ---- Job1 ----------------------------------------------------------------------

JobObject::JobObject(sdbus::IConnection& conn, core::Broker& broker, std::uint64_t id)
    : AdaptorInterfaces(conn, job_path(id)), broker_(broker), id_(id) {
  registerAdaptor();
  emitInterfacesAddedSignal({org::epbroker::Job1_adaptor::INTERFACE_NAME});
}

JobObject::~JobObject() {
  emitInterfacesRemovedSignal({org::epbroker::Job1_adaptor::INTERFACE_NAME});
  unregisterAdaptor();
}

core::JobSnapshot JobObject::snap() {
  auto job = broker_.jobs().find(id_);
  if (!job)
    throw sdbus::Error(std::string(common::bus_error_name(common::BusError::NotFound)),
                       "job is gone");
  return job->snapshot();
}

void JobObject::changed(const core::JobSnapshot& s) {
  emitPropertiesChangedSignal(org::epbroker::Job1_adaptor::INTERFACE_NAME,
                              {"State", "BytesDone", "BytesTotal", "Error", "ErrorMessage"});
  if (core::is_final(s.state) && !finished_.exchange(true)) {
    const std::string err =
        s.error ? std::string(common::bus_error_name(common::to_bus_error(*s.error))) : "";
    emitFinished(std::string(core::job_state_name(s.state)), err, s.error ? s.error->message : "");
  }
}

void JobObject::Cancel() {
  guarded([&] {
    const auto ctx = Service::context_of(getObject());
    auto job = broker_.jobs().find(id_);
    if (!job) throw_bus_error({catalog::Errc::not_found, "job is gone"});
    const auto s = job->snapshot();
    if (ctx.uid != 0 && s.starter.sender != ctx.sender) {
      throw_bus_error({catalog::Errc::not_authorized, "only the job's starter may cancel it"});
    }
    job->request_cancel();
  });
}

std::string JobObject::Kind() {
  return guarded([&] { return std::string(core::job_kind_name(snap().kind)); });
}
std::string JobObject::Target() {
  return guarded([&] { return snap().target; });
}
std::string JobObject::State() {
  return guarded([&] { return std::string(core::job_state_name(snap().state)); });
}
uint64_t JobObject::BytesDone() {
  return guarded([&] { return snap().bytes_done; });
}
uint64_t JobObject::BytesTotal() {
  return guarded([&] { return snap().bytes_total; });
}
std::string JobObject::Error() {
  return guarded([&] {
    const auto s = snap();
    return s.error ? std::string(common::bus_error_name(common::to_bus_error(*s.error)))
                   : std::string();
  });
}
std::string JobObject::ErrorMessage() {
  return guarded([&] {
    const auto s = snap();
    return s.error ? s.error->message : std::string();
  });
}

// ---- Session1 --------------------------------------------------------------------

SessionObject::SessionObject(sdbus::IConnection& conn, Service& service, std::uint64_t id)
    : AdaptorInterfaces(conn, session_path(id)), service_(service), id_(id) {
  registerAdaptor();
  emitInterfacesAddedSignal({org::epbroker::Session1_adaptor::INTERFACE_NAME});
}

SessionObject::~SessionObject() {
  emitInterfacesRemovedSignal({org::epbroker::Session1_adaptor::INTERFACE_NAME});
  unregisterAdaptor();
}

void SessionObject::Release() {
  guarded([&] {
    value_or_throw(service_.broker().release_session(Service::context_of(getObject()), id_));
    service_.retire_session(id_);
  });
}

std::string SessionObject::Owner() {
  return guarded([&] {
    auto s = service_.broker().sessions().find(id_);
    if (!s) throw_bus_error({catalog::Errc::not_found, "session ended"});
    return s->owner.sender;
  });
}

// ---- Broker1 ---------------------------------------------------------------------

BrokerObject::BrokerObject(sdbus::IConnection& conn, Service& service)
    : AdaptorInterfaces(conn, kObjectPath), service_(service) {
  registerAdaptor();
}

BrokerObject::~BrokerObject() { unregisterAdaptor(); }

Dicts BrokerObject::ListDevices() {
  return guarded([&] {
    Dicts out;
    for (const auto& d : service_.broker().devices()) out.push_back(to_dict(d));
    return out;
  });
}

Dicts BrokerObject::ListProviders() {
  return guarded([&] {
    Dicts out;
    for (const auto& p : service_.broker().providers()) out.push_back(to_dict(p));
    return out;
  });
}

sdbus::ObjectPath BrokerObject::EnsureProvider(const std::string& name) {
  return guarded([&] {
    if (name.size() > 64) throw_bus_error({catalog::Errc::invalid_argument, "name too long"});
    const auto id =
        value_or_throw(service_.broker().ensure_provider(Service::context_of(getObject()), name));
    return service_.publish_job(id);
  });
}

void BrokerObject::RemoveProvider(const std::string& name) {
  guarded([&] {
    if (name.size() > 64) throw_bus_error({catalog::Errc::invalid_argument, "name too long"});
    value_or_throw(service_.broker().remove_provider(Service::context_of(getObject()), name));
  });
}

sdbus::ObjectPath BrokerObject::RefreshCatalog() {
  return guarded([&] {
    const auto id = value_or_throw(service_.broker().refresh(Service::context_of(getObject())));
    return service_.publish_job(id);
  });
}

Dicts BrokerObject::Verify() {
  return guarded([&] {
    Dicts out;
    for (const auto& r : service_.broker().verify()) out.push_back(to_dict(r));
    return out;
  });
}

namespace {

// a{sv} -> SessionRequest: known keys only, each of its type, bounded.
core::SessionRequest parse_session_options(const std::map<std::string, sdbus::Variant>& opts) {
  core::SessionRequest r;
  if (opts.size() > 8) throw_bus_error({catalog::Errc::invalid_argument, "too many options"});
  for (const auto& [key, value] : opts) {
    const std::string sig = value.peekValueType();
    auto expect = [&](const char* want) {
      if (sig != want) {
        throw_bus_error({catalog::Errc::invalid_argument,
                         "option '" + key + "' must have type " + want + ", not " + sig});
      }
    };
    if (key == "policy") {
      expect("s");
      r.policy = value.get<std::string>();
    } else if (key == "ort_version") {
      expect("s");
      r.ort_version = value.get<std::string>();
    } else if (key == "providers") {
      expect("as");
      r.providers = value.get<std::vector<std::string>>();
    } else if (key == "download") {
      expect("b");
      r.download = value.get<bool>();
    } else {
      throw_bus_error(
          {catalog::Errc::invalid_argument, "unknown option '" + key.substr(0, 64) + "'"});
    }
  }
  if (r.policy.size() > 64 || r.ort_version.size() > 64) {
    throw_bus_error({catalog::Errc::invalid_argument, "option value too long"});
  }
  return r;
}

}  // namespace

std::tuple<sdbus::ObjectPath, Dicts> BrokerObject::RequestSession(
    const std::map<std::string, sdbus::Variant>& options) {
  return guarded([&] {
    const auto request = parse_session_options(options);
    auto grant = value_or_throw(
        service_.broker().request_session(Service::context_of(getObject()), request));
    Dicts providers;
    for (const auto& p : grant.providers) {
      if (p.job != 0) service_.publish_job(p.job);
      providers.push_back(to_dict(p));
    }
    return std::make_tuple(service_.publish_session(grant.session), providers);
  });
}

std::string BrokerObject::Version() { return EPBROKER_VERSION; }

std::string BrokerObject::DaemonState() {
  return guarded([&] {
    if (service_.stopping()) return std::string("stopping");
    return std::string(service_.broker().idle() ? "idle" : "busy");
  });
}

uint64_t BrokerObject::CatalogRevision() {
  return guarded([&] { return service_.broker().catalog_revision(); });
}

std::string BrokerObject::CatalogExpires() {
  return guarded([&] { return service_.broker().catalog_expires(); });
}

// ---- Service -----------------------------------------------------------------------

Service::Service(sdbus::IConnection& conn) : conn_(conn) {}

Service::~Service() {
  std::map<std::uint64_t, std::shared_ptr<JobObject>> jobs;
  std::map<std::uint64_t, std::unique_ptr<SessionObject>> sessions;
  {
    std::lock_guard lock(mu_);
    jobs.swap(jobs_);
    sessions.swap(sessions_);
  }
  sessions.clear();
  jobs.clear();
  root_.reset();
}

void Service::attach(core::Broker& broker) {
  broker_ = &broker;
  root_ = std::make_unique<BrokerObject>(conn_, *this);
  // A client that leaves the bus ends its sessions.
  bus_proxy_ = sdbus::createProxy(conn_, "org.freedesktop.DBus", "/org/freedesktop/DBus");
  bus_proxy_->uponSignal("NameOwnerChanged")
      .onInterface("org.freedesktop.DBus")
      .call([this](const std::string& name, const std::string& old_owner,
                   const std::string& new_owner) {
        if (!name.empty() && name[0] == ':' && !old_owner.empty() && new_owner.empty()) {
          for (auto id : broker_->client_vanished(name)) retire_session(id);
        }
      });
  bus_proxy_->finishRegistration();
}

sdbus::ObjectPath Service::publish_job(std::uint64_t id) {
  {
    std::lock_guard lock(mu_);
    if (jobs_.contains(id)) return sdbus::ObjectPath(job_path(id));
  }
  // Registered outside mu_ (see the lock order in service.hpp). Only the bus thread
  // publishes, so no other object for `id` can appear meanwhile.
  auto object = std::make_shared<JobObject>(conn_, *broker_, id);
  std::lock_guard lock(mu_);
  jobs_.emplace(id, std::move(object));
  return sdbus::ObjectPath(job_path(id));
}

sdbus::ObjectPath Service::publish_session(std::uint64_t id) {
  auto object = std::make_unique<SessionObject>(conn_, *this, id);
  std::lock_guard lock(mu_);
  sessions_.emplace(id, std::move(object));
  return sdbus::ObjectPath(session_path(id));
}

void Service::retire_session(std::uint64_t id) {
  {
    std::lock_guard lock(mu_);
    retired_sessions_.push_back(id);
  }
  if (wake_) wake_();
}

void Service::reap() {
  // Taken out under mu_, destroyed (unregistered) after it is released.
  std::vector<std::unique_ptr<SessionObject>> dead;
  std::vector<std::shared_ptr<JobObject>> dead_jobs;
  {
    std::lock_guard lock(mu_);
    for (auto id : retired_sessions_) {
      auto it = sessions_.find(id);
      if (it != sessions_.end()) {
        dead.push_back(std::move(it->second));
        sessions_.erase(it);
      }
    }
    retired_sessions_.clear();
    // Finished jobs stay visible for a while (the newest 32), then go.
    for (auto id : broker_->jobs().prune(32)) {
      auto it = jobs_.find(id);
      if (it != jobs_.end()) {
        dead_jobs.push_back(std::move(it->second));
        jobs_.erase(it);
      }
    }
  }
}

void Service::job_changed(const core::JobSnapshot& job) {
  std::shared_ptr<JobObject> object;
  {
    std::lock_guard lock(mu_);
    auto it = jobs_.find(job.id);
    if (it != jobs_.end()) object = it->second;
  }
  if (object) object->changed(job);
  if (core::is_final(job.state) && wake_) wake_();
}

void Service::providers_changed() {
  if (root_) root_->emitProvidersChanged();
}

void Service::catalog_changed(std::uint64_t revision) {
  if (root_) {
    root_->emitCatalogChanged(revision);
    root_->emitPropertiesChangedSignal(org::epbroker::Broker1_adaptor::INTERFACE_NAME,
                                       {"CatalogRevision", "CatalogExpires"});
  }
}

}  // namespace epbrokerd::dbus
