// The package store: installed EP packages, as read-only trees on disk.
//
// Layout under the state directory (every path derives from it, so tests and the
// demo use temporary ones):
//
//   <state>/store/<name>/<version>/       one installed package version: the
//                                         payload files (0444, or 0555 when
//                                         executable), directories 0755, and
//                                         .epbroker-manifest.json (0444; see
//                                         daemon/store/installed.hpp)
//   <state>/store/_blobs/, _models/        installed ML models (model_store.hpp)
//   <state>/store/index.json              cache of what is installed, rewritten
//                                         atomically; never read back by the store
//   <state>/staging/                      work area on the same filesystem (0700):
//                                         install-XXXXXX/ (a tree being built, and
//                                         the old tree while it is replaced),
//                                         trash-XXXXXX/ (trees being deleted)
//
// Crash safety: a tree enters the store only by rename() of a complete, sealed
// and fsync'ed tree whose saved manifest is its commit marker (replacing an
// installed tree of the same version: one renameat2(RENAME_EXCHANGE)), and
// leaves it only by rename() into staging/. So after a crash at any point the
// store holds each version either as before or as after, never a partial tree;
// Store::open() wipes staging/ and rebuilds the index from the saved manifests.
// (Where the filesystem lacks RENAME_EXCHANGE, a replacement moves the old tree
// aside first: a crash between the two renames loses that version, which the
// daemon then installs again like any missing one.)
//
// Thread safety: every member function may be called from any thread. One mutex
// guards the in-memory index, the leases and every change of store/. install()
// stages and extracts (the long part) without it and takes it only to commit
// (a few renames, fsyncs and the index write); verify() hashes without it. Tree
// deletions run after the mutex is released (the tree is already in staging/).
// One Store per state directory: open() takes an exclusive flock on store/, so a
// second Store (in this process or another) on the same directory is refused
// while the first lives.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/ep_metadata.hpp"
#include "catalog/error.hpp"
#include "catalog/package/extract.hpp"
#include "daemon/store/installed.hpp"
#include "daemon/store/model_store.hpp"

