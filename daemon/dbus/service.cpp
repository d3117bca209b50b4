#include "daemon/dbus/service.hpp"

#include <future>

#include "common/bus_errors.hpp"
#include "daemon/dbus/caller_uids.hpp"
#include "daemon/dbus/convert.hpp"
#include "daemon/dbus/errors.hpp"
#include "daemon/log/log.hpp"

namespace epbrokerd::dbus {

using Dicts = std::vector<std::map<std::string, sdbus::Variant>>;

core::RequestContext Service::context_of(sdbus::IObject& object) {
  core::RequestContext ctx;
  if (const sdbus::Message* msg = object.getCurrentlyProcessedMessage()) {
    // The effective uid as the bus reports it: /proc-based lookups fail under
    // ProtectProc=invisible and PrivateUsers=yes. Remembered per unique name
    // (caller_uids.hpp): asking the bus each time doubles a call's latency.
    ctx.uid = caller_uids().of(*msg);
    ctx.sender = msg->getSender();
  }
  return ctx;
}

CallScope Service::enter_call(sdbus::IObject& object, const char* method, bool starts_work) {
  CallScope scope(lifecycle_, starts_work);
  if (!scope.admitted()) {
    // Only in the instant between the decision to exit and the exit. The caller's
    // next call must reach (activate) a new instance: the name is given up before
    // the refusal leaves (name_release.hpp). Not while a SIGTERM's jobs are being
    // cancelled: their last signals must still come from the name's owner.
    if (lifecycle_.stopping_when_idle() || release_.started()) {
      if (!release_.started()) emit_state();  // DaemonState=stopping, under the name
      release_.before_reply();
    }
    const auto ctx = context_of(object);
    log::info("refused {} from {} (uid {}): exiting", method, ctx.sender, ctx.uid);
    throw_bus_error({core::Errc::Busy, std::string(common::kExitingMessage)});
  }
  return scope;
}

// ---- Job1 ----------------------------------------------------------------------

JobObject::JobObject(sdbus::IConnection& conn, Service& service, std::shared_ptr<core::Job> job)
    : AdaptorInterfaces(conn, job_path(job->id())), service_(service), job_(std::move(job)) {
  registerAdaptor();
  emitInterfacesAddedSignal({org::epbroker::Job1_adaptor::INTERFACE_NAME});
}

JobObject::~JobObject() {
  emitInterfacesRemovedSignal({org::epbroker::Job1_adaptor::INTERFACE_NAME});
  unregisterAdaptor();
}

void JobObject::changed(const core::JobSnapshot& s) {
  emitPropertiesChangedSignal(org::epbroker::Job1_adaptor::INTERFACE_NAME,
                              {"State", "BytesDone", "BytesTotal", "Error", "ErrorMessage"});
  if (core::is_final(s.state) && !finished_.exchange(true)) {
    const std::string err = s.error ? bus_error_name_of(*s.error) : "";
    emitFinished(std::string(core::job_state_name(s.state)), err, s.error ? s.error->message : "");
  }
}

void JobObject::Cancel() {
  guarded([&] {
    const auto call = service_.enter_call(getObject(), "Job1.Cancel", false);
    const auto ctx = Service::context_of(getObject());
    value_or_throw(service_.broker().cancel_job(ctx, job_->id()));
    log::info("job {}: cancel requested by {} (uid {})", job_->id(), ctx.sender, ctx.uid);
  });
}

std::string JobObject::Kind() { return std::string(core::job_kind_name(job_->snapshot().kind)); }
std::string JobObject::Target() { return job_->snapshot().target; }
std::string JobObject::State() { return std::string(core::job_state_name(job_->snapshot().state)); }
uint64_t JobObject::BytesDone() { return job_->snapshot().bytes_done; }
uint64_t JobObject::BytesTotal() { return job_->snapshot().bytes_total; }
std::string JobObject::Error() {
  const auto s = job_->snapshot();
  return s.error ? bus_error_name_of(*s.error) : std::string();
}
std::string JobObject::ErrorMessage() {
  const auto s = job_->snapshot();
  return s.error ? s.error->message : std::string();
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
    const auto call = service_.enter_call(getObject(), "Session1.Release", false);
    const auto ctx = Service::context_of(getObject());
    value_or_throw(service_.broker().release_session(ctx, id_));
    log::debug("session {}: released by {}", id_, ctx.sender);
    service_.retire_session(id_);
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

// ---- Service -----------------------------------------------------------------------

Service::Service(sdbus::IConnection& conn)
    : conn_(conn),
      lifecycle_([this] { return broker_ == nullptr || broker_->idle(); }),
      release_(conn, kBusName) {}

Service::~Service() {
  std::map<std::uint64_t, PublishedJob> jobs;
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
          caller_uids().forget(name);
          for (auto id : broker_->client_vanished(name)) {
            log::debug("session {}: ended, its owner {} left the bus", id, name);
            retire_session(id);
          }
        }
      });
  bus_proxy_->finishRegistration();
}

