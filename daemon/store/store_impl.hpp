// The private state of a Store (Store::Impl) and what the store's files share.
// Internal to daemon/store: the contract is store.hpp. One concept per file:
//
//   store.cpp    the Store object: layout, index queries, index.json
//   open.cpp     open(): crash recovery and the index rebuilt from disk
//   install.cpp  install(): the install transaction
//   lease.cpp    leases
//   remove.cpp   remove(), gc()
//   verify.cpp   verify(), and inspect() of one tree
//   fs_ops.cpp   the filesystem operations of the transactions (fs_ops.hpp)
//   model_marker.cpp   the model marker, index.json with models
//   model_open.cpp     models at open(): trees indexed from their markers, orphans
//   model_install.cpp  install_model()
//   model_remove.cpp   model queries, leases, remove_model(), unreferenced blobs
//   model_verify.cpp   model trees and blobs checked (verify(), install_model())
//   model_repair.cpp   model_problems() of one variant; replace_model_blobs()
#pragma once

#include <cstdint>
#include <expected>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "catalog/ep_metadata.hpp"
#include "catalog/error.hpp"
#include "catalog/package/manifest.hpp"
#include "catalog/unique_fd.hpp"
#include "daemon/store/committer.hpp"
#include "daemon/store/installed.hpp"
#include "daemon/store/store.hpp"
#include "daemon/store/tree.hpp"

namespace epbrokerd::store {
namespace detail {

using Key = std::pair<std::string, std::string>;  // name, version text

// One installed version in the index.
struct Entry {
  InstalledPackage package;
  std::uint64_t serial = 0;  // distinguishes successive installs of one version
};

struct Lease {
  Key key;
  std::string owner;
};

using ModelKey = std::tuple<std::string, std::string, std::string>;  // name, version, variant

// One installed model variant in the index.
struct ModelEntry {
  InstalledModel model;
  ModelMarker marker;        // as written at install
  std::uint64_t serial = 0;  // distinguishes successive installs of one variant
};

struct ModelLease {
  ModelKey key;
  std::string owner;
};

// The InstalledModel of `marker` for the tree at `root`.
InstalledModel installed_model(const ModelMarker& marker, const std::filesystem::path& root);

// What a check of model trees found: problems per variant, bytes hashed.
struct ModelCheck {
  std::map<ModelKey, std::vector<std::string>> problems;  // only damaged ones, sorted
  std::uint64_t bytes_hashed = 0;
};

// Checks the trees of `entries` and the blobs they reference (each hashed
// once, after `before_blob`, which may stop the check by returning false:
// then nullopt). `blobs_dir` is store/_blobs/sha256.
std::optional<ModelCheck> check_models(
    const std::vector<ModelEntry>& entries, const std::filesystem::path& blobs_dir,
    const std::function<bool(std::uint64_t bytes_done)>& before_blob = {});

// The error of a fault injected at `step` (StoreOptions::inject_fault): Errc::io,
// as if the system call had failed.
std::unexpected<catalog::Error> injected(std::string_view step);

// A package the store can hold: a usable directory name, and no payload file
// that would collide with the saved manifest. Errors: Errc::invalid_argument.
catalog::Result<void> check_storable(const catalog::package::Manifest& m);

// Orders versions newest first: by value, then by text (for equivalent values).
bool newer(const InstalledPackage& a, const InstalledPackage& b);

// The tree of `e` against its manifest (check_tree()), plus its saved manifest
// against what was installed; problems sorted.
TreeCheck inspect(const Entry& e);

// What Store::Impl::install_tree() works from: the open package, and what the
// caller learnt before (steps 1-2 of install()). The references are the caller's arguments, alive
// for the call.
struct InstallRequest {
  int fd = -1;                             // the package; taken over (closed in any case)
  std::uint64_t archive_size = 0;          // its length in bytes
  const catalog::EpMetadata& signed_meta;  // what the extracted manifest must match
  Key key;                                 // the version installed
  std::optional<Entry> seen;               // what the index held for `key` before
  bool seen_damaged = false;               // `seen`, same manifest, failed inspect(): a repair
  std::uint64_t total = 0;                 // payload size in bytes if known, else 0
  std::string where;                       // prefix for error messages
  const InstallProgress& progress;
  // Runs once the tree is sealed and durable, before the commit; its error ends
  // the install (staging cleaned). Empty: none.
  const std::function<catalog::Result<void>()>& before_commit;
  std::stop_token stop;
};

}  // namespace detail

struct Store::Impl {
  std::filesystem::path state;
  std::filesystem::path store;
  std::filesystem::path staging;
  StoreOptions options;
  OpenReport report;
  catalog::UniqueFd lock_fd;  // flock'ed descriptor of store/ (a view: of its lock file)
  // A view (Store::open_view()): store/ belongs to the committer.
  std::shared_ptr<Committer> committer;

