// The D-Bus layer: one thin adaptor per interface (generated from dbus/*.xml),
// each method converting arguments, calling the broker core with a
// RequestContext built from the message's credentials, converting the result,
// and mapping errors through common/bus_errors. Nothing here decides policy.
// One file pair per bus object (broker_object, job_object, session_object); this
// one is the Service that owns them.
//
// Lifecycle (see main.cpp for the order of events): every method call is counted
// while it runs (Lifecycle), so the main loop's idle decision never races a call
// that starts a job or opens a session; once stopping, such calls are refused with
// org.epbroker.Error.Busy ("exiting"), every other call is still answered. A
// refusal leaves only after the bus name was given up (name_release.hpp), so the
// caller's next call reaches a new instance; during a SIGTERM stop, from the
// moment the running jobs have ended.
//
// The bus thread never waits: a method that needs polkit's answer asks it
// asynchronously and is answered later (run_authorized(), authorized_call.hpp),
// and Verify is answered when its job ends (when_verified()). Such calls stay
// counted as running until answered; those still unanswered when the daemon exits
// (SIGTERM) get Busy "exiting" from ~Service, after the name was released.
#pragma once

#include <sdbus-c++/sdbus-c++.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "daemon/core/broker.hpp"
#include "daemon/dbus/lifecycle.hpp"
#include "daemon/dbus/name_release.hpp"

namespace epbrokerd::dbus {

// A finished job's object stays on the bus this long after it finished, so that a
// client that subscribed late (or whose job finished before its object was
// published) can still read State, Error and ErrorMessage; then it is removed.
// It goes earlier when more than kMaxFinishedJobs newer jobs have finished, or
// when the daemon exits (an idle daemon exits no sooner than idle_timeout after
// the last job finished). Documented in dbus/org.epbroker.Job1.xml.
inline constexpr std::chrono::seconds kFinishedJobGrace{60};
inline constexpr std::size_t kMaxFinishedJobs = 256;

class BrokerObject;
class JobObject;
class SessionObject;

// Owns the bus objects, forwards broker events to them, and keeps the lifecycle
// bookkeeping (calls in flight, activity, DaemonState).
class Service final : public core::BrokerListener {
 public:
  using Clock = std::chrono::steady_clock;

  explicit Service(sdbus::IConnection& conn);
  ~Service() override;
  // Registers /org/epbroker/Broker1 and the NameOwnerChanged watch.
  void attach(core::Broker& broker);

  core::Broker& broker() { return *broker_; }
  sdbus::IConnection& connection() { return conn_; }
  Lifecycle& lifecycle() { return lifecycle_; }
  // Caller of the message being processed on `object` (bus credentials).
  static core::RequestContext context_of(sdbus::IObject& object);
  // Counts the running call (RAII); for `starts_work` calls, throws
  // org.epbroker.Error.Busy when stopping. `method` names it in the log.
  [[nodiscard]] CallScope enter_call(sdbus::IObject& object, const char* method, bool starts_work);
  // The refusal enter_call() throws while stopping, for `ctx`'s call of `method`
  // (the name is given up first, as there): for a call that finds out later that
  // it would have to start work.
  sdbus::Error exiting_refusal(const core::RequestContext& ctx, const char* method);

  // One try of a call that may need authorization: calls the core with the
  // context and answers the call, returning true; or returns false, having
  // answered nothing, when the core noted a question (CallAuthorization::
  // wants_asking()).
  using Attempt = std::function<bool(const core::RequestContext& ctx)>;
  // Runs `attempt` with `ctx` and a fresh CallAuthorization; when it returns
  // false, asks the authorizer the question noted, without waiting, and runs it
  // once more with the answer (on the bus thread), which must answer. `abandon`
  // answers the call instead if the daemon exits before polkit answered.
  void run_authorized(core::RequestContext ctx, Attempt attempt,
                      std::function<void(const sdbus::Error&)> abandon);
  // Calls `reply` once with what verify job `id` found (Broker::verify_results):
  // at once when the job has ended, else when it ends (from the worker thread
  // that ends it).
  using VerifyReply = std::function<void(core::Result<core::VerifyRun>)>;
  void when_verified(std::uint64_t id, VerifyReply reply);

