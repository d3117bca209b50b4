#include "daemon/store/tree.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <system_error>
#include <vector>

#include "catalog/crypto/hash.hpp"
#include "catalog/text.hpp"
#include "catalog/unique_fd.hpp"
#include "daemon/store/installed.hpp"

namespace epbrokerd::store {
namespace {

namespace fs = std::filesystem;
using catalog::Errc;
using catalog::fail;

using Fd = catalog::UniqueFd;

std::unexpected<catalog::Error> sys_error(std::string_view what, const fs::path& p, int e = errno) {
  return fail(e == ENOENT ? Errc::not_found : catalog::errno_code(e),
              std::string(what) + " " + p.string() + ": " + std::strerror(e));
}

// Every ancestor directory ("a", "a/b") of the listed files.
std::set<std::string> expected_dirs(const catalog::package::Manifest& manifest) {
  std::set<std::string> dirs;
  for (const auto& f : manifest.files) {
    for (auto slash = f.path.find('/'); slash != std::string::npos;
         slash = f.path.find('/', slash + 1)) {
      dirs.insert(f.path.substr(0, slash));
    }
  }
  return dirs;
}

// Each directory under `dir` (not following links) made 0700 when it denies its
// owner rwx, so that its entries can be removed.
void grant_owner_access(const fs::path& dir) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return;
  if ((st.st_mode & S_IRWXU) != S_IRWXU) ::chmod(dir.c_str(), 0700);
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    grant_owner_access(it->path());
  }
}

// SHA-256 of the regular file at `path`, opened without following a link.
catalog::Result<std::string> hash_file(const fs::path& path, std::uint64_t& bytes) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) return sys_error("open", path);
  catalog::crypto::Hasher hasher(catalog::crypto::HashAlgo::sha256);
  std::vector<std::byte> buf(std::size_t{1} << 20);
  while (true) {
    const ssize_t n = ::read(fd.get(), buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return sys_error("read", path);
    if (n == 0) break;
    hasher.update(std::span<const std::byte>(buf.data(), static_cast<std::size_t>(n)));
    bytes += static_cast<std::uint64_t>(n);
  }
  return hasher.finish_hex();
}

}  // namespace

catalog::Result<void> remove_tree(const fs::path& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
  if (!ec) return {};
  // A directory that denies its owner access: open it up and try once more.
  grant_owner_access(path);
  ec.clear();
  fs::remove_all(path, ec);
  if (ec) return fail(Errc::io, "remove " + path.string() + ": " + ec.message());
  return {};
}

catalog::Result<void> write_new_file(const fs::path& dir, std::string_view name,
                                     std::string_view bytes, std::uint32_t mode) {
  const fs::path path = dir / name;
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd.valid()) return sys_error("create", path);
  // 1. All the bytes, handling short writes.
  auto fail_and_unlink = [&](std::string_view what) {
    auto err = sys_error(what, path);
    ::unlink(path.c_str());
    return err;
  };
  for (std::size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::write(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail_and_unlink("write");
    done += static_cast<std::size_t>(n);
  }
  // 2. Exact mode, then durable.
  if (::fchmod(fd.get(), static_cast<mode_t>(mode)) != 0) return fail_and_unlink("chmod");
  if (::fsync(fd.get()) != 0) return fail_and_unlink("fsync");
  return {};
}

