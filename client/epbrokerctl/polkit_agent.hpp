// epbrokerctl's polkit authentication agent, as systemctl and busctl start one
// (systemd's src/shared/spawn-polkit-agent.c): on a terminal, a command that may
// need polkit's authorization first starts `pkttyagent --notify-fd N --fallback`
// and waits until it has registered (it closes fd N), so that polkit can ask the
// user for a password on this terminal, during the daemon's CheckAuthorization,
// instead of refusing ("authentication required"). The agent registers for this
// process's session, as a fallback (a desktop's own agent goes first), and is
// stopped (SIGTERM) when epbrokerctl exits.
//
// Nothing is started, and nothing said, when any of these holds: --no-ask-password;
// the command only reads (devices, providers, history, status) or verifies (polkit
// is asked about it without user interaction); stdin is not a terminal (a script);
// epbrokerctl runs as root (the daemon never asks polkit about root); pkttyagent
// (/usr/bin/pkttyagent, in Debian package polkitd) is not installed.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string_view>

namespace epbrokerctl {

// Where pkttyagent is; $EPBROKER_POLKIT_AGENT replaces it (read with secure_getenv;
// for tests only).
inline constexpr const char* kPolkitAgentPath = "/usr/bin/pkttyagent";
// How long the agent's registration is waited for before the call goes on without.
inline constexpr std::chrono::seconds kAgentRegisterWait{10};

// Whether `command` (Invocation::command) may need polkit's authorization with the
// user's password: install, update, hold, unhold, rollback, gc, remove, remote
// (reset), refresh.
bool may_need_authorization(std::string_view command);

class PolkitAgent {
 public:
  // Starts the agent as said above for `command`; `ask_password` is false with
  // --no-ask-password. Returns once it registered (or kAgentRegisterWait passed);
  // an agent that could not start is no error: the call goes on without one.
  static PolkitAgent start_if_useful(std::string_view command, bool ask_password);

  PolkitAgent() = default;
  ~PolkitAgent();  // stops it: SIGTERM (and SIGCONT), then waits for it
  PolkitAgent(PolkitAgent&& other) noexcept;
  PolkitAgent& operator=(PolkitAgent&& other) noexcept;
  PolkitAgent(const PolkitAgent&) = delete;
  PolkitAgent& operator=(const PolkitAgent&) = delete;

  bool running() const { return pid_ > 0; }

 private:
  explicit PolkitAgent(pid_t pid) : pid_(pid) {}
  void stop();
  pid_t pid_ = -1;
};

}  // namespace epbrokerctl