namespace epbrokerd::store {

class Committer;
struct CommitInstall;

// Phases reported by install(), each when it starts (extracting also as it
// goes). A fresh install reports extracting, verifying, committing. When that
// version is installed already with the same manifest, a first verifying (0,
// total) covers the check of the installed tree; if it is intact, install()
// stops there.
enum class InstallPhase {
  extracting,  // bytes: payload bytes decompressed / total payload bytes
  verifying,   // manifest checked, tree sealed and fsync'ed (bytes: total, total)
  committing,  // renamed into the store, index written (bytes: total, total)
};

// Stable lower-case name ("extracting"), for logs and the bus.
std::string_view install_phase_name(InstallPhase phase);

// Progress callback of install(). During `extracting` it runs on the extractor's
// read-ahead thread (at most every 1 MiB, and once at 0); the other phases run on
// the calling thread. Calls never overlap and all happen before install()
// returns. It must not call back into the Store.
using InstallProgress =
    std::function<void(InstallPhase phase, std::uint64_t bytes_done, std::uint64_t bytes_total)>;

// Identifies one lease; 0 is never issued.
using LeaseId = std::uint64_t;

// What open() found and fixed.
struct RecoveryAction {
  std::filesystem::path path;  // what was removed
  std::string reason;          // why, e.g. "leftover staging" or the saved manifest error
};
struct OpenReport {
  std::vector<RecoveryAction> removed;
  bool index_rewritten = false;  // index.json was missing or differed from the disk
};

// One installed version that verify() found damaged.
struct DamagedPackage {
  InstalledPackage package;
  std::vector<std::string> problems;  // "<relative path>: <what>", sorted
};
struct VerifyReport {
  std::size_t packages_checked = 0;
  std::uint64_t bytes_hashed = 0;            // packages' files, plus each model blob once
  std::vector<DamagedPackage> damaged;       // by name, then version text
  std::size_t models_checked = 0;            // model variants
  std::vector<DamagedModel> damaged_models;  // by name, version text, variant
  bool ok() const { return damaged.empty() && damaged_models.empty(); }
};
// Progress of verify(): once before hashing (0, total), then after each installed
// version, with the payload bytes (manifest sizes) of the versions checked so far
// and of all of them. Runs on verify()'s thread; returning false stops the
// verification (Errc::cancelled). It must not call back into the Store.
using VerifyProgress = std::function<bool(std::uint64_t bytes_done, std::uint64_t bytes_total)>;

struct StoreOptions {
  // Bounds for extraction (the daemon's configuration may tighten them).
  catalog::package::ExtractLimits limits{};
  // Tests only. Called with a step name just before install() or remove() changes
  // the filesystem at that step; returning true makes the step fail with
  // Errc::io as if the system call had. Steps: "install.staging",
  // "install.saved_manifest", "install.seal", "install.mkdir",
  // "install.exchange", "install.aside", "install.rename", "install.index",
  // "remove.rename", "remove.index"; "model.replace_staging" (before
  // replace_model_blobs() makes its work directory), "model.replace_link"
  // (before each tree path it renames over) and "model.replace_blob" (before
  // the blob's); and "install.no_exchange", which makes the
  // exchange fail as on a filesystem without RENAME_EXCHANGE (so install() takes
  // its aside-then-rename path).
  std::function<bool(std::string_view step)> inject_fault;
};

class Store {
 public:
  // Opens (creating as needed) the store under `state_dir`:
  //   1. creates <state>, store/ (0755) and staging/ (0700) if missing; refuses
  //      staging/ on another filesystem than store/;
  //   2. locks store/ (flock, exclusive, non-blocking);
  //   3. removes everything in staging/ (interrupted installs and removals);
  //   4. rebuilds the index from disk (models: 4b): each store/<name>/<version> that is a
  //      directory holding a valid saved manifest naming that very name and
  //      version is installed; anything else under store/ (other than
  //      index.json) is moved to staging/ and deleted, and listed in the report.
  //      Contents are not hashed here (that is verify());
  //  4b. models: each _models/<name>/<version>/<variant> holding a valid
  //      marker naming that name, version and variant is installed; other
  //      trees and junk there are discarded (as in 4); then every entry of
  //      _blobs/sha256/ that is not a blob some valid marker references is
  //      deleted, and anything else under _blobs/;
  //   5. rewrites index.json when it differs from the rebuilt index.
  // Errors: Errc::io / not_found when a directory cannot be created or read,
  // Errc::invalid_argument when staging/ and store/ are on different
  // filesystems, Errc::busy when another Store holds the directory.
  static catalog::Result<Store> open(const std::filesystem::path& state_dir,
                                     StoreOptions options = {});

  // Opens a read-only view of the store under `store_root` (store/ there, which
  // need not exist yet: then nothing is installed) whose changes go through
  // `committer` (committer.hpp): the daemon's Store when another process owns
  // store/. The view never writes under `store_root`: open() steps 1, 3 and 5
  // are the committer's; step 4 indexes the valid trees and skips the rest.
  // `lock_file` (in the caller's own state directory) is flock'ed as open()
  // flocks store/, so that one daemon at a time holds the leases.
  // In a view: install() is refused (invalid_argument;
  // use commit()); remove() and gc() check the leases under the mutex, then ask
  // the committer and re-read the index from disk (reload()). verify(), the
  // index queries and the leases work as in a store opened with open().
  // Errors: Errc::busy when another view holds `lock_file`, Errc::io.
  static catalog::Result<Store> open_view(const std::filesystem::path& store_root,
                                          const std::filesystem::path& lock_file,
                                          std::shared_ptr<Committer> committer);

  // A view only: has the committer install `request` (committer.hpp), then
  // re-reads the index and returns the version installed as the disk now says
  // (the committer's answer names it; its word is not taken for the contents).
  // Errors: the committer's; Errc::invalid_argument when not a view.
  catalog::Result<InstalledPackage> commit(const CommitInstall& request,
                                           const InstallProgress& progress = {},
                                           std::stop_token stop = {});

  // A view only: re-reads the index from the saved manifests on disk (after
  // another process changed store/). Leases are kept. Errors: Errc::io.
  catalog::Result<void> reload();

