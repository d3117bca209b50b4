#include "tests/support/tls_cert.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "tests/support/temp_dir.hpp"

extern char** environ;

namespace tests::support {

TlsCertificate make_self_signed_certificate(const std::filesystem::path& dir,
                                            const std::string& name, const std::string& ip) {
  std::filesystem::create_directories(dir);
  TlsCertificate c{dir / (name + ".crt"), dir / (name + ".key")};
  const std::filesystem::path log = dir / (name + ".openssl.log");
  std::vector<std::string> args = {"openssl",
                                   "req",
                                   "-x509",
                                   "-newkey",
                                   "ec",
                                   "-pkeyopt",
                                   "ec_paramgen_curve:prime256v1",
                                   "-nodes",
                                   "-days",
                                   "1",
                                   "-subj",
                                   "/CN=" + ip,
                                   "-addext",
                                   "subjectAltName=IP:" + ip,
                                   "-keyout",
                                   c.key.string(),
                                   "-out",
                                   c.cert.string()};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, "openssl", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error(std::string("cannot run openssl: ") + std::strerror(rc));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !std::filesystem::exists(c.cert)) {
    throw std::runtime_error("openssl req failed: " + read_file(log));
  }
  return c;
}

}  // namespace tests::support
