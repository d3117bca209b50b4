// Authorization through polkit: CheckAuthorization with the caller's
// system-bus-name subject, for the org.epbroker.* actions. uid 0 is allowed
// without asking. Used when polkit is on the daemon's bus; main.cpp falls back to
// core::UidAuthorizer (root + the configured install group) otherwise, and logs
// which one it uses.
//
// Never on the bus thread's clock (core/authorizer.hpp): check() answers from the
// call's CallAuthorization and otherwise notes the question; ask() sends
// CheckAuthorization asynchronously on the daemon's own connection, so polkit's
// answer is dispatched by its event loop, on the bus thread, like a method call,
// and every other caller is served while polkit (or the user's authentication
// agent) takes its time. No lock is held meanwhile. An answer that does not come
// within `timeout` is a refusal, and polkit is told to drop the check
// (CancelCheckAuthorization), which closes an authentication dialog still open.
//
// Trusted caller: polkitd answers CheckAuthorization about another user's process
// only to uid 0 or to an owner of the action; the daemon runs as user epbroker,
// which dbus/org.epbroker.policy names in every action's
// org.freedesktop.policykit.owner. A refusal of that kind
// (org.freedesktop.PolicyKit1.Error.NotAuthorized) is logged as an error naming
// the annotation, and the caller is refused.
//
// Interactive authorization: a question asked with user interaction allowed
// (check(), not check_quietly()) carries CheckAuthorization's AllowUserInteraction
// flag. polkit then asks the authentication agent registered for the caller's
// session or process (a desktop's; epbrokerctl starts pkttyagent when on a
// terminal: client/epbrokerctl/polkit_agent.hpp); with none, polkit answers
// "challenge", which is a refusal here ("authentication required"). The flag does
// not follow the caller's message header flag ALLOW_INTERACTIVE_AUTHORIZATION, as
// systemd's services do: sdbus-c++ 1.2 can neither read nor set it. A caller that
// must not be asked registers no agent (epbrokerctl --no-ask-password).
#pragma once

#include <sdbus-c++/sdbus-c++.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "daemon/core/authorizer.hpp"

namespace epbrokerd::dbus {

class PolkitAuthorizer final : public core::Authorizer {
 public:
  // `conn`: the daemon's connection (it outlives this object); `timeout`: how long
  // an answer is waited for (epbroker.conf authorization_timeout_sec).
  PolkitAuthorizer(sdbus::IConnection& conn, std::chrono::seconds timeout);
  core::Result<void> check(const core::RequestContext& ctx, core::Action action) override;
  core::Result<void> check_quietly(const core::RequestContext& ctx, core::Action action) override;
  void ask(const core::RequestContext& ctx, core::CallAuthorization::Question question,
           std::function<void(core::Result<void>)> done) override;

  // Whether org.freedesktop.PolicyKit1 is running or activatable on `conn`.
  static bool available(sdbus::IConnection& conn);

 private:
  core::Result<void> decide(const core::RequestContext& ctx, core::Action action, bool interactive);

  std::chrono::seconds timeout_;
  std::unique_ptr<sdbus::IProxy> authority_;
  std::atomic<std::uint64_t> next_check_{1};  // for cancellation ids
};

// Members of `group` (by name) plus root; empty group: root only.
std::vector<uid_t> group_members(const std::string& group);

}  // namespace epbrokerd::dbus
