#include "catalog/package/extract.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "catalog/crypto/hash.hpp"
#include "catalog/package/prefetch_reader.hpp"
#include "catalog/text.hpp"
#include "catalog/unique_fd.hpp"

namespace catalog::package {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kCopyBufferBytes = std::size_t{1} << 20;

using Fd = catalog::UniqueFd;

std::string entry_name(std::string_view path) { return "entry " + quote_for_message(path, 96); }

std::unexpected<Error> entry_error(Errc code, std::string_view path, const std::string& what) {
  return fail(code, entry_name(path) + ": " + what);
}

// Errc::io (no_space for a full disk) with strerror(errno).
std::unexpected<Error> sys_error(std::string_view path, const std::string& what) {
  const int e = errno;
  return entry_error(errno_code(e), path, what + ": " + std::strerror(e));
}

// Prefixes an error from the reader with the entry it happened in.
std::unexpected<Error> in_entry(std::string_view path, Error e) {
  e.message = entry_name(path) + ": " + e.message;
  return std::unexpected(std::move(e));
}

std::uint64_t saturating_mul(std::uint64_t a, std::uint64_t b) {
  if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a) {
    return std::numeric_limits<std::uint64_t>::max();
  }
  return a * b;
}

std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
  return b > std::numeric_limits<std::uint64_t>::max() - a
             ? std::numeric_limits<std::uint64_t>::max()
             : a + b;
}

// ---- directory walks relative to a descriptor (never following symlinks) -------

// Names in the directory `dirfd` (without "." and ".."), with their d_type.
Result<std::vector<std::pair<std::string, unsigned char>>> list_dir(int dirfd) {
  const int fd = ::openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return fail(Errc::io, std::string("open directory: ") + std::strerror(errno));
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    const int e = errno;
    ::close(fd);
    return fail(Errc::io, std::string("read directory: ") + std::strerror(e));
  }
  std::vector<std::pair<std::string, unsigned char>> out;
  errno = 0;
  while (const dirent* ent = ::readdir(d)) {
    const std::string_view name = ent->d_name;
    if (name != "." && name != "..") out.emplace_back(std::string(name), ent->d_type);
    errno = 0;
  }
  const int e = errno;
  ::closedir(d);
  if (e != 0) return fail(Errc::io, std::string("read directory: ") + std::strerror(e));
  return out;
}

bool is_directory_at(int dirfd, const std::string& name, unsigned char d_type) {
  if (d_type != DT_UNKNOWN) return d_type == DT_DIR;
  struct stat st {};
  return ::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

// Removes everything inside `dirfd` (not the directory itself), depth first,
// continuing past failures; returns the first failure.
Result<void> remove_contents(int dirfd) {
  auto names = list_dir(dirfd);
  if (!names) return std::unexpected(std::move(names.error()));
  Result<void> result;
  for (const auto& [name, type] : *names) {
    if (is_directory_at(dirfd, name, type)) {
      const int child =
          ::openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (child >= 0) {
        auto r = remove_contents(child);
        ::close(child);
        if (!r && result) result = std::move(r);
      }
      if (::unlinkat(dirfd, name.c_str(), AT_REMOVEDIR) != 0 && result) {
        result = fail(Errc::io, "remove " + quote_for_message(name) + ": " + std::strerror(errno));
      }
    } else if (::unlinkat(dirfd, name.c_str(), 0) != 0 && result) {
      result = fail(Errc::io, "remove " + quote_for_message(name) + ": " + std::strerror(errno));
    }
  }
  return result;
}

// fsync()s every file and directory inside `dirfd` (not `dirfd` itself).
Result<void> fsync_contents(int dirfd) {
  auto names = list_dir(dirfd);
  if (!names) return std::unexpected(std::move(names.error()));
  for (const auto& [name, type] : *names) {
    const bool dir = is_directory_at(dirfd, name, type);
    Fd fd(
        ::openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | (dir ? O_DIRECTORY : 0)));
    if (!fd.valid()) return sys_error(name, "open for fsync");
    if (dir) {
      if (auto ok = fsync_contents(fd.get()); !ok) return ok;
    }
    if (::fsync(fd.get()) != 0) return sys_error(name, "fsync");
  }
  return {};
}

