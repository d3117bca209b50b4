// Publishing models from a directory (epbroker-publish pack-model and add-model):
// a model directory holds one subdirectory per variant, DIR/<variant id>/, whose
// regular files are the variant's files (catalog/model_metadata.hpp).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "catalog/error.hpp"
#include "catalog/model_metadata.hpp"

namespace catalog::package {

// Fills in a model card: `card` is model metadata ({"epbroker": {...}}) whose
// variants need not list their files' sizes and hashes: a variant's "files" is
// either absent (every regular file under DIR/<id>/) or a list of relative paths
// (those files only). Each variant's files become {"path", "size", "sha256"},
// sorted by path (byte order), so the same files and card give the same result;
// the card is then checked with parse_model_metadata().
// Errors: Errc::bad_field for a card without an "epbroker" object with a
// "variants" array of objects with a string "id" and a "files" that is not a
// list of distinct strings (other mistakes are parse_model_metadata()'s);
// Errc::invalid_argument for a variant directory that is missing or not a
// directory (a symlink to one included), a file listed but not in it, a "main"
// that is not among the variant's files, or what describe_directory() refuses
// there (symlinks, special files, unsafe paths, more than kMaxModelFiles files);
// Errc::io / not_found on file errors.
Result<ModelMetadata> describe_model_directory(const std::filesystem::path& dir,
                                               const nlohmann::json& card);

// One distinct file content of a model: its bytes are the target
// model_blob_path(name, sha256).
struct ModelBlob {
  std::string sha256;
  std::uint64_t size = 0;
  std::filesystem::path source;  // the first DIR/<variant>/<path> with this content
};

// Re-hashes every file of every variant of `m` at DIR/<variant id>/<path>
// (regular files reached without symlinks) against m's sizes and hashes, and
// returns the distinct contents, in order of first appearance (variants in
// order, files by path). Errors name the variant and the file:
// Errc::invalid_argument for a symlink or special file on the way,
// Errc::not_found for a missing file, Errc::length_mismatch /
// Errc::hash_mismatch for a file that differs from the card, Errc::io.
Result<std::vector<ModelBlob>> check_model_directory(const std::filesystem::path& dir,
                                                     const ModelMetadata& m);

}  // namespace catalog::package
