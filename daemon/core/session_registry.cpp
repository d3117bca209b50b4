#include "daemon/core/session_registry.hpp"

namespace epbrokerd::core {

Result<std::uint64_t> SessionRegistry::open(const RequestContext& owner,
                                            std::vector<std::string> leases) {
  std::lock_guard lock(mu_);
  std::size_t held = 0;
  for (const auto& [id, s] : sessions_) {
    if (s.owner.sender == owner.sender) ++held;
  }
  if (held >= max_per_client_) {
    return fail(Errc::Busy, owner.sender + " already holds " + std::to_string(held) +
                                " sessions (the per-client limit)");
  }
  const std::uint64_t id = next_id_++;
  sessions_.emplace(id, SessionInfo{id, owner, std::move(leases)});
  return id;
}

Result<void> SessionRegistry::release(const RequestContext& caller, std::uint64_t id) {
  SessionInfo ended;
  {
    std::lock_guard lock(mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end() || it->second.owner.sender != caller.sender) {
      return fail(Errc::NotFound, "no session " + std::to_string(id));
    }
    ended = std::move(it->second);
    sessions_.erase(it);
  }
  if (release_) release_(ended);
  return {};
}

std::vector<SessionInfo> SessionRegistry::all() const {
  std::lock_guard lock(mu_);
  std::vector<SessionInfo> out;
  for (const auto& [id, s] : sessions_) out.push_back(s);
  return out;
}

std::vector<std::uint64_t> SessionRegistry::owner_vanished(const std::string& sender) {
  std::vector<SessionInfo> ended;
  {
    std::lock_guard lock(mu_);
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      if (it->second.owner.sender == sender) {
        ended.push_back(std::move(it->second));
        it = sessions_.erase(it);
      } else {
        ++it;
      }
    }
  }
  std::vector<std::uint64_t> ids;
  for (const auto& s : ended) {
    ids.push_back(s.id);
    if (release_) release_(s);
  }
  return ids;
}

std::optional<SessionInfo> SessionRegistry::find(std::uint64_t id) const {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return std::nullopt;
  return it->second;
}

std::size_t SessionRegistry::count() const {
  std::lock_guard lock(mu_);
  return sessions_.size();
}

std::size_t SessionRegistry::count_for(const std::string& sender) const {
  std::lock_guard lock(mu_);
  std::size_t n = 0;
  for (const auto& [id, s] : sessions_) {
    if (s.owner.sender == sender) ++n;
  }
  return n;
}

}  // namespace epbrokerd::core
