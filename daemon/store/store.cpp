#include "daemon/store/store.hpp"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <span>
#include <system_error>
#include <utility>

#include "catalog/atomic_file.hpp"
#include "catalog/package/archive_reader.hpp"
#include "catalog/unique_fd.hpp"
#include "catalog/version.hpp"
#include "daemon/store/tree.hpp"

namespace epbrokerd::store {
namespace {

namespace fs = std::filesystem;
using catalog::Errc;
using catalog::fail;
using catalog::Result;
using catalog::package::Manifest;

using Key = std::pair<std::string, std::string>;  // name, version text

constexpr std::uint64_t kProgressStepBytes = std::uint64_t{1} << 20;
constexpr std::uint64_t kMaxIndexBytes = std::uint64_t{256} << 20;

std::unexpected<catalog::Error> sys_error(std::string_view what, const fs::path& p, int e = errno) {
  return fail(e == ENOENT ? Errc::not_found : catalog::errno_code(e),
              std::string(what) + " " + p.string() + ": " + std::strerror(e));
}

std::unexpected<catalog::Error> injected(std::string_view step) {
  return fail(Errc::io, "injected fault at " + std::string(step));
}

// `err` with `prefix` in front of its message.
std::unexpected<catalog::Error> context(catalog::Error err, const std::string& prefix) {
  err.message = prefix + err.message;
  return std::unexpected(std::move(err));
}

std::string describe(const Key& k) { return k.first + " " + k.second; }

// mkdir with an exact mode whatever the umask; an existing directory is fine.
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

// A fresh, unique directory `parent`/`prefix`XXXXXX (mode 0700).
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

// Swaps `a` and `b` atomically (renameat2 RENAME_EXCHANGE). Errors:
// Errc::unsupported when the filesystem or kernel cannot, Errc::io otherwise.
Result<void> exchange_paths(const fs::path& a, const fs::path& b) {
  if (::renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE) != 0) {
    const int e = errno;
    const bool unsupported = e == EINVAL || e == ENOSYS || e == EOPNOTSUPP;
    return fail(unsupported ? Errc::unsupported : Errc::io,
                "exchange " + a.string() + " and " + b.string() + ": " + std::strerror(e));
  }
  return {};
}

// What exchange_paths() says where RENAME_EXCHANGE is missing (fault injection).
std::unexpected<catalog::Error> no_exchange(std::string_view step) {
  return fail(Errc::unsupported, "injected lack of RENAME_EXCHANGE at " + std::string(step));
}

// Removes `dir` (with everything in it) when the object dies: the work
// directories of install() and remove(), once their trees are committed or not.
class TreeRemover {
 public:
  explicit TreeRemover(fs::path dir) : dir_(std::move(dir)) {}
  ~TreeRemover() {
    if (!dir_.empty()) (void)remove_tree(dir_);
  }
  TreeRemover(const TreeRemover&) = delete;
  TreeRemover& operator=(const TreeRemover&) = delete;

 private:
  fs::path dir_;
};

// Orders versions newest first: by value, then by text (for equivalent values).
bool newer(const InstalledPackage& a, const InstalledPackage& b) {
  const auto c = a.manifest.ep.version.value <=> b.manifest.ep.version.value;
  if (c != 0) return c > 0;
  return a.version() > b.version();
}

bool by_name_version(const InstalledPackage& a, const InstalledPackage& b) {
  return std::tie(a.name(), a.version()) < std::tie(b.name(), b.version());
}

std::uint64_t payload_bytes(const Manifest& m) {
  std::uint64_t total = 0;
  for (const auto& f : m.files) total += f.size;
  return total;
}

// A package the store can hold: a usable directory name, and no payload file
// that would collide with the saved manifest.
Result<void> check_storable(const Manifest& m) {
  if (!is_storable_name(m.ep.name)) {
    return fail(Errc::invalid_argument,
                "package name '" + m.ep.name + "' cannot be stored (reserved)");
  }
  for (const auto& f : m.files) {
    if (f.path == kSavedManifestName) {
      return fail(Errc::invalid_argument,
                  "package ships " + f.path + ", a name the store reserves for itself");
    }
  }
  return {};
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

struct Entry {
  InstalledPackage package;
  std::uint64_t serial = 0;  // distinguishes successive installs of one version
};

struct Lease {
  Key key;
  std::string owner;
};

// The tree of `e` against its manifest, plus its saved manifest against what
// was installed.
TreeCheck inspect(const Entry& e) {
  TreeCheck check = check_tree(e.package.root, e.package.manifest);
  const fs::path saved_path = e.package.root / kSavedManifestName;
  const std::string name(kSavedManifestName);
  auto text = catalog::read_file(saved_path, kMaxSavedManifestBytes);
  if (!text) {
    if (text.error().code != Errc::not_found) check.problems.push_back(name + ": unreadable");
  } else if (auto saved = parse_saved_manifest(*text); !saved) {
    check.problems.push_back(name + ": " + saved.error().message);
  } else if (saved->manifest != e.package.manifest ||
             saved->installed_at != e.package.installed_at) {
    check.problems.push_back(name + ": differs from what was installed");
  }
  std::sort(check.problems.begin(), check.problems.end());
  return check;
}

}  // namespace

std::string_view install_phase_name(InstallPhase phase) {
  switch (phase) {
    case InstallPhase::extracting:
      return "extracting";
    case InstallPhase::verifying:
      return "verifying";
    case InstallPhase::committing:
      return "committing";
  }
  return "unknown";
}

struct Store::Impl {
  fs::path state;
  fs::path store;
  fs::path staging;
  StoreOptions options;
  OpenReport report;
  catalog::UniqueFd lock_fd;  // flock'ed descriptor of store/

