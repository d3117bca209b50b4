// The model install transaction: Store::install_model() (contract in store.hpp):
// a tree of hard links to blobs built in staging/, sealed with its marker, then
// under the mutex its new blobs linked into _blobs and the tree renamed (or
// exchanged) into _models; any failure rolls back.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "catalog/atomic_file.hpp"
#include "catalog/unique_fd.hpp"
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
using detail::exchange_paths;
using detail::injected;
using detail::make_unique_dir;
using detail::ModelEntry;
using detail::ModelKey;
using detail::rename_path;
using detail::sys_error;
using detail::TreeRemover;
using Fd = catalog::UniqueFd;

// link(2) of `from` to `to` (no link followed). Errors: as sys_error().
Result<void> hard_link(const fs::path& from, const fs::path& to) {
  if (::linkat(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), 0) != 0) return sys_error("link", to);
  return {};
}

// Every directory on the way to `rel` under `root` made (kTreeDirMode).
Result<void> make_parents(const fs::path& root, const std::string& rel) {
  for (auto slash = rel.find('/'); slash != std::string::npos; slash = rel.find('/', slash + 1)) {
    if (auto ok = ensure_dir(root / rel.substr(0, slash), kTreeDirMode); !ok) {
      return std::unexpected(std::move(ok.error()));
    }
  }
  return {};
}

// Files 0444 (and so their blobs), directories 0755 (deepest first), then one
// syncfs() for all of it (as seal_tree()).
Result<void> seal_model_tree(const fs::path& root, int sync_fd) {
  std::vector<fs::path> dirs{root};
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::file_status st = it->symlink_status(ec);
    if (ec) break;
    if (fs::is_directory(st)) {
      dirs.push_back(it->path());
      continue;
    }
    Fd fd(::open(it->path().c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd.valid()) return sys_error("open", it->path());
    if (::fchmod(fd.get(), kTreeFileMode) != 0) return sys_error("chmod", it->path());
  }
  if (ec) return fail(Errc::io, "walking " + root.string() + ": " + ec.message());
  for (auto d = dirs.rbegin(); d != dirs.rend(); ++d) {
    if (::chmod(d->c_str(), kTreeDirMode) != 0) return sys_error("chmod", *d);
  }
  if (::syncfs(sync_fd) != 0) return sys_error("syncfs", root);
  return {};
}

std::unexpected<catalog::Error> no_exchange() {
  return fail(Errc::unsupported, "injected lack of RENAME_EXCHANGE at model.no_exchange");
}

}  // namespace