  sdbus::ObjectPath publish_job(std::uint64_t id);
  // Registers session `id` (granted to `owner`) and announces it. If that fails,
  // the session is ended in the broker and the sdbus::Error rethrown.
  void publish_session(std::uint64_t id, const core::RequestContext& owner);
  // Objects cannot be destroyed inside their own callbacks: queued, then reaped
  // by the main loop as soon as it wakes.
  void retire_session(std::uint64_t id);

  // ---- main loop side (one thread) ----
  // Destroys retired sessions and finished jobs past their grace period.
  void reap();
  // Whether ended sessions wait to be reaped.
  bool reap_pending() const;
  // When reap() has something to do next (a finished job's grace ends), if ever.
  std::optional<Clock::time_point> next_reap() const;
  // Emits PropertiesChanged(DaemonState) when the state changed since last emitted,
  // at most every kStateSignalGap unless `now`: a held-back change returns the time
  // to call again (a stream of sessions flips idle/busy far faster than anyone
  // needs to hear of it, and each emit takes the bus connection's lock).
  std::optional<Clock::time_point> publish_state(bool now = false);
  static constexpr std::chrono::milliseconds kStateSignalGap{20};
  // Once stopping (and the jobs ended): gives up the bus name, unless a refused
  // call did already, and waits (at most `timeout`) for the bus to confirm. False
  // on timeout or error.
  bool leave_bus(std::chrono::milliseconds timeout);
  // Processes the calls already queued for this connection: pings our own unique
  // name and waits (at most `timeout`) for the reply, which arrives after every
  // message queued before it has been dispatched. Call after releasing the name,
  // not from the bus thread. False on timeout.
  bool drain(std::chrono::milliseconds timeout);
  // Called (from any thread) when something the main loop watches changed: a job
  // started or finished, a session opened or ended. main.cpp wakes its loop with it.
  void set_wake(std::function<void()> wake) { wake_ = std::move(wake); }

  void job_changed(const core::JobSnapshot& job) override;
  void providers_changed() override;
  void catalog_changed(std::uint64_t revision) override;

 private:
  struct PublishedJob {
    std::shared_ptr<JobObject> object;
    std::optional<Clock::time_point> finished_at;
  };
  // A call waiting for polkit's answer (run_authorized()).
  struct Authorizing {
    core::RequestContext ctx;
    Attempt attempt;
    std::function<void(const sdbus::Error&)> abandon;
  };
  void job_final(const core::JobSnapshot& snap);
  // A verify job ended: the Verify calls waiting for it get its result.
  void answer_verify_waiters(std::uint64_t id);
  void emit_state();
  void wake() {
    if (wake_) wake_();
  }

  sdbus::IConnection& conn_;
  core::Broker* broker_ = nullptr;
  Lifecycle lifecycle_;
  NameRelease release_;
  std::unique_ptr<BrokerObject> root_;
  std::unique_ptr<sdbus::IProxy> bus_proxy_;
  // Lock order: sdbus-c++ holds its connection mutex while it dispatches a call (so
  // every adaptor method runs under it) and takes it for every emit, register and
  // unregister. So mu_ only guards these maps and is never held while calling into
  // sdbus-c++: objects are created before they are inserted, destroyed after they are
  // taken out, and signalled through a shared_ptr copy.
  mutable std::mutex mu_;
  std::map<std::uint64_t, PublishedJob> jobs_;
  std::map<std::uint64_t, std::unique_ptr<SessionObject>> sessions_;
  std::vector<std::uint64_t> retired_sessions_;
  // Calls waiting for polkit (by a serial) and Verify calls waiting for their job
  // (by job id); declared after lifecycle_, so their CallScopes go first.
  std::map<std::uint64_t, std::shared_ptr<Authorizing>> authorizing_;
  std::uint64_t next_authorizing_ = 1;
  std::map<std::uint64_t, std::vector<VerifyReply>> verify_waiters_;
  std::function<void()> wake_;
  std::optional<DaemonState> published_state_;  // main loop only
  Clock::time_point state_emitted_{};           // main loop only
};

}  // namespace epbrokerd::dbus
