#include "daemon/dbus/caller_uids.hpp"

namespace epbrokerd::dbus {

uid_t CallerUids::of(const sdbus::Message& msg) {
  std::string sender = msg.getSender();
  {
    std::lock_guard lock(mu_);
    if (auto it = uids_.find(sender); it != uids_.end()) return it->second;
  }
  // Asked without the lock: the round trip to the bus is the slow part.
  const uid_t uid = msg.getCredsEuid();
  if (sender.empty() || sender[0] != ':') return uid;  // not a unique name: not cached
  std::lock_guard lock(mu_);
  if (uids_.size() >= kMaxCallerUids) uids_.clear();
  uids_.emplace(std::move(sender), uid);
  return uid;
}

void CallerUids::forget(const std::string& sender) {
  std::lock_guard lock(mu_);
  uids_.erase(sender);
}

std::size_t CallerUids::size() const {
  std::lock_guard lock(mu_);
  return uids_.size();
}

CallerUids& caller_uids() {
  static CallerUids table;
  return table;
}

}  // namespace epbrokerd::dbus