// ---- entry checks shared by the extractor and read_package_manifest() -----------

// The entry's path if it is safe to create (directories: without the trailing
// '/'); Errc::unsafe_entry otherwise.
Result<std::string> checked_path(const EntryInfo& e, const ExtractLimits& limits) {
  // 1. The name: bounded, then its shape.
  if (e.pathname.size() > limits.max_path_bytes) {
    return entry_error(Errc::unsafe_entry, e.pathname,
                       "name longer than " + std::to_string(limits.max_path_bytes) + " bytes (" +
                           std::to_string(e.pathname.size()) + ")");
  }
  std::string path = e.pathname;
  if (e.type == EntryType::directory && path.size() > 1 && path.back() == '/') path.pop_back();
  if (auto problem = path_problem(path, limits.max_path_bytes)) {
    return entry_error(Errc::unsafe_entry, e.pathname, *problem);
  }
  // 2. The kind: regular files and directories only.
  if (e.is_hardlink || e.type == EntryType::hardlink) {
    return entry_error(Errc::unsafe_entry, path,
                       "hardlink (to " + quote_for_message(e.link_target) + ") refused");
  }
  if (e.type == EntryType::symlink) {
    return entry_error(Errc::unsafe_entry, path,
                       "symlink (to " + quote_for_message(e.link_target) + ") refused");
  }
  if (e.type != EntryType::regular && e.type != EntryType::directory) {
    return entry_error(Errc::unsafe_entry, path, std::string(entry_type_name(e.type)) + " refused");
  }
  if (e.is_sparse) return entry_error(Errc::unsafe_entry, path, "sparse file refused");
  // 3. The mode: no setuid/setgid/sticky; 0644/0755 for files, 0755 for directories.
  if ((e.mode & 07000u) != 0) {
    return entry_error(Errc::unsafe_entry, path,
                       "setuid/setgid/sticky bits refused (mode " + mode_text(e.mode) + ")");
  }
  if (e.type == EntryType::directory ? e.mode != 0755u : e.mode != 0755u && e.mode != 0644u) {
    return entry_error(Errc::unsafe_entry, path,
                       std::string(e.type == EntryType::directory ? "directory" : "file") +
                           " mode " + mode_text(e.mode) +
                           (e.type == EntryType::directory ? " refused (must be 0755)"
                                                           : " refused (must be 0644 or 0755)"));
  }
  return path;
}

// Reads manifest.json (entry `e`, already checked) and parses it.
Result<Manifest> read_manifest_entry(ArchiveReader& reader, const EntryInfo& e,
                                     const std::string& path, const ExtractLimits& limits) {
  // 1. It must be the first entry and a bounded regular file.
  if (path != kManifestName || e.type != EntryType::regular) {
    return fail(Errc::malformed, "manifest.json must be the first entry of a package; found " +
                                     entry_name(path) + " (" +
                                     std::string(entry_type_name(e.type)) + ")");
  }
  const std::uint64_t cap = std::min<std::uint64_t>(limits.max_manifest_bytes, kMaxManifestBytes);
  if (e.size > cap) {
    return entry_error(Errc::too_large, path,
                       std::to_string(e.size) + " bytes, more than " + std::to_string(cap));
  }
  // 2. Its bytes, exactly as many as declared.
  std::string text;
  text.reserve(static_cast<std::size_t>(e.size));
  std::vector<std::byte> buf(64 * 1024);
  while (true) {
    auto n = reader.read(buf);
    if (!n) return in_entry(path, std::move(n.error()));
    if (*n == 0) break;
    if (text.size() + *n > e.size) {
      return entry_error(Errc::length_mismatch, path, "more data than its header declares");
    }
    text.append(reinterpret_cast<const char*>(buf.data()), *n);
  }
  if (text.size() != e.size) {
    return entry_error(
        Errc::length_mismatch, path,
        "truncated: " + std::to_string(text.size()) + " of " + std::to_string(e.size) + " bytes");
  }
  // 3. Strict parse.
  auto m = parse_manifest(text);
  if (!m) return in_entry(path, std::move(m.error()));
  return m;
}

