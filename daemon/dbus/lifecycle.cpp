#include "daemon/dbus/lifecycle.hpp"

#include <algorithm>

namespace epbrokerd::dbus {

std::string_view daemon_state_name(DaemonState state) {
  switch (state) {
    case DaemonState::idle:
      return "idle";
    case DaemonState::busy:
      return "busy";
    case DaemonState::stopping:
      return "stopping";
  }
  return "busy";
}

Lifecycle::Lifecycle(std::function<bool()> work_idle) : work_idle_(std::move(work_idle)) {}

bool Lifecycle::enter(bool starts_work) {
  std::lock_guard lock(mu_);
  if (starts_work && stopping_) return false;
  ++in_flight_;
  return true;
}

void Lifecycle::leave() {
  std::lock_guard lock(mu_);
  if (in_flight_ > 0) --in_flight_;
  last_activity_ = std::max(last_activity_, Clock::now());
}

void Lifecycle::touch() {
  std::lock_guard lock(mu_);
  last_activity_ = std::max(last_activity_, Clock::now());
}

bool Lifecycle::stop_if_idle(Clock::time_point quiet_since) {
  std::lock_guard lock(mu_);
  if (stopping_) return true;
  if (in_flight_ > 0 || last_activity_ > quiet_since || !work_idle_()) return false;
  stopping_ = true;
  idle_stop_ = true;
  return true;
}

void Lifecycle::stop() {
  std::lock_guard lock(mu_);
  stopping_ = true;
}

bool Lifecycle::stopping() const {
  std::lock_guard lock(mu_);
  return stopping_;
}

bool Lifecycle::stopping_when_idle() const {
  std::lock_guard lock(mu_);
  return idle_stop_;
}

DaemonState Lifecycle::state() const {
  std::lock_guard lock(mu_);
  if (stopping_) return DaemonState::stopping;
  return work_idle_() ? DaemonState::idle : DaemonState::busy;
}

std::size_t Lifecycle::in_flight() const {
  std::lock_guard lock(mu_);
  return in_flight_;
}

Lifecycle::Clock::time_point Lifecycle::last_activity() const {
  std::lock_guard lock(mu_);
  return in_flight_ > 0 ? std::max(last_activity_, Clock::now()) : last_activity_;
}

CallScope::CallScope(Lifecycle& lifecycle, bool starts_work)
    : lifecycle_(lifecycle), admitted_(lifecycle.enter(starts_work)) {}

CallScope::~CallScope() {
  if (admitted_) lifecycle_.leave();
}

}  // namespace epbrokerd::dbus
