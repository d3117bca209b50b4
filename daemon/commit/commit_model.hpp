// The commit of ML models (issue 21, step 5): what the privileged side does with
// a daemon's request to install or remove one model variant. As for packages
// (commit.hpp), nothing the daemon says is taken on trust: the card's metadata
// comes from this side's own TUF run, the variant must be one it lists, every
// file must be signed as NAME/blobs/<sha256>, and each blob the daemon hands
// over is copied and checked against its signed length and sha256 before the
// store sees it. The daemon only ever sends the blobs this side asked for.
#pragma once

#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "catalog/error.hpp"
#include "catalog/unique_fd.hpp"
#include "daemon/commit/commit.hpp"
#include "daemon/store/committer.hpp"

namespace epbrokerd::commit {

// The conversation about blobs: commit_install_model() says once which blobs it
// needs, then takes them one at a time until the daemon says commit.
class BlobFeed {
 public:
  virtual ~BlobFeed() = default;
  // Tells the daemon which contents to send (sha256 hex, sorted, unique; maybe
  // none). Errors end the install.
  virtual catalog::Result<void> need(const std::vector<std::string>& sha256s) = 0;
  // The next blob the daemon sends, (sha256 as it claims, its descriptor), or
  // nullopt when it asks for the commit. Errors end the install.
  virtual catalog::Result<std::optional<std::pair<std::string, catalog::UniqueFd>>> next(
      std::stop_token stop) = 0;
};

// The message of the busy error for a blob that was in the store when the need
// was computed and gone at the commit; the daemon retries once.
inline constexpr std::string_view kVanishedBlob = "a blob vanished from the store: ";
// Whether `e` is that error.
bool is_vanished_blob(const catalog::Error& e);

// Verifies and installs variant `request.variant` of the model whose card is
// `request.target_path`. Steps:
//   1. as commit_install(): under trust/'s lock the TUF workflow over the
//      handed-over metadata, from this side's anchor;
//   2. the card target, parse_model_metadata() of its custom, the name binding
//      (check_name_binding()), check_model_targets() over every variant against
//      the signed targets, the variant (it must be listed);
//   3. the variant's contents store/_blobs lacks (a regular file of the listed
//      size counts as present; with `repair` each present one is re-hashed,
//      and one whose SHA-256 is not its name is needed too: damaged);
//      `feed.need()` of those;
//   4. each blob received: one asked for and not yet received, copied into an
//      O_TMPFILE of ours with copy_verified() against NAME/blobs/<sha256>;
//   5. at commit, every needed blob received; the store opened (its lock
//      waited for); Store::replace_model_blobs() with the copies (each
//      content an installed marker lists, i.e. a damaged or missing blob, is
//      linked over every variant's path of it and then over the blob: the old
//      inode is never written); Store::install_model() with the copies (the
//      variant's tree rebuilt if it is still damaged).
// Errors: not_found (remote, card target, variant), the TUF codes, what
// parse_model_metadata(), check_name_binding() and check_model_targets() say,
// invalid_argument (a blob not asked for or sent twice, a commit before every
// needed blob), hash_mismatch / length_mismatch (a blob's bytes), as
// Store::replace_model_blobs(), busy
// (kVanishedBlob, lock wait over, leased), as Store::install_model(),
// cancelled (`stop`).
catalog::Result<store::InstalledModel> commit_install_model(
    const CommitEnv& env, const store::CommitModelInstall& request, BlobFeed& feed,
    const store::InstallProgress& progress, std::stop_token stop);

// Removes model variants (Store::remove_model()). Errors: invalid_argument (a
// name, version or variant id that cannot be installed), as
// Store::remove_model(), busy (lock wait over).
catalog::Result<void> commit_remove_model(const CommitEnv& env, std::string_view name,
                                          std::optional<std::string_view> version,
                                          std::optional<std::string_view> variant,
                                          bool even_if_leased);

// Whether `id` can be a variant id ([a-z0-9][a-z0-9._-]{0,31}).
bool is_variant_id(std::string_view id);

}  // namespace epbrokerd::commit
