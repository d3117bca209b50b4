#include "daemon/dbus/service.hpp"

#include <future>

#include "common/bus_errors.hpp"
#include "daemon/dbus/broker_object.hpp"
#include "daemon/dbus/caller_uids.hpp"
#include "daemon/dbus/convert.hpp"
#include "daemon/dbus/errors.hpp"
#include "daemon/dbus/job_object.hpp"
#include "daemon/dbus/session_object.hpp"
#include "daemon/log/log.hpp"

namespace epbrokerd::dbus {

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