  mutable std::mutex mu;
  std::map<Key, Entry> index;       // guarded by mu
  std::map<LeaseId, Lease> leases;  // guarded by mu
  LeaseId next_lease = 1;           // guarded by mu
  std::uint64_t next_serial = 1;    // guarded by mu

  Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl() = default;

  bool fault(std::string_view step) const {
    return options.inject_fault && options.inject_fault(step);
  }

  // Steps 3-9 of install() (see store.hpp) from the open package `fd` (taken
  // over) of `archive_size` bytes; `seen` is what the index held for `key` before,
  // `total` the payload size if known (else 0), `where` a prefix for messages.
  Result<InstalledPackage> install_tree(int fd, std::uint64_t archive_size,
                                        const catalog::EpMetadata& signed_meta, const Key& key,
                                        const std::optional<Entry>& seen, bool seen_damaged,
                                        std::uint64_t total, const std::string& where,
                                        const InstallProgress& progress,
                                        const std::function<Result<void>()>& before_commit,
                                        std::stop_token stop);

  // index.json for `entries`.
  Result<void> write_index(const std::map<Key, Entry>& entries) const {
    std::vector<InstalledPackage> packages;
    packages.reserve(entries.size());
    for (const auto& [key, e] : entries) packages.push_back(e.package);
    return catalog::atomic_write_file(store / kIndexFileName, index_text(std::move(packages)));
  }

  std::size_t leases_on(const Key& key) const {
    return static_cast<std::size_t>(std::count_if(
        leases.begin(), leases.end(), [&](const auto& l) { return l.second.key == key; }));
  }

  // Refusal to replace a leased version with other contents.
  std::unexpected<catalog::Error> busy_replacing(const Key& key) const {
    return fail(Errc::busy, describe(key) + " is installed with other contents and held by " +
                                std::to_string(leases_on(key)) + " lease(s)");
  }

  // Removes `path` at open(): moved into a trash directory in staging/ first, so
  // that it disappears at once, then deleted; recorded in the report.
  Result<void> discard(const fs::path& path, std::string reason) {
    auto trash = make_unique_dir(staging, "trash-");
    if (!trash) return std::unexpected(std::move(trash.error()));
    TreeRemover remover(*trash);
    if (auto moved = rename_path(path, *trash / "x"); !moved) {
      if (auto removed = remove_tree(path); !removed) return removed;
    }
    report.removed.push_back({path, std::move(reason)});
    return {};
  }

  // Step 4 of open(): every store/<name>/<version>, validated from its saved
  // manifest.
  Result<void> rebuild_index() {
    std::error_code ec;
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
      if (!is_storable_name(name) || !fs::is_directory(status)) {
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
        if (!problem) continue;
        if (auto ok = discard(tree, *problem); !ok) return ok;
      }
      if (fs::is_empty(name_dir, ec) && !ec) {
        if (auto ok = discard(name_dir, "empty package directory"); !ok) return ok;
      }
    }
    return catalog::fsync_dir(store);
  }

