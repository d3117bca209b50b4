// What the store records about an installed EP package, and the two files that
// record it:
//
// - `<tree>/.epbroker-manifest.json` (the saved manifest), written into every tree
//   before it is renamed into the store, so it is the commit marker and the source
//   of truth for what the tree must hold:
//     {"installed_at": <unix seconds>, "manifest": {<the package's manifest.json>},
//      "store_format": 1}
// - `<state>/store/index.json`, a cache rebuilt from the saved manifests; nothing
//   in the store reads it back (it is for people and tools):
//     {"index_version": 1, "packages": [{"name", "version", "installed_at", "size",
//      "manifest"}, ...]}   (sorted by name, then version text)
//
// Both are written deterministically (keys sorted, indented by 2, final newline).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/error.hpp"
#include "catalog/package/manifest.hpp"

namespace epbrokerd::store {

// Name of the saved manifest at the root of every installed tree. A package may
// not ship a file of this name at its top level.
inline constexpr std::string_view kSavedManifestName = ".epbroker-manifest.json";
// Name of the index in <state>/store/ (so no package may have this name).
inline constexpr std::string_view kIndexFileName = "index.json";
inline constexpr int kStoreFormat = 1;
inline constexpr int kIndexVersion = 1;

// One installed package version.
struct InstalledPackage {
  catalog::package::Manifest manifest;    // as saved at install (== the package's)
  std::filesystem::path root;             // absolute: <state>/store/<name>/<version>
  std::chrono::sys_seconds installed_at;  // when it was committed

  const std::string& name() const { return manifest.ep.name; }
  // The exact version text as published (also the tree's directory name).
  const std::string& version() const { return manifest.ep.version.text; }
  // Absolute path of the EP library (root / manifest.ep.library).
  std::filesystem::path library_path() const;
  // Sum of the payload file sizes.
  std::uint64_t size_bytes() const;

  friend bool operator==(const InstalledPackage&, const InstalledPackage&) = default;
};

// The content of a saved manifest.
struct SavedManifest {
  catalog::package::Manifest manifest;
  std::chrono::sys_seconds installed_at;

  friend bool operator==(const SavedManifest&, const SavedManifest&) = default;
};

// Deterministic text of a saved manifest.
std::string to_text(const SavedManifest& saved);

// Parses a saved manifest. Errors: Errc::too_large above 2 MiB, Errc::malformed
// when not JSON, Errc::unsupported for another store_format, Errc::bad_field for
// a missing, unknown or mistyped key, or what parse_manifest() says about
// "manifest". Never throws.
catalog::Result<SavedManifest> parse_saved_manifest(std::string_view text);

// Largest saved manifest parse_saved_manifest() accepts.
inline constexpr std::size_t kMaxSavedManifestBytes = std::size_t{2} << 20;

// Deterministic text of index.json for `packages` (in any order).
std::string index_text(std::vector<InstalledPackage> packages);

// True when `name` can be a package directory in the store: a valid package
// name (see catalog/ep_metadata.hpp) other than kIndexFileName.
bool is_storable_name(std::string_view name);

}  // namespace epbrokerd::store