  mutable std::mutex mu;
  std::map<detail::Key, detail::Entry> index;             // guarded by mu
  std::map<LeaseId, detail::Lease> leases;                // guarded by mu
  LeaseId next_lease = 1;                                 // guarded by mu
  std::uint64_t next_serial = 1;                          // guarded by mu
  std::map<detail::ModelKey, detail::ModelEntry> models;  // guarded by mu
  std::map<LeaseId, detail::ModelLease> model_leases;     // guarded by mu

  Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl() = default;

  // Whether the test hook fails `step` (StoreOptions::inject_fault).
  bool fault(std::string_view step) const {
    return options.inject_fault && options.inject_fault(step);
  }

  // store.cpp. index.json for `entries` (and the installed models).
  catalog::Result<void> write_index(const std::map<detail::Key, detail::Entry>& entries) const;
  // model_marker.cpp. index.json for `entries` and `model_entries`.
  catalog::Result<void> write_index(
      const std::map<detail::Key, detail::Entry>& entries,
      const std::map<detail::ModelKey, detail::ModelEntry>& model_entries) const;
  // model_marker.cpp. The text of index.json for the current index; under mu.
  std::string current_index_text() const;

  // Paths of the model layout (model_store.hpp).
  std::filesystem::path blobs_dir() const {  // store/_blobs/sha256
    return store / kBlobsDirName / kBlobHashDirName;
  }
  std::filesystem::path models_dir() const { return store / kModelsDirName; }

  // model_remove.cpp. Live leases on one variant; under mu.
  std::size_t model_leases_on(const detail::ModelKey& key) const;
  // model_remove.cpp. Deletes every entry of _blobs/sha256 that no marker of
  // `models` references, then fsyncs the directory; under mu. Best effort:
  // what stays is deleted by the next open(). Returns what was deleted.
  std::vector<std::string> delete_unreferenced_blobs();
  // model_open.cpp. Step 4b of open(): indexes the valid model trees; with
  // `repair`, discards the rest and the blobs no marker references.
  catalog::Result<void> rebuild_models(bool repair);

  // lease.cpp. Live leases on `key`; under mu.
  std::size_t leases_on(const detail::Key& key) const;
  // lease.cpp. Refusal to replace a leased version with other contents
  // (Errc::busy); under mu.
  std::unexpected<catalog::Error> busy_replacing(const detail::Key& key) const;

  // open.cpp. Removes `path` at open(): moved into a trash directory in
  // staging/ first, so that it disappears at once, then deleted; recorded in
  // the report.
  catalog::Result<void> discard(const std::filesystem::path& path, std::string reason);
  // open.cpp. Sets state, store and staging from `root` (made absolute).
  // Errors: Errc::invalid_argument naming `what`.
  catalog::Result<void> set_layout(const std::filesystem::path& root, std::string_view what);
  // view.cpp. A view's index read again from the disk, leases kept; under mu.
  // On failure the index stays as it was.
  catalog::Result<void> reload_locked();
  // open.cpp. Step 4 of open(): every store/<name>/<version>, validated from
  // its saved manifest. A view (`repair` false) skips what is not valid
  // instead of discarding it, and writes nothing.
  catalog::Result<void> rebuild_index(bool repair = true);
  // open.cpp. Indexes `tree` (store/<name>/<version>) when it is a committed
  // install; otherwise says why it is not.
  std::optional<std::string> validate_tree(const std::string& name,
                                           const std::filesystem::path& tree);

  // install.cpp. Steps 3-9 of install() (see store.hpp) from `req`.
  catalog::Result<InstalledPackage> install_tree(detail::InstallRequest req);
};

}  // namespace epbrokerd::store
