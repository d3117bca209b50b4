#include "daemon/commit/protocol.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace epbrokerd::commit {
namespace {

using catalog::Errc;
using catalog::fail;

}  // namespace

catalog::Result<void> send_message(int sock, const nlohmann::json& body, std::span<const int> fds) {
  const std::string text = body.dump();
  if (text.size() > kMaxMessageBytes) return fail(Errc::invalid_argument, "message too large");
  if (fds.size() > kMaxMessageFds) return fail(Errc::invalid_argument, "too many descriptors");
  iovec iov{const_cast<char*>(text.data()), text.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxMessageFds)] = {};
  if (!fds.empty()) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  for (;;) {
    const ssize_t n = ::sendmsg(sock, &msg, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(Errc::io, std::string("send: ") + std::strerror(errno));
    return {};
  }
}

catalog::Result<Message> receive_message(int sock, int timeout_ms) {
  pollfd p{sock, POLLIN, 0};
  for (;;) {
    const int r = ::poll(&p, 1, timeout_ms);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return fail(Errc::io, std::string("poll: ") + std::strerror(errno));
    if (r == 0) return fail(Errc::busy, "no answer in time");
    break;
  }
  std::string buf(kMaxMessageBytes + 1, '\0');
  iovec iov{buf.data(), buf.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * (kMaxMessageFds + 8))] = {};
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t n = 0;
  for (;;) {
    n = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR) continue;
    break;
  }
  if (n < 0) return fail(Errc::io, std::string("receive: ") + std::strerror(errno));
  // Take every descriptor first, so that none leaks whatever is wrong below.
  Message out;
  bool bad_control = (msg.msg_flags & MSG_CTRUNC) != 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) {
      bad_control = true;
      continue;
    }
    const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int fd = -1;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      out.fds.emplace_back(fd);
    }
  }
  if (n == 0) return fail(Errc::io, "closed");
  if (bad_control || out.fds.size() > kMaxMessageFds) {
    return fail(Errc::malformed, "unexpected descriptors in a commit message");
  }
  if ((msg.msg_flags & MSG_TRUNC) != 0 || static_cast<std::size_t>(n) > kMaxMessageBytes) {
    return fail(Errc::malformed, "commit message too large");
  }
  buf.resize(static_cast<std::size_t>(n));
  out.body = nlohmann::json::parse(buf, nullptr, /*allow_exceptions=*/false);
  if (!out.body.is_object()) return fail(Errc::malformed, "commit message is not a JSON object");
  return out;
}

nlohmann::json error_reply(const catalog::Error& e) {
  return {{"ok", false}, {"code", std::string(catalog::errc_name(e.code))}, {"message", e.message}};
}

catalog::Error error_from_reply(const nlohmann::json& reply) {
  const std::string code = reply.value("code", "");
  std::string message = reply.value("message", "");
  for (int i = 0; i <= static_cast<int>(Errc::cancelled); ++i) {
    const auto c = static_cast<Errc>(i);
    if (catalog::errc_name(c) == code) return {c, std::move(message)};
  }
  return {Errc::io, "commit helper: " + message};
}

}  // namespace epbrokerd::commit
