// Test helpers for attacks and faults through the daemon (supply_chain_test,
// faults_test): a TUF repository whose keys and served files the test controls,
// snapshots of directory trees, remote and daemon settings, restarts.
//
// HostileRepo signs with catalog::tuf::Repository (fresh keys, consistent
// snapshots) and publishes into a directory that tests/support's python
// HttpServer serves on loopback, so the test can re-sign, replay, truncate or
// replace any file the daemon will fetch, and use the server's fault paths
// ("/__endless__/", "/__slow__/", "/__trickle__/", "/__redirect__/...") as URL
// prefixes.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "catalog/tuf/repository.hpp"
#include "tests/daemon/integration/broker_client.hpp"
#include "tests/daemon/integration/private_bus.hpp"
#include "tests/support/http_server.hpp"
#include "tests/support/temp_dir.hpp"

namespace tests::daemon {

catalog::tuf::TimePoint wall_now();

class HostileRepo {
 public:
  struct Package {
    std::string name;
    std::size_t size = 64 << 10;
  };
  // A repository (version 1 of every role, published at wall_now()) listing
  // `packages` (each NAME 1.0.0, see add_package), served as `server` says.
  explicit HostileRepo(const std::vector<Package>& packages,
                       support::HttpServerOptions server = {});

  catalog::tuf::Repository repo;  // tamper freely, then publish() or sign()

  // Packs NAME VERSION for this machine's CPU (a library of `size` incompressible
  // bytes) and adds it to the targets role (not yet published). With
  // `manifest_vendor`, the package's own manifest names that vendor while the
  // signed metadata says "epbroker tests": a manifest disagreeing with its entry.
  void add_package(const std::string& name, const std::string& version = "1.0.0",
                   std::size_t size = 64 << 10,
                   const std::optional<std::string>& manifest_vendor = std::nullopt);
  // Delegates `paths` from the targets role to a new role ROLE with a fresh key
  // (not yet published); `terminating` as TUF says.
  void delegate(const std::string& role, const std::vector<std::string>& paths,
                bool terminating = false);
  // Packs NAME VERSION as add_package does, and adds it to `role` (a delegated
  // one, or "targets") at target path "DIR/FILE" (FILE: `file`, else
  // NAME-VERSION.tar.zst), whatever NAME is: a role may claim another package's
  // name, or a path another role lists (not yet published). Returns where it is
  // served ("targets/DIR/<sha256>.<FILE>").
  std::string add_package_as(const std::string& role, const std::string& dir,
                             const std::string& name, const std::string& version,
                             std::size_t size = 64 << 10, const std::string& file = "");
  void publish(std::optional<catalog::tuf::TimePoint> at = std::nullopt);
  void publish_timestamp(std::optional<catalog::tuf::TimePoint> at = std::nullopt);
  // The signed bytes of `role` in its current state (no version bump).
  std::string sign(const std::string& role) const;

  // The served files (relative to the repository root, e.g. "metadata/timestamp.json").
  std::filesystem::path dir() const { return tmp_ / "repo"; }
  std::string read(const std::string& rel) const;
  void write(const std::string& rel, const std::string& bytes) const;
  // Where NAME's latest added package is served: "targets/NAME/<sha256>.<file>".
  std::string target_file(const std::string& name) const;

  const support::HttpServer& server() const { return *server_; }
  // Base URLs, optionally behind a fault-path prefix such as "__slow__/".
  std::string metadata_url(const std::string& prefix = "") const;
  std::string targets_url(const std::string& prefix = "") const;
  // The root.json clients trust first: version 1 as first published (kept aside).
  std::filesystem::path trusted_root() const { return tmp_ / "trusted-root.json"; }

 private:
  support::TempDir tmp_;
  std::map<std::string, std::string> target_files_;
  std::unique_ptr<support::HttpServer> server_;
};

// A [remote] file (remotes.d/NAME.conf) as the test wants it; read at daemon start.
struct RemoteConf {
  std::string name = "test";
  std::string metadata_url{};
  std::string targets_url{};
  std::filesystem::path trusted_root{};
  bool allow_http = true;
  int priority = 0;
  std::string ca_file{};
  std::string mirrors{};
  std::string redirect_hosts{};
};
void write_remote(const PrivateBus& bus, const RemoteConf& remote);
void remove_remote(const PrivateBus& bus, const std::string& name);
// Appends `lines` ("key = value\n"...) to epbroker.conf's [daemon] section.
void add_daemon_settings(const PrivateBus& bus, const std::string& lines);

// SIGTERMs the running daemon and waits for it to exit (the next call activates
// a fresh one, which reads the configuration again). Fails the test unless it
// exits 0 within 20 s.
void restart_daemon(const PrivateBus& bus);
// Waits for `pid` (a daemon of this test's bus) to end; its exit status, 128 + N
// if killed by signal N, -1 if it did not end within `timeout`.
int wait_exit(pid_t pid, std::chrono::milliseconds timeout);

// Every file, directory and link under `dir` with type, mode, size and (files)
// SHA-256, keyed by relative path: equal trees are equal maps.
std::map<std::string, std::string> tree_of(const std::filesystem::path& dir);
// The names in `dir` (none if it does not exist).
std::vector<std::string> entries_of(const std::filesystem::path& dir);

// A finished job as the bus shows it.
struct JobEnd {
  std::string state;
  std::string error;    // org.epbroker.Error.* name, "" when done
  std::string message;  // ErrorMessage
};
JobEnd finish_job(sdbus::IConnection& conn, const std::string& path,
                  std::chrono::milliseconds timeout = std::chrono::seconds(90));
// ListProviders as "name version state remote" lines (order kept).
std::vector<std::string> provider_lines(BrokerProxy& broker);

}  // namespace tests::daemon
