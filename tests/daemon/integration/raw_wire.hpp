// A bare D-Bus client on a raw Unix socket, for what sd-bus will not send (a
// string that is not UTF-8, a malformed body): EXTERNAL authentication, Hello,
// then method calls whose body bytes the test marshals itself. Little-endian
// messages, no unix fds. Used to show what the bus does with such bytes before
// they could reach epbrokerd.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace tests::daemon {

// Marshals D-Bus values into a buffer whose offset 0 is 8-aligned (a message body,
// or a whole header), padding each value to its alignment.
class WireWriter {
 public:
  void align(std::size_t n);
  void byte(std::uint8_t v);
  void u32(std::uint32_t v);
  // 's' or 'o': the bytes as given, whatever they are (no UTF-8 check).
  void str(std::string_view v);
  void sig(std::string_view v);  // 'g'
  std::string& bytes() { return buf_; }

 private:
  std::string buf_;
};

class RawBusClient {
 public:
  // Connects to a "unix:path=..." address, authenticates (EXTERNAL, our euid),
  // sends Hello and waits for its reply; throws std::runtime_error on failure.
  explicit RawBusClient(const std::string& address);
  ~RawBusClient();
  RawBusClient(const RawBusClient&) = delete;
  RawBusClient& operator=(const RawBusClient&) = delete;

  // Sends a method call with `body` (marshalled for signature `signature`, which
  // may be ""); returns its serial, 0 if the socket refused the bytes.
  std::uint32_t call(std::string_view destination, std::string_view path,
                     std::string_view interface, std::string_view member,
                     std::string_view signature, std::string_view body);

  enum class Outcome { reply, closed, timeout };
  struct Result {
    Outcome outcome = Outcome::timeout;
    bool is_error = false;   // an ERROR message (else METHOD_RETURN)
    std::string error_name;  // when is_error
  };
  // Reads messages until the reply to `serial`, the bus closing the connection,
  // or `timeout`; signals and other replies are skipped.
  Result wait_reply(std::uint32_t serial, std::chrono::milliseconds timeout);

 private:
  int fd_ = -1;
  std::uint32_t next_serial_ = 1;
  std::string in_;
};

}  // namespace tests::daemon
