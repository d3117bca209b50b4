// Loopback ports for network tests.
#pragma once

#include <cstdint>
#include <vector>

namespace tests::support {

// A loopback TCP port nobody listens on: an ephemeral port bound by a socket that
// never listens and stays open until the process exits, so a connection to it is
// refused and no server of a test running beside this one can be given the port
// (closing the socket here let the kernel hand it to the next bind(0)). Throws
// std::runtime_error if the socket calls fail.
std::uint16_t closed_port();

// A loopback TCP port where a connect neither succeeds nor fails: a listener
// (backlog 0) that never accepts, its accept queue filled by connections of
// its own, so the kernel drops further SYNs and a client's connect hangs until
// the client's own timeout. Deterministic on loopback, no network namespace or
// routing needed. Throws std::runtime_error if the queue cannot be filled
// (a kernel that answers overflow with a reset: tcp_abort_on_overflow).
class Tarpit {
 public:
  Tarpit();
  ~Tarpit();
  Tarpit(const Tarpit&) = delete;
  Tarpit& operator=(const Tarpit&) = delete;
  std::uint16_t port() const { return port_; }

 private:
  int listener_ = -1;
  std::vector<int> fillers_;
  std::uint16_t port_ = 0;
};

}  // namespace tests::support
