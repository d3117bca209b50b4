// Installed models: the index queries, usage(), leases, remove_model(), and the
// deletion of blobs no marker references any more.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <set>
#include <string>
#include <system_error>
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
using detail::injected;
using detail::make_unique_dir;
using detail::ModelKey;
using detail::ModelLease;
using detail::rename_path;

std::string describe(const ModelKey& k) {
  return "model " + std::get<0>(k) + " " + std::get<1>(k) + " " + std::get<2>(k);
}

ModelKey key_of(std::string_view name, std::string_view version, std::string_view variant) {
  return {std::string(name), std::string(version), std::string(variant)};
}

}  // namespace

std::vector<InstalledModel> Store::models() const {
  std::lock_guard lock(impl_->mu);
  std::vector<InstalledModel> out;
  out.reserve(impl_->models.size());
  for (const auto& [key, e] : impl_->models) out.push_back(e.model);
  return out;
}

std::optional<InstalledModel> Store::find_model(std::string_view name, std::string_view version,
                                                std::string_view variant) const {
  std::lock_guard lock(impl_->mu);
  auto it = impl_->models.find(key_of(name, version, variant));
  if (it == impl_->models.end()) return std::nullopt;
  return it->second.model;
}

ModelUsage Store::usage() const {
  std::lock_guard lock(impl_->mu);
  ModelUsage out;
  std::map<std::string, std::uint64_t> blobs;
  for (const auto& [key, e] : impl_->models) {
    out.logical_bytes += e.model.size_bytes();
    for (const auto& f : e.model.files) blobs[f.sha256] = f.size;
  }
  for (const auto& [hex, size] : blobs) out.physical_bytes += size;
  return out;
}

std::size_t Store::Impl::model_leases_on(const ModelKey& key) const {
  return static_cast<std::size_t>(
      std::count_if(model_leases.begin(), model_leases.end(),
                    [&](const auto& l) { return l.second.key == key; }));
}

Result<LeaseId> Store::acquire_model_lease(std::string_view name, std::string_view version,
                                           std::string_view variant, std::string_view owner) {
  std::lock_guard lock(impl_->mu);
  ModelKey key = key_of(name, version, variant);
  if (!impl_->models.contains(key))
    return fail(Errc::not_found, describe(key) + " is not installed");
  const LeaseId id = impl_->next_lease++;
  impl_->model_leases.emplace(id, ModelLease{std::move(key), std::string(owner)});
  return id;
}

std::size_t Store::model_lease_count(std::string_view name, std::string_view version,
                                     std::string_view variant) const {
  std::lock_guard lock(impl_->mu);
  return impl_->model_leases_on(key_of(name, version, variant));
}

std::vector<std::string> Store::Impl::delete_unreferenced_blobs() {
  std::set<std::string> referenced;
  for (const auto& [key, e] : models) {
    for (const auto& f : e.model.files) referenced.insert(f.sha256);
  }
  std::vector<std::string> deleted;
  const fs::path dir = blobs_dir();
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    const std::string hex = it->path().filename().string();
    if (!is_blob_name(hex) || referenced.contains(hex)) continue;
    if (::unlink(it->path().c_str()) == 0) deleted.push_back(hex);
  }
  if (!deleted.empty()) (void)catalog::fsync_dir(dir);
  std::sort(deleted.begin(), deleted.end());
  return deleted;
}

Result<std::vector<InstalledModel>> Store::remove_model(std::string_view name,
                                                        std::optional<std::string_view> version,
                                                        std::optional<std::string_view> variant,
                                                        bool even_if_leased) {
  Impl& s = *impl_;
  std::vector<InstalledModel> removed;
  fs::path trash;
  {
    std::lock_guard lock(s.mu);
    // 1. What to remove; refused as a whole while any of it is leased.
    std::vector<ModelKey> keys;
    for (const auto& [key, e] : s.models) {
      if (std::get<0>(key) == name && (!version || std::get<1>(key) == *version) &&
          (!variant || std::get<2>(key) == *variant)) {
        keys.push_back(key);
      }
    }
    std::string what = "model " + std::string(name);
    if (version) what += " " + std::string(*version);
    if (variant) what += " variant " + std::string(*variant);
    if (keys.empty()) return fail(Errc::not_found, what + " is not installed");
    std::size_t leased = 0;
    for (const ModelKey& k : keys) leased += s.model_leases_on(k);
    if (leased > 0 && !even_if_leased) {
      return fail(Errc::busy, what + " is in use: " + std::to_string(leased) + " lease(s)");
    }
    // A view: the committer removes, under the mutex so that no lease is taken
    // on what is going; then the disk says what is left.
    if (s.committer) {
      auto gone = s.committer->remove_model(name, version, variant, even_if_leased);
      const auto before = s.models;
      if (auto ok = s.reload_locked(); !ok) return std::unexpected(std::move(ok.error()));
      if (!gone) return std::unexpected(std::move(gone.error()));
      for (const ModelKey& k : keys) {
        if (!s.models.contains(k)) removed.push_back(before.at(k).model);
      }
      return removed;
    }
    // 2. Each tree into staging/trash-XXXXXX, all or nothing.
    auto made = make_unique_dir(s.staging, "trash-");
    if (!made) return std::unexpected(std::move(made.error()));
    trash = *made;
    std::vector<std::pair<fs::path, fs::path>> moved;  // from, to
    auto roll_back = [&](catalog::Error err) {
      for (auto m = moved.rbegin(); m != moved.rend(); ++m) {
        if (auto ok = rename_path(m->second, m->first); !ok) {
          err.message += "; rollback: " + ok.error().message;
        }
      }
      for (const auto& m : moved) (void)catalog::fsync_dir(m.first.parent_path());
      (void)remove_tree(trash);
      return std::unexpected(std::move(err));
    };
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const fs::path from = s.models.at(keys[i]).model.root;
      if (s.fault("model.remove.rename")) return roll_back(injected("model.remove.rename").error());
      if (auto ok = rename_path(from, trash / std::to_string(i)); !ok) return roll_back(ok.error());
      moved.emplace_back(from, trash / std::to_string(i));
    }
    std::set<fs::path> version_dirs;
    for (const auto& m : moved) version_dirs.insert(m.first.parent_path());
    for (const fs::path& dir : version_dirs) {
      if (auto ok = catalog::fsync_dir(dir); !ok) return roll_back(ok.error());
    }
    // 3. The index without them.
    auto next = s.models;
    for (const ModelKey& k : keys) next.erase(k);
    if (s.fault("model.remove.index")) return roll_back(injected("model.remove.index").error());
    if (auto ok = s.write_index(s.index, next); !ok) return roll_back(ok.error());
    for (const ModelKey& k : keys) removed.push_back(s.models.at(k).model);
    s.models = std::move(next);
    // 4. Directories left empty (best effort), then the blobs no marker
    //    references any more (what a crash leaves, open() deletes).
    std::set<fs::path> name_dirs;
    for (const fs::path& dir : version_dirs) {
      if (::rmdir(dir.c_str()) == 0) name_dirs.insert(dir.parent_path());
    }
    for (const fs::path& dir : name_dirs) {
      if (::rmdir(dir.c_str()) != 0) (void)catalog::fsync_dir(dir);
    }
    if (!name_dirs.empty()) (void)catalog::fsync_dir(s.models_dir());
    s.delete_unreferenced_blobs();
  }
  // 5. The trees, outside the mutex.
  (void)remove_tree(trash);
  return removed;
}

}  // namespace epbrokerd::store
