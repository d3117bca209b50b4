// The side that changes store/ when the Store is a view (Store::open_view()).
//
// The process that talks to the network and parses what remotes serve must not
// be able to write what applications load (docs/architecture.md, "Trust
// boundaries"). So the daemon's Store only reads store/ and keeps the leases;
// every change of store/ goes through a Committer: in production a separate
// root process with no network (epbroker-commit, daemon/commit/) that
// re-verifies everything itself and trusts nothing the daemon says but which
// target of which remote it wants.
#pragma once

#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

#include "catalog/error.hpp"
#include "daemon/store/installed.hpp"
#include "daemon/store/store.hpp"

namespace epbrokerd::store {

// One install: which signed target of which remote, and what the daemon holds of
// it. The descriptors are borrowed (the caller closes them after the call); the
// committer treats what they lead to as untrusted bytes.
struct CommitInstall {
  std::string remote;        // a configured remote's name
  std::string target_path;   // the TUF target path, e.g. "test-ep/test-ep-1.0.0.tar.zst"
  int metadata_dir_fd = -1;  // the daemon's persisted TUF metadata of `remote`
  int package_fd = -1;       // the downloaded package file
};

class Committer {
 public:
  virtual ~Committer() = default;

  // Verifies `request` (TUF chain from the committer's own trust anchor, the
  // target's signed length and hashes over its own copy of the package, the
  // package name's binding to its path namespace, the manifest against the
  // signed entry) and installs the package into store/ (Store::install()).
  // Returns what it installed. Errors: every catalog::Errc the verification or
  // the store can produce; Errc::unavailable when the committer cannot be
  // reached or died.
  virtual catalog::Result<InstalledPackage> install(const CommitInstall& request,
                                                    const InstallProgress& progress,
                                                    std::stop_token stop) = 0;

  // Removes `version` of `name` (every version when nullopt) from store/, leases
  // or not: the caller decided (Store::remove() checks its leases first).
  // Errors: as Store::remove(), Errc::unavailable as install().
  virtual catalog::Result<void> remove(std::string_view name,
                                       std::optional<std::string_view> version) = 0;

  // Opens the store on the committer's side (Store::open(): creates it, wipes
  // staging/, sets aside what is not a committed tree), as the daemon does once
  // at start: what a crash interrupted is gone before anyone looks. Errors: as
  // Store::open(), Errc::unavailable as install().
  virtual catalog::Result<void> recover() = 0;
};

}  // namespace epbrokerd::store
