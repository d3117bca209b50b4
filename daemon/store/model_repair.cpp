// The check of one installed model variant (Store::model_problems()) and the
// repair of damaged blobs (Store::replace_model_blobs()): a fresh verified copy
// linked over every path of that content, never a write into the old inode.
// Contracts: store.hpp.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "catalog/atomic_file.hpp"
#include "daemon/store/fs_ops.hpp"
#include "daemon/store/model_store.hpp"
#include "daemon/store/store.hpp"
#include "daemon/store/store_impl.hpp"
#include "daemon/store/tree.hpp"

namespace epbrokerd::store {
namespace {

namespace fs = std::filesystem;
using catalog::Errc;
using catalog::fail;
using catalog::Result;
using detail::ensure_dir;
using detail::injected;
using detail::make_unique_dir;
using detail::rename_path;
using detail::sys_error;
using detail::TreeRemover;

// link(2) of `from` to `to` (no link followed). Errors: as sys_error().
Result<void> hard_link(const fs::path& from, const fs::path& to) {
  if (::linkat(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), 0) != 0) return sys_error("link", to);
  return {};
}

}  // namespace

Result<std::vector<std::string>> Store::model_problems(
    std::string_view name, std::string_view version, std::string_view variant,
    const std::function<bool(std::uint64_t, std::uint64_t)>& progress) const {
  const Impl& s = *impl_;
  std::optional<detail::ModelEntry> entry;
  {
    std::lock_guard lock(s.mu);
    const auto it = s.models.find({std::string(name), std::string(version), std::string(variant)});
    if (it != s.models.end()) entry = it->second;
  }
  if (!entry) {
    return fail(Errc::not_found, "model " + std::string(name) + " " + std::string(version) + " " +
                                     std::string(variant) + " is not installed");
  }
  std::map<std::string, std::uint64_t> blobs;  // each content once, as check_models() hashes
  for (const auto& f : entry->model.files) blobs[f.sha256] = f.size;
  std::uint64_t total = 0;
  for (const auto& [hex, size] : blobs) total += size;
  auto check = detail::check_models({*entry}, s.blobs_dir(), [&](std::uint64_t done) {
    return !progress || progress(done, total);
  });
  if (!check) return fail(Errc::cancelled, "check cancelled");
  std::vector<std::string> out;
  if (!check->problems.empty()) out = std::move(check->problems.begin()->second);
  return out;
}

Result<std::vector<std::string>> Store::replace_model_blobs(
    const std::map<std::string, int>& fresh) {
  Impl& s = *impl_;
  if (s.committer) return fail(Errc::invalid_argument, "a store view cannot replace blobs");
  std::lock_guard lock(s.mu);

  // What the markers list of each given content: its size and every path.
  std::map<std::string, std::uint64_t> size_of;
  std::map<std::string, std::vector<fs::path>> paths_of;
  for (const auto& [key, e] : s.models) {
    for (const auto& f : e.model.files) {
      if (!fresh.contains(f.sha256)) continue;
      size_of[f.sha256] = f.size;
      paths_of[f.sha256].push_back(e.model.root / f.path);
    }
  }
  std::vector<std::string> replaced;
  if (paths_of.empty()) return replaced;

  // 1. Every descriptor checked before anything changes.
  for (const auto& [hex, size] : size_of) {
    struct stat st {};
    if (::fstat(fresh.at(hex), &st) != 0 || !S_ISREG(st.st_mode)) {
      return fail(Errc::invalid_argument, "the blob given for " + hex + " is not a regular file");
    }
    if (static_cast<std::uint64_t>(st.st_size) != size) {
      return fail(Errc::length_mismatch, "the blob given for " + hex + " has " +
                                             std::to_string(st.st_size) + " bytes, not " +
                                             std::to_string(size));
    }
  }
  if (s.fault("model.replace_staging")) return injected("model.replace_staging");
  auto work = make_unique_dir(s.staging, "repair-");
  if (!work) return std::unexpected(std::move(work.error()));
  const TreeRemover remove_work(*work);
  for (const fs::path& dir : {s.store / kBlobsDirName, s.blobs_dir()}) {
    if (auto ok = ensure_dir(dir, kTreeDirMode); !ok) return std::unexpected(ok.error());
  }
  std::size_t links = 0;
  // A new name of `copy` in the work directory, renamed over `path`.
  auto link_over = [&](const fs::path& copy, const fs::path& path) -> Result<void> {
    const fs::path tmp = *work / ("link-" + std::to_string(links++));
    if (auto ok = hard_link(copy, tmp); !ok) return ok;
    return rename_path(tmp, path);
  };
  for (const auto& [hex, paths] : paths_of) {
    const int fd = fresh.at(hex);
    // 1. The copy: named in the work directory, read-only, durable.
    const fs::path copy = *work / hex;
    const std::string self = "/proc/self/fd/" + std::to_string(fd);
    if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, copy.c_str(), AT_SYMLINK_FOLLOW) != 0) {
      return sys_error("link the blob given for " + hex + " to", copy);
    }
    if (::fchmod(fd, kTreeFileMode) != 0) return sys_error("chmod", copy);
    if (::fsync(fd) != 0) return sys_error("fsync", copy);
    // 2. Every tree path of that content, then their directories.
    std::set<fs::path> dirs;
    for (const fs::path& path : paths) {
      if (s.fault("model.replace_link")) return injected("model.replace_link");
      if (auto ok = link_over(copy, path); !ok) return std::unexpected(ok.error());
      dirs.insert(path.parent_path());
    }
    for (const fs::path& dir : dirs) {
      if (auto ok = catalog::fsync_dir(dir); !ok) return std::unexpected(ok.error());
    }
    // 3. The blob last: while it is the old one, a repair finds it damaged.
    if (s.fault("model.replace_blob")) return injected("model.replace_blob");
    if (auto ok = link_over(copy, s.blobs_dir() / hex); !ok) return std::unexpected(ok.error());
    if (auto ok = catalog::fsync_dir(s.blobs_dir()); !ok) return std::unexpected(ok.error());
    replaced.push_back(hex);
  }
  return replaced;
}

}  // namespace epbrokerd::store
