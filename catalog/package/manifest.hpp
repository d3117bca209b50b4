// The manifest of an EP package: manifest.json, the first entry of every package
// archive (see catalog/package/extract.hpp for the archive format).
//
//   {"manifest_version": 1,
//    "epbroker": {<the EP metadata object, as custom["epbroker"] of a catalog target>},
//    "files": [{"path": "lib/libx.so", "size": 123, "sha256": "<64 hex>", "mode": 493}, ...]}
//
// Every payload file is listed exactly once, sorted by path (byte order);
// manifest.json itself is not listed; mode is 493 (0755) or 420 (0644); the EP
// `library` is one of the files. Parsing is strict: unknown keys, wrong types,
// unsafe paths and duplicate JSON keys are errors that name the field.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "catalog/ep_metadata.hpp"
#include "catalog/error.hpp"

namespace catalog::package {

inline constexpr int kManifestVersion = 1;
inline constexpr std::string_view kManifestName = "manifest.json";
// parse_manifest() refuses larger text (Errc::too_large).
inline constexpr std::size_t kMaxManifestBytes = std::size_t{1} << 20;
// At most this many files in a manifest (Errc::too_many).
inline constexpr std::size_t kMaxManifestFiles = 10'000;
// Longest payload path, in bytes.
inline constexpr std::size_t kMaxPackagePathBytes = 1024;
inline constexpr std::uint32_t kExecutableMode = 0755;  // JSON 493
inline constexpr std::uint32_t kRegularMode = 0644;     // JSON 420

// One payload file.
struct FileEntry {
  std::string path;         // relative, '/'-separated, safe (see path_problem())
  std::uint64_t size = 0;   // bytes
  std::string sha256;       // 64 lower-case hex digits
  bool executable = false;  // mode 0755 (true) or 0644 (false)

  friend bool operator==(const FileEntry&, const FileEntry&) = default;
};

struct Manifest {
  EpMetadata ep;                 // the "epbroker" object
  std::vector<FileEntry> files;  // sorted by path, unique

  friend bool operator==(const Manifest&, const Manifest&) = default;
};

// Why `path` is not a safe relative path for a package file, or std::nullopt when
// it is. Safe: 1..max_bytes bytes of well-formed UTF-8 with no control characters
// (C0, DEL, C1), no backslash, not absolute, and no empty, "." or ".."
// '/'-separated component (so no leading, trailing or doubled '/').
std::optional<std::string> path_problem(std::string_view path,
                                        std::size_t max_bytes = kMaxPackagePathBytes);

// Parses manifest.json text.
// Errors: Errc::too_large above kMaxManifestBytes; Errc::malformed when the text is
// not JSON (or has a duplicate object key); Errc::unsupported for a
// manifest_version other than 1; Errc::too_many above kMaxManifestFiles files;
// otherwise Errc::bad_field (or the error of parse_ep_metadata() for "epbroker")
// with a message starting with the field path, e.g. "files[2].path: '..' path
// component". Never throws.
Result<Manifest> parse_manifest(std::string_view text);

// The JSON form of `m`. For any m returned by parse_manifest(),
// parse_manifest(to_json(m).dump()) == m. Does not validate `m`.
nlohmann::json to_json(const Manifest& m);

// The bytes pack_directory() writes as manifest.json: to_json(m) indented by 2
// with keys sorted, plus a final newline (deterministic).
std::string to_text(const Manifest& m);

// An installer refuses a package whose manifest disagrees with its signed catalog
// entry: every field of the EP metadata (name, version text, ep_names, vendor,
// arch, ort_min text, library, supports, requires, description) must be equal.
// Errors: Errc::manifest_mismatch naming the first differing field and both values.
Result<void> check_manifest_matches(const Manifest& m, const EpMetadata& signed_meta);

}  // namespace catalog::package
