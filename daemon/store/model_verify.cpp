// Checks of installed model variants (detail::check_models()): each referenced
// blob hashed once, each tree entry a link of its blob with the right size,
// mode and type; used by verify() and by install_model() (is an installed
// variant intact?).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include "catalog/atomic_file.hpp"
#include "catalog/crypto/hash.hpp"
#include "catalog/text.hpp"
#include "catalog/unique_fd.hpp"
#include "daemon/store/store_impl.hpp"
#include "daemon/store/tree.hpp"

namespace epbrokerd::store::detail {
namespace {

namespace fs = std::filesystem;

// What the check of one blob found.
struct BlobState {
  std::uint64_t size = 0;  // the listed size
  bool present = false;    // lstat'ed as a regular file
  dev_t dev = 0;
  ino_t ino = 0;
  std::string problem;  // "" when intact
};

// SHA-256 of the file at `path` (no link followed); "" with `error` set on failure.
std::string hash_file(const fs::path& path, std::uint64_t& bytes, std::string& error) {
  catalog::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) {
    error = std::string("cannot open: ") + std::strerror(errno);
    return {};
  }
  catalog::crypto::Hasher hasher(catalog::crypto::HashAlgo::sha256);
  std::vector<std::byte> buf(std::size_t{1} << 20);
  while (true) {
    const ssize_t n = ::read(fd.get(), buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error = std::string("cannot read: ") + std::strerror(errno);
      return {};
    }
    if (n == 0) break;
    hasher.update(std::span<const std::byte>(buf.data(), static_cast<std::size_t>(n)));
    bytes += static_cast<std::uint64_t>(n);
  }
  return hasher.finish_hex();
}

void check_blob(const fs::path& path, const std::string& hex, BlobState& b, std::uint64_t& hashed) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    b.problem = errno == ENOENT ? "missing" : std::string("cannot stat: ") + std::strerror(errno);
    return;
  }
  if (!S_ISREG(st.st_mode)) {
    b.problem = "not a regular file";
    return;
  }
  b.present = true;
  b.dev = st.st_dev;
  b.ino = st.st_ino;
  const std::uint32_t mode = st.st_mode & 07777u;
  if (mode != kTreeFileMode) {
    b.problem = "mode " + catalog::mode_text(mode) + ", want " + catalog::mode_text(kTreeFileMode);
    return;
  }
  if (static_cast<std::uint64_t>(st.st_size) != b.size) {
    b.problem = "size " + std::to_string(st.st_size) + ", want " + std::to_string(b.size);
    return;
  }
  std::string error;
  const std::string digest = hash_file(path, hashed, error);
  if (!error.empty()) {
    b.problem = error;
  } else if (digest != hex) {
    b.problem = "sha256 " + digest;
  }
}

// The problems of one tree, given the state of every blob.
std::vector<std::string> check_tree_links(const ModelEntry& e,
                                          const std::map<std::string, BlobState>& blobs) {
  std::vector<std::string> out;
  auto problem = [&](const std::string& rel, const std::string& what) {
    out.push_back((rel.empty() ? std::string(".") : rel) + ": " + what);
  };
  const fs::path& root = e.model.root;
  struct stat st {};
  if (::lstat(root.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    problem("", "not a directory (or missing)");
    return out;
  }
  auto dir_mode = [&](const std::string& rel, std::uint32_t mode) {
    if (mode != kTreeDirMode) {
      problem(rel, "directory mode " + catalog::mode_text(mode) + ", want " +
                       catalog::mode_text(kTreeDirMode));
    }
  };
  dir_mode("", st.st_mode & 07777u);
  std::map<std::string, const catalog::ModelFile*> listed;
  std::set<std::string> dirs;
  for (const auto& f : e.model.files) {
    listed.emplace(f.path, &f);
    for (auto slash = f.path.find('/'); slash != std::string::npos;
         slash = f.path.find('/', slash + 1)) {
      dirs.insert(f.path.substr(0, slash));
    }
  }
  std::set<std::string> seen;
  bool saw_marker = false;
  std::error_code ec;
  auto it = fs::recursive_directory_iterator(root, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const std::string rel = it->path().lexically_relative(root).generic_string();
    if (::lstat(it->path().c_str(), &st) != 0) {
      problem(rel, std::string("cannot stat: ") + std::strerror(errno));
      continue;
    }
    const std::uint32_t mode = st.st_mode & 07777u;
    if (S_ISDIR(st.st_mode)) {
      if (!dirs.contains(rel)) {
        problem(rel, "unexpected directory");
        it.disable_recursion_pending();
      } else {
        dir_mode(rel, mode);
      }
      continue;
    }
    if (!S_ISREG(st.st_mode)) {
      problem(rel, S_ISLNK(st.st_mode) ? "unexpected symlink" : "unexpected special file");
      continue;
    }
    if (mode != kTreeFileMode) {
      problem(rel,
              "mode " + catalog::mode_text(mode) + ", want " + catalog::mode_text(kTreeFileMode));
    }
    if (rel == kModelMarkerName) {
      saw_marker = true;
      auto text = catalog::read_file(it->path(), kMaxModelMarkerBytes);
      auto marker = text ? parse_model_marker(*text) : catalog::Result<ModelMarker>{};
      if (!text || !marker || *marker != e.marker) {
        problem(rel, "differs from what was installed");
      }
      continue;
    }
    const auto f = listed.find(rel);
    if (f == listed.end()) {
      problem(rel, "unexpected file");
      continue;
    }
    seen.insert(rel);
    if (static_cast<std::uint64_t>(st.st_size) != f->second->size) {
      problem(rel,
              "size " + std::to_string(st.st_size) + ", want " + std::to_string(f->second->size));
    }
    const BlobState& b = blobs.at(f->second->sha256);
    if (!b.problem.empty()) problem(rel, "blob " + f->second->sha256 + ": " + b.problem);
    if (b.present && (b.dev != st.st_dev || b.ino != st.st_ino)) {
      problem(rel, "not shared with its blob");
    }
  }
  if (ec) problem("", "cannot read the tree: " + ec.message());
  if (!saw_marker) problem(std::string(kModelMarkerName), "missing");
  for (const auto& [path, file] : listed) {
    if (!seen.contains(path)) problem(path, "missing");
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::optional<ModelCheck> check_models(const std::vector<ModelEntry>& entries,
                                       const fs::path& blobs_dir,
                                       const std::function<bool(std::uint64_t)>& before_blob) {
  ModelCheck out;
  // 1. Each referenced blob once.
  std::map<std::string, BlobState> blobs;
  for (const ModelEntry& e : entries) {
    for (const auto& f : e.model.files) blobs[f.sha256].size = f.size;
  }
  std::uint64_t done = 0;
  for (auto& [hex, b] : blobs) {
    if (before_blob && !before_blob(done)) return std::nullopt;
    check_blob(blobs_dir / hex, hex, b, out.bytes_hashed);
    done += b.size;
  }
  // 2. Each tree against them.
  for (const ModelEntry& e : entries) {
    auto problems = check_tree_links(e, blobs);
    if (!problems.empty()) {
      out.problems[ModelKey{e.model.name, e.model.version, e.model.variant}] = std::move(problems);
    }
  }
  return out;
}

}  // namespace epbrokerd::store::detail