// ---- the extractor ---------------------------------------------------------------

class Extractor {
 public:
  Extractor(ArchiveReader& reader, std::uint64_t archive_size, int root,
            const ExtractLimits& limits)
      : reader_(reader),
        root_(root),
        limits_(limits),
        allowance_(
            saturating_mul(limits.max_ratio, std::max(archive_size, limits.ratio_floor_bytes))),
        archive_size_(archive_size) {}

  Result<Manifest> run() {
    // 1. manifest.json, first; its sizes against every bound before any write.
    auto first = reader_.next();
    if (!first) return std::unexpected(std::move(first.error()));
    if (!*first) return fail(Errc::malformed, "empty archive: no manifest.json");
    entries_ = 1;
    auto path = checked_path(**first, limits_);
    if (!path) return std::unexpected(std::move(path.error()));
    auto m = read_manifest_entry(reader_, **first, *path, limits_);
    if (!m) return m;
    manifest_ = std::move(*m);
    if (auto ok = check_manifest_bounds(); !ok) return std::unexpected(std::move(ok.error()));
    seen_.insert(std::string(kManifestName));
    // 2. Payload entries, streamed.
    buf_.resize(kCopyBufferBytes);
    while (true) {
      auto next = reader_.next();
      if (!next) return std::unexpected(std::move(next.error()));
      if (!*next) break;
      const EntryInfo& e = **next;
      if (++entries_ > limits_.max_entries) {
        return entry_error(Errc::too_many, e.pathname,
                           "more than " + std::to_string(limits_.max_entries) + " entries");
      }
      auto p = checked_path(e, limits_);
      if (!p) return std::unexpected(std::move(p.error()));
      if (!seen_.insert(*p).second) return entry_error(Errc::unsafe_entry, *p, "duplicate entry");
      auto ok = e.type == EntryType::directory ? make_directory(*p) : write_file(e, *p);
      if (!ok) return std::unexpected(std::move(ok.error()));
    }
    // 3. Every listed file present.
    if (next_file_ != manifest_.files.size()) {
      return fail(Errc::malformed, "file " +
                                       quote_for_message(manifest_.files[next_file_].path, 96) +
                                       " listed in manifest.json is missing from the archive");
    }
    // 4. Durable before the caller renames staging into the store (unless the
    //    caller makes it durable itself).
    cached_fd_.reset();
    if (limits_.fsync) {
      if (auto ok = fsync_contents(root_); !ok) return std::unexpected(std::move(ok.error()));
      if (::fsync(root_) != 0) return sys_error(".", "fsync staging directory");
    }
    return std::move(manifest_);
  }

  void close_cache() { cached_fd_.reset(); }