sdbus::ObjectPath Service::publish_job(std::uint64_t id) {
  {
    std::lock_guard lock(mu_);
    if (jobs_.contains(id)) return sdbus::ObjectPath(job_path(id));
  }
  auto job = broker_->jobs().find(id);
  if (!job) throw_bus_error({core::Errc::NotFound, "job is gone"});
  // Registered outside mu_ (see the lock order in service.hpp). Only the bus thread
  // publishes, so no other object for `id` can appear meanwhile.
  auto object = std::make_shared<JobObject>(conn_, *this, job);
  const auto started = job->snapshot();
  log::info("job {}: {} {} started for {} (uid {})", id, core::job_kind_name(started.kind),
            started.target.empty() ? std::string("(all remotes)") : started.target,
            started.starter.sender, started.starter.uid);
  {
    std::lock_guard lock(mu_);
    jobs_.emplace(id, PublishedJob{object, std::nullopt});
  }
  // A job may have finished before its object existed (an installed package) or
  // while it was registered: its Finished goes out now, once (see job_final()).
  if (const auto s = job->snapshot(); core::is_final(s.state)) {
    object->changed(s);
    job_final(s);
  }
  wake();  // busy now, or (finished at once) idle again
  return sdbus::ObjectPath(job_path(id));
}

void Service::publish_session(std::uint64_t id, const core::RequestContext& owner) {
  std::unique_ptr<SessionObject> object;
  try {
    object = std::make_unique<SessionObject>(conn_, *this, id);
  } catch (const sdbus::Error& e) {
    // The owner holds a path with no object: end the lease rather than keep it
    // until the owner leaves the bus. Its Release then fails with UnknownObject.
    log::warn("session {}: cannot register its object, ending it: {}", id, e.getMessage());
    (void)broker_->release_session(owner, id);
    throw;
  }
  // The lookup and the lease list only for the debug line: not on every session.
  const auto info =
      spdlog::should_log(spdlog::level::debug) ? broker_->sessions().find(id) : std::nullopt;
  if (info) {
    std::string leases;
    for (const auto& l : info->leases) leases += (leases.empty() ? "" : ", ") + l;
    log::debug("session {}: opened by {} (uid {}), leases: {}", id, info->owner.sender,
               info->owner.uid, leases.empty() ? std::string("none") : leases);
  }
  {
    std::lock_guard lock(mu_);
    sessions_.emplace(id, std::move(object));
  }
  wake();
}

void Service::retire_session(std::uint64_t id) {
  {
    std::lock_guard lock(mu_);
    retired_sessions_.push_back(id);
  }
  lifecycle_.touch();
  wake();
}

bool Service::reap_pending() const {
  std::lock_guard lock(mu_);
  return !retired_sessions_.empty();
}

void Service::reap() {
  // Taken out under mu_, destroyed (unregistered) after it is released.
  std::vector<std::unique_ptr<SessionObject>> dead;
  std::vector<std::shared_ptr<JobObject>> dead_jobs;
  const auto now = Clock::now();
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
    // Finished jobs: past their grace period, or beyond the newest kMaxFinishedJobs
    // (ids grow with time, so the map's order is roughly finish order).
    std::size_t finished = 0;
    for (const auto& [id, j] : jobs_) finished += j.finished_at ? 1U : 0U;
    for (auto it = jobs_.begin(); it != jobs_.end();) {
      const auto& at = it->second.finished_at;
      if (at && (now - *at >= kFinishedJobGrace || finished > kMaxFinishedJobs)) {
        --finished;
        dead_jobs.push_back(std::move(it->second.object));
        it = jobs_.erase(it);
      } else {
        ++it;
      }
    }
  }
  // The table keeps finished jobs only for lookups by id before they are published.
  broker_->jobs().prune(kMaxFinishedJobs);
}

