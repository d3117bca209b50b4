// Authorization of privileged operations. The core asks; the D-Bus layer
// provides the implementation (polkit CheckAuthorization with the caller's
// system-bus-name subject, or a uid/group fallback without polkit).
#pragma once

#include <string_view>
#include <vector>

#include "daemon/core/error.hpp"
#include "daemon/core/request_context.hpp"

namespace epbrokerd::core {

enum class Action {
  install,    // org.epbroker.install: install a package of a trusted catalog
  update,     // org.epbroker.update: move installed packages to newer versions
  downgrade,  // org.epbroker.downgrade: rollback, install an older version
  hold,       // org.epbroker.hold: hold and unhold packages
  manage,     // org.epbroker.manage: remove, gc, refresh, remote reset, configuration
};

std::string_view action_id(Action a);  // "org.epbroker.install", ...

class Authorizer {
 public:
  virtual ~Authorizer() = default;
  // Ok when `ctx` may perform `action`; Errc::NotAuthorized otherwise, with a
  // message saying what was refused and why. May block (polkit may ask the user).
  virtual Result<void> check(const RequestContext& ctx, Action action) = 0;
};

// Allows uid 0 and the uids in `allowed`; refuses everyone else. For tests and
// for systems without polkit (with the configured install group's members).
class UidAuthorizer : public Authorizer {
 public:
  explicit UidAuthorizer(std::vector<uid_t> allowed = {}) : allowed_(std::move(allowed)) {}
  Result<void> check(const RequestContext& ctx, Action action) override;

 private:
  std::vector<uid_t> allowed_;
};

}  // namespace epbrokerd::core
