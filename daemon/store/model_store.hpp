// What the store records about installed ML models (catalog/model_metadata.hpp),
// and the layout it keeps them in. Included by store.hpp; the operations are
// Store members (store.hpp, "Models").
//
// Layout under <state>/store (names starting with '_' are never package names,
// so these sit beside the package trees; open() knows them):
//
//   _blobs/sha256/<hex>              one file per content (0444), named by its
//                                    SHA-256; every variant file of that content
//                                    is a hard link to it (one inode)
//   _models/<name>/<version>/<id>/   one installed variant: its files (hard links
//                                    to their blobs, 0444), directories 0755, and
//                                    .epbroker-model.json (0444), the commit
//                                    marker, written last before the tree is
//                                    renamed in:
//     {"installed_at": <unix seconds>, "metadata": {"epbroker": {...}},
//      "remote": "...", "store_format": 1, "target": "...", "variant": "<id>"}
//
// A blob belongs to the store while some valid marker lists its hash; which
// blobs are referenced is always computed from the markers (the index), never
// from st_nlink. A blob no marker references is deleted (remove_model(), and
// open() after a crash).
//
// A damaged blob (its bytes changed in place) is never rewritten: repair
// (Store::replace_model_blobs()) links a fresh verified copy over every tree
// path of that content, then over the blob, so that processes that mapped
// the old file keep it.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/error.hpp"
#include "catalog/model_metadata.hpp"

namespace epbrokerd::store {

// Directory names under store/ (not package names: they start with '_').
inline constexpr std::string_view kBlobsDirName = "_blobs";
inline constexpr std::string_view kModelsDirName = "_models";
// The hash directory under _blobs/.
inline constexpr std::string_view kBlobHashDirName = "sha256";
// The commit marker at the root of every installed variant. A variant may not
// ship a file of this name at its top level.
inline constexpr std::string_view kModelMarkerName = ".epbroker-model.json";
inline constexpr int kModelStoreFormat = 1;
inline constexpr std::size_t kMaxModelMarkerBytes = std::size_t{2} << 20;

// What install_model() installs: one variant of a signed model, and where it
// came from (recorded in the marker, for listings and repair).
struct SignedModel {
  catalog::ModelMetadata metadata;  // as verified against the signed targets
  std::string variant;              // the id of one of metadata.variants
  std::string remote;               // the remote it came from (free text)
  std::string target;               // the TUF target path of the model card

  friend bool operator==(const SignedModel&, const SignedModel&) = default;
};

// One installed model variant.
struct InstalledModel {
  std::string name;
  std::string version;  // exact version text
  std::string variant;  // variant id
  catalog::ModelMetadata metadata;
  std::filesystem::path root;  // absolute: <state>/store/_models/<name>/<version>/<variant>
  std::filesystem::path main;  // absolute: root / the variant's main file
  std::vector<catalog::ModelFile> files;  // the variant's files (relative paths)
  std::chrono::sys_seconds installed_at;
  std::string remote;
  std::string target;

  // Sum of the file sizes (logical bytes).
  std::uint64_t size_bytes() const;

  friend bool operator==(const InstalledModel&, const InstalledModel&) = default;
};

// Bytes the installed models take: logical (every variant file counted, as if
// each were a copy) and physical (each referenced blob counted once).
struct ModelUsage {
  std::uint64_t logical_bytes = 0;
  std::uint64_t physical_bytes = 0;
};

// One installed variant that verify() found damaged.
struct DamagedModel {
  InstalledModel model;
  std::vector<std::string> problems;  // "<relative path>: <what>", sorted
};

// The content of a marker.
struct ModelMarker {
  SignedModel model;
  std::chrono::sys_seconds installed_at;

  friend bool operator==(const ModelMarker&, const ModelMarker&) = default;
};

// Deterministic text of a marker (keys sorted, indented by 2, final newline).
std::string to_text(const ModelMarker& marker);

// Parses a marker. Errors: Errc::too_large above kMaxModelMarkerBytes,
// Errc::malformed when not JSON, Errc::unsupported for another store_format,
// Errc::bad_field for a missing, unknown or mistyped key, what
// parse_model_metadata() says about "metadata", or a variant id the metadata
// lacks. Never throws.
catalog::Result<ModelMarker> parse_model_marker(std::string_view text);

// The variant `id` of `m`, or nullptr.
const catalog::ModelVariant* find_variant(const catalog::ModelMetadata& m, std::string_view id);

// Whether `hex` is 64 lower-case hex digits (a blob's file name).
bool is_blob_name(std::string_view hex);

}  // namespace epbrokerd::store
