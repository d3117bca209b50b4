// Sessions: leases a client holds on installed providers. A session belongs
// to the unique bus name that requested it; only that name may release it,
// and it ends when that name leaves the bus.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "daemon/core/error.hpp"
#include "daemon/core/request_context.hpp"

namespace epbrokerd::core {

struct SessionInfo {
  std::uint64_t id = 0;
  RequestContext owner;
  std::vector<std::string> leases;  // "name/version"
};

class SessionRegistry {
 public:
  // `release_leases` is called (outside the lock) with the leases of every
  // session that ends, so the store can drop them.
  using ReleaseFn = std::function<void(const SessionInfo&)>;
  SessionRegistry(std::size_t max_per_client, ReleaseFn release_leases)
      : max_per_client_(max_per_client), release_(std::move(release_leases)) {}

  // Errc::Busy when the caller already holds max_per_client sessions.
  Result<std::uint64_t> open(const RequestContext& owner, std::vector<std::string> leases);
  // Only the owner may release: anyone else gets Errc::NotFound (a session of
  // another client is not even acknowledged to exist).
  Result<void> release(const RequestContext& caller, std::uint64_t id);
  // The owner left the bus: every session it held ends. Returns their ids.
  std::vector<std::uint64_t> owner_vanished(const std::string& sender);
  std::optional<SessionInfo> find(std::uint64_t id) const;
  std::vector<SessionInfo> all() const;
  std::size_t count() const;
  std::size_t count_for(const std::string& sender) const;

 private:
  mutable std::mutex mu_;
  std::uint64_t next_id_ = 1;
  std::map<std::uint64_t, SessionInfo> sessions_;
  std::size_t max_per_client_;
  ReleaseFn release_;
};

}  // namespace epbrokerd::core