catalog::Result<void> seal_tree(const fs::path& root, const catalog::package::Manifest& manifest,
                                int sync_fd) {
  std::map<std::string, bool> listed;  // path -> executable
  for (const auto& f : manifest.files) listed.emplace(f.path, f.executable);
  std::vector<fs::path> dirs;  // pre-order; chmod'ed in reverse, root last
  dirs.push_back(root);
  // 1. Files: chmod each (through a descriptor, never a link).
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::path& p = it->path();
    const std::string rel = p.lexically_relative(root).generic_string();
    const fs::file_status st = it->symlink_status(ec);
    if (ec) break;
    if (fs::is_directory(st)) {
      dirs.push_back(p);
      continue;
    }
    std::uint32_t mode = kTreeFileMode;
    if (auto f = listed.find(rel); f != listed.end()) {
      mode = f->second ? kTreeExecutableMode : kTreeFileMode;
    } else if (rel != kSavedManifestName) {
      return fail(Errc::unsafe_entry, "sealing " + root.string() + ": unexpected entry " + rel);
    }
    if (!fs::is_regular_file(st)) {
      return fail(Errc::unsafe_entry, "sealing " + root.string() + ": not a regular file: " + rel);
    }
    Fd fd(::open(p.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd.valid()) return sys_error("open", p);
    if (::fchmod(fd.get(), static_cast<mode_t>(mode)) != 0) return sys_error("chmod", p);
  }
  if (ec) return fail(Errc::io, "walking " + root.string() + ": " + ec.message());
  // 2. Directories, deepest first, the root last.
  for (auto d = dirs.rbegin(); d != dirs.rend(); ++d) {
    Fd fd(::open(d->c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd.valid()) return sys_error("open", *d);
    if (::fchmod(fd.get(), static_cast<mode_t>(kTreeDirMode)) != 0) return sys_error("chmod", *d);
  }
  // 3. All of it durable at once.
  if (::syncfs(sync_fd) != 0) return sys_error("syncfs", root);
  return {};
}

TreeCheck check_tree(const fs::path& root, const catalog::package::Manifest& manifest) {
  TreeCheck out;
  auto problem = [&](const std::string& rel, const std::string& what) {
    out.problems.push_back((rel.empty() ? std::string(".") : rel) + ": " + what);
  };
  // 1. The root itself.
  struct stat st {};
  if (::lstat(root.c_str(), &st) != 0) {
    problem("", std::string("cannot stat the tree: ") + std::strerror(errno));
    return out;
  }
  if (!S_ISDIR(st.st_mode)) {
    problem("", "not a directory");
    return out;
  }
  if ((st.st_mode & 07777u) != kTreeDirMode) {
    problem("", "directory mode " + catalog::mode_text(st.st_mode) + ", want " +
                    catalog::mode_text(kTreeDirMode));
  }
  // 2. Every entry: expected, of the right type, mode, size and hash.
  std::map<std::string, const catalog::package::FileEntry*> listed;
  for (const auto& f : manifest.files) listed.emplace(f.path, &f);
  const std::set<std::string> dirs = expected_dirs(manifest);
  std::set<std::string> seen;
  bool saw_saved_manifest = false;
  std::error_code ec;
  auto it = fs::recursive_directory_iterator(root, ec);
  if (ec) problem("", "cannot read the tree: " + ec.message());
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::path& p = it->path();
    const std::string rel = p.lexically_relative(root).generic_string();
    if (::lstat(p.c_str(), &st) != 0) {
      problem(rel, std::string("cannot stat: ") + std::strerror(errno));
      continue;
    }
    const std::uint32_t mode = st.st_mode & 07777u;
    if (S_ISDIR(st.st_mode)) {
      if (!dirs.contains(rel)) {
        problem(rel, "unexpected directory");
        it.disable_recursion_pending();  // one line for the whole extra subtree
      } else if (mode != kTreeDirMode) {
        problem(rel, "directory mode " + catalog::mode_text(mode) + ", want " +
                         catalog::mode_text(kTreeDirMode));
      }
      continue;
    }
    if (!S_ISREG(st.st_mode)) {
      problem(rel, S_ISLNK(st.st_mode) ? "unexpected symlink" : "unexpected special file");
      continue;
    }
    if (rel == kSavedManifestName) {
      saw_saved_manifest = true;
      if (mode != kTreeFileMode) {
        problem(rel,
                "mode " + catalog::mode_text(mode) + ", want " + catalog::mode_text(kTreeFileMode));
      }
      continue;
    }
    const auto f = listed.find(rel);
    if (f == listed.end()) {
      problem(rel, "unexpected file");
      continue;
    }
    seen.insert(rel);
    const std::uint32_t want = f->second->executable ? kTreeExecutableMode : kTreeFileMode;
    if (mode != want)
      problem(rel, "mode " + catalog::mode_text(mode) + ", want " + catalog::mode_text(want));
    const auto size = static_cast<std::uint64_t>(st.st_size);
    if (size != f->second->size) {
      problem(rel, "size " + std::to_string(size) + ", want " + std::to_string(f->second->size));
      continue;  // no point hashing
    }
    auto digest = hash_file(p, out.bytes_hashed);
    if (!digest) {
      problem(rel, "cannot hash: " + digest.error().message);
    } else if (*digest != f->second->sha256) {
      problem(rel, "sha256 " + *digest + ", want " + f->second->sha256);
    }
  }
  if (ec) problem("", "cannot read the tree: " + ec.message());
  // 3. Nothing missing.
  if (!saw_saved_manifest) problem(std::string(kSavedManifestName), "missing");
  for (const auto& [path, entry] : listed) {
    if (!seen.contains(path)) problem(path, "missing");
  }
  std::sort(out.problems.begin(), out.problems.end());
  return out;
}

}  // namespace epbrokerd::store
