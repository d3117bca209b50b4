// The EP package format and its safe extractor.
//
// A package is one tar archive (pax or ustar) compressed with zstd (.tar.zst,
// the default) or gzip (.tar.gz). Its first entry is manifest.json (see
// catalog/package/manifest.hpp), then the payload files in manifest order (sorted
// by path, byte order), each named exactly as listed (no "./" prefix) with the
// listed mode. Directory entries may appear anywhere ("lib" or "lib/", mode 0755,
// each an ancestor of a listed file); the extractor creates parents as needed.
// Nothing else is allowed: no links, devices, FIFOs, sockets, sparse files,
// setuid/setgid/sticky bits, file modes other than 0644/0755, unlisted or
// duplicate entries.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>

#include "catalog/error.hpp"
#include "catalog/package/archive_reader.hpp"
#include "catalog/package/manifest.hpp"

namespace catalog::package {

// Bounds applied while extracting. A byte bound is checked against the sizes the
// manifest lists and each entry's header declares (before anything is written)
// and again against the bytes that actually stream out.
struct ExtractLimits {
  std::uint64_t max_entries = 10'000;                      // archive entries, all kinds
  std::size_t max_path_bytes = 1024;                       // per entry name
  std::uint64_t max_file_bytes = std::uint64_t{2} << 30;   // per file (2 GiB)
  std::uint64_t max_total_bytes = std::uint64_t{4} << 30;  // all files (4 GiB)
  std::uint64_t max_manifest_bytes = kMaxManifestBytes;    // manifest.json (1 MiB)
  // Total uncompressed bytes may not exceed max_ratio times the archive's size,
  // counting archives smaller than ratio_floor_bytes as that size (so a tiny
  // package of a few zero-filled files is not refused).
  std::uint64_t max_ratio = 200;
  std::uint64_t ratio_floor_bytes = std::uint64_t{1} << 20;  // 1 MiB
  // Not a bound: whether extract_package() fsyncs every file and directory before
  // it returns (each file's writeback starts as soon as it is written either
  // way). A caller that makes the whole tree durable itself turns it off: the
  // daemon's store seals the tree and then syncs its filesystem once, where an
  // fsync per file costs a journal commit each.
  bool fsync = true;
};

// Extracts the package at `archive` into `staging_dir`, which must exist, be a
// directory (not a symlink) and be empty. Everything is created relative to a
// descriptor of `staging_dir` (openat/mkdirat, O_NOFOLLOW on every component,
// O_EXCL on every file): nothing outside it is ever touched. Files get mode 0755
// or 0644 exactly as listed, directories 0755; each file is hashed while it is
// written. On success every file and directory is fsync'ed (unless
// limits.fsync is false) and the manifest is
// returned (manifest.json itself is not written to staging_dir); it still has to
// be checked against the signed catalog entry (check_manifest_matches()).
// Decompression runs on a second thread a few MiB ahead of the writes (see
// PrefetchReader), or inline if no thread can be started.
//
// On any failure staging_dir is left empty. Errors name the entry:
//   Errc::invalid_argument  staging_dir missing, not a directory, or not empty
//   Errc::not_found / io    archive unreadable, or a write failed
//   Errc::malformed         corrupt or truncated stream, manifest.json missing or
//                           not first, manifest invalid JSON, a listed file
//                           missing or out of order
//   Errc::bad_field / unsupported / too_many   manifest fails parse_manifest()
//   Errc::unsafe_entry      unsafe name (absolute, "..", ".", empty component,
//                           backslash, control byte, not UTF-8, too long), link,
//                           device, FIFO, socket, sparse file, special mode bits,
//                           mode not 0644/0755 (or not as listed), duplicate,
//                           unlisted file or directory
//   Errc::too_many          more than max_entries entries
//   Errc::too_large         a file, the total, the expansion ratio or
//                           manifest.json over its bound
//   Errc::length_mismatch   a file's size differs from the manifest
//   Errc::hash_mismatch     a file's SHA-256 differs from the manifest
Result<Manifest> extract_package(const std::filesystem::path& archive,
                                 const std::filesystem::path& staging_dir,
                                 const ExtractLimits& limits = {});

// The same over any reader (fault injection); `archive_size` is the compressed
// size the expansion ratio is measured against.
Result<Manifest> extract_package(ArchiveReader& reader, std::uint64_t archive_size,
                                 const std::filesystem::path& staging_dir,
                                 const ExtractLimits& limits = {});

// Reads and parses only manifest.json (the first entry) of the package at
// `archive`; nothing is written. Errors as extract_package() for that entry.
Result<Manifest> read_package_manifest(const std::filesystem::path& archive,
                                       const ExtractLimits& limits = {});

// True when `path`'s name ends with ".tar.zst" or ".tar.gz".
bool looks_like_package(const std::filesystem::path& path);

}  // namespace catalog::package
