// Debian's nginx serving a directory on loopback, for tests that want a real
// web server (Range, keep-alive, sendfile) rather than tests/support's python one.
//
// Runs as the calling user (no root needed; as root its worker stays root, so it
// can read the 0700 temp dirs tests serve) with its own prefix, config, pid file,
// temp dirs and logs in a temporary directory: `nginx -p PREFIX -c CONF -e LOG
// -g 'daemon off;'`. Every request goes to an access log in LoggedRequest's
// JSON form.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/http_server.hpp"
#include "tests/support/temp_dir.hpp"

namespace tests::support {

class NginxServer {
 public:
  // Starts nginx on a free 127.0.0.1 port serving `root` and waits (up to 10 s)
  // until it accepts connections. With `fault_port`, paths starting "/__" are
  // passed unbuffered to that loopback port (an HttpServer), so one base URL has
  // nginx's files and the python server's fault paths (/__slow__/, ...).
  // nginx: $EPBROKER_NGINX, else /usr/sbin/nginx, else `nginx` on PATH. Throws
  // std::runtime_error with the reason (nginx not installed, or its error log)
  // if it cannot be started.
  explicit NginxServer(const std::filesystem::path& root,
                       std::optional<std::uint16_t> fault_port = std::nullopt);
  // SIGTERM (nginx's fast shutdown), then SIGKILL to its process group if it has
  // not exited within 5 s; always reaped.
  ~NginxServer();
  NginxServer(const NginxServer&) = delete;
  NginxServer& operator=(const NginxServer&) = delete;

  std::uint16_t port() const { return port_; }
  // "http://127.0.0.1:PORT/" + `path` (one leading '/' of `path` is dropped).
  std::string url(const std::string& path) const;

  // The access log so far. nginx writes a line once the answer is sent, which
  // may be after the client has read it: use wait_for_requests() to see a
  // request just made.
  std::vector<LoggedRequest> requests() const;
  // Polls until the log holds at least `count` requests or `timeout` passes;
  // returns what it holds then.
  std::vector<LoggedRequest> wait_for_requests(
      std::size_t count, std::chrono::milliseconds timeout = std::chrono::seconds(10)) const;
  std::filesystem::path access_log() const { return prefix_ / "access.log"; }
  std::filesystem::path error_log() const { return prefix_ / "error.log"; }

 private:
  // One start on `port`; false (server stopped) if nginx ended before accepting.
  bool start(const std::string& nginx, const std::filesystem::path& root, std::uint16_t port,
             std::optional<std::uint16_t> fault_port);
  void stop();

  TempDir tmp_;
  std::filesystem::path prefix_;
  pid_t pid_ = -1;
  std::uint16_t port_ = 0;
};

// Where nginx is, or "" if it is not installed.
std::string find_nginx();

}  // namespace tests::support
