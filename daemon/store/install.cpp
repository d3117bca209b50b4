// The install transaction: Store::install(), and the steps
// they share (Impl::install_tree()): extract into staging/, check, seal, commit by
// rename or exchange, write the index; any failure rolls back.
#include "daemon/store/store.hpp"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <utility>

#include "catalog/atomic_file.hpp"
#include "catalog/package/archive_reader.hpp"
#include "catalog/package/extract.hpp"
#include "catalog/unique_fd.hpp"
#include "daemon/store/fs_ops.hpp"
#include "daemon/store/store_impl.hpp"
#include "daemon/store/tree.hpp"

namespace epbrokerd::store {
namespace {

namespace fs = std::filesystem;
using catalog::Errc;
using catalog::fail;
using catalog::Result;
using catalog::package::Manifest;
using detail::check_storable;
using detail::ensure_dir;
using detail::Entry;
using detail::exchange_paths;
using detail::injected;
using detail::inspect;
using detail::InstallRequest;
using detail::Key;
using detail::make_unique_dir;
using detail::rename_path;
using detail::sys_error;
using detail::TreeRemover;

constexpr std::uint64_t kProgressStepBytes = std::uint64_t{1} << 20;

// `err` with `prefix` in front of its message.
std::unexpected<catalog::Error> context(catalog::Error err, const std::string& prefix) {
  err.message = prefix + err.message;
  return std::unexpected(std::move(err));
}

// What exchange_paths() says where RENAME_EXCHANGE is missing (fault injection).
std::unexpected<catalog::Error> no_exchange(std::string_view step) {
  return fail(Errc::unsupported, "injected lack of RENAME_EXCHANGE at " + std::string(step));
}

std::uint64_t payload_bytes(const Manifest& m) {
  std::uint64_t total = 0;
  for (const auto& f : m.files) total += f.size;
  return total;
}

// Reports extraction progress and honours cancellation, between the libarchive
// reader and the extractor (so it runs on the extractor's read-ahead thread).
class ProgressReader final : public catalog::package::ArchiveReader {
 public:
  ProgressReader(ArchiveReader& inner, const InstallProgress& progress, std::uint64_t total,
                 std::stop_token stop)
      : inner_(inner), progress_(progress), total_(total), stop_(std::move(stop)) {}

  Result<std::optional<catalog::package::EntryInfo>> next() override {
    if (stop_.stop_requested()) return fail(Errc::cancelled, "install cancelled");
    ++entries_;
    return inner_.next();
  }

  Result<std::size_t> read(std::span<std::byte> buf) override {
    if (stop_.stop_requested()) return fail(Errc::cancelled, "install cancelled");
    auto n = inner_.read(buf);
    if (n && entries_ > 1) {  // payload only, not manifest.json
      done_ += *n;
      const bool step = done_ - reported_ >= kProgressStepBytes;
      const bool last = total_ > 0 && done_ >= total_ && reported_ < total_;
      if (progress_ && (step || last)) {
        reported_ = done_;
        progress_(InstallPhase::extracting, total_ ? std::min(done_, total_) : done_, total_);
      }
    }
    return n;
  }

