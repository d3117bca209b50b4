// Filesystem operations shared by the store's transactions (open, install,
// remove): directories, renames, work directories that clean up after
// themselves. Internal to daemon/store (tree.hpp has the helpers for the trees
// themselves).
#pragma once

#include <sys/types.h>

#include <cerrno>
#include <expected>
#include <filesystem>
#include <string_view>

#include "catalog/error.hpp"

namespace epbrokerd::store::detail {

// The error of a failed system call `what` on `p`: Errc::not_found for ENOENT,
// else catalog::errno_code(e); the message names the call, the path and errno.
std::unexpected<catalog::Error> sys_error(std::string_view what, const std::filesystem::path& p,
                                          int e = errno);

// mkdir with an exact mode whatever the umask; an existing directory is fine.
// Returns whether it was created. Errors: as sys_error(); Errc::io when `dir`
// exists as something else.
catalog::Result<bool> ensure_dir(const std::filesystem::path& dir, mode_t mode);

// A fresh, unique directory `parent`/`prefix`XXXXXX (mode 0700).
// Errors: as sys_error().
catalog::Result<std::filesystem::path> make_unique_dir(const std::filesystem::path& parent,
                                                       std::string_view prefix);

// rename(2) of `from` to `to`. Errors: Errc::io, whatever errno says (the
// message names both paths).
catalog::Result<void> rename_path(const std::filesystem::path& from,
                                  const std::filesystem::path& to);

// Swaps `a` and `b` atomically (renameat2 RENAME_EXCHANGE). Errors:
// Errc::unsupported when the filesystem or kernel cannot, Errc::io otherwise.
catalog::Result<void> exchange_paths(const std::filesystem::path& a,
                                     const std::filesystem::path& b);

// Removes `dir` (with everything in it, remove_tree()) when the object dies: the
// work directories of install() and of open()'s discards, once their trees are
// committed or not.
class TreeRemover {
 public:
  explicit TreeRemover(std::filesystem::path dir);
  ~TreeRemover();
  TreeRemover(const TreeRemover&) = delete;
  TreeRemover& operator=(const TreeRemover&) = delete;

 private:
  std::filesystem::path dir_;
};

}  // namespace epbrokerd::store::detail