 private:
  Result<void> check_manifest_bounds() {
    const std::string where = "manifest.json: ";
    if (manifest_.files.size() + 1 > limits_.max_entries) {
      return fail(Errc::too_many, where + "lists " + std::to_string(manifest_.files.size()) +
                                      " files, more than " + std::to_string(limits_.max_entries) +
                                      " entries");
    }
    std::uint64_t total = 0;
    for (const FileEntry& f : manifest_.files) {
      if (f.path.size() > limits_.max_path_bytes) {
        return entry_error(Errc::unsafe_entry, f.path,
                           "name longer than " + std::to_string(limits_.max_path_bytes) + " bytes");
      }
      if (f.size > limits_.max_file_bytes) {
        return entry_error(Errc::too_large, f.path,
                           "manifest.json lists " + std::to_string(f.size) +
                               " bytes, more than the per-file cap of " +
                               std::to_string(limits_.max_file_bytes));
      }
      total = saturating_add(total, f.size);
    }
    if (auto ok = check_total(total, where + "listed files total "); !ok) return ok;
    // Every ancestor directory of a listed file may be created (and may appear).
    index_.reserve(manifest_.files.size());
    for (std::size_t i = 0; i < manifest_.files.size(); ++i) {
      const std::string& p = manifest_.files[i].path;
      index_.emplace(p, i);
      for (std::size_t slash = p.find('/'); slash != std::string::npos;
           slash = p.find('/', slash + 1)) {
        dirs_needed_.insert(p.substr(0, slash));
      }
    }
    return {};
  }

  // Errc::too_large when `total` bytes exceed the ratio allowance or the total cap.
  Result<void> check_total(std::uint64_t total, const std::string& what) const {
    if (total > allowance_) {
      return fail(Errc::too_large, what + std::to_string(total) + " bytes, more than " +
                                       std::to_string(limits_.max_ratio) + " times the archive's " +
                                       std::to_string(archive_size_) +
                                       " bytes (expansion ratio cap)");
    }
    if (total > limits_.max_total_bytes) {
      return fail(Errc::too_large, what + std::to_string(total) +
                                       " bytes, more than the total cap of " +
                                       std::to_string(limits_.max_total_bytes));
    }
    return {};
  }

  Result<void> make_directory(const std::string& path) {
    if (!dirs_needed_.contains(path)) {
      return entry_error(Errc::unsafe_entry, path,
                         "directory not needed by any file listed in manifest.json");
    }
    auto fd = open_dir(path, path);
    if (!fd) return std::unexpected(std::move(fd.error()));
    return {};
  }

  // The directory `dir` ("" = staging), created (0755) as needed, walking each
  // component with O_NOFOLLOW; cached until another directory is asked for.
  Result<int> open_dir(const std::string& dir, std::string_view entry) {
    if (dir.empty()) return root_;
    if (cached_fd_.valid() && dir == cached_dir_) return cached_fd_.get();
    cached_fd_.reset();
    Fd cur;
    std::size_t start = 0;
    while (start <= dir.size()) {
      const std::size_t slash = std::min(dir.find('/', start), dir.size());
      const std::string part = dir.substr(start, slash - start);
      const int base = cur.valid() ? cur.get() : root_;
      constexpr int kFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
      int fd = ::openat(base, part.c_str(), kFlags);
      if (fd < 0 && errno == ENOENT) {
        if (::mkdirat(base, part.c_str(), 0755) != 0 && errno != EEXIST) {
          return sys_error(entry, "create directory " + quote_for_message(dir.substr(0, slash)));
        }
        fd = ::openat(base, part.c_str(), kFlags);
        if (fd >= 0 && ::fchmod(fd, 0755) != 0) {  // exact mode whatever the umask
          const int e = errno;
          ::close(fd);
          errno = e;
          return sys_error(entry, "chmod directory " + quote_for_message(dir.substr(0, slash)));
        }
      }
      if (fd < 0) {
        if (errno == ENOTDIR || errno == ELOOP) {
          return entry_error(Errc::unsafe_entry, entry,
                             quote_for_message(dir.substr(0, slash)) + " is not a directory");
        }
        return sys_error(entry, "open directory " + quote_for_message(dir.substr(0, slash)));
      }
      cur = Fd(fd);
      start = slash + 1;
    }
    cached_dir_ = dir;
    cached_fd_ = std::move(cur);
    return cached_fd_.get();
  }