  // Indexes `tree` (store/<name>/<version>) when it is a committed install;
  // otherwise says why it is not.
  std::optional<std::string> validate_tree(const std::string& name, const fs::path& tree) {
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
};

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Store::~Store() = default;
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;

const OpenReport& Store::open_report() const { return impl_->report; }
const fs::path& Store::state_dir() const { return impl_->state; }
fs::path Store::store_dir() const { return impl_->store; }
fs::path Store::staging_dir() const { return impl_->staging; }
fs::path Store::index_path() const { return impl_->store / kIndexFileName; }

Result<Store> Store::open(const fs::path& state_dir, StoreOptions options) {
  auto impl = std::make_unique<Impl>();
  std::error_code ec;
  impl->state = fs::absolute(state_dir, ec).lexically_normal();
  if (ec) return fail(Errc::invalid_argument, "state directory " + state_dir.string());
  if (!impl->state.has_filename()) impl->state = impl->state.parent_path();
  impl->store = impl->state / "store";
  impl->staging = impl->state / "staging";
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
  std::vector<InstalledPackage> packages;
  for (const auto& [key, e] : impl->index) packages.push_back(e.package);
  const std::string want = index_text(std::move(packages));
  auto have = catalog::read_file(impl->store / kIndexFileName, kMaxIndexBytes);
  if (!have || *have != want) {
    if (auto ok = catalog::atomic_write_file(impl->store / kIndexFileName, want); !ok) {
      return std::unexpected(std::move(ok.error()));
    }
    impl->report.index_rewritten = true;
  }
  return Store(std::move(impl));
}

Result<InstalledPackage> Store::install(const fs::path& package_file,
                                        const catalog::EpMetadata& signed_meta,
                                        const InstallProgress& progress, std::stop_token stop) {
  Impl& s = *impl_;
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
  return s.install_tree(fd, static_cast<std::uint64_t>(st.st_size), signed_meta, key, seen,
                        seen_damaged, total, where, progress, {}, std::move(stop));
}

Result<InstalledPackage> Store::install_stream(int fd, std::uint64_t length,
                                               const catalog::EpMetadata& signed_meta,
                                               const InstallProgress& progress,
                                               const std::function<Result<void>()>& before_commit,
                                               std::stop_token stop) {
  Impl& s = *impl_;
  const std::string where = signed_meta.name + " " + signed_meta.version.text + ": ";
  if (!is_storable_name(signed_meta.name)) {
    ::close(fd);
    return fail(Errc::invalid_argument,
                "package name '" + signed_meta.name + "' cannot be stored (reserved)");
  }
  // The manifest is only known once extracted: what the index holds now is what
  // the commit compares with (a version installed meanwhile wins, a leased one
  // is not replaced).
  const Key key{signed_meta.name, signed_meta.version.text};
  std::optional<Entry> seen;
  {
    std::lock_guard lock(s.mu);
    if (auto it = s.index.find(key); it != s.index.end()) seen = it->second;
  }
  return s.install_tree(fd, length, signed_meta, key, seen, false, 0, where, progress,
                        before_commit, std::move(stop));
}

Result<InstalledPackage> Store::Impl::install_tree(
    int fd, std::uint64_t archive_size, const catalog::EpMetadata& signed_meta, const Key& key,
    const std::optional<Entry>& seen, bool seen_damaged, std::uint64_t total,
    const std::string& where, const InstallProgress& progress,
    const std::function<Result<void>()>& before_commit, std::stop_token stop) {
  Impl& s = *this;
  auto tell = [&](InstallPhase phase, std::uint64_t done, std::uint64_t all) {
    if (progress) progress(phase, done, all);
  };
  auto cancelled = [&] { return fail(Errc::cancelled, "install cancelled"); };
  catalog::UniqueFd package(fd);  // until the reader takes it over

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
  if (!reader) return context(std::move(reader.error()), where);
  tell(InstallPhase::extracting, 0, total);
  ProgressReader counted(**reader, progress, total, stop);
  catalog::package::ExtractLimits limits = s.options.limits;
  limits.fsync = false;  // seal_tree() syncs the whole tree at once
  auto manifest = catalog::package::extract_package(counted, archive_size, tree, limits);
  reader->reset();
  if (!manifest) return context(std::move(manifest.error()), where);
  if (total == 0) total = payload_bytes(*manifest);

  // 5. The manifest that was extracted is the one that counts: check it again.
  tell(InstallPhase::verifying, total, total);
  if (auto ok = catalog::package::check_manifest_matches(*manifest, signed_meta); !ok) {
    return context(std::move(ok.error()), where);
  }
  if (auto ok = check_storable(*manifest); !ok) return context(std::move(ok.error()), where);

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
  if (stop.stop_requested()) return cancelled();
  // The caller's last word (a streamed package: whether its download verified).
  if (before_commit) {
    if (auto ok = before_commit(); !ok) return std::unexpected(std::move(ok.error()));
  }

  // 8. Commit under the mutex: the new tree takes the place of an installed
  //    tree of this version by one atomic exchange (the old one lands where
  //    the new one was, in the work directory), or is renamed into place.
  tell(InstallPhase::committing, total, total);
  std::lock_guard lock(s.mu);
  const auto current = s.index.find(key);
  if (current != s.index.end()) {
    const Entry& cur = current->second;
    const bool changed_meanwhile = !seen || seen->serial != cur.serial;
    if (changed_meanwhile && cur.package.manifest == *manifest) return cur.package;
    const bool repair = !changed_meanwhile && seen_damaged;
    if (!repair && s.leases_on(key) > 0) return s.busy_replacing(key);
  }
  const fs::path name_dir = s.store / key.first;
  const fs::path target = name_dir / key.second;
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
  next[key] =
      Entry{InstalledPackage{std::move(*manifest), target, saved.installed_at}, s.next_serial};
  if (s.fault("install.index")) return roll_back(injected("install.index").error());
  if (auto ok = s.write_index(next); !ok) return roll_back(ok.error());
  ++s.next_serial;
  s.index = std::move(next);
  return s.index.at(key).package;
}

std::vector<InstalledPackage> Store::list() const {
  std::lock_guard lock(impl_->mu);
  std::vector<InstalledPackage> out;
  out.reserve(impl_->index.size());
  for (const auto& [key, e] : impl_->index) out.push_back(e.package);
  return out;
}

std::vector<InstalledPackage> Store::versions(std::string_view name) const {
  std::vector<InstalledPackage> out;
  {
    std::lock_guard lock(impl_->mu);
    for (auto it = impl_->index.lower_bound(Key{std::string(name), ""});
         it != impl_->index.end() && it->first.first == name; ++it) {
      out.push_back(it->second.package);
    }
  }
  std::sort(out.begin(), out.end(), newer);
  return out;
}

std::optional<InstalledPackage> Store::find(std::string_view name, std::string_view version) const {
  std::lock_guard lock(impl_->mu);
  auto it = impl_->index.find(Key{std::string(name), std::string(version)});
  if (it == impl_->index.end()) return std::nullopt;
  return it->second.package;
}

Result<fs::path> Store::library_path(std::string_view name, std::string_view version) const {
  auto p = find(name, version);
  if (!p) {
    return fail(Errc::not_found,
                std::string(name) + " " + std::string(version) + " is not installed");
  }
  return p->library_path();
}

Result<LeaseId> Store::acquire_lease(std::string_view name, std::string_view version,
                                     std::string_view owner) {
  std::lock_guard lock(impl_->mu);
  Key key{std::string(name), std::string(version)};
  if (!impl_->index.contains(key)) {
    return fail(Errc::not_found, describe(key) + " is not installed");
  }
  const LeaseId id = impl_->next_lease++;
  impl_->leases.emplace(id, Lease{std::move(key), std::string(owner)});
  return id;
}

void Store::release_lease(LeaseId id) {
  std::lock_guard lock(impl_->mu);
  impl_->leases.erase(id);
}

std::size_t Store::release_owner(std::string_view owner) {
  std::lock_guard lock(impl_->mu);
  return static_cast<std::size_t>(
      std::erase_if(impl_->leases, [&](const auto& l) { return l.second.owner == owner; }));
}

std::size_t Store::lease_count(std::string_view name, std::string_view version) const {
  std::lock_guard lock(impl_->mu);
  return impl_->leases_on(Key{std::string(name), std::string(version)});
}

namespace {

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

}  // namespace

Result<std::vector<InstalledPackage>> Store::remove(std::string_view name,
                                                    std::optional<std::string_view> version) {
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
    if (leased > 0) {
      return fail(Errc::busy, what + " is in use: " + std::to_string(leased) + " lease(s)");
    }
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
    // 2. Out of store/ and out of the index, all at once.
    detached = detach(s, victims);
  }
  if (!detached) return std::unexpected(std::move(detached.error()));
  // 3. Deleted outside the mutex.
  if (!detached->second.empty()) (void)remove_tree(detached->second);
  return std::move(detached->first);
}

Result<VerifyReport> Store::verify() const {
  const Impl& s = *impl_;
  // 1. A snapshot of the index.
  std::vector<Entry> entries;
  {
    std::lock_guard lock(s.mu);
    struct stat st {};
    if (::stat(s.store.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return sys_error("stat", s.store);
    }
    for (const auto& [key, e] : s.index) entries.push_back(e);
  }
  // 2. Hash every tree without holding the mutex.
  VerifyReport out;
  std::vector<std::pair<const Entry*, std::vector<std::string>>> damaged;
  for (const Entry& e : entries) {
    TreeCheck check = inspect(e);
    ++out.packages_checked;
    out.bytes_hashed += check.bytes_hashed;
    if (!check.problems.empty()) damaged.emplace_back(&e, std::move(check.problems));
  }
  // 3. Only what is still installed as it was when checked.
  std::lock_guard lock(s.mu);
  for (auto& [e, problems] : damaged) {
    auto it = s.index.find(Key{e->package.name(), e->package.version()});
    if (it == s.index.end() || it->second.serial != e->serial) continue;
    out.damaged.push_back({e->package, std::move(problems)});
  }
  return out;
}

}  // namespace epbrokerd::store
