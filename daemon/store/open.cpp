// Store::open(): the store's directories and lock, then crash recovery: staging/
// wiped, the index rebuilt from the saved manifests, index.json rewritten when it
// differs.
#include "daemon/store/store.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <memory>
#include <system_error>
#include <utility>
#include <vector>

#include "catalog/atomic_file.hpp"
#include "daemon/store/fs_ops.hpp"
#include "daemon/store/store_impl.hpp"
#include "daemon/store/tree.hpp"

namespace epbrokerd::store {
namespace {

namespace fs = std::filesystem;
using catalog::Errc;
using catalog::fail;
using catalog::Result;
using detail::check_storable;
using detail::ensure_dir;
using detail::Entry;
using detail::Key;
using detail::make_unique_dir;
using detail::rename_path;
using detail::sys_error;
using detail::TreeRemover;

constexpr std::uint64_t kMaxIndexBytes = std::uint64_t{256} << 20;

}  // namespace

Result<void> Store::Impl::discard(const fs::path& path, std::string reason) {
  auto trash = make_unique_dir(staging, "trash-");
  if (!trash) return std::unexpected(std::move(trash.error()));
  TreeRemover remover(*trash);
  if (auto moved = rename_path(path, *trash / "x"); !moved) {
    if (auto removed = remove_tree(path); !removed) return removed;
  }
  report.removed.push_back({path, std::move(reason)});
  return {};
}

Result<void> Store::Impl::rebuild_index(bool repair) {
  std::error_code ec;
  // A view of a store its committer has not created yet: nothing installed.
  if (!repair && !fs::exists(store, ec) && !ec) return {};
  std::vector<fs::path> names;
  for (auto it = fs::directory_iterator(store, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    names.push_back(it->path());
  }
  if (ec) return fail(Errc::io, "read " + store.string() + ": " + ec.message());
  std::sort(names.begin(), names.end());
  for (const fs::path& name_dir : names) {
    const std::string name = name_dir.filename().string();
    const auto status = fs::symlink_status(name_dir, ec);
    if (name == kIndexFileName && fs::is_regular_file(status)) continue;
    // The models' directories: step 4b.
    if ((name == kBlobsDirName || name == kModelsDirName) && fs::is_directory(status)) continue;
    if (!is_storable_name(name) || !fs::is_directory(status)) {
      if (!repair) continue;
      if (auto ok = discard(name_dir, "not a package directory"); !ok) return ok;
      continue;
    }
    std::vector<fs::path> versions;
    for (auto it = fs::directory_iterator(name_dir, ec); !ec && it != fs::directory_iterator();
         it.increment(ec)) {
      versions.push_back(it->path());
    }
    if (ec) return fail(Errc::io, "read " + name_dir.string() + ": " + ec.message());
    std::sort(versions.begin(), versions.end());
    for (const fs::path& tree : versions) {
      auto problem = validate_tree(name, tree);
      if (!problem || !repair) continue;
      if (auto ok = discard(tree, *problem); !ok) return ok;
    }
    if (!repair) continue;
    if (fs::is_empty(name_dir, ec) && !ec) {
      if (auto ok = discard(name_dir, "empty package directory"); !ok) return ok;
    }
  }
  // 4b. The models, and the blobs their markers reference.
  if (auto ok = rebuild_models(repair); !ok) return ok;
  if (!repair) return {};
  return catalog::fsync_dir(store);
}

std::optional<std::string> Store::Impl::validate_tree(const std::string& name,
                                                      const fs::path& tree) {
  struct stat st {};
  if (::lstat(tree.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return "not a directory";
  const fs::path saved_path = tree / kSavedManifestName;
  if (::lstat(saved_path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return "no saved manifest (missing or not a regular file)";
  }
  auto text = catalog::read_file(saved_path, kMaxSavedManifestBytes);
  if (!text) return "unreadable saved manifest: " + text.error().message;
  auto saved = parse_saved_manifest(*text);
  if (!saved) return "invalid saved manifest: " + saved.error().message;
  const std::string version = tree.filename().string();
  if (saved->manifest.ep.name != name || saved->manifest.ep.version.text != version) {
    return "saved manifest names " + saved->manifest.ep.name + " " +
           saved->manifest.ep.version.text + ", not " + name + " " + version;
  }
  if (auto ok = check_storable(saved->manifest); !ok) return ok.error().message;
  InstalledPackage p{std::move(saved->manifest), tree, saved->installed_at};
  index[Key{name, version}] = Entry{std::move(p), next_serial++};
  return std::nullopt;
}

Result<void> Store::Impl::set_layout(const fs::path& root, std::string_view what) {
  std::error_code ec;
  state = fs::absolute(root, ec).lexically_normal();
  if (ec) return fail(Errc::invalid_argument, std::string(what) + " " + root.string());
  if (!state.has_filename()) state = state.parent_path();
  store = state / "store";
  staging = state / "staging";
  return {};
}

Result<Store> Store::open(const fs::path& state_dir, StoreOptions options) {
  auto impl = std::make_unique<Impl>();
  std::error_code ec;
  if (auto ok = impl->set_layout(state_dir, "state directory"); !ok) {
    return std::unexpected(std::move(ok.error()));
  }
  impl->options = std::move(options);
  // 1. The directories, on one filesystem (rename() must not cross devices).
  fs::create_directories(impl->state, ec);
  if (ec) return fail(Errc::io, "create " + impl->state.string() + ": " + ec.message());
  if (auto ok = ensure_dir(impl->store, 0755); !ok) return std::unexpected(std::move(ok.error()));
  if (auto ok = ensure_dir(impl->staging, 0700); !ok) {
    return std::unexpected(std::move(ok.error()));
  }
  struct stat store_st {};
  struct stat staging_st {};
  if (::stat(impl->store.c_str(), &store_st) != 0) return sys_error("stat", impl->store);
  if (::stat(impl->staging.c_str(), &staging_st) != 0) return sys_error("stat", impl->staging);
  if (store_st.st_dev != staging_st.st_dev) {
    return fail(Errc::invalid_argument, impl->staging.string() + " and " + impl->store.string() +
                                            " are on different filesystems");
  }
  // 2. One Store per directory.
  impl->lock_fd =
      catalog::UniqueFd(::open(impl->store.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!impl->lock_fd.valid()) return sys_error("open", impl->store);
  if (::flock(impl->lock_fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) {
      return fail(Errc::busy, impl->store.string() + " is in use by another Store");
    }
    return sys_error("lock", impl->store);
  }
  // 3. Leftovers of interrupted installs and removals.
  std::vector<fs::path> leftovers;
  for (auto it = fs::directory_iterator(impl->staging, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    leftovers.push_back(it->path());
  }
  if (ec) return fail(Errc::io, "read " + impl->staging.string() + ": " + ec.message());
  std::sort(leftovers.begin(), leftovers.end());
  for (const fs::path& p : leftovers) {
    if (auto ok = remove_tree(p); !ok) return std::unexpected(std::move(ok.error()));
    impl->report.removed.push_back({p, "leftover in staging"});
  }
  // 4. The index, from the disk alone.
  if (auto ok = impl->rebuild_index(); !ok) return std::unexpected(std::move(ok.error()));
  // 5. index.json as the disk says.
  const std::string want = impl->current_index_text();
  auto have = catalog::read_file(impl->store / kIndexFileName, kMaxIndexBytes);
  if (!have || *have != want) {
    if (auto ok = catalog::atomic_write_file(impl->store / kIndexFileName, want); !ok) {
      return std::unexpected(std::move(ok.error()));
    }
    impl->report.index_rewritten = true;
  }
  return Store(std::move(impl));
}

}  // namespace epbrokerd::store
