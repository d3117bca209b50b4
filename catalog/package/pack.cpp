#include "catalog/package/pack.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>
#include <vector>

#include <nlohmann/json.hpp>

#include "catalog/atomic_file.hpp"
#include "catalog/crypto/hash.hpp"
#include "catalog/package/archive_locale.hpp"
#include "catalog/package/manifest.hpp"
#include "catalog/text.hpp"

namespace catalog::package {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kChunkBytes = std::size_t{1} << 20;

struct SourceFile {
  std::string path;  // relative, '/'-separated
  fs::path source;
};

std::unexpected<Error> sys_error(const fs::path& p, const std::string& what) {
  const int e = errno;
  return fail(e == ENOENT ? Errc::not_found : errno_code(e),
              what + " " + p.string() + ": " + std::strerror(e));
}

// Every regular file under `dir`, sorted by relative path (byte order); a
// manifest.json is refused when `refuse_manifest`.
Result<std::vector<SourceFile>> list_files(const fs::path& dir, bool refuse_manifest,
                                           std::size_t max_files) {
  std::vector<SourceFile> out;
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, fs::directory_options::none, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::path& p = it->path();
    const std::string rel = p.lexically_relative(dir).generic_string();
    const fs::file_status st = it->symlink_status(ec);
    if (ec) break;
    if (fs::is_directory(st)) continue;
    if (fs::is_symlink(st)) {
      return fail(Errc::invalid_argument,
                  p.string() + ": symlink refused (packages hold regular files only)");
    }
    if (!fs::is_regular_file(st)) {
      return fail(Errc::invalid_argument,
                  p.string() + ": special file refused (packages hold regular files only)");
    }
    if (auto problem = path_problem(rel)) {
      return fail(Errc::invalid_argument, p.string() + ": " + *problem);
    }
    if (refuse_manifest && rel == kManifestName) {
      return fail(
          Errc::invalid_argument,
          p.string() + ": a package directory must not hold manifest.json (pack writes it)");
    }
    if (out.size() == max_files) {
      return fail(Errc::invalid_argument,
                  dir.string() + ": more than " + std::to_string(max_files) + " files");
    }
    out.push_back({rel, p});
  }
  if (ec) return fail(Errc::io, "read " + dir.string() + ": " + ec.message());
  std::sort(out.begin(), out.end(),
            [](const SourceFile& a, const SourceFile& b) { return a.path < b.path; });
  return out;
}

// Opens a source file for reading, refusing anything but a regular file.
Result<int> open_source(const fs::path& p, struct stat& st) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return sys_error(p, "open");
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail(Errc::invalid_argument, p.string() + ": not a regular file");
  }
  return fd;
}

// Size, SHA-256 and mode of one file.
Result<FileEntry> describe(const SourceFile& f) {
  struct stat st {};
  auto fd = open_source(f.source, st);
  if (!fd) return std::unexpected(std::move(fd.error()));
  crypto::Hasher hasher(crypto::HashAlgo::sha256);
  std::vector<std::byte> buf(kChunkBytes);
  std::uint64_t size = 0;
  while (true) {
    const ssize_t n = ::read(*fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      auto err = sys_error(f.source, "read");
      ::close(*fd);
      return err;
    }
    if (n == 0) break;
    hasher.update(std::span<const std::byte>(buf.data(), static_cast<std::size_t>(n)));
    size += static_cast<std::uint64_t>(n);
  }
  ::close(*fd);
  return FileEntry{f.path, size, hasher.finish_hex(), (st.st_mode & S_IXUSR) != 0};
}