  ~Store();
  Store(Store&&) noexcept;
  Store& operator=(Store&&) noexcept;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // What open() removed while recovering.
  const OpenReport& open_report() const;

  // Absolute paths of the layout.
  const std::filesystem::path& state_dir() const;
  std::filesystem::path store_dir() const;
  std::filesystem::path staging_dir() const;
  std::filesystem::path index_path() const;

  // Installs the package file `package_file` (already checked against the signed
  // catalog: length and hashes) whose signed EP metadata is `signed_meta`:
  //   1. reads its manifest and checks it against `signed_meta` (fast refusal);
  //   2. if that version is installed with an equal manifest and its tree
  //      verifies, returns it (idempotent; nothing is extracted);
  //   3. makes a fresh staging/install-XXXXXX/tree;
  //   4. extracts into it (catalog::package::extract_package(), without its
  //      fsync per file: step 7 syncs the tree at once);
  //   5. checks the extracted manifest against `signed_meta` again;
  //   6. writes .epbroker-manifest.json;
  //   7. seals the tree: files 0444/0555, directories 0755, then one syncfs()
  //      of the filesystem makes all of it durable (seal_tree());
  //   8. under the mutex: renames the new tree to store/<name>/<version>, or,
  //      when that version is there already, exchanges the two atomically (the
  //      old tree lands in the install dir); fsyncs the directories;
  //   9. writes index.json; then (without the mutex) deletes the install dir
  //      with the old tree.
  // Replacing an installed version (a damaged tree, or a republished package
  // with a different manifest) keeps its leases; a different manifest is refused
  // while leased unless the installed tree is damaged (repair). If another
  // install of an equal manifest committed meanwhile, that one is returned.
  // On any failure staging is cleaned and store/ and index.json are exactly as
  // before. `stop` cancels until step 8 starts.
  // Errors: as extract_package() (Errc::not_found for a missing file,
  // Errc::malformed, hash_mismatch, unsafe_entry, too_large, ...);
  // Errc::manifest_mismatch when the manifest disagrees with `signed_meta`;
  // Errc::invalid_argument for a package named "index.json" or shipping a
  // top-level .epbroker-manifest.json; Errc::busy (replacing a leased version);
  // Errc::cancelled; Errc::io.
  catalog::Result<InstalledPackage> install(const std::filesystem::path& package_file,
                                            const catalog::EpMetadata& signed_meta,
                                            const InstallProgress& progress = {},
                                            std::stop_token stop = {});

  // Every installed version, by name then version text.
  std::vector<InstalledPackage> list() const;
  // Installed versions of `name`, newest first (by version value, then text).
  std::vector<InstalledPackage> versions(std::string_view name) const;
  // One installed version (exact version text), or nullopt.
  std::optional<InstalledPackage> find(std::string_view name, std::string_view version) const;
  // Absolute path of the EP library of an installed version.
  // Errors: Errc::not_found when that version is not installed.
  catalog::Result<std::filesystem::path> library_path(std::string_view name,
                                                      std::string_view version) const;

  // Leases keep an installed version from being removed (remove(), gc()) while an
  // application uses it. `owner` is free text (the daemon uses the bus unique
  // name). Errors: Errc::not_found when that version is not installed.
  catalog::Result<LeaseId> acquire_lease(std::string_view name, std::string_view version,
                                         std::string_view owner);
  // Releases one lease; unknown ids are ignored.
  void release_lease(LeaseId id);
  // Releases every lease of `owner` (when it leaves the bus); returns how many.
  std::size_t release_owner(std::string_view owner);
  // Live leases on one version.
  std::size_t lease_count(std::string_view name, std::string_view version) const;

  // Removes version `version` of `name`, or every installed version of `name`
  // when `version` is nullopt; all or nothing. Each tree is renamed into
  // staging/trash-XXXXXX first (it disappears atomically), index.json is
  // rewritten, then the trees are deleted. Returns what was removed.
  // Errors: Errc::not_found (nothing of that name/version installed),
  // Errc::busy when a version is leased (the message gives the lease count)
  // unless `even_if_leased` (an admin's remove --now: the leases stay counted,
  // their holders keep what they mapped), Errc::io (then nothing was removed).
  catalog::Result<std::vector<InstalledPackage>> remove(
      std::string_view name, std::optional<std::string_view> version = std::nullopt,
      bool even_if_leased = false);