Result<InstalledModel> Store::install_model(const SignedModel& model,
                                            const std::map<std::string, int>& new_blobs,
                                            const InstallProgress& progress, std::stop_token stop) {
  Impl& s = *impl_;
  const catalog::ModelMetadata& meta = model.metadata;
  const std::string where =
      "model " + meta.name + " " + meta.version.text + " " + model.variant + ": ";
  auto refuse = [&](Errc code, const std::string& what) { return fail(code, where + what); };
  auto tell = [&](InstallPhase phase, std::uint64_t done, std::uint64_t all) {
    if (progress) progress(phase, done, all);
  };
  auto cancelled = [&] { return fail(Errc::cancelled, "install cancelled"); };
  if (s.committer) return refuse(Errc::invalid_argument, "a store view cannot install models yet");

  // 1. What to install: metadata the parser gives back unchanged, a storable
  //    name, a variant of it, no file where the marker goes.
  auto again = catalog::parse_model_metadata(catalog::to_json(meta));
  if (!again) return refuse(Errc::invalid_argument, "invalid metadata: " + again.error().message);
  if (*again != meta) return refuse(Errc::invalid_argument, "metadata does not parse back equal");
  if (!is_storable_name(meta.name)) return refuse(Errc::invalid_argument, "reserved name");
  const catalog::ModelVariant* variant = find_variant(meta, model.variant);
  if (variant == nullptr) return refuse(Errc::invalid_argument, "no such variant");
  std::uint64_t total = 0;
  for (const auto& f : variant->files) {
    if (f.path == kModelMarkerName) return refuse(Errc::invalid_argument, "a file named " + f.path);
    total += f.size;
  }
  const ModelKey key{meta.name, meta.version.text, model.variant};

  // Installed already with equal metadata and intact: nothing to do.
  std::optional<ModelEntry> seen;
  bool seen_damaged = false;
  {
    std::lock_guard lock(s.mu);
    if (auto it = s.models.find(key); it != s.models.end()) {
      seen = it->second;
      if (seen->marker.model != model && s.model_leases_on(key) > 0) {
        return refuse(Errc::busy, "installed with other contents and held by " +
                                      std::to_string(s.model_leases_on(key)) + " lease(s)");
      }
    }
  }
  if (seen && seen->marker.model == model) {
    tell(InstallPhase::verifying, 0, total);
    seen_damaged = !detail::check_models({*seen}, s.blobs_dir())->problems.empty();
    if (!seen_damaged) {
      std::lock_guard lock(s.mu);
      if (auto it = s.models.find(key); it != s.models.end() && it->second.serial == seen->serial) {
        return it->second.model;
      }
    }
  }
  if (stop.stop_requested()) return cancelled();

  // 2. The tree in a fresh work directory, each file a link of its blob.
  if (s.fault("model.staging")) return injected("model.staging");
  auto work = make_unique_dir(s.staging, "model-");
  if (!work) return std::unexpected(std::move(work.error()));
  TreeRemover remove_work(*work);
  const fs::path tree = *work / "tree";
  if (auto ok = ensure_dir(tree, kTreeDirMode); !ok) return std::unexpected(std::move(ok.error()));
  const Fd sync_fd(::open(tree.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!sync_fd.valid()) return sys_error("open", tree);
  tell(InstallPhase::extracting, 0, total);
  std::map<std::string, fs::path> first_link;  // sha256 -> the tree's first file of it
  std::uint64_t done = 0;
  for (const auto& f : variant->files) {
    const fs::path dst = tree / f.path;
    if (auto ok = make_parents(tree, f.path); !ok) return std::unexpected(ok.error());
    if (auto first = first_link.find(f.sha256); first != first_link.end()) {
      if (auto ok = hard_link(first->second, dst); !ok) return std::unexpected(ok.error());
    } else {
      const fs::path blob = s.blobs_dir() / f.sha256;
      const auto given = new_blobs.find(f.sha256);
      struct stat st {};
      const bool stored = ::lstat(blob.c_str(), &st) == 0 && S_ISREG(st.st_mode);
      if (stored && static_cast<std::uint64_t>(st.st_size) == f.size) {
        if (auto ok = hard_link(blob, dst); !ok) return std::unexpected(ok.error());
      } else if (given != new_blobs.end()) {
        if (::fstat(given->second, &st) != 0 || !S_ISREG(st.st_mode)) {
          return refuse(Errc::invalid_argument,
                        "the blob given for " + f.sha256 + " is not a regular file");
        }
        if (static_cast<std::uint64_t>(st.st_size) != f.size) {
          return refuse(Errc::length_mismatch, "the blob given for " + f.sha256 + " has " +
                                                   std::to_string(st.st_size) + " bytes, not " +
                                                   std::to_string(f.size));
        }
        const std::string self = "/proc/self/fd/" + std::to_string(given->second);
        if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, dst.c_str(), AT_SYMLINK_FOLLOW) != 0) {
          return sys_error("link the blob given for " + f.sha256 + " to", dst);
        }
      } else if (stored) {
        return refuse(Errc::length_mismatch, "the stored blob " + f.sha256 + " has " +
                                                 std::to_string(st.st_size) + " bytes, not " +
                                                 std::to_string(f.size) + " (damaged; give it)");
      } else {
        return refuse(Errc::not_found,
                      "content " + f.sha256 + " of " + f.path + " is neither stored nor given");
      }
      first_link.emplace(f.sha256, dst);
    }
    done += f.size;
    tell(InstallPhase::extracting, done, total);
    if (stop.stop_requested()) return cancelled();
  }

  // 3. The marker, last; then read-only and durable.
  const ModelMarker marker{
      model, std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now())};
  if (s.fault("model.marker")) return injected("model.marker");
  if (auto ok = write_new_file(tree, kModelMarkerName, to_text(marker), kTreeFileMode); !ok) {
    return std::unexpected(std::move(ok.error()));
  }
  if (s.fault("model.seal")) return injected("model.seal");
  if (auto ok = seal_model_tree(tree, sync_fd.get()); !ok) return std::unexpected(ok.error());
  tell(InstallPhase::verifying, total, total);
  if (stop.stop_requested()) return cancelled();

  // 4-5. Commit under the mutex.
  tell(InstallPhase::committing, total, total);
  std::lock_guard lock(s.mu);
  const auto current = s.models.find(key);
  if (current != s.models.end()) {
    const ModelEntry& cur = current->second;
    const bool changed_meanwhile = !seen || seen->serial != cur.serial;
    if (changed_meanwhile && cur.marker.model == model) return cur.model;
    const bool repair = !changed_meanwhile && seen_damaged;
    if (!repair && s.model_leases_on(key) > 0) {
      return refuse(Errc::busy, "installed with other contents and held by " +
                                    std::to_string(s.model_leases_on(key)) + " lease(s)");
    }
  }
  const fs::path blobs = s.blobs_dir();
  const fs::path name_dir = s.models_dir() / meta.name;
  const fs::path version_dir = name_dir / meta.version.text;
  const fs::path target = version_dir / model.variant;
  const fs::path aside = *work / "old";
  std::vector<fs::path> linked;  // blobs linked here
  bool created_name_dir = false;
  bool created_version_dir = false;
  bool exchanged = false;
  bool moved_aside = false;
  bool renamed = false;
  auto roll_back = [&](catalog::Error err) {
    auto undo = [&](Result<void> ok) {
      if (!ok) err.message += "; rollback: " + ok.error().message;
    };
    if (exchanged) undo(exchange_paths(tree, target));
    if (renamed) undo(rename_path(target, tree));
    if (moved_aside) undo(rename_path(aside, target));
    if (created_version_dir) ::rmdir(version_dir.c_str());
    if (created_name_dir) ::rmdir(name_dir.c_str());
    for (const fs::path& b : linked) ::unlink(b.c_str());
    (void)catalog::fsync_dir(blobs);
    (void)catalog::fsync_dir(version_dir);
    (void)catalog::fsync_dir(created_name_dir ? s.models_dir() : name_dir);
    return std::unexpected(std::move(err));
  };

  // 4. One inode per content: what _blobs lacks is linked from the tree; where
  //    it has another inode of a content (a concurrent install), the tree's
  //    files are linked again from that one.
  for (const fs::path& dir : {s.store / kBlobsDirName, blobs}) {
    if (auto ok = ensure_dir(dir, kTreeDirMode); !ok) return std::unexpected(ok.error());
  }
  bool relinked = false;
  for (const auto& [hex, path] : first_link) {
    const fs::path blob = blobs / hex;
    struct stat bst {};
    struct stat tst {};
    if (::lstat(path.c_str(), &tst) != 0) return roll_back(sys_error("stat", path).error());
    if (::lstat(blob.c_str(), &bst) == 0) {
      if (bst.st_dev == tst.st_dev && bst.st_ino == tst.st_ino) continue;
      if (!S_ISREG(bst.st_mode) || bst.st_size != tst.st_size) {
        return roll_back(fail(Errc::io, where + "the stored blob " + hex + " is damaged").error());
      }
      for (const auto& f : variant->files) {
        if (f.sha256 != hex) continue;
        const fs::path fresh = (tree / f.path).concat(".relink");
        if (auto ok = hard_link(blob, fresh); !ok) return roll_back(ok.error());
        if (auto ok = rename_path(fresh, tree / f.path); !ok) return roll_back(ok.error());
      }
      relinked = true;
      continue;
    }
    if (s.fault("model.blob_link")) return roll_back(injected("model.blob_link").error());
    if (auto ok = hard_link(path, blob); !ok) return roll_back(ok.error());
    linked.push_back(blob);
  }
  if (!linked.empty()) {
    if (auto ok = catalog::fsync_dir(blobs); !ok) return roll_back(ok.error());
  }
  if (relinked && ::syncfs(sync_fd.get()) != 0) return roll_back(sys_error("syncfs", tree).error());

  // 5. Into place: exchanged with an installed tree of this variant (which
  //    lands in the work directory), or renamed.
  if (auto ok = ensure_dir(s.models_dir(), kTreeDirMode); !ok) return roll_back(ok.error());
  auto made = ensure_dir(name_dir, kTreeDirMode);
  if (!made) return roll_back(made.error());
  created_name_dir = *made;
  made = ensure_dir(version_dir, kTreeDirMode);
  if (!made) return roll_back(made.error());
  created_version_dir = *made;
  bool placed = false;
  if (struct stat st{}; ::lstat(target.c_str(), &st) == 0) {
    auto swapped = s.fault("model.no_exchange") ? no_exchange()
                   : s.fault("model.rename")    ? injected("model.rename")
                                                : exchange_paths(tree, target);
    if (swapped) {
      exchanged = placed = true;
    } else if (swapped.error().code != Errc::unsupported) {
      return roll_back(swapped.error());
    } else {
      if (auto ok = rename_path(target, aside); !ok) return roll_back(ok.error());
      moved_aside = true;
    }
  }
  if (!placed) {
    if (s.fault("model.rename")) return roll_back(injected("model.rename").error());
    if (auto ok = rename_path(tree, target); !ok) return roll_back(ok.error());
    renamed = true;
  }
  for (const fs::path& dir : {version_dir, *work}) {
    if (auto ok = catalog::fsync_dir(dir); !ok) return roll_back(ok.error());
  }
  if (created_version_dir) {
    if (auto ok = catalog::fsync_dir(name_dir); !ok) return roll_back(ok.error());
  }
  if (created_name_dir) {
    if (auto ok = catalog::fsync_dir(s.models_dir()); !ok) return roll_back(ok.error());
  }

  // 6. The index; then the blobs only the replaced tree referenced go.
  auto next = s.models;
  next[key] = ModelEntry{detail::installed_model(marker, target), marker, s.next_serial};
  if (s.fault("model.index")) return roll_back(injected("model.index").error());
  if (auto ok = s.write_index(s.index, next); !ok) return roll_back(ok.error());
  ++s.next_serial;
  s.models = std::move(next);
  if (exchanged || moved_aside) s.delete_unreferenced_blobs();
  return s.models.at(key).model;
}

}  // namespace epbrokerd::store
