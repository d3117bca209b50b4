#include "tests/daemon/integration/raw_wire.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace tests::daemon {

using Clock = std::chrono::steady_clock;

void WireWriter::align(std::size_t n) {
  while (buf_.size() % n != 0) buf_.push_back('\0');
}

void WireWriter::byte(std::uint8_t v) { buf_.push_back(static_cast<char>(v)); }

void WireWriter::u32(std::uint32_t v) {
  align(4);
  for (int i = 0; i < 4; ++i) byte(static_cast<std::uint8_t>(v >> (8 * i)));
}

void WireWriter::str(std::string_view v) {
  u32(static_cast<std::uint32_t>(v.size()));
  buf_.append(v);
  byte(0);
}

void WireWriter::sig(std::string_view v) {
  byte(static_cast<std::uint8_t>(v.size()));
  buf_.append(v);
  byte(0);
}

namespace {

bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// Reads what is there (waiting at most until `deadline`): 1 got bytes, 0 EOF or
// error, -1 timeout.
int read_some(int fd, std::string& into, Clock::time_point deadline) {
  while (true) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return -1;
    pollfd p{fd, POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(left));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) return -1;
    char buf[65536];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return 0;
    into.append(buf, static_cast<std::size_t>(n));
    return 1;
  }
}

std::uint32_t le32(const std::string& b, std::size_t at) {
  std::uint32_t v = 0;
  for (std::size_t i = 4; i-- > 0;) v = (v << 8) | static_cast<unsigned char>(b[at + i]);
  return v;
}

std::size_t pad(std::size_t at, std::size_t n) { return (at + n - 1) / n * n; }

}  // namespace

RawBusClient::RawBusClient(const std::string& address) {
  const std::string prefix = "unix:path=";
  if (address.rfind(prefix, 0) != 0) throw std::runtime_error("RawBusClient: " + address);
  const std::string path = address.substr(prefix.size());
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  if (fd_ < 0 || path.size() >= sizeof sa.sun_path)
    throw std::runtime_error("RawBusClient: socket");
  std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    ::close(fd_);
    throw std::runtime_error("RawBusClient: connect " + path + ": " + std::strerror(errno));
  }
  // EXTERNAL: the uid as decimal text, hex-encoded.
  std::string hex;
  for (char c : std::to_string(::geteuid())) {
    char b[3];
    std::snprintf(b, sizeof b, "%02x", static_cast<unsigned char>(c));
    hex += b;
  }
  std::string auth("\0AUTH EXTERNAL ", 15);
  auth += hex + "\r\n";
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  std::string line;
  if (!write_all(fd_, auth)) throw std::runtime_error("RawBusClient: auth write");
  while (line.find("\r\n") == std::string::npos) {
    if (read_some(fd_, line, deadline) != 1)
      throw std::runtime_error("RawBusClient: no auth reply");
  }
  if (line.rfind("OK ", 0) != 0) throw std::runtime_error("RawBusClient: auth: " + line);
  if (!write_all(fd_, "BEGIN\r\n")) throw std::runtime_error("RawBusClient: begin");
  const auto hello = call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                          "Hello", "", "");
  const auto r = wait_reply(hello, std::chrono::seconds(10));
  if (r.outcome != Outcome::reply || r.is_error) throw std::runtime_error("RawBusClient: Hello");
}

RawBusClient::~RawBusClient() {
  if (fd_ >= 0) ::close(fd_);
}

std::uint32_t RawBusClient::call(std::string_view destination, std::string_view path,
                                 std::string_view interface, std::string_view member,
                                 std::string_view signature, std::string_view body) {
  const std::uint32_t serial = next_serial_++;
  WireWriter h;
  h.byte('l');
  h.byte(1);  // METHOD_CALL
  h.byte(0);
  h.byte(1);  // protocol version
  h.u32(static_cast<std::uint32_t>(body.size()));
  h.u32(serial);
  h.u32(0);  // header fields' length, patched below
  const std::size_t fields_start = h.bytes().size();
  auto field = [&](std::uint8_t code, const char* type, std::string_view value) {
    h.align(8);
    h.byte(code);
    h.sig(type);
    if (type[0] == 'g') {
      h.sig(value);
    } else {
      h.str(value);
    }
  };
  field(1, "o", path);
  if (!interface.empty()) field(2, "s", interface);
  field(3, "s", member);
  field(6, "s", destination);
  if (!signature.empty()) field(8, "g", signature);
  const auto fields_len = static_cast<std::uint32_t>(h.bytes().size() - fields_start);
  for (std::size_t i = 0; i < 4; ++i) h.bytes()[12 + i] = static_cast<char>(fields_len >> (8 * i));
  h.align(8);
  std::string msg = std::move(h.bytes());
  msg.append(body);
  return write_all(fd_, msg) ? serial : 0;
}

RawBusClient::Result RawBusClient::wait_reply(std::uint32_t serial,
                                              std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (true) {
    // Every complete message in the buffer.
    while (in_.size() >= 16) {
      const std::uint32_t body_len = le32(in_, 4);
      const std::uint32_t fields_len = le32(in_, 12);
      const std::size_t total = pad(16 + fields_len, 8) + body_len;
      if (in_.size() < total) break;
      const auto type = static_cast<std::uint8_t>(in_[1]);
      std::uint32_t reply_serial = 0;
      std::string error_name;
      for (std::size_t at = 16; at < 16 + fields_len;) {
        at = pad(at, 8);
        const auto code = static_cast<std::uint8_t>(in_[at]);
        const auto sig_len = static_cast<std::uint8_t>(in_[at + 1]);
        const char t = in_[at + 2];
        at += 3 + sig_len;
        if (t == 'g') {
          at += 2U + static_cast<std::uint8_t>(in_[at]);
        } else if (t == 'u') {
          at = pad(at, 4);
          if (code == 5) reply_serial = le32(in_, at);
          at += 4;
        } else {  // s, o
          at = pad(at, 4);
          const std::uint32_t len = le32(in_, at);
          if (code == 4) error_name = in_.substr(at + 4, len);
          at += 4 + len + 1;
        }
      }
      in_.erase(0, total);
      if ((type == 2 || type == 3) && reply_serial == serial) {
        return {Outcome::reply, type == 3, error_name};
      }
    }
    const int r = read_some(fd_, in_, deadline);
    if (r == 0) return {Outcome::closed, false, ""};
    if (r < 0) return {Outcome::timeout, false, ""};
  }
}

}  // namespace tests::daemon
