#include "tests/support/nginx_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace tests::support {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
constexpr auto kStartTimeout = std::chrono::seconds(10);
constexpr auto kStopTimeout = std::chrono::seconds(5);
constexpr auto kPollInterval = std::chrono::milliseconds(10);
constexpr int kPortTries = 5;

// A loopback port free right now (bound to port 0, then released). Another
// process may take it before nginx binds it: the caller retries on a new one.
std::uint16_t free_port() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("NginxServer: socket() failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  close(fd);
  if (!ok) throw std::runtime_error("NginxServer: no free loopback port");
  return ntohs(addr.sin_port);
}

bool accepts(std::uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  close(fd);
  return ok;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool is_executable(const fs::path& p) {
  return access(p.c_str(), X_OK) == 0 && fs::is_regular_file(p);
}

std::optional<int> try_reap(pid_t pid) {
  int status = 0;
  pid_t r = waitpid(pid, &status, WNOHANG);
  if (r == pid) return status;
  if (r < 0 && errno == ECHILD) return 0;
  return std::nullopt;
}

// nginx.conf for one server: everything nginx writes lives under `prefix`.
std::string config(const fs::path& prefix, const fs::path& root, std::uint16_t port,
                   std::optional<std::uint16_t> fault_port) {
  const std::string p = prefix.string();
  std::string user;
  if (geteuid() == 0) {
    // As root nginx would drop its worker to "nobody", who cannot read the 0700
    // temp dirs tests serve: keep the worker as the caller.
    const passwd* pw = getpwuid(geteuid());
    const group* gr = getgrgid(getegid());
    if (pw != nullptr && gr != nullptr) {
      user = std::string("user ") + pw->pw_name + " " + gr->gr_name + ";\n";
    }
  }
  return user +
         "worker_processes 1;\n"
         "pid " +
         p +
         "/nginx.pid;\n"
         "error_log " +
         p +
         "/error.log notice;\n"
         "events { worker_connections 256; }\n"
         "http {\n"
         "  log_format epbroker escape=json '{\"method\":\"$request_method\","
         "\"path\":\"$request_uri\",\"range\":\"$http_range\",\"status\":$status,"
         "\"bytes\":$body_bytes_sent}';\n"
         "  access_log " +
         p +
         "/access.log epbroker;\n"
         "  client_body_temp_path " +
         p +
         "/tmp/body;\n"
         "  proxy_temp_path " +
         p +
         "/tmp/proxy;\n"
         "  fastcgi_temp_path " +
         p +
         "/tmp/fastcgi;\n"
         "  uwsgi_temp_path " +
         p +
         "/tmp/uwsgi;\n"
         "  scgi_temp_path " +
         p +
         "/tmp/scgi;\n"
         "  default_type application/octet-stream;\n"
         "  sendfile on;\n"
         "  server {\n"
         "    listen 127.0.0.1:" +
         std::to_string(port) +
         ";\n"
         "    root " +
         root.string() +
         ";\n"
         "    location / { }\n" +
         (fault_port ? "    location ^~ /__ {\n"
                       "      proxy_pass http://127.0.0.1:" +
                           std::to_string(*fault_port) +
                           ";\n"
                           "      proxy_buffering off;\n"  // slow and cut answers pass as they are
                           "      proxy_read_timeout 3600s;\n"
                           "    }\n"
                     : std::string()) +
         "  }\n"
         "}\n";
}

}  // namespace

std::string find_nginx() {
  if (const char* env = std::getenv("EPBROKER_NGINX"); env != nullptr && *env != '\0') {
    return is_executable(env) ? env : "";
  }
  if (is_executable("/usr/sbin/nginx")) return "/usr/sbin/nginx";
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (!dir.empty() && is_executable(fs::path(dir) / "nginx")) return fs::path(dir) / "nginx";
  }
  return "";
}

NginxServer::NginxServer(const fs::path& root, std::optional<std::uint16_t> fault_port)
    : prefix_(tmp_.path()) {
  const std::string nginx = find_nginx();
  if (nginx.empty()) {
    throw std::runtime_error(
        "NginxServer: nginx is not installed (looked at $EPBROKER_NGINX, /usr/sbin/nginx, PATH); "
        "install Debian's nginx-light (scripts/bootstrap.sh does)");
  }
  if (!fs::is_directory(root)) {
    throw std::runtime_error("NginxServer: " + root.string() + " is not a directory");
  }
  fs::create_directories(prefix_ / "tmp");
  for (int i = 0; i < kPortTries; ++i) {
    if (start(nginx, fs::absolute(root), free_port(), fault_port)) return;
  }
  throw std::runtime_error("NginxServer: nginx did not start after " + std::to_string(kPortTries) +
                           " tries; its error log:\n" + slurp(error_log()));
}

bool NginxServer::start(const std::string& nginx, const fs::path& root, std::uint16_t port,
                        std::optional<std::uint16_t> fault_port) {
  const fs::path conf = prefix_ / "nginx.conf";
  {
    std::ofstream out(conf, std::ios::trunc);
    out << config(prefix_, root, port, fault_port);
    if (!out) throw std::runtime_error("NginxServer: cannot write " + conf.string());
  }
  fs::remove(error_log());
  std::vector<std::string> args = {nginx,         "-p", prefix_.string() + "/", "-c",
                                   conf.string(), "-e", error_log().string(),   "-g",
                                   "daemon off;"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = getpid();

  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("NginxServer: fork failed");
  if (pid_ == 0) {
    // Own process group (so a last-resort SIGKILL reaches the worker too); the
    // master dies with the test process and takes its worker with it.
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  setpgid(pid_, pid_);  // also from here, so stop() never races the child's call

  // Ready = alive, listening, and its worker started (nginx logs that after it
  // has bound every listening socket).
  const auto deadline = Clock::now() + kStartTimeout;
  while (Clock::now() < deadline) {
    if (try_reap(pid_)) {
      pid_ = -1;
      return false;  // e.g. the port was taken meanwhile
    }
    if (slurp(error_log()).find("start worker process") != std::string::npos && accepts(port)) {
      port_ = port;
      return true;
    }
    std::this_thread::sleep_for(kPollInterval);
  }
  stop();
  throw std::runtime_error("NginxServer: nginx did not accept on port " + std::to_string(port) +
                           " within 10 s; its error log:\n" + slurp(error_log()));
}

NginxServer::~NginxServer() { stop(); }

void NginxServer::stop() {
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
  kill(-pid_, SIGKILL);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

std::string NginxServer::url(const std::string& path) const {
  std::string rel = (!path.empty() && path.front() == '/') ? path.substr(1) : path;
  return "http://127.0.0.1:" + std::to_string(port_) + "/" + rel;
}

std::vector<LoggedRequest> NginxServer::requests() const {
  std::vector<LoggedRequest> out;
  std::ifstream in(access_log());
  std::string line;
  while (std::getline(in, line)) {
    if (auto r = parse_logged_request(line)) out.push_back(std::move(*r));
  }
  return out;
}

std::vector<LoggedRequest> NginxServer::wait_for_requests(std::size_t count,
                                                          std::chrono::milliseconds timeout) const {
  const auto deadline = Clock::now() + timeout;
  while (true) {
    auto all = requests();
    if (all.size() >= count || Clock::now() >= deadline) return all;
    std::this_thread::sleep_for(kPollInterval);
  }
}

}  // namespace tests::support
