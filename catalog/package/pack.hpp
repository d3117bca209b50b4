// Building EP packages (the format is described in catalog/package/extract.hpp).
#pragma once

#include <filesystem>

#include <cstddef>
#include <vector>

#include "catalog/ep_metadata.hpp"
#include "catalog/error.hpp"
#include "catalog/package/manifest.hpp"

namespace catalog::package {

enum class Compression { zstd, gzip };

// Compression settings of pack_directory(). zstd level 9 (no long-distance
// matching, one thread): on the 152 MB OpenVINO EP, `zstd -T1` takes 3.4 s at 9
// (40.5 MB), 4.8 s at 10, 9 s at 12 and 102 s at 19 (36.0 MB), so 9 is where
// more effort stops paying; decompression speed is the same at every level.
// gzip level 6 is zlib's default.
inline constexpr int kZstdLevel = 9;
inline constexpr int kGzipLevel = 6;

// Packs every regular file under `dir` into a package at `output` with `meta` as
// the manifest's EP metadata. Deterministic: the same files and metadata give
// byte-identical output (pax restricted format; manifest.json first, then files
// sorted by path in byte order; no directory entries; mtime 0, uid/gid 0, no
// user/group names, no extended attributes; mode 0755 when the owner may execute
// the source file, else 0644; gzip without a timestamp). Written to a temporary
// file beside `output`, fsync'ed and renamed over it.
//
// Errors: Errc::invalid_argument for a `dir` that is not a directory or holds a
// symlink, a special file, a manifest.json, an unsafe or over-long path (see
// path_problem()), or more than kMaxManifestFiles files; for a `meta.library`
// that is not one of the files; for an `output` inside `dir`. Errc::bad_field
// when `meta` is not valid EP metadata. Errc::io / not_found on file errors, or
// when a file changes while it is packed.
Result<void> pack_directory(const std::filesystem::path& dir, const EpMetadata& meta,
                            const std::filesystem::path& output,
                            Compression compression = Compression::zstd);

// Every regular file under `dir` (which must be a directory, not a symlink to
// one) with its size, SHA-256 and mode, sorted by path in byte order, with the
// refusals of pack_directory() (Errc::invalid_argument for a symlink, a special
// file, an unsafe or over-long path, more than `max_files` files) except that a
// manifest.json is an ordinary file here. Used for model variants
// (catalog/package/model_pack.hpp). Errc::io / not_found on file errors.
Result<std::vector<FileEntry>> describe_directory(const std::filesystem::path& dir,
                                                  std::size_t max_files);

}  // namespace catalog::package
