#include "daemon/store/fs_ops.hpp"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

#include "daemon/store/tree.hpp"

namespace epbrokerd::store::detail {

namespace fs = std::filesystem;
using catalog::Errc;
using catalog::fail;
using catalog::Result;

std::unexpected<catalog::Error> sys_error(std::string_view what, const fs::path& p, int e) {
  return fail(e == ENOENT ? Errc::not_found : catalog::errno_code(e),
              std::string(what) + " " + p.string() + ": " + std::strerror(e));
}

Result<bool> ensure_dir(const fs::path& dir, mode_t mode) {
  if (::mkdir(dir.c_str(), mode) == 0) {
    if (::chmod(dir.c_str(), mode) != 0) return sys_error("chmod", dir);
    return true;
  }
  if (errno != EEXIST) return sys_error("create directory", dir);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return sys_error("stat", dir);
  if (!S_ISDIR(st.st_mode)) return fail(Errc::io, dir.string() + ": not a directory");
  return false;
}

Result<fs::path> make_unique_dir(const fs::path& parent, std::string_view prefix) {
  std::string tmpl = (parent / (std::string(prefix) + "XXXXXX")).string();
  if (::mkdtemp(tmpl.data()) == nullptr) return sys_error("create directory in", parent);
  return fs::path(tmpl);
}

Result<void> rename_path(const fs::path& from, const fs::path& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) {
    const int e = errno;
    return fail(Errc::io,
                "rename " + from.string() + " to " + to.string() + ": " + std::strerror(e));
  }
  return {};
}

Result<void> exchange_paths(const fs::path& a, const fs::path& b) {
  if (::renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE) != 0) {
    const int e = errno;
    const bool unsupported = e == EINVAL || e == ENOSYS || e == EOPNOTSUPP;
    return fail(unsupported ? Errc::unsupported : Errc::io,
                "exchange " + a.string() + " and " + b.string() + ": " + std::strerror(e));
  }
  return {};
}

TreeRemover::TreeRemover(fs::path dir) : dir_(std::move(dir)) {}

TreeRemover::~TreeRemover() {
  if (!dir_.empty()) (void)remove_tree(dir_);
}

}  // namespace epbrokerd::store::detail
