// Models at open() (step 4b, store.hpp): every _models/<name>/<version>/<variant>
// with a valid marker is indexed; other trees, junk, and blobs no valid marker
// references are discarded (a crash leaves at most those behind).
#include <sys/stat.h>

#include <algorithm>
#include <set>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "catalog/atomic_file.hpp"
#include "daemon/store/model_store.hpp"
#include "daemon/store/store.hpp"
#include "daemon/store/store_impl.hpp"

namespace epbrokerd::store {
namespace {

namespace fs = std::filesystem;
using catalog::Errc;
using catalog::fail;
using catalog::Result;
using detail::ModelEntry;
using detail::ModelKey;

enum class Kind { missing, directory, regular, other };

Kind kind_of(const fs::path& p) {
  struct stat st {};
  if (::lstat(p.c_str(), &st) != 0) return Kind::missing;
  if (S_ISDIR(st.st_mode)) return Kind::directory;
  if (S_ISREG(st.st_mode)) return Kind::regular;
  return Kind::other;
}

// The entries of directory `dir`, sorted. Errors: Errc::io.
Result<std::vector<fs::path>> entries_of(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    out.push_back(it->path());
  }
  if (ec) return fail(Errc::io, "read " + dir.string() + ": " + ec.message());
  std::sort(out.begin(), out.end());
  return out;
}

bool is_empty_dir(const fs::path& dir) {
  std::error_code ec;
  return fs::is_empty(dir, ec) && !ec;
}

// Why `tree` is not a committed variant `key`, or nullopt (then `marker` is its
// marker).
std::optional<std::string> model_tree_problem(const ModelKey& key, const fs::path& tree,
                                              ModelMarker& marker) {
  if (kind_of(tree) != Kind::directory) return "not a directory";
  const fs::path path = tree / kModelMarkerName;
  if (kind_of(path) != Kind::regular) return "no model marker (missing or not a regular file)";
  auto text = catalog::read_file(path, kMaxModelMarkerBytes);
  if (!text) return "unreadable model marker: " + text.error().message;
  auto parsed = parse_model_marker(*text);
  if (!parsed) return "invalid model marker: " + parsed.error().message;
  const auto& m = parsed->model.metadata;
  const auto& [name, version, variant] = key;
  if (m.name != name || m.version.text != version || parsed->model.variant != variant) {
    return "model marker names " + m.name + " " + m.version.text + " " + parsed->model.variant +
           ", not " + name + " " + version + " " + variant;
  }
  if (!is_storable_name(name)) return "model name cannot be stored";
  marker = std::move(*parsed);
  return std::nullopt;
}

}  // namespace

Result<void> Store::Impl::rebuild_models(bool repair) {
  auto drop = [&](const fs::path& p, std::string why) -> Result<void> {
    if (!repair) return {};
    return discard(p, std::move(why));
  };
  // 1. The trees: _models/<name>/<version>/<variant>.
  const fs::path root = models_dir();
  const Kind root_kind = kind_of(root);
  if (root_kind == Kind::directory) {
    auto names = entries_of(root);
    if (!names) return std::unexpected(std::move(names.error()));
    for (const fs::path& name_dir : *names) {
      const std::string name = name_dir.filename().string();
      if (!is_storable_name(name) || kind_of(name_dir) != Kind::directory) {
        if (auto ok = drop(name_dir, "not a model directory"); !ok) return ok;
        continue;
      }
      auto versions = entries_of(name_dir);
      if (!versions) return std::unexpected(std::move(versions.error()));
      for (const fs::path& version_dir : *versions) {
        if (kind_of(version_dir) != Kind::directory) {
          if (auto ok = drop(version_dir, "not a directory"); !ok) return ok;
          continue;
        }
        auto variants = entries_of(version_dir);
        if (!variants) return std::unexpected(std::move(variants.error()));
        for (const fs::path& tree : *variants) {
          const ModelKey key{name, version_dir.filename().string(), tree.filename().string()};
          ModelMarker marker;
          if (auto problem = model_tree_problem(key, tree, marker)) {
            if (auto ok = drop(tree, *problem); !ok) return ok;
            continue;
          }
          models[key] =
              ModelEntry{detail::installed_model(marker, tree), std::move(marker), next_serial++};
        }
        if (repair && is_empty_dir(version_dir)) {
          if (auto ok = drop(version_dir, "empty model version directory"); !ok) return ok;
        }
      }
      if (repair && is_empty_dir(name_dir)) {
        if (auto ok = drop(name_dir, "empty model directory"); !ok) return ok;
      }
    }
    if (repair) {
      if (auto ok = catalog::fsync_dir(root); !ok) return ok;
    }
  } else if (root_kind != Kind::missing) {
    if (auto ok = drop(root, "not a directory"); !ok) return ok;
  }
  if (!repair) return {};

  // 2. The blobs: only _blobs/sha256/<hex> that a valid marker references.
  std::set<std::string> referenced;
  for (const auto& [key, e] : models) {
    for (const auto& f : e.model.files) referenced.insert(f.sha256);
  }
  const fs::path blobs_root = store / kBlobsDirName;
  const Kind blobs_kind = kind_of(blobs_root);
  if (blobs_kind == Kind::missing) return {};
  if (blobs_kind != Kind::directory) return drop(blobs_root, "not a directory");
  auto tops = entries_of(blobs_root);
  if (!tops) return std::unexpected(std::move(tops.error()));
  for (const fs::path& top : *tops) {
    if (top.filename() != kBlobHashDirName || kind_of(top) != Kind::directory) {
      if (auto ok = drop(top, "not a blob directory"); !ok) return ok;
    }
  }
  const fs::path dir = blobs_dir();
  if (kind_of(dir) != Kind::directory) return {};
  auto blobs = entries_of(dir);
  if (!blobs) return std::unexpected(std::move(blobs.error()));
  bool dropped = false;
  for (const fs::path& blob : *blobs) {
    const std::string hex = blob.filename().string();
    std::string why;
    if (!is_blob_name(hex) || kind_of(blob) != Kind::regular) {
      why = "not a blob";
    } else if (!referenced.contains(hex)) {
      why = "blob no model references";
    } else {
      continue;
    }
    if (auto ok = drop(blob, std::move(why)); !ok) return ok;
    dropped = true;
  }
  if (dropped) return catalog::fsync_dir(dir);
  return {};
}

}  // namespace epbrokerd::store