std::optional<Service::Clock::time_point> Service::next_reap() const {
  std::lock_guard lock(mu_);
  std::optional<Clock::time_point> next;
  for (const auto& [id, j] : jobs_) {
    if (j.finished_at && (!next || *j.finished_at + kFinishedJobGrace < *next)) {
      next = *j.finished_at + kFinishedJobGrace;
    }
  }
  return next;
}

std::optional<Service::Clock::time_point> Service::publish_state(bool now) {
  const DaemonState state = lifecycle_.state();
  if (published_state_ == state) return std::nullopt;
  const auto at = Clock::now();
  if (!now && published_state_ && at < state_emitted_ + kStateSignalGap) {
    return state_emitted_ + kStateSignalGap;
  }
  published_state_ = state;
  state_emitted_ = at;
  emit_state();
  return std::nullopt;
}

void Service::emit_state() {
  log::debug("state: {}", daemon_state_name(lifecycle_.state()));
  if (!root_) return;
  try {
    root_->emitPropertiesChangedSignal(org::epbroker::Broker1_adaptor::INTERFACE_NAME,
                                       {"DaemonState"});
  } catch (const sdbus::Error& e) {
    log::warn("cannot signal DaemonState: {}", e.getMessage());
  }
}

bool Service::leave_bus(std::chrono::milliseconds timeout) {
  release_.start();
  return release_.wait(timeout);
}

bool Service::drain(std::chrono::milliseconds timeout) {
  // The bus delivers messages to a connection in order: the reply to a ping sent
  // now comes after every call queued for us before it, and the bus thread
  // dispatches them in that order.
  auto done = std::make_shared<std::promise<void>>();
  auto future = done->get_future();
  try {
    auto self = sdbus::createProxy(conn_, conn_.getUniqueName(), "/");
    self->callMethodAsync("Ping")
        .onInterface("org.freedesktop.DBus.Peer")
        .uponReplyInvoke([done](const sdbus::Error*) { done->set_value(); });
    return future.wait_for(timeout) == std::future_status::ready;
  } catch (const sdbus::Error& e) {
    log::warn("cannot drain the queued calls: {}", e.getMessage());
    return false;
  }
}

void Service::job_changed(const core::JobSnapshot& job) {
  std::shared_ptr<JobObject> object;
  {
    std::lock_guard lock(mu_);
    auto it = jobs_.find(job.id);
    if (it != jobs_.end()) object = it->second.object;
  }
  // From a worker thread: an emit that fails (the bus went away) must not end it.
  try {
    if (object) object->changed(job);
  } catch (const sdbus::Error& e) {
    log::warn("job {}: cannot signal its change: {}", job.id, e.getMessage());
  }
  if (core::is_final(job.state)) {
    job_final(job);
    lifecycle_.touch();
    wake();
  }
}

void Service::job_final(const core::JobSnapshot& s) {
  // Once per published job, from whichever of publish_job() and job_changed() sees
  // it final with its object in place.
  {
    std::lock_guard lock(mu_);
    auto it = jobs_.find(s.id);
    if (it == jobs_.end() || it->second.finished_at) return;
    it->second.finished_at = Clock::now();
  }
  const std::string what = std::string(core::job_kind_name(s.kind)) +
                           (s.target.empty() ? std::string() : " " + s.target);
  if (s.state == core::JobState::done) {
    log::info("job {}: {} done ({} bytes)", s.id, what, s.bytes_done);
  } else if (s.state == core::JobState::cancelled) {
    log::info("job {}: {} cancelled", s.id, what);
  } else {
    log::warn("job {}: {} failed: {}: {}", s.id, what,
              s.error ? bus_error_name_of(*s.error) : "unknown",
              s.error ? s.error->message : std::string());
  }
}

// Both from worker threads: a failed emit (the bus went away) is logged, not thrown.
void Service::providers_changed() {
  if (!root_) return;
  try {
    root_->emitProvidersChanged();
  } catch (const sdbus::Error& e) {
    log::warn("cannot signal ProvidersChanged: {}", e.getMessage());
  }
}

void Service::catalog_changed(std::uint64_t revision) {
  log::info("catalog: revision {}", revision);
  if (!root_) return;
  try {
    root_->emitCatalogChanged(revision);
    root_->emitPropertiesChangedSignal(org::epbroker::Broker1_adaptor::INTERFACE_NAME,
                                       {"CatalogRevision", "CatalogExpires"});
  } catch (const sdbus::Error& e) {
    log::warn("cannot signal CatalogChanged: {}", e.getMessage());
  }
}

}  // namespace epbrokerd::dbus
