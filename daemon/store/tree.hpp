// Filesystem helpers for the trees of the store (see daemon/store/store.hpp):
// sealing an extracted tree read-only, checking an installed tree against its
// manifest, removing a tree whatever its modes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/error.hpp"
#include "catalog/package/manifest.hpp"

namespace epbrokerd::store {

// Modes of an installed tree. Files lose their write bits (0644 -> 0444, 0755 ->
// 0555) so nothing, the daemon included, writes into an installed file by
// mistake. Directories stay 0755: moving a directory to another parent (into
// staging/ on removal or repair) needs write permission on it (to update
// ".."), and a crash half-way through a removal must never leave a tree the
// service user cannot delete. Other users cannot write either way (the service
// user owns the tree).
inline constexpr std::uint32_t kTreeDirMode = 0755;
inline constexpr std::uint32_t kTreeFileMode = 0444;
inline constexpr std::uint32_t kTreeExecutableMode = 0555;

// Removes `path` and everything under it, never following symlinks. A missing
// path is success. Directories that deny their owner write or search permission
// are made 0700 first, so a tampered tree still goes. Errors: Errc::io.
catalog::Result<void> remove_tree(const std::filesystem::path& path);

// Creates the file `dir`/`name` (O_EXCL, O_NOFOLLOW: never an existing file or a
// link) holding `bytes`, with exactly `mode` whatever the umask, and fsyncs it.
// Errors: Errc::io (Errc::not_found when `dir` is missing); on error nothing is
// left behind.
catalog::Result<void> write_new_file(const std::filesystem::path& dir, std::string_view name,
                                     std::string_view bytes, std::uint32_t mode);

// Seals the freshly extracted tree at `root` for installation: every file listed
// in `manifest` gets kTreeExecutableMode or kTreeFileMode, `root`/
// .epbroker-manifest.json kTreeFileMode, every directory kTreeDirMode; then one
// syncfs(sync_fd) makes the whole tree durable, contents and modes (every dirty
// page and inode of the filesystem, in one journal commit where an fsync per
// file would cost one each). `sync_fd` is a descriptor on the tree's filesystem
// opened before the tree was written, so that syncfs() also reports writeback
// errors of the writes made since (Linux >= 5.8).
// Errors: Errc::unsafe_entry for anything else in the tree (a link, an unlisted
// file); Errc::io when a chmod or the sync fails.
catalog::Result<void> seal_tree(const std::filesystem::path& root,
                                const catalog::package::Manifest& manifest, int sync_fd);

// What check_tree() found.
struct TreeCheck {
  // One line per problem, "<relative path>: <what>", sorted; empty when intact.
  std::vector<std::string> problems;
  std::uint64_t bytes_hashed = 0;
};

// Compares the installed tree at `root` with `manifest`: `root` a directory (not
// a link) of mode kTreeDirMode; every listed file present as a regular file with
// the listed size, SHA-256 and sealed mode; .epbroker-manifest.json present as a
// regular file of mode kTreeFileMode (its content is the caller's to check);
// every directory an ancestor of a listed file, of mode kTreeDirMode; nothing
// else (no extra files, directories, links or special files). Never throws; an
// unreadable entry is a problem.
TreeCheck check_tree(const std::filesystem::path& root, const catalog::package::Manifest& manifest);

}  // namespace epbrokerd::store
