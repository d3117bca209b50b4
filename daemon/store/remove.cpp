// Removal: Store::remove() and gc(), both through detach(): the trees leave
// store/ by rename into staging/trash-XXXXXX, the index is rewritten, then the
// trees are deleted outside the mutex.
#include "daemon/store/store.hpp"

#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
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
using detail::injected;
using detail::Key;
using detail::make_unique_dir;
using detail::newer;
using detail::rename_path;

bool by_name_version(const InstalledPackage& a, const InstalledPackage& b) {
  return std::tie(a.name(), a.version()) < std::tie(b.name(), b.version());
}

// Under the store mutex: moves the trees of `keys` (all installed) into a fresh
// staging/trash-XXXXXX and rewrites index.json without them; all or nothing.
// Returns the removed packages and the trash directory, to delete once the mutex
// is released.
template <typename Impl>
Result<std::pair<std::vector<InstalledPackage>, fs::path>> detach(Impl& s,
                                                                  const std::vector<Key>& keys) {
  std::vector<InstalledPackage> removed;
  if (keys.empty()) return std::pair{std::move(removed), fs::path()};
  // 1. A trash directory in staging/.
  auto trash = make_unique_dir(s.staging, "trash-");
  if (!trash) return std::unexpected(std::move(trash.error()));
  std::vector<std::pair<fs::path, fs::path>> moved;  // from, to
  auto roll_back = [&](catalog::Error err) {
    for (auto m = moved.rbegin(); m != moved.rend(); ++m) {
      if (auto ok = rename_path(m->second, m->first); !ok) {
        err.message += "; rollback: " + ok.error().message;
      }
    }
    for (const auto& m : moved) (void)catalog::fsync_dir(m.first.parent_path());
    (void)remove_tree(*trash);
    return std::unexpected(std::move(err));
  };
  // 2. Each tree disappears from store/ atomically.
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const fs::path from = s.index.at(keys[i]).package.root;
    const fs::path to = *trash / std::to_string(i);
    if (s.fault("remove.rename")) return roll_back(injected("remove.rename").error());
    if (auto ok = rename_path(from, to); !ok) return roll_back(ok.error());
    moved.emplace_back(from, to);
  }
  std::set<fs::path> name_dirs;
  for (const auto& m : moved) name_dirs.insert(m.first.parent_path());
  for (const fs::path& dir : name_dirs) {
    if (auto ok = catalog::fsync_dir(dir); !ok) return roll_back(ok.error());
  }
  // 3. The index without them.
  auto next = s.index;
  for (const Key& k : keys) next.erase(k);
  if (s.fault("remove.index")) return roll_back(injected("remove.index").error());
  if (auto ok = s.write_index(next); !ok) return roll_back(ok.error());
  for (const Key& k : keys) removed.push_back(s.index.at(k).package);
  s.index = std::move(next);
  // 4. Name directories left empty go too (best effort: harmless if left).
  bool removed_dir = false;
  for (const fs::path& dir : name_dirs) removed_dir |= ::rmdir(dir.c_str()) == 0;
  if (removed_dir) (void)catalog::fsync_dir(s.store);
  std::sort(removed.begin(), removed.end(), by_name_version);
  return std::pair{std::move(removed), *trash};
}

// A view's remove(): under the store mutex, the committer removes `keys` (all of
// `name`, or its one `version`), then the index is read again from the disk.
template <typename Impl>
Result<std::vector<InstalledPackage>> remove_through_committer(
    Impl& s, const std::vector<Key>& keys, std::string_view name,
    std::optional<std::string_view> version) {
  auto gone = s.committer->remove(name, version);
  const auto before = s.index;
  if (auto ok = s.reload_locked(); !ok) return std::unexpected(std::move(ok.error()));
  if (!gone) return std::unexpected(std::move(gone.error()));
  std::vector<InstalledPackage> removed;
  for (const Key& k : keys) {
    if (!s.index.contains(k)) removed.push_back(before.at(k).package);
  }
  std::sort(removed.begin(), removed.end(), by_name_version);
  return removed;
}

}  // namespace

Result<std::vector<InstalledPackage>> Store::remove(std::string_view name,
                                                    std::optional<std::string_view> version,
                                                    bool even_if_leased) {
  Impl& s = *impl_;
  Result<std::pair<std::vector<InstalledPackage>, fs::path>> detached;
  {
    std::lock_guard lock(s.mu);
    // 1. What to remove; refused as a whole while any of it is leased.
    std::vector<Key> keys;
    for (const auto& [key, e] : s.index) {
      if (key.first == name && (!version || key.second == *version)) keys.push_back(key);
    }
    const std::string what = std::string(name) + (version ? " " + std::string(*version) : "");
    if (keys.empty()) return fail(Errc::not_found, what + " is not installed");
    std::size_t leased = 0;
    for (const Key& k : keys) leased += s.leases_on(k);
    if (leased > 0 && !even_if_leased) {
      return fail(Errc::busy, what + " is in use: " + std::to_string(leased) + " lease(s)");
    }
    // A view: the committer removes, under the mutex so that no lease is taken
    // on what is going; then the disk says what is left.
    if (s.committer) return remove_through_committer(s, keys, name, version);
    // 2. Out of store/ and out of the index.
    detached = detach(s, keys);
  }
  if (!detached) return std::unexpected(std::move(detached.error()));
  // 3. Deleted outside the mutex (open() finishes the job after a crash).
  (void)remove_tree(detached->second);
  return std::move(detached->first);
}

Result<std::vector<InstalledPackage>> Store::gc(std::size_t keep) {
  Impl& s = *impl_;
  keep = std::max<std::size_t>(keep, 1);
  Result<std::pair<std::vector<InstalledPackage>, fs::path>> detached;
  {
    std::lock_guard lock(s.mu);
    // 1. Per name, newest first; past the first `keep`, whatever is not leased.
    std::map<std::string, std::vector<InstalledPackage>> by_name;
    for (const auto& [key, e] : s.index) by_name[key.first].push_back(e.package);
    std::vector<Key> victims;
    for (auto& [name, list] : by_name) {
      std::sort(list.begin(), list.end(), newer);
      for (std::size_t i = keep; i < list.size(); ++i) {
        Key k{list[i].name(), list[i].version()};
        if (s.leases_on(k) == 0) victims.push_back(std::move(k));
      }
    }
    // A view: one removal per version through the committer (each all or nothing).
    if (s.committer) {
      std::vector<InstalledPackage> removed;
      for (const Key& k : victims) {
        auto gone = remove_through_committer(s, {k}, k.first, std::string_view(k.second));
        if (!gone) return std::unexpected(std::move(gone.error()));
        removed.insert(removed.end(), gone->begin(), gone->end());
      }
      return removed;
    }
    // 2. Out of store/ and out of the index, all at once.
    detached = detach(s, victims);
  }
  if (!detached) return std::unexpected(std::move(detached.error()));
  // 3. Deleted outside the mutex.
  if (!detached->second.empty()) (void)remove_tree(detached->second);
  return std::move(detached->first);
}

}  // namespace epbrokerd::store
