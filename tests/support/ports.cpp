#include "tests/support/ports.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>

namespace tests::support {

std::uint16_t closed_port() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("closed_port: socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  if (!ok) {
    close(fd);
    throw std::runtime_error("closed_port: bind/getsockname failed");
  }
  // Deliberately kept open (never listening) for the rest of the process.
  return ntohs(addr.sin_port);
}

Tarpit::Tarpit() {
  listener_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener_ < 0) throw std::runtime_error("Tarpit: socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len) != 0 ||
      listen(listener_, 0) != 0) {
    close(listener_);
    throw std::runtime_error("Tarpit: bind/listen failed");
  }
  port_ = ntohs(addr.sin_port);
  // Connect until one connect stays pending: that is what every later client sees.
  for (int i = 0; i < 16; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) break;
    fillers_.push_back(fd);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) continue;
    if (errno != EINPROGRESS) break;
    pollfd p{fd, POLLOUT, 0};
    if (poll(&p, 1, 200) == 0) return;  // pending after 200 ms: the queue is full
  }
  for (int fd : fillers_) close(fd);
  close(listener_);
  throw std::runtime_error("Tarpit: the accept queue never filled (tcp_abort_on_overflow?)");
}

Tarpit::~Tarpit() {
  for (int fd : fillers_) close(fd);
  close(listener_);
}

}  // namespace tests::support