  // Garbage collection: for each name, keeps the `keep` newest installed
  // versions (by version value; `keep` 0 counts as 1) and removes every older
  // one that no lease holds, all at once as remove() does. Returns what was
  // removed (by name, then version text). Errors: Errc::io (nothing removed).
  catalog::Result<std::vector<InstalledPackage>> gc(std::size_t keep = 1);

  // Re-hashes every installed tree against its saved manifest (see
  // check_tree(): sizes, SHA-256, modes, nothing missing, nothing extra) and
  // checks the saved manifest still equals what was installed. Packages
  // replaced or removed while being checked are left out of the report.
  // The daemon repairs a damaged package by installing it again.
  // Errors: Errc::io when store/ itself cannot be read; Errc::cancelled when
  // `progress` returned false.
  //
  // Models: verify() also checks every installed model variant: each blob a
  // marker references is hashed once (its bytes counted once), and each tree
  // must hold exactly its variant's files (plus the marker), each a regular
  // file of mode 0444 with the listed size and the very inode (st_dev, st_ino)
  // of its blob ("not shared with its blob" otherwise); directories 0755; the
  // marker equal to what was installed. A damaged blob is reported for every
  // variant that lists it. Progress counts the blobs' bytes after the packages'.
  catalog::Result<VerifyReport> verify(const VerifyProgress& progress = {}) const;

  // ---- Models (model_store.hpp for the layout) -------------------------------------------

  // Installs variant `model.variant` of `model.metadata` (already verified
  // against the signed targets by the caller). `new_blobs` maps the SHA-256 of
  // a file content to a descriptor of that content (borrowed: the caller closes
  // it; the caller verified its hash; a regular file on the store's filesystem
  // that linkat() can link, e.g. an O_TMPFILE file made without O_EXCL in
  // staging/). Every file's content must be in store/_blobs or in `new_blobs`.
  //   1. checks the metadata (parse_model_metadata(to_json()) gives it back),
  //      the variant, the name; if that variant is installed with an equal
  //      marker (but installed_at) and verifies, returns it;
  //   2. builds staging/model-XXXXXX/tree: directories, and each file a hard
  //      link of its blob: the one in _blobs (its size must be the listed
  //      size), else the given descriptor (through /proc/self/fd; its size must
  //      be the listed size);
  //   3. writes the marker, seals the tree (files 0444, and so their blobs;
  //      directories 0755), syncfs();
  //   4. under the mutex: links each content the tree holds that _blobs lacks
  //      into _blobs/sha256/<hex>; where _blobs has another inode of it (a
  //      concurrent install), the tree's file is linked again from that one, so
  //      every content keeps one inode; fsyncs;
  //   5. renames the tree to _models/<name>/<version>/<variant>, or exchanges
  //      it with the installed one (RENAME_EXCHANGE; where missing: aside, then
  //      rename), fsyncs the directories, writes index.json; blobs no marker
  //      references any more (the replaced tree's) are deleted.
  // Replacing an installed variant with other metadata is refused while it is
  // leased (Errc::busy), unless the installed one is damaged (a repair).
  // On failure staging is cleaned and store/ is as before (blobs linked in
  // step 4 are unlinked again). `stop` cancels until step 4.
  // Errors: Errc::invalid_argument (metadata that does not parse back, unknown
  // variant, reserved name, a file named .epbroker-model.json, a descriptor that
  // is not a regular file, a store view); Errc::not_found naming the sha256 of a
  // content neither in _blobs nor given; Errc::length_mismatch for a given or
  // stored blob of another size; Errc::busy; Errc::cancelled; Errc::io.
  catalog::Result<InstalledModel> install_model(const SignedModel& model,
                                                const std::map<std::string, int>& new_blobs,
                                                const InstallProgress& progress = {},
                                                std::stop_token stop = {});

