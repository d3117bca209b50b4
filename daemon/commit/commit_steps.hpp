// The steps commit_install() (commit.cpp) and commit_install_model()
// (commit_model.cpp) share. Internal to daemon/commit/.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <stop_token>
#include <string_view>

#include "catalog/error.hpp"
#include "catalog/tuf/metadata.hpp"
#include "catalog/tuf/updater.hpp"
#include "catalog/unique_fd.hpp"
#include "daemon/commit/commit.hpp"
#include "daemon/store/store.hpp"

namespace epbrokerd::commit::detail {

// Step 1 of a commit: under trust/'s lock (one commit at a time changes trust/;
// the store's lock is not held), the remote `remote` must be configured and its
// anchor readable; trust/<remote>/ is (re)seeded from the anchor when it never
// was or the anchor changed; the TUF workflow then runs over the metadata the
// daemon handed over (`metadata_dir_fd`, HandoffFetcher), and `use` is called
// with the refreshed updater, still under the lock. Errors: not_found (remote),
// the TUF codes (the message names the remote), what `use` returns.
catalog::Result<void> with_trusted_updater(
    const CommitEnv& env, std::string_view remote, int metadata_dir_fd, std::stop_token stop,
    const std::function<catalog::Result<void>(catalog::tuf::Updater&)>& use);

// Opens the store, waiting up to env.lock_wait while another commit holds it.
// Errors: as Store::open(), busy (wait over).
catalog::Result<store::Store> open_store(const CommitEnv& env);

// A copy of untrusted bytes that only this process can reach.
struct Copy {
  catalog::UniqueFd fd;         // an O_TMPFILE file (no O_EXCL: linkat() can name it)
  std::filesystem::path named;  // where it is, when the filesystem has no O_TMPFILE; else empty
};

// Copies `from` (the daemon's descriptor: a pipe the download streams into, or
// its file; either can change at will) into a file of ours in `dir`, at most
// `info.length` bytes, hashing what it writes; the copy must have exactly the
// signed length and every signed hash. Nothing here parses a byte. A stream that
// brings nothing for `idle` ends the copy (Errc::network). On error nothing is
// left in `dir`. Errors: invalid_argument (neither file nor pipe), bad_field (no
// hashes), length_mismatch, hash_mismatch, network, io/no_space, cancelled.
catalog::Result<Copy> copy_verified(int from, const std::filesystem::path& dir,
                                    const catalog::tuf::TargetFile& info,
                                    std::chrono::milliseconds idle, std::stop_token stop);

}  // namespace epbrokerd::commit::detail