// Writes a whole archive to `fd` (which the writer does not close).
class Writer {
 public:
  Writer() : a_(archive_write_new()) {}
  ~Writer() {
    ArchiveLocaleScope locale;
    if (a_ != nullptr) archive_write_free(a_);
  }
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  Result<void> open(int fd, Compression c) {
    ArchiveLocaleScope locale;
    if (a_ == nullptr) return fail(Errc::io, "libarchive: out of memory");
    // 1. pax restricted: ustar headers, a pax extension only where ustar cannot
    //    hold a name; zstd or gzip in-process; no padding after the last block.
    bool ok = archive_write_set_format_pax_restricted(a_) == ARCHIVE_OK;
    if (c == Compression::zstd) {
      ok = ok && archive_write_add_filter_zstd(a_) == ARCHIVE_OK &&
           archive_write_set_filter_option(a_, "zstd", "compression-level",
                                           std::to_string(kZstdLevel).c_str()) == ARCHIVE_OK;
    } else {
      ok = ok && archive_write_add_filter_gzip(a_) == ARCHIVE_OK &&
           archive_write_set_filter_option(a_, "gzip", "compression-level",
                                           std::to_string(kGzipLevel).c_str()) == ARCHIVE_OK &&
           archive_write_set_filter_option(a_, "gzip", "timestamp", nullptr) == ARCHIVE_OK;
    }
    ok = ok && archive_write_set_bytes_in_last_block(a_, 1) == ARCHIVE_OK &&
         archive_write_open_fd(a_, fd) == ARCHIVE_OK;
    if (!ok) return error("open archive writer");
    return {};
  }

  // One regular file entry with fixed metadata; its data follows via data().
  Result<void> header(const std::string& path, std::uint64_t size, bool executable) {
    ArchiveLocaleScope locale;
    archive_entry* e = archive_entry_new();
    if (e == nullptr) return fail(Errc::io, "libarchive: out of memory");
    archive_entry_copy_pathname(e, path.c_str());
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, executable ? kExecutableMode : kRegularMode);
    archive_entry_set_size(e, static_cast<la_int64_t>(size));
    archive_entry_set_mtime(e, 0, 0);
    archive_entry_set_uid(e, 0);
    archive_entry_set_gid(e, 0);
    const int rc = archive_write_header(a_, e);
    archive_entry_free(e);
    if (rc < ARCHIVE_WARN) return error("write header of " + quote_for_message(path));
    return {};
  }

  Result<void> data(std::span<const std::byte> bytes) {
    ArchiveLocaleScope locale;
    const la_ssize_t n = archive_write_data(a_, bytes.data(), bytes.size());
    if (n < 0 || static_cast<std::size_t>(n) != bytes.size()) return error("write data");
    return {};
  }

  Result<void> close() {
    ArchiveLocaleScope locale;
    if (archive_write_close(a_) != ARCHIVE_OK) return error("finish archive");
    return {};
  }

 private:
  std::unexpected<Error> error(const std::string& what) {
    const char* s = archive_error_string(a_);
    return fail(Errc::io, what + ": " + (s != nullptr ? s : "libarchive error"));
  }

  archive* a_;
};

// Streams one source file into the writer, checking that it still has the size
// and hash recorded in the manifest.
Result<void> copy_file(Writer& w, const SourceFile& f, const FileEntry& want) {
  struct stat st {};
  auto fd = open_source(f.source, st);
  if (!fd) return std::unexpected(std::move(fd.error()));
  auto done = [&](Result<void> r) {
    ::close(*fd);
    return r;
  };
  if (static_cast<std::uint64_t>(st.st_size) != want.size) {
    return done(fail(Errc::io, f.source.string() + ": changed while packing"));
  }
  if (auto ok = w.header(want.path, want.size, want.executable); !ok) return done(ok);
  crypto::Hasher hasher(crypto::HashAlgo::sha256);
  std::vector<std::byte> buf(kChunkBytes);
  std::uint64_t size = 0;
  while (size < want.size) {
    const ssize_t n =
        ::read(*fd, buf.data(),
               static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), want.size - size)));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return done(sys_error(f.source, "read"));
    if (n == 0) break;
    const std::span<const std::byte> chunk(buf.data(), static_cast<std::size_t>(n));
    hasher.update(chunk);
    if (auto ok = w.data(chunk); !ok) return done(ok);
    size += chunk.size();
  }
  if (size != want.size || hasher.finish_hex() != want.sha256) {
    return done(fail(Errc::io, f.source.string() + ": changed while packing"));
  }
  return done({});
}