  // Checks one installed variant as verify() checks every one (its blobs hashed,
  // its tree's links, sizes, modes and marker), without the mutex while it
  // hashes; in a view too. Returns its problems ("<relative path>: <what>",
  // sorted; empty when intact). `progress` (optional) gets (bytes done, total)
  // before each blob; returning false stops the check. Errors: Errc::not_found
  // when that variant is not installed; Errc::cancelled when `progress` stopped it.
  catalog::Result<std::vector<std::string>> model_problems(
      std::string_view name, std::string_view version, std::string_view variant,
      const std::function<bool(std::uint64_t done, std::uint64_t total)>& progress = {}) const;

  // The repair of damaged blobs (the commit helper's, before install_model()):
  // `fresh` maps a sha256 to a descriptor of that content (borrowed; the caller
  // verified its hash; a regular file on the store's filesystem that linkat()
  // can link, as install_model()'s). For each content some installed marker
  // lists (the others are left alone: install_model() takes them), under the
  // mutex:
  //   1. the descriptor's size must be the listed one (all are checked before
  //      anything changes); it is linked into a fresh staging/repair-XXXXXX/,
  //      made 0444 and fsync'ed;
  //   2. for every installed variant (any model, any version) whose marker
  //      lists it, each of its files of that content: a new link in the work
  //      directory, renamed over the file's path; then each such directory is
  //      fsync'ed;
  //   3. last, the same over _blobs/sha256/<hex>; that directory fsync'ed.
  // Nothing is ever written into the old inode: whoever opened or mapped the
  // old file keeps its bytes. Every path is, at every moment, either the old
  // inode or the new one; a crash leaves at worst some variants on the new
  // inode and the others (and the blob) on the old one, which verify() reports
  // ("not shared with its blob", or the old blob's damage) and the next repair
  // finishes (the blob is replaced last, so it is still found damaged), while
  // open() only wipes the work directory in staging/. An error after step 1
  // leaves the paths already renamed on the new inode (the same contract).
  // Returns the contents replaced, sorted. Errors: Errc::invalid_argument (a
  // store view, a descriptor that is not a regular file), Errc::length_mismatch
  // (a descriptor of another size), Errc::io.
  catalog::Result<std::vector<std::string>> replace_model_blobs(
      const std::map<std::string, int>& fresh);

  // Every installed model variant, by name, version text, variant.
  std::vector<InstalledModel> models() const;
  // One installed variant, or nullopt.
  std::optional<InstalledModel> find_model(std::string_view name, std::string_view version,
                                           std::string_view variant) const;
  // Bytes the installed models take (model_store.hpp).
  ModelUsage usage() const;

  // A lease on one installed variant (as acquire_lease() for a package version;
  // release_lease() and release_owner() release model leases too).
  // Errors: Errc::not_found when that variant is not installed.
  catalog::Result<LeaseId> acquire_model_lease(std::string_view name, std::string_view version,
                                               std::string_view variant, std::string_view owner);
  // Live leases on one variant.
  std::size_t model_lease_count(std::string_view name, std::string_view version,
                                std::string_view variant) const;

  // Removes variant `variant` of `version` of model `name` (nullopt: every
  // variant of that version; `version` nullopt: every installed variant of
  // `name`); all or nothing, as remove(): the trees go to staging/trash-XXXXXX,
  // index.json is rewritten, then, in the same locked section, every blob no
  // remaining marker references is deleted; the trees are deleted after.
  // Errors: Errc::not_found (nothing such installed); Errc::busy when a variant
  // is leased (the message gives the lease count) unless `even_if_leased`;
  // Errc::io (nothing removed). In a view the leases are checked under the
  // mutex, then the committer removes (Committer::remove_model(), its errors)
  // and the index is read again from the disk, as remove() does.
  catalog::Result<std::vector<InstalledModel>> remove_model(
      std::string_view name, std::optional<std::string_view> version = std::nullopt,
      std::optional<std::string_view> variant = std::nullopt, bool even_if_leased = false);

 private:
  struct Impl;
  explicit Store(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace epbrokerd::store