 private:
  ArchiveReader& inner_;
  const InstallProgress& progress_;
  const std::uint64_t total_;
  const std::stop_token stop_;
  std::uint64_t entries_ = 0;
  std::uint64_t done_ = 0;
  std::uint64_t reported_ = 0;
};

}  // namespace

Result<InstalledPackage> Store::install(const fs::path& package_file,
                                        const catalog::EpMetadata& signed_meta,
                                        const InstallProgress& progress, std::stop_token stop) {
  Impl& s = *impl_;
  if (s.committer)
    return fail(Errc::invalid_argument, "install: a store view commits through its committer");
  auto report = [&](InstallPhase phase, std::uint64_t done, std::uint64_t total) {
    if (progress) progress(phase, done, total);
  };
  auto cancelled = [&] { return fail(Errc::cancelled, "install cancelled"); };
  const std::string where = package_file.filename().string() + ": ";

  // 1. The package's manifest (its first entry) must agree with the signed
  //    metadata before anything is written.
  auto early = catalog::package::read_package_manifest(package_file, s.options.limits);
  if (!early) return context(std::move(early.error()), where);
  if (auto ok = catalog::package::check_manifest_matches(*early, signed_meta); !ok) {
    return context(std::move(ok.error()), where);
  }
  if (auto ok = check_storable(*early); !ok) return context(std::move(ok.error()), where);
  const Key key{early->ep.name, early->ep.version.text};
  const std::uint64_t total = payload_bytes(*early);

  // 2. Already installed with the same manifest and intact: nothing to do.
  std::optional<Entry> seen;
  bool seen_damaged = false;
  {
    std::lock_guard lock(s.mu);
    if (auto it = s.index.find(key); it != s.index.end()) {
      seen = it->second;
      if (seen->package.manifest != *early && s.leases_on(key) > 0) return s.busy_replacing(key);
    }
  }
  if (seen && seen->package.manifest == *early) {
    report(InstallPhase::verifying, 0, total);
    seen_damaged = !inspect(*seen).problems.empty();
    if (!seen_damaged) {
      std::lock_guard lock(s.mu);
      if (auto it = s.index.find(key); it != s.index.end() && it->second.serial == seen->serial) {
        return it->second.package;
      }
    }
  }
  if (stop.stop_requested()) return cancelled();

  // 3-9. From the file.
  const int fd = ::open(package_file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return sys_error("open", package_file);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail(Errc::invalid_argument, package_file.string() + ": not a regular file");
  }
  return s.install_tree({.fd = fd,
                         .archive_size = static_cast<std::uint64_t>(st.st_size),
                         .signed_meta = signed_meta,
                         .key = key,
                         .seen = std::move(seen),
                         .seen_damaged = seen_damaged,
                         .total = total,
                         .where = where,
                         .progress = progress,
                         .before_commit = {},
                         .stop = std::move(stop)});
}

Result<InstalledPackage> Store::Impl::install_tree(InstallRequest req) {
  Impl& s = *this;
  auto tell = [&](InstallPhase phase, std::uint64_t done, std::uint64_t all) {
    if (req.progress) req.progress(phase, done, all);
  };
  auto cancelled = [&] { return fail(Errc::cancelled, "install cancelled"); };
  catalog::UniqueFd package(req.fd);  // until the reader takes it over

  // 3. A fresh work directory in staging/, removed whatever happens.
  if (s.fault("install.staging")) return injected("install.staging");
  auto work = make_unique_dir(s.staging, "install-");
  if (!work) return std::unexpected(std::move(work.error()));
  TreeRemover remove_work(*work);
  const fs::path tree = *work / "tree";
  if (auto ok = ensure_dir(tree, 0755); !ok) return std::unexpected(std::move(ok.error()));
  // Opened before anything is written: seal_tree()'s syncfs() on it reports the
  // writeback errors of every write from here on.
  const catalog::UniqueFd sync_fd(::open(tree.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (sync_fd.get() < 0) return sys_error("open", tree);

  // 4. Extract, reporting progress from the read-ahead thread.
  auto reader = catalog::package::open_libarchive_reader(package.release());  // owns fd now
  if (!reader) return context(std::move(reader.error()), req.where);
  tell(InstallPhase::extracting, 0, req.total);
  ProgressReader counted(**reader, req.progress, req.total, req.stop);
  catalog::package::ExtractLimits limits = s.options.limits;
  limits.fsync = false;  // seal_tree() syncs the whole tree at once
  auto manifest = catalog::package::extract_package(counted, req.archive_size, tree, limits);
  reader->reset();
  if (!manifest) return context(std::move(manifest.error()), req.where);
  if (req.total == 0) req.total = payload_bytes(*manifest);

  // 5. The manifest that was extracted is the one that counts: check it again.
  tell(InstallPhase::verifying, req.total, req.total);
  if (auto ok = catalog::package::check_manifest_matches(*manifest, req.signed_meta); !ok) {
    return context(std::move(ok.error()), req.where);
  }
  if (auto ok = check_storable(*manifest); !ok) return context(std::move(ok.error()), req.where);

  // 6. The saved manifest: the tree's commit marker and reference for verify().
  const SavedManifest saved{
      *manifest, std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now())};
  if (s.fault("install.saved_manifest")) return injected("install.saved_manifest");
  if (auto ok = write_new_file(tree, kSavedManifestName, to_text(saved), kTreeFileMode); !ok) {
    return std::unexpected(std::move(ok.error()));
  }

  // 7. Read-only and durable.
  if (s.fault("install.seal")) return injected("install.seal");
  if (auto ok = seal_tree(tree, *manifest, sync_fd.get()); !ok) {
    return std::unexpected(std::move(ok.error()));
  }
  if (req.stop.stop_requested()) return cancelled();
  // The caller's last word (a streamed package: whether its download verified).
  if (req.before_commit) {
    if (auto ok = req.before_commit(); !ok) return std::unexpected(std::move(ok.error()));
  }

  // 8. Commit under the mutex: the new tree takes the place of an installed
  //    tree of this version by one atomic exchange (the old one lands where
  //    the new one was, in the work directory), or is renamed into place.
  tell(InstallPhase::committing, req.total, req.total);
  std::lock_guard lock(s.mu);
  const auto current = s.index.find(req.key);
  if (current != s.index.end()) {
    const Entry& cur = current->second;
    const bool changed_meanwhile = !req.seen || req.seen->serial != cur.serial;
    if (changed_meanwhile && cur.package.manifest == *manifest) return cur.package;
    const bool repair = !changed_meanwhile && req.seen_damaged;
    if (!repair && s.leases_on(req.key) > 0) return s.busy_replacing(req.key);
  }
  const fs::path name_dir = s.store / req.key.first;
  const fs::path target = name_dir / req.key.second;
  const fs::path aside = *work / "old";
  bool created_name_dir = false;
  bool exchanged = false;    // target and tree swapped
  bool moved_aside = false;  // fallback: target moved to aside ...
  bool renamed = false;      // ... and tree renamed to target
  // Puts everything back as it was; `err` gets what failed on the way back.
  auto roll_back = [&](catalog::Error err) {
    auto undo = [&](Result<void> ok) {
      if (!ok) err.message += "; rollback: " + ok.error().message;
    };
    if (exchanged) undo(exchange_paths(tree, target));
    if (renamed) undo(rename_path(target, tree));
    if (moved_aside) undo(rename_path(aside, target));
    if (created_name_dir && ::rmdir(name_dir.c_str()) != 0) {
      err.message += "; rollback: rmdir " + name_dir.string() + ": " + std::strerror(errno);
    }
    (void)catalog::fsync_dir(created_name_dir ? s.store : name_dir);
    return std::unexpected(std::move(err));
  };
  if (s.fault("install.mkdir")) return injected("install.mkdir");
  auto made = ensure_dir(name_dir, 0755);
  if (!made) return std::unexpected(std::move(made.error()));
  created_name_dir = *made;
  bool placed = false;
  if (struct stat tst{}; ::lstat(target.c_str(), &tst) == 0) {
    auto swapped = s.fault("install.exchange")      ? injected("install.exchange")
                   : s.fault("install.no_exchange") ? no_exchange("install.no_exchange")
                                                    : exchange_paths(tree, target);
    if (swapped) {
      exchanged = placed = true;
    } else if (swapped.error().code != Errc::unsupported) {
      return roll_back(swapped.error());
    } else {
      // No RENAME_EXCHANGE on this filesystem: aside, then into place (a crash
      // in between loses this version until it is installed again).
      if (s.fault("install.aside")) return roll_back(injected("install.aside").error());
      if (auto ok = rename_path(target, aside); !ok) return roll_back(ok.error());
      moved_aside = true;
    }
  }
  if (!placed) {
    if (s.fault("install.rename")) return roll_back(injected("install.rename").error());
    if (auto ok = rename_path(tree, target); !ok) return roll_back(ok.error());
    renamed = true;
  }
  for (const fs::path& dir : {name_dir, *work}) {
    if (auto ok = catalog::fsync_dir(dir); !ok) return roll_back(ok.error());
  }
  if (created_name_dir) {
    if (auto ok = catalog::fsync_dir(s.store); !ok) return roll_back(ok.error());
  }

  // 9. The index, then the in-memory state; the old tree goes with the work
  //    directory.
  std::map<Key, Entry> next = s.index;
  next[req.key] =
      Entry{InstalledPackage{std::move(*manifest), target, saved.installed_at}, s.next_serial};
  if (s.fault("install.index")) return roll_back(injected("install.index").error());
  if (auto ok = s.write_index(next); !ok) return roll_back(ok.error());
  ++s.next_serial;
  s.index = std::move(next);
  return s.index.at(req.key).package;
}

}  // namespace epbrokerd::store
