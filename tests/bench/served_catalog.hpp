// A signed TUF catalog of given package files, served on loopback, for benches
// that need packages other than the daemon tests' fixed set (tests/daemon/
// integration/test_catalog.hpp).
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "tests/daemon/integration/private_bus.hpp"
#include "tests/support/nginx_server.hpp"
#include "tests/support/temp_dir.hpp"

namespace tests::bench {

// One target: a package file and the ep.json it was packed with.
struct ServedPackage {
  std::filesystem::path metadata;  // ep.json ({"epbroker": {...}})
  std::filesystem::path package;   // NAME-VERSION.tar.zst
};

class ServedCatalog {
 public:
  // Signs (fresh keys, consistent snapshots), publishes into a temporary directory
  // and serves it with nginx on loopback (tests/support/nginx_server), as a real
  // remote would be. Throws std::runtime_error.
  explicit ServedCatalog(const std::vector<ServedPackage>& packages);

  // Writes remotes.d/NAME.conf for this catalog into `bus`'s configuration.
  void add_to(daemon::PrivateBus& bus, const std::string& remote = "bench") const;

 private:
  support::TempDir tmp_;
  std::unique_ptr<support::NginxServer> server_;
};

}  // namespace tests::bench
