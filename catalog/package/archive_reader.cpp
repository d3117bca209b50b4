#include "catalog/package/archive_reader.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "catalog/package/archive_locale.hpp"
#include "catalog/text.hpp"
#include "catalog/unique_fd.hpp"

namespace catalog::package {
namespace {

constexpr std::size_t kReadBlockBytes = std::size_t{128} << 10;

std::string archive_message(archive* a) {
  const char* s = archive_error_string(a);
  return s != nullptr ? std::string(s) : std::string("unknown libarchive error");
}

// libarchive's errno is a system errno for I/O failures, or one of its own codes
// (format, misc) for bad data.
Errc classify(archive* a) { return archive_errno(a) == EIO ? Errc::io : Errc::malformed; }

class LibarchiveReader final : public ArchiveReader {
 public:
  LibarchiveReader(archive* a, int fd) : a_(a), fd_(fd) {}
  ~LibarchiveReader() override {
    ArchiveLocaleScope locale;
    archive_read_free(a_);
  }  // then fd_ closes
  LibarchiveReader(const LibarchiveReader&) = delete;
  LibarchiveReader& operator=(const LibarchiveReader&) = delete;

  Result<std::optional<EntryInfo>> next() override {
    ArchiveLocaleScope locale;
    archive_entry* e = nullptr;
    const int rc = archive_read_next_header(a_, &e);
    if (rc == ARCHIVE_EOF) return std::optional<EntryInfo>();
    if (rc != ARCHIVE_OK) {
      // Warnings too: a name that cannot be decoded, a malformed pax attribute.
      std::string where;
      if (e != nullptr && archive_entry_pathname(e) != nullptr) {
        where = "entry " + quote_for_message(archive_entry_pathname(e)) + ": ";
      }
      return fail(classify(a_), "corrupt or truncated archive: " + where + archive_message(a_));
    }
    EntryInfo info;
    if (const char* p = archive_entry_pathname(e)) info.pathname = p;
    const la_int64_t size = archive_entry_size(e);
    info.size = size > 0 ? static_cast<std::uint64_t>(size) : 0;
    info.mode = static_cast<std::uint32_t>(archive_entry_perm(e)) & 07777u;
    info.is_sparse = archive_entry_sparse_count(e) > 0;
    if (const char* h = archive_entry_hardlink(e)) {
      info.is_hardlink = true;
      info.type = EntryType::hardlink;
      info.link_target = h;
      return std::optional<EntryInfo>(std::move(info));
    }
    switch (archive_entry_filetype(e)) {
      case AE_IFREG:
        info.type = EntryType::regular;
        break;
      case AE_IFDIR:
        info.type = EntryType::directory;
        break;
      case AE_IFLNK:
        info.type = EntryType::symlink;
        if (const char* t = archive_entry_symlink(e)) info.link_target = t;
        break;
      case AE_IFCHR:
        info.type = EntryType::char_device;
        break;
      case AE_IFBLK:
        info.type = EntryType::block_device;
        break;
      case AE_IFIFO:
        info.type = EntryType::fifo;
        break;
      case AE_IFSOCK:
        info.type = EntryType::socket;
        break;
      default:
        info.type = EntryType::other;
        break;
    }
    return std::optional<EntryInfo>(std::move(info));
  }

  Result<std::size_t> read(std::span<std::byte> buf) override {
    ArchiveLocaleScope locale;
    const la_ssize_t n = archive_read_data(a_, buf.data(), buf.size());
    if (n < 0) return fail(classify(a_), "corrupt or truncated archive: " + archive_message(a_));
    return static_cast<std::size_t>(n);
  }

 private:
  archive* a_;
  UniqueFd fd_;
};

}  // namespace

std::string_view entry_type_name(EntryType type) {
  switch (type) {
    case EntryType::regular:
      return "regular file";
    case EntryType::directory:
      return "directory";
    case EntryType::symlink:
      return "symlink";
    case EntryType::hardlink:
      return "hardlink";
    case EntryType::char_device:
      return "character device";
    case EntryType::block_device:
      return "block device";
    case EntryType::fifo:
      return "FIFO";
    case EntryType::socket:
      return "socket";
    case EntryType::other:
      return "unknown entry type";
  }
  return "unknown entry type";
}

Result<std::unique_ptr<ArchiveReader>> open_libarchive_reader(int fd) {
  ArchiveLocaleScope locale;
  archive* a = archive_read_new();
  if (a == nullptr) {
    ::close(fd);
    return fail(Errc::io, "libarchive: out of memory");
  }
  auto give_up = [&](Errc code, const std::string& what) {
    std::string msg = what + ": " + archive_message(a);
    archive_read_free(a);
    ::close(fd);
    return fail(code, std::move(msg));
  };
  // 1. Tar only; zstd, gzip or nothing. ARCHIVE_WARN from a filter means it would
  //    run an external program: refused.
  if (archive_read_support_format_tar(a) != ARCHIVE_OK) {
    return give_up(Errc::unsupported, "libarchive: no tar support");
  }
  if (archive_read_support_filter_none(a) != ARCHIVE_OK) {
    return give_up(Errc::unsupported, "libarchive: no uncompressed input");
  }
  if (archive_read_support_filter_zstd(a) != ARCHIVE_OK) {
    return give_up(Errc::unsupported, "libarchive: no built-in zstd");
  }
  if (archive_read_support_filter_gzip(a) != ARCHIVE_OK) {
    return give_up(Errc::unsupported, "libarchive: no built-in gzip");
  }
  // 2. Open: detects the compression.
  if (archive_read_open_fd(a, fd, kReadBlockBytes) != ARCHIVE_OK) {
    return give_up(classify(a), "corrupt, truncated or not a tar, tar.zst or tar.gz archive");
  }
  return std::unique_ptr<ArchiveReader>(std::make_unique<LibarchiveReader>(a, fd));
}

Result<std::unique_ptr<ArchiveReader>> open_libarchive_reader(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    const int e = errno;
    return fail(e == ENOENT ? Errc::not_found : errno_code(e),
                "open " + path.string() + ": " + std::strerror(e));
  }
  return open_libarchive_reader(fd);
}

}  // namespace catalog::package
