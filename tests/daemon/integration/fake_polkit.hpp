// A stand-in polkit authority on the private bus, for the tests of the daemon's
// authorization (issue 17): owns org.freedesktop.PolicyKit1 and exports
// org.freedesktop.PolicyKit1.Authority at /org/freedesktop/PolicyKit1/Authority
// with CheckAuthorization and CancelCheckAuthorization. It records every check
// and answers it as the test says: at once (grant or deny), or never until
// answer() (hold), as an authentication agent whose user never types a password.
// Start it before the daemon: epbrokerd picks polkit when the name is on its bus
// at start.
#pragma once

#include <sdbus-c++/sdbus-c++.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tests/daemon/integration/private_bus.hpp"

namespace tests::daemon {

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
  };

  FakePolkit(const PrivateBus& bus, Mode mode);
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

  mutable std::mutex mu_;
  Mode mode_;
  std::vector<Check> checks_;
  std::vector<std::pair<std::size_t, sdbus::Result<Answer>>> held_;  // index into checks_
  std::vector<std::string> cancelled_;
  std::unique_ptr<sdbus::IConnection> conn_;
  std::unique_ptr<sdbus::IObject> object_;  // destroyed before conn_
};

}  // namespace tests::daemon