  Result<void> write_file(const EntryInfo& e, const std::string& path) {
    // 1. Bounds from the header, before anything is written.
    if (e.size > limits_.max_file_bytes) {
      return entry_error(Errc::too_large, path,
                         std::to_string(e.size) + " bytes, more than the per-file cap of " +
                             std::to_string(limits_.max_file_bytes));
    }
    declared_ = saturating_add(declared_, e.size);
    if (auto ok = check_total(declared_, entry_name(path) + ": entries declare "); !ok) return ok;
    // 2. Listed, in manifest order, with the listed size and mode.
    const auto it = index_.find(path);
    if (it == index_.end()) {
      return entry_error(Errc::unsafe_entry, path, "file not listed in manifest.json");
    }
    if (it->second != next_file_) {
      return entry_error(Errc::malformed, path,
                         "out of order: manifest.json lists " +
                             quote_for_message(manifest_.files[next_file_].path, 96) +
                             " next (payload files follow manifest.json in path order)");
    }
    const FileEntry& f = manifest_.files[it->second];
    if (e.size != f.size) {
      return entry_error(Errc::length_mismatch, path,
                         "header declares " + std::to_string(e.size) +
                             " bytes, manifest.json lists " + std::to_string(f.size));
    }
    const std::uint32_t mode = f.executable ? kExecutableMode : kRegularMode;
    if (e.mode != mode) {
      return entry_error(
          Errc::unsafe_entry, path,
          "mode " + mode_text(e.mode) + " but manifest.json lists " + mode_text(mode));
    }
    // 3. Create it exclusively in its (safely opened) directory.
    const std::size_t slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? std::string() : path.substr(0, slash);
    const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
    auto dirfd = open_dir(dir, path);
    if (!dirfd) return std::unexpected(std::move(dirfd.error()));
    Fd fd(
        ::openat(*dirfd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
    if (!fd.valid()) {
      if (errno == EEXIST || errno == ELOOP) {
        return entry_error(Errc::unsafe_entry, path, "already exists");
      }
      return sys_error(path, "create");
    }
    if (::fchmod(fd.get(), mode) != 0) return sys_error(path, "chmod");
    // 4. Stream: count against the bounds, hash, write.
    crypto::Hasher hasher(crypto::HashAlgo::sha256);
    std::uint64_t written = 0;
    while (true) {
      auto n = reader_.read(buf_);
      if (!n) return in_entry(path, std::move(n.error()));
      if (*n == 0) break;
      written += *n;
      if (written > e.size) {
        return entry_error(Errc::length_mismatch, path, "more data than its header declares");
      }
      total_ = saturating_add(total_, *n);
      if (auto ok = check_total(total_, entry_name(path) + ": data streamed so far "); !ok) {
        return ok;
      }
      const std::span<const std::byte> chunk(buf_.data(), *n);
      hasher.update(chunk);
      for (std::size_t done = 0; done < chunk.size();) {
        const ssize_t w = ::write(fd.get(), chunk.data() + done, chunk.size() - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return sys_error(path, "write");
        done += static_cast<std::size_t>(w);
      }
    }
    if (written != f.size) {
      return entry_error(
          Errc::length_mismatch, path,
          "truncated: " + std::to_string(written) + " of " + std::to_string(f.size) + " bytes");
    }
    if (const std::string got = hasher.finish_hex(); got != f.sha256) {
      return entry_error(Errc::hash_mismatch, path,
                         "SHA-256 " + got + ", manifest.json lists " + f.sha256);
    }
    // 5. Start writeback now; the final pass fsyncs (overlapping I/O with the rest).
    ::sync_file_range(fd.get(), 0, 0, SYNC_FILE_RANGE_WRITE);
    if (fd.close_checked() != 0) return sys_error(path, "close");
    ++next_file_;
    return {};
  }

  ArchiveReader& reader_;
  const int root_;
  const ExtractLimits limits_;
  const std::uint64_t allowance_;
  const std::uint64_t archive_size_;
  Manifest manifest_;
  std::unordered_map<std::string, std::size_t> index_;
  std::unordered_set<std::string> dirs_needed_;
  std::unordered_set<std::string> seen_;
  std::size_t next_file_ = 0;
  std::uint64_t entries_ = 0;
  std::uint64_t declared_ = 0;
  std::uint64_t total_ = 0;
  std::string cached_dir_;
  Fd cached_fd_;
  std::vector<std::byte> buf_;
};

// Opens `staging_dir` (not through a final symlink) and checks that it is empty.
Result<Fd> open_staging(const fs::path& staging_dir) {
  Fd fd(::open(staging_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) {
    const int e = errno;
    return fail(Errc::invalid_argument,
                "staging directory " + staging_dir.string() + ": " +
                    (e == ELOOP ? std::string("is a symlink") : std::string(std::strerror(e))));
  }
  auto names = list_dir(fd.get());
  if (!names) return std::unexpected(std::move(names.error()));
  if (!names->empty()) {
    return fail(Errc::invalid_argument,
                "staging directory " + staging_dir.string() + " is not empty");
  }
  return fd;
}

// Opens a package file: a regular file, with its size.
Result<std::pair<std::unique_ptr<ArchiveReader>, std::uint64_t>> open_package(const fs::path& p) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    const int e = errno;
    return fail(e == ENOENT ? Errc::not_found : errno_code(e),
                "open " + p.string() + ": " + std::strerror(e));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail(Errc::invalid_argument, p.string() + " is not a regular file");
  }
  auto reader = open_libarchive_reader(fd);
  if (!reader) {
    return fail(reader.error().code, p.string() + ": " + reader.error().message);
  }
  return std::pair{std::move(*reader), static_cast<std::uint64_t>(st.st_size)};
}

}  // namespace

Result<Manifest> extract_package(ArchiveReader& reader, std::uint64_t archive_size,
                                 const fs::path& staging_dir, const ExtractLimits& limits) {
  // 1. An empty staging directory, held by descriptor from here on.
  auto root = open_staging(staging_dir);
  if (!root) return std::unexpected(std::move(root.error()));
  // 2. Decompression runs ahead on a second thread (where one can be started),
  //    overlapping with hashing and writing here.
  auto prefetch = PrefetchReader::start(reader);
  ArchiveReader& source = prefetch ? static_cast<ArchiveReader&>(**prefetch) : reader;
  // 3. Extract; on any failure remove whatever was created inside it.
  Extractor extractor(source, archive_size, root->get(), limits);
  auto result = extractor.run();
  if (!result) {
    extractor.close_cache();
    if (auto cleaned = remove_contents(root->get()); !cleaned) {
      result.error().message +=
          " (and cleaning the staging directory failed: " + cleaned.error().message + ")";
    }
  }
  return result;
}

Result<Manifest> extract_package(const fs::path& archive, const fs::path& staging_dir,
                                 const ExtractLimits& limits) {
  auto opened = open_package(archive);
  if (!opened) return std::unexpected(std::move(opened.error()));
  return extract_package(*opened->first, opened->second, staging_dir, limits);
}

Result<Manifest> read_package_manifest(const fs::path& archive, const ExtractLimits& limits) {
  auto opened = open_package(archive);
  if (!opened) return std::unexpected(std::move(opened.error()));
  ArchiveReader& reader = *opened->first;
  auto first = reader.next();
  if (!first) return std::unexpected(std::move(first.error()));
  if (!*first) return fail(Errc::malformed, archive.string() + ": empty archive: no manifest.json");
  auto path = checked_path(**first, limits);
  if (!path) return std::unexpected(std::move(path.error()));
  return read_manifest_entry(reader, **first, *path, limits);
}

bool looks_like_package(const fs::path& path) {
  const std::string name = path.filename().string();
  return name.ends_with(".tar.zst") || name.ends_with(".tar.gz");
}

}  // namespace catalog::package
