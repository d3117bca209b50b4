// When the daemon may stop, as plain thread-safe bookkeeping shared by the bus
// adaptors (every method call is counted while it runs) and the main loop (which
// decides the idle exit).
//
// The idle decision is atomic with respect to calls: stop_if_idle() and
// enter() take the same lock, so either a call was counted first (and the daemon
// is not idle), or stopping was set first (and a call that would start work is
// refused). So no job or session is ever created in an instance that has decided
// to exit, and none is lost with it.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string_view>
#include <utility>

namespace epbrokerd::dbus {

// The Broker1.DaemonState values.
enum class DaemonState { idle, busy, stopping };
std::string_view daemon_state_name(DaemonState state);

class Lifecycle {
 public:
  using Clock = std::chrono::steady_clock;

  // `work_idle`: whether the core has no running job and no session (called under
  // this object's lock; it must not call back into it).
  explicit Lifecycle(std::function<bool()> work_idle);

  // A bus call begins. `starts_work`: the call may start a job or open a session.
  // Returns false (nothing counted) for such a call once stopping.
  bool enter(bool starts_work);
  // The call entered with enter() ended: activity now.
  void leave();
  // Something else ended (a job finished, a session ended): activity now.
  void touch();

  // Enters stopping when no call is in flight, the core is idle and nothing
  // happened since `quiet_since` (i.e. last_activity() <= quiet_since).
  bool stop_if_idle(Clock::time_point quiet_since);
  // Enters stopping unconditionally (SIGTERM).
  void stop();

  bool stopping() const;
  // Stopping because stop_if_idle() said so (no job can be running then).
  bool stopping_when_idle() const;
  DaemonState state() const;
  std::size_t in_flight() const;
  // The end of the latest call, job or session; the start time at first. When a
  // call is in flight, the earliest the daemon can be idle from is now or later.
  Clock::time_point last_activity() const;

 private:
  mutable std::mutex mu_;
  std::function<bool()> work_idle_;
  std::size_t in_flight_ = 0;
  bool stopping_ = false;
  bool idle_stop_ = false;
  Clock::time_point last_activity_ = Clock::now();
};

// Counts one bus call for its scope (see Lifecycle::enter/leave).
class CallScope {
 public:
  CallScope(Lifecycle& lifecycle, bool starts_work);
  ~CallScope();
  CallScope(CallScope&& other) noexcept
      : lifecycle_(other.lifecycle_), admitted_(std::exchange(other.admitted_, false)) {}
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;
  CallScope& operator=(CallScope&&) = delete;
  // False when the call was refused (stopping); nothing is counted then.
  bool admitted() const { return admitted_; }

 private:
  Lifecycle& lifecycle_;
  bool admitted_;
};

}  // namespace epbrokerd::dbus