bool is_inside(const fs::path& inner, const fs::path& outer) {
  const auto rel = inner.lexically_relative(outer);
  return !rel.empty() && *rel.begin() != "..";
}

}  // namespace

Result<std::vector<FileEntry>> describe_directory(const fs::path& dir, std::size_t max_files) {
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(dir, ec))) {
    return fail(Errc::invalid_argument, dir.string() + " is not a directory");
  }
  auto files = list_files(dir, false, max_files);
  if (!files) return std::unexpected(std::move(files.error()));
  std::vector<FileEntry> out;
  out.reserve(files->size());
  for (const SourceFile& f : *files) {
    auto entry = describe(f);
    if (!entry) return std::unexpected(std::move(entry.error()));
    out.push_back(std::move(*entry));
  }
  return out;
}

Result<void> pack_directory(const fs::path& dir, const EpMetadata& meta, const fs::path& output,
                            Compression compression) {
  // 1. Inputs: valid metadata, a directory not containing the output.
  if (auto valid = parse_ep_metadata(catalog::to_json(meta)); !valid) {
    return std::unexpected(std::move(valid.error()));
  }
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return fail(Errc::invalid_argument, dir.string() + " is not a directory");
  }
  const fs::path out_dir = output.has_parent_path() ? output.parent_path() : fs::path(".");
  {
    const fs::path real_dir = fs::canonical(dir, ec);
    const fs::path real_out = fs::weakly_canonical(out_dir, ec);
    if (!ec && (real_out == real_dir || is_inside(real_out, real_dir))) {
      return fail(Errc::invalid_argument,
                  output.string() + ": the package must be written outside " + dir.string());
    }
  }
  // 2. The files, sorted; then the manifest (sizes, hashes, modes).
  auto files = list_files(dir, true, kMaxManifestFiles);
  if (!files) return std::unexpected(std::move(files.error()));
  Manifest manifest{meta, {}};
  manifest.files.reserve(files->size());
  for (const SourceFile& f : *files) {
    auto entry = describe(f);
    if (!entry) return std::unexpected(std::move(entry.error()));
    manifest.files.push_back(std::move(*entry));
  }
  if (std::none_of(manifest.files.begin(), manifest.files.end(),
                   [&](const FileEntry& f) { return f.path == meta.library; })) {
    return fail(Errc::invalid_argument, "epbroker.library " + quote_for_message(meta.library) +
                                            " is not a file in " + dir.string());
  }
  const std::string manifest_text = to_text(manifest);
  if (auto check = parse_manifest(manifest_text); !check) {
    return fail(check.error().code, "generated manifest.json: " + check.error().message);
  }
  // 3. The archive, into a temporary file beside the output.
  std::string tmp = (out_dir / ("." + output.filename().string() + ".tmp-XXXXXX")).string();
  const int fd = ::mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) return sys_error(output, "create temporary for");
  auto abandon = [&](Error e) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return std::unexpected(std::move(e));
  };
  {
    Writer w;
    if (auto ok = w.open(fd, compression); !ok) return abandon(ok.error());
    if (auto ok = w.header(std::string(kManifestName), manifest_text.size(), false); !ok) {
      return abandon(ok.error());
    }
    if (auto ok = w.data(std::as_bytes(std::span(manifest_text))); !ok) {
      return abandon(ok.error());
    }
    for (std::size_t i = 0; i < files->size(); ++i) {
      if (auto ok = copy_file(w, (*files)[i], manifest.files[i]); !ok) {
        return abandon(ok.error());
      }
    }
    if (auto ok = w.close(); !ok) return abandon(ok.error());
  }
  // 4. Durable and readable, then visible under its name.
  if (::fchmod(fd, 0644) != 0 || ::fsync(fd) != 0) {
    return abandon(sys_error(tmp, "fsync").error());
  }
  if (::close(fd) != 0) {
    auto err = sys_error(tmp, "close");
    ::unlink(tmp.c_str());
    return err;
  }
  if (::rename(tmp.c_str(), output.c_str()) != 0) {
    auto err = sys_error(output, "rename into");
    ::unlink(tmp.c_str());
    return err;
  }
  return fsync_dir(out_dir);
}

}  // namespace catalog::package
