#include "tests/support/http_server.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

namespace tests::support {

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kStartTimeout = std::chrono::seconds(10);
constexpr auto kStopTimeout = std::chrono::seconds(5);
constexpr auto kPollInterval = std::chrono::milliseconds(10);

std::string env_or(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return (value != nullptr && *value != '\0') ? std::string(value) : fallback;
}

// The port in a complete port file, or nothing yet.
std::optional<std::uint16_t> read_port(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) return std::nullopt;
  std::string text;
  std::getline(in, text);
  unsigned value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end == text.data() || value == 0 || value > 65535) return std::nullopt;
  return static_cast<std::uint16_t>(value);
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "signal " + std::to_string(WTERMSIG(status));
  return "status " + std::to_string(status);
}

// Reaps `pid` if it has exited; returns its wait status then.
std::optional<int> try_reap(pid_t pid) {
  int status = 0;
  pid_t r = waitpid(pid, &status, WNOHANG);
  if (r == pid) return status;
  if (r < 0 && errno == ECHILD) return 0;  // already gone
  return std::nullopt;
}

}  // namespace

HttpServer::HttpServer(const std::filesystem::path& root, HttpServerOptions options)
    : options_(std::move(options)) {
  const char* source_dir = std::getenv("EPBROKER_SOURCE_DIR");
  if (source_dir == nullptr || *source_dir == '\0') {
    throw std::runtime_error("HttpServer: EPBROKER_SOURCE_DIR is not set (run through ctest)");
  }
  const std::string python = env_or("EPBROKER_PYTHON", "python3");
  const std::string script =
      (std::filesystem::path(source_dir) / "tests/support/http_server.py").string();
  const std::filesystem::path port_file = state_.path() / "port";

  // Everything the child needs is built before fork(): after it, only exec.
  std::vector<std::string> args = {python,        script,
                                   "--root",      root.string(),
                                   "--port",      "0",
                                   "--port-file", port_file.string(),
                                   "--log",       (state_.path() / "requests.jsonl").string(),
                                   "--bind",      options_.bind};
  if (!options_.tls_cert.empty()) {
    for (const std::string& a : {std::string("--tls-cert"), options_.tls_cert.string(),
                                 std::string("--tls-key"), options_.tls_key.string()}) {
      args.push_back(a);
    }
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = getpid();

  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("HttpServer: fork failed");
  if (pid_ == 0) {
    // Child: die with the test process (crash, ctest timeout), so no server lingers.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    // The port goes through the port file; stdout (the port line) is not needed.
    // stderr stays: a Python traceback then shows in the test output.
    int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (devnull >= 0) dup2(devnull, STDOUT_FILENO);
    execvp(argv[0], argv.data());
    _exit(127);
  }

  const auto deadline = Clock::now() + kStartTimeout;
  while (true) {
    if (auto port = read_port(port_file)) {
      port_ = *port;
      return;
    }
    if (auto status = try_reap(pid_)) {
      pid_ = -1;
      throw std::runtime_error("HttpServer: " + python + " " + script + " ended (" +
                               describe_status(*status) + ") before listening");
    }
    if (Clock::now() > deadline) {
      stop();
      throw std::runtime_error("HttpServer: no port file from " + script + " within 10 s");
    }
    std::this_thread::sleep_for(kPollInterval);
  }
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::stop() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  const auto deadline = Clock::now() + kStopTimeout;
  while (Clock::now() < deadline) {
    if (try_reap(pid_)) {
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(kPollInterval);
  }
  kill(pid_, SIGKILL);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

std::optional<LoggedRequest> parse_logged_request(const std::string& line) {
  auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("path") || !j["path"].is_string()) return std::nullopt;
  LoggedRequest r;
  if (j.contains("method") && j["method"].is_string()) r.method = j["method"];
  r.path = j["path"];
  if (j.contains("range") && j["range"].is_string()) {
    std::string range = j["range"];
    if (!range.empty() && range != "-") r.range = std::move(range);
  }
  if (j.contains("status") && j["status"].is_number_integer()) r.status = j["status"];
  if (j.contains("bytes") && j["bytes"].is_number_unsigned()) r.bytes = j["bytes"];
  if (j.contains("time") && j["time"].is_number()) r.time = j["time"].get<double>();
  return r;
}

std::vector<LoggedRequest> ending_with(const std::vector<LoggedRequest>& all,
                                       const std::string& suffix) {
  std::vector<LoggedRequest> out;
  for (const auto& r : all) {
    if (r.path.ends_with(suffix)) out.push_back(r);
  }
  return out;
}

std::vector<LoggedRequest> HttpServer::requests() const {
  // One line per request, written whole before the request is answered.
  std::vector<LoggedRequest> out;
  std::ifstream in(state_.path() / "requests.jsonl");
  std::string line;
  while (std::getline(in, line)) {
    if (auto r = parse_logged_request(line)) out.push_back(std::move(*r));
  }
  return out;
}

std::vector<LoggedRequest> HttpServer::requests(const std::string& suffix) const {
  return ending_with(requests(), suffix);
}

std::string HttpServer::url(const std::string& path) const {
  std::string rel = (!path.empty() && path.front() == '/') ? path.substr(1) : path;
  return (options_.tls_cert.empty() ? "http://" : "https://") + options_.bind + ":" +
         std::to_string(port_) + "/" + rel;
}

std::string url_encode(const std::string& s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char c : s) {
    const auto b = static_cast<unsigned char>(c);
    const bool unreserved = (b >= 'A' && b <= 'Z') || (b >= 'a' && b <= 'z') ||
                            (b >= '0' && b <= '9') || b == '-' || b == '.' || b == '_' || b == '~';
    if (unreserved) {
      out += c;
    } else {
      out += '%';
      out += kHex[b >> 4];
      out += kHex[b & 0x0F];
    }
  }
  return out;
}

}  // namespace tests::support
