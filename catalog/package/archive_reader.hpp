// A small streaming interface over an archive reader, so that the extractor can
// be driven by libarchive in production and by fault-injecting fakes in tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "catalog/error.hpp"

namespace catalog::package {

enum class EntryType {
  regular,
  directory,
  symlink,
  hardlink,
  char_device,
  block_device,
  fifo,
  socket,
  other,
};

// Stable lower-case name of a type ("char_device"), for messages.
std::string_view entry_type_name(EntryType type);

// One archive entry's header, as stored (nothing is interpreted or sanitized).
struct EntryInfo {
  std::string pathname;  // raw bytes of the stored name
  EntryType type = EntryType::other;
  std::uint64_t size = 0;    // declared size of the entry's data
  std::uint32_t mode = 0;    // permission bits including setuid/setgid/sticky (07777)
  bool is_hardlink = false;  // a hard link (then type is EntryType::hardlink)
  bool is_sparse = false;    // data has holes (GNU/pax sparse entry)
  std::string link_target;   // symlink or hardlink target, raw bytes; "" otherwise
};

// Reads entries in order. Single-pass, not thread-safe.
class ArchiveReader {
 public:
  virtual ~ArchiveReader() = default;

  // The next entry's header; std::nullopt at the end of the archive. Any data of
  // the previous entry not read is skipped. Errors: Errc::malformed for a corrupt
  // or truncated archive (compressed stream or tar headers), Errc::io when the
  // underlying file cannot be read.
  virtual Result<std::optional<EntryInfo>> next() = 0;

  // Reads up to buf.size() bytes of the current entry's data; 0 at its end.
  // Errors as next().
  virtual Result<std::size_t> read(std::span<std::byte> buf) = 0;
};

// A reader over libarchive for `path`, with ONLY the tar format (ustar, pax, GNU,
// v7) and ONLY the zstd and gzip decompression filters (plus uncompressed),
// decoded in-process (never through an external program). Pathnames are the raw
// stored bytes whatever the process locale. Errors: Errc::not_found / Errc::io
// when the file cannot be opened, Errc::unsupported when libarchive lacks
// built-in zstd or gzip support, Errc::malformed when the stream is not one of
// those formats.
Result<std::unique_ptr<ArchiveReader>> open_libarchive_reader(const std::filesystem::path& path);

// The same over an open file descriptor, which the reader takes over (closed when
// it dies, or on error).
Result<std::unique_ptr<ArchiveReader>> open_libarchive_reader(int fd);

}  // namespace catalog::package
