// A loopback HTTP server for tests: tests/support/http_server.py run as a child process.
//
// Serves the files under a root directory on 127.0.0.1 (ephemeral port), honouring
// single byte ranges, plus the fault-injection paths of http_server.py:
// /__endless__/, /__status__/CODE/, /__status_file__/CODE/PATH (that status, the
// file as its body), /__slow__/, /__redirect__/URL-ENCODED-TARGET,
// /__drop__/N/ (cut after N body bytes), /__norange__/ (Range ignored),
// /__fail_first__/K/CODE/ (K answers CODE, then the file), /__shiftrange__/ (a 206
// one byte before the range asked), /__trickle__/ (80 KiB/s),
// /__retry_after__/K/S/ (K answers 503 with "Retry-After: S", then the file).
// Every request is logged. With HttpServerOptions it listens on another loopback
// address, or serves https with a given certificate.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/temp_dir.hpp"

namespace tests::support {

// One request as a test server logged it (HttpServer, NginxServer).
struct LoggedRequest {
  std::string method;
  std::string path;                  // as requested, query included
  std::optional<std::string> range;  // the Range header
  int status = 0;
  std::optional<std::uint64_t> bytes;  // body bytes sent (none: endless or slow)
  std::optional<double> time;          // when it was logged, seconds since the epoch
};

struct HttpServerOptions {
  std::string bind = "127.0.0.1";  // any loopback address, e.g. "127.0.0.2"
  // Both set: https with this certificate (chain) and key, both PEM files.
  std::filesystem::path tls_cert{};
  std::filesystem::path tls_key{};
};

// Parses one JSON log line ({"method","path","range","status","bytes"}); an
// empty or "-" range reads as none. Nullopt if the line is not such an object.
std::optional<LoggedRequest> parse_logged_request(const std::string& line);

// The requests whose path ends with `suffix`.
std::vector<LoggedRequest> ending_with(const std::vector<LoggedRequest>& all,
                                       const std::string& suffix);

class HttpServer {
 public:
  // Starts the server on `root` and waits (up to 10 s) until it listens.
  // Interpreter: $EPBROKER_PYTHON, else `python3` from PATH; script:
  // $EPBROKER_SOURCE_DIR/tests/support/http_server.py (CTest sets the variable).
  // Throws std::runtime_error if the server cannot be started (like TempDir).
  explicit HttpServer(const std::filesystem::path& root, HttpServerOptions options = {});
  // SIGTERM, then SIGKILL if the server has not exited within 5 s; always reaped.
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Every request so far, in order (logged before it is answered).
  std::vector<LoggedRequest> requests() const;
  // Those whose path ends with `suffix`.
  std::vector<LoggedRequest> requests(const std::string& suffix) const;

  std::uint16_t port() const { return port_; }
  // "http://BIND:PORT/" (https with TLS) + `path` (one leading '/' of `path` is dropped).
  std::string url(const std::string& path) const;

 private:
  void stop();

  HttpServerOptions options_;
  TempDir state_;  // holds the port file
  pid_t pid_ = -1;
  std::uint16_t port_ = 0;
};

// Percent-encodes every byte but unreserved ones (RFC 3986), e.g. to build
// "/__redirect__/" + url_encode(target).
std::string url_encode(const std::string& s);

}  // namespace tests::support
