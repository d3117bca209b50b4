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

#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

#include "catalog/error.hpp"
#include "catalog/unique_fd.hpp"
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

// One model install: which variant of which signed model card target of which
// remote. The descriptor is borrowed; the committer trusts none of it.
struct CommitModelInstall {
  std::string remote;       // a configured remote's name
  std::string target_path;  // the model card's target, e.g. "resnet/resnet-1.0.model.json"
  std::string variant;      // a variant id the signed card must list
  // The installed variant is damaged: its stored blobs are re-hashed, a damaged
  // one is asked for like a missing one and replaced (Store::replace_model_blobs()).
  bool repair = false;
  int metadata_dir_fd = -1;  // the daemon's persisted TUF metadata of `remote`
};

// The daemon's bytes of one blob the committer asked for (`sha256`, 64 hex
// digits, one of the variant's files): a descriptor of the downloaded file or a
// pipe the download streams into, which the committer reads as untrusted bytes
// (copied and checked against the signed target NAME/blobs/<sha256>). Errors
// end the install with that error.
using BlobSource = std::function<catalog::Result<catalog::UniqueFd>(const std::string& sha256)>;

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

  // Verifies and installs one model variant (daemon/commit/commit_model.hpp,
  // commit_install_model()): the TUF chain from the committer's own anchor, the
  // card's metadata, its name binding, every file against the signed blob
  // targets; then asks `blobs` only for the contents store/_blobs lacks (with
  // request.repair also those whose stored bytes are damaged), copies each and
  // checks it against its signed length and sha256, replaces damaged or missing
  // blobs installed variants list (Store::replace_model_blobs()), and calls
  // Store::install_model(). A blob that vanished from the store between the
  // question and the commit (a concurrent removal) is retried once from the
  // start. Returns the installed variant (a HelperCommitter fills name, version
  // and variant only; read the rest from the disk). Errors: as
  // commit_install_model(); Errc::unavailable as install().
  virtual catalog::Result<InstalledModel> install_model(const CommitModelInstall& request,
                                                        const BlobSource& blobs,
                                                        const InstallProgress& progress,
                                                        std::stop_token stop) = 0;

  // Removes variant `variant` of `version` of model `name` (nullopt: all of that
  // version; `version` nullopt: every variant of `name`), as
  // Store::remove_model(). Errors: invalid_argument (a name, version or variant
  // that could not be installed), as Store::remove_model(), busy (lock wait
  // over), Errc::unavailable as install().
  virtual catalog::Result<void> remove_model(std::string_view name,
                                             std::optional<std::string_view> version,
                                             std::optional<std::string_view> variant,
                                             bool even_if_leased) = 0;
};

}  // namespace epbrokerd::store
