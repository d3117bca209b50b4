// Authorization through polkit: CheckAuthorization with the caller's
// system-bus-name subject, for org.epbroker.install / org.epbroker.manage.
// uid 0 is allowed without asking. Used on the system bus when polkit is
// there; main.cpp falls back to core::UidAuthorizer (root + the configured
// install group) otherwise, and logs which one it uses.
#pragma once

#include <sdbus-c++/sdbus-c++.h>

#include <memory>
#include <mutex>

#include "daemon/core/authorizer.hpp"

namespace epbrokerd::dbus {

class PolkitAuthorizer final : public core::Authorizer {
 public:
  // `conn` must be a connection to the bus polkit is on (its own connection,
  // so a check never waits on the service's event loop).
  explicit PolkitAuthorizer(std::unique_ptr<sdbus::IConnection> conn);
  core::Result<void> check(const core::RequestContext& ctx, core::Action action) override;

  // Whether org.freedesktop.PolicyKit1 is running or activatable on `conn`.
  static bool available(sdbus::IConnection& conn);

 private:
  std::mutex mu_;
  std::unique_ptr<sdbus::IConnection> conn_;
  std::unique_ptr<sdbus::IProxy> authority_;
};

// Members of `group` (by name) plus root; empty group: root only.
std::vector<uid_t> group_members(const std::string& group);

}  // namespace epbrokerd::dbus
