// The commit: what the privileged side does with one request of the daemon.
//
// The daemon (unprivileged, on the network) downloads and verifies a package,
// then asks for it to be committed into the root-owned store. Nothing it says
// is taken on trust: commit_install() re-runs the TUF workflow over the
// metadata the daemon hands over, from this side's own trust anchor and its own
// persisted trusted metadata (so forged, mixed or rolled-back metadata is
// refused as a client refuses it from a hostile server), finds the target,
// checks that the package name is bound to the target's path namespace, copies
// the package into its own staging while hashing it, checks the copy's length
// and hashes against the signed ones, and only then lets anything parse it:
// Store::install() extracts that copy, checks the manifest against the signed
// entry and commits. The daemon's descriptors can change under us at any
// moment; only the copy, which the daemon cannot reach, is ever parsed.
//
// The same code runs in the epbroker-commit executable (daemon/commit_main.cpp,
// started per request by systemd as root, with no network) and in-process
// (LocalCommitter: core unit tests, where there is nothing to separate).
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/error.hpp"
#include "catalog/package/extract.hpp"
#include "daemon/config/config.hpp"
#include "daemon/store/committer.hpp"
#include "daemon/store/store.hpp"

namespace epbrokerd::commit {

struct CommitEnv {
  // Holds store/, staging/ (Store::open()) and trust/<remote>/ (this side's
  // trusted TUF metadata: root.json from the anchor on first use, then what
  // each commit verified; anchor.sha256 records which anchor it grew from).
  std::filesystem::path store_root;
  // The remotes, for their trust anchors (trusted_root: a root-owned file under
  // /etc on a real system). Nothing else of them is used: no URL is fetched.
  std::vector<config::Remote> remotes;
  catalog::package::ExtractLimits limits{};
  // How long to wait for another commit holding the store's lock.
  std::chrono::milliseconds lock_wait{std::chrono::seconds(120)};
  // How long a streamed package (a pipe) may bring no byte before the copy ends.
  std::chrono::milliseconds stream_idle{std::chrono::seconds(120)};
  // Reference time for metadata expiry; the wall clock when unset.
  std::optional<std::chrono::system_clock::time_point> now;
};

// Verifies and installs `request` as the header says. Steps:
//   1. under trust/'s lock: the remote is configured, its anchor readable;
//      trust/<remote>/ (re)seeded from the anchor when it never was or the
//      anchor changed (an admin's act); the TUF workflow over the handed-over
//      metadata (HandoffFetcher);
//   2. the target, its EP metadata, the name binding;
//   3. the package (a file, or a pipe the daemon streams the download into as it
//      arrives) copied into an anonymous file of ours, its length capped at the
//      signed one and hashed; length and every hash must match;
//   4. the store opened (its lock waited for, its recovery run);
//   5. Store::install() of the copy (idempotent for an intact equal version).
// Errors: not_found (remote, target), the TUF and catalog codes of what failed,
// hash_mismatch / length_mismatch for the package, busy (lock wait over), io,
// no_space, cancelled (`stop`).
catalog::Result<store::InstalledPackage> commit_install(const CommitEnv& env,
                                                        const store::CommitInstall& request,
                                                        const store::InstallProgress& progress,
                                                        std::stop_token stop);

// Removes one version (or all, nullopt) of `name` from the store (the daemon
// checked its leases). Errors: invalid_argument (a name or version that could
// not be installed), as Store::remove(), busy (lock wait over).
catalog::Result<void> commit_remove(const CommitEnv& env, std::string_view name,
                                    std::optional<std::string_view> version);

// Opens the store (Store::open(): its recovery), without waiting: a commit that
// holds it recovered it when it opened it. Errors: as Store::open().
catalog::Result<void> commit_recover(const CommitEnv& env);

// The Committer that runs the commit in this process (no privilege boundary).
class LocalCommitter : public store::Committer {
 public:
  explicit LocalCommitter(CommitEnv env) : env_(std::move(env)) {}
  catalog::Result<store::InstalledPackage> install(const store::CommitInstall& request,
                                                   const store::InstallProgress& progress,
                                                   std::stop_token stop) override {
    return commit_install(env_, request, progress, std::move(stop));
  }
  catalog::Result<void> remove(std::string_view name,
                               std::optional<std::string_view> version) override {
    return commit_remove(env_, name, version);
  }
  catalog::Result<void> recover() override { return commit_recover(env_); }
  // commit_install_model() (commit_model.cpp), asking `blobs` for each needed
  // blob in turn; retried once when a blob vanished meanwhile.
  catalog::Result<store::InstalledModel> install_model(const store::CommitModelInstall& request,
                                                       const store::BlobSource& blobs,
                                                       const store::InstallProgress& progress,
                                                       std::stop_token stop) override;
  // commit_remove_model() (commit_model.cpp).
  catalog::Result<void> remove_model(std::string_view name, std::optional<std::string_view> version,
                                     std::optional<std::string_view> variant,
                                     bool even_if_leased) override;

 private:
  CommitEnv env_;
};

}  // namespace epbrokerd::commit
