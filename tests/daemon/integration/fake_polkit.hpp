// A stand-in polkit authority on the private bus, for the tests of the daemon's
// authorization (issue 17, issue 18): owns org.freedesktop.PolicyKit1 and exports
// org.freedesktop.PolicyKit1.Authority at /org/freedesktop/PolicyKit1/Authority
// with CheckAuthorization and CancelCheckAuthorization. It records every check
// and answers it as the test says: at once (grant or deny), or never until
// answer() (hold), as an authentication agent whose user never types a password.
// Start it before the daemon: epbrokerd picks polkit when the name is on its bus
// at start.
//
// Like polkitd (polkit 0.103 and later, bookworm's 122: may_identity_check_
// authorization() in polkitbackendinteractiveauthority.c), it first checks who
// asks: a CheckAuthorization whose caller is not uid 0, for a subject of another
// uid (or with details), is refused with org.freedesktop.PolicyKit1.Error.
// NotAuthorized "Only trusted callers (e.g. uid 0 or an action owner) can use
// CheckAuthorization() for subjects belonging to other identities" unless the
// caller is an owner of the action: a unix-user the action's
// org.freedesktop.policykit.owner annotation names in the policy file (the one
// polkitd would read: dbus/org.epbroker.policy by default). The uids are the bus's
// (GetConnectionUnixUser). Such a refusal is recorded (Check::untrusted), not
// held, whatever the mode.
#pragma once

#include <sdbus-c++/sdbus-c++.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tests/daemon/integration/private_bus.hpp"

namespace tests::daemon {

// The source tree's dbus/org.epbroker.policy (what the packages install).
std::filesystem::path installed_polkit_policy();

// What polkitd reads: the actions' policy file, and the user database its owner
// annotations are resolved against.
struct FakePolkitPolicy {
  std::filesystem::path file = installed_polkit_policy();
  // "unix-user:NAME" -> uid for the names given here (a build machine seldom has
  // user epbroker); other names through getpwnam(); "unix-user:N" is uid N.
  std::map<std::string, uid_t> users;
};

// The owners of each action in a policy file (action id -> uids), as polkitd
// reads org.freedesktop.policykit.owner: space-separated identities, of which only
// unix-user ones can match a caller; unknown users are skipped.
std::map<std::string, std::vector<uid_t>> polkit_action_owners(const FakePolkitPolicy& policy);

class FakePolkit {
 public:
  enum class Mode { grant, deny, hold };

  // One CheckAuthorization as received.
  struct Check {
    std::string subject_kind;  // "system-bus-name"
    std::string subject_name;  // the caller's unique name
    std::string action;        // "org.epbroker.install", ...
    std::uint32_t flags = 0;   // 1: user interaction allowed
    std::string cancellation_id;
    bool answered = false;
    uid_t caller_uid = static_cast<uid_t>(-1);   // who asked (the daemon)
    uid_t subject_uid = static_cast<uid_t>(-1);  // for whom
    bool untrusted = false;                      // refused: the caller may not ask for that subject
  };

  FakePolkit(const PrivateBus& bus, Mode mode, FakePolkitPolicy policy = {});
  ~FakePolkit();
  FakePolkit(const FakePolkit&) = delete;
  FakePolkit& operator=(const FakePolkit&) = delete;

  void set_mode(Mode mode);
  // Every check received so far, oldest first.
  std::vector<Check> checks() const;
  // The cancellation ids CancelCheckAuthorization was called with.
  std::vector<std::string> cancelled() const;
  // Waits until `n` checks were received.
  bool wait_checks(std::size_t n, std::chrono::milliseconds timeout) const;
  // Answers every held check (granted or not); returns how many.
  std::size_t answer(bool granted);
  // Held checks not answered yet.
  std::size_t pending() const;

 private:
  using Answer = sdbus::Struct<bool, bool, std::map<std::string, std::string>>;
  // GetConnectionUnixUser(name) on the bus; -1 if it fails.
  uid_t uid_of(const std::string& name) const;

  mutable std::mutex mu_;
  Mode mode_;
  std::map<std::string, std::vector<uid_t>> owners_;
  std::vector<Check> checks_;
  std::vector<std::pair<std::size_t, sdbus::Result<Answer>>> held_;  // index into checks_
  std::vector<std::string> cancelled_;
  std::unique_ptr<sdbus::IConnection> lookup_;  // asks the bus for uids
  std::unique_ptr<sdbus::IConnection> conn_;
  std::unique_ptr<sdbus::IObject> object_;  // destroyed before conn_
};

}  // namespace tests::daemon
