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
#include "daemon/log/message_ids.hpp"

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
  if (!scope.admitted()) throw exiting_refusal(context_of(object), method);
  return scope;
}

sdbus::Error Service::exiting_refusal(const core::RequestContext& ctx, const char* method) {
  // Only in the instant between the decision to exit and the exit. The caller's
  // next call must reach (activate) a new instance: the name is given up before
  // the refusal leaves (name_release.hpp). Not while a SIGTERM's jobs are being
  // cancelled: their last signals must still come from the name's owner.
  if (lifecycle_.stopping_when_idle() || release_.started()) {
    if (!release_.started()) emit_state();  // DaemonState=stopping, under the name
    release_.before_reply();
  }
  log::info("refused {} from {} (uid {}): exiting", method, ctx.sender, ctx.uid);
  return bus_error_of({core::Errc::Busy, std::string(common::kExitingMessage)});
}

void Service::run_authorized(core::RequestContext ctx, Attempt attempt,
                             std::function<void(const sdbus::Error&)> abandon) {
  ctx.authorization = std::make_shared<core::CallAuthorization>();
  if (attempt(ctx)) return;
  const auto question = ctx.authorization->question();
  if (!question) {  // an attempt that answered nothing without a question: a bug
    abandon(bus_error_of({core::Errc::Internal, "internal error: nothing to ask"}));
    return;
  }
  // Kept here (not in the authorizer's callback) so that ~Service can answer it.
  std::uint64_t serial = 0;
  {
    std::lock_guard lock(mu_);
    serial = next_authorizing_++;
    authorizing_.emplace(serial, std::make_shared<Authorizing>(
                                     Authorizing{ctx, std::move(attempt), std::move(abandon)}));
  }
  log::debug("{} (uid {}): asking about {}{}", ctx.sender, ctx.uid,
             core::action_id(question->action),
             question->interactive ? "" : " (without user interaction)");
  broker_->authorizer().ask(
      ctx, *question, [this, serial, action = question->action](core::Result<void> answer) {
        std::shared_ptr<Authorizing> call;
        {
          std::lock_guard lock(mu_);
          auto it = authorizing_.find(serial);
          if (it == authorizing_.end()) return;
          call = std::move(it->second);
          authorizing_.erase(it);
        }
        call->ctx.authorization->set_answer(action, std::move(answer));
        // Asked once: this attempt answers (the core's refusal, if it needs more).
        if (!call->attempt(call->ctx)) {
          call->abandon(bus_error_of({core::Errc::Internal, "internal error: asked twice"}));
        }
      });
}

void Service::when_verified(std::uint64_t id, VerifyReply reply) {
  const auto job = broker_->jobs().find(id);
  {
    // A job that ends after this check finds the waiter (job_changed()).
    std::lock_guard lock(mu_);
    if (job && !core::is_final(job->snapshot().state)) {
      verify_waiters_[id].push_back(std::move(reply));
      return;
    }
  }
  reply(broker_->verify_results(id));
}

Service::Service(sdbus::IConnection& conn)
    : conn_(conn),
      lifecycle_([this] { return broker_ == nullptr || broker_->idle(); }),
      release_(conn, kBusName) {}

Service::~Service() {
  std::map<std::uint64_t, PublishedJob> jobs;
  std::map<std::uint64_t, std::unique_ptr<SessionObject>> sessions;
  std::map<std::uint64_t, std::shared_ptr<Authorizing>> authorizing;
  std::map<std::uint64_t, std::vector<VerifyReply>> verify_waiters;
  {
    std::lock_guard lock(mu_);
    jobs.swap(jobs_);
    sessions.swap(sessions_);
    authorizing.swap(authorizing_);
    verify_waiters.swap(verify_waiters_);
  }
  // Calls still waiting (a stop on a signal does not wait for polkit, nor longer
  // than its bound for a verification): "exiting", as after the name's release.
  const core::Error exiting{core::Errc::Busy, std::string(common::kExitingMessage)};
  for (auto& [serial, call] : authorizing) call->abandon(bus_error_of(exiting));
  for (auto& [id, waiting] : verify_waiters) {
    for (auto& reply : waiting) reply(std::unexpected(exiting));
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
  const char* whole = started.kind == core::JobKind::verify ? "(the store)" : "(all remotes)";
  log::event(log::Level::info, core::job_log_fields(started),
             "job {}: {} {} started for {} (uid {})", id, core::job_kind_name(started.kind),
             started.target.empty() ? std::string(whole) : started.target, started.starter.sender,
             started.starter.uid);
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
    if (job.kind == core::JobKind::verify) answer_verify_waiters(job.id);
    job_final(job);
    lifecycle_.touch();
    wake();
  }
}

void Service::answer_verify_waiters(std::uint64_t id) {
  std::vector<VerifyReply> waiting;
  {
    std::lock_guard lock(mu_);
    auto it = verify_waiters_.find(id);
    if (it == verify_waiters_.end()) return;
    waiting = std::move(it->second);
    verify_waiters_.erase(it);
  }
  const auto run = broker_->verify_results(id);
  for (auto& reply : waiting) reply(run);
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
  auto fields = core::job_log_fields(s);
  if (s.state == core::JobState::done) {
    log::event(log::Level::info, fields, "job {}: {} done ({} bytes)", s.id, what, s.bytes_done);
  } else if (s.state == core::JobState::cancelled) {
    log::event(log::Level::info, fields, "job {}: {} cancelled", s.id, what);
  } else {
    if (s.error) {
      const std::string name = bus_error_name_of(*s.error);  // "org.epbroker.Error.Network"
      fields.push_back({log::kError, name.substr(name.rfind('.') + 1)});
    }
    // A download that failed its signed length, hashes or manifest: the event an
    // admin filters on (log/message_ids.hpp). A refresh's failures are logged per
    // remote by the refresh job.
    if (s.kind == core::JobKind::install && s.error &&
        s.error->code == core::Errc::VerificationFailed) {
      fields.insert(fields.begin(),
                    {log::kMessageId, std::string(log::kMessageVerificationFailed)});
    }
    log::event(log::Level::warn, fields, "job {}: {} failed: {}: {}", s.id, what,
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
