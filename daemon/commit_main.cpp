// epbroker-commit: the privileged side of the store (daemon/commit/commit.hpp).
//
// Started per request with the request's connection as standard input: by
// systemd (epbroker-commit.socket, Accept=yes; as root, no network) or by a
// daemon whose store is its own (spawn mode). Reads the configuration (for the
// remotes' trust anchors) itself, serves one request, exits.
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "daemon/commit/server.hpp"
#include "daemon/config/config.hpp"

namespace {

constexpr const char* kDescription =
    "epbroker-commit: commits verified packages into the epbroker store. Started by\n"
    "systemd (epbroker-commit.socket) or by epbrokerd, one process per request, with\n"
    "the request's connection as standard input; not meant to be run by hand.";

}  // namespace

int main(int argc, char** argv) {
  epbrokerd::config::Paths paths;
  bool version = false;
  std::string config_dir = paths.config_dir.string();
  std::string store_root = paths.store_root.string();
  CLI::App app(kDescription, "epbroker-commit");
  app.add_option("--config-dir", config_dir,
                 "configuration: DIR/epbroker.conf, DIR/remotes.d/*.conf (the trust anchors)")
      ->capture_default_str();
  app.add_option("--store-root", store_root, "the directory holding store/, staging/ and trust/")
      ->capture_default_str();
  app.add_flag("--version", version, "print the version and exit");
  CLI11_PARSE(app, argc, argv);
  if (version) {
    std::printf("epbroker-commit %s\n", EPBROKER_VERSION);
    return 0;
  }
  // Standard input must be the connection (a socket), never a terminal.
  struct stat st {};
  if (::fstat(0, &st) != 0 || !S_ISSOCK(st.st_mode)) {
    std::fprintf(stderr, "epbroker-commit: standard input is not a socket (see --help)\n");
    return 2;
  }
  paths.config_dir = config_dir;
  paths.store_root = store_root;
  ::umask(022);
  epbrokerd::commit::CommitEnv env;
  env.store_root = paths.store_root;
  auto config = epbrokerd::config::load_config(paths);
  if (!config) {
    std::fprintf(stderr, "epbroker-commit: %s\n", config.error().message.c_str());
    // Still answer, so the daemon reports why.
  } else {
    env.remotes = config->remotes;
  }
  return epbrokerd::commit::serve_one(0, env);
}
