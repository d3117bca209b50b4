// libFuzzer target: the package archive walker and safe extractor
// (catalog/package: libarchive reader, prefetch thread, extract_package).
//
// The input is the package file (tar, tar.zst or tar.gz) as it would arrive
// from a remote. It is put in a memfd and extracted through its /proc/self/fd
// path, as a package file is, into <sandbox>/up2/up1/staging, where the sandbox
// is this process's private directory; read_package_manifest() reads it too.
// Checked after every input (each a finding if broken):
//   - the sandbox holds nothing but that path (nothing escaped staging, by
//     "..", links or otherwise, into the three levels above it);
//   - on failure, staging is empty (extract.hpp's contract);
//   - on success, staging holds exactly the manifest's files (sizes, modes
//     0644/0755 as listed) and their parent directories (0755), nothing else,
//     and read_package_manifest() returned the same manifest.
// Staging is emptied after every input. Byte bounds are lowered (16 MiB per
// file and in all) and fsync is off, so that one input costs milliseconds.
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>

#include "catalog/package/extract.hpp"
#include "catalog/unique_fd.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

namespace fs = std::filesystem;
namespace pkg = catalog::package;
using epbroker_fuzz::finding;

// Everything under `root`, not following links: relative path -> st_mode.
std::map<std::string, mode_t> walk(const fs::path& root) {
  std::map<std::string, mode_t> out;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator();
       ++it) {
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0) finding("lstat " + it->path().string());
    // (A prefix cut, not fs::relative: that resolves links with a readlink per
    // component, most of this harness's system calls.)
    out.emplace(it->path().string().substr(root.string().size() + 1), st.st_mode);
  }
  return out;
}

void check_tree(const fs::path& staging, const pkg::Manifest& m) {
  std::map<std::string, mode_t> want_files;
  std::map<std::string, bool> want_dirs;
  for (const auto& f : m.files) {
    want_files.emplace(f.path, S_IFREG | (f.executable ? 0755 : 0644));
    for (fs::path p = fs::path(f.path).parent_path(); !p.empty(); p = p.parent_path()) {
      want_dirs.emplace(p.string(), true);
    }
  }
  for (const auto& [path, mode] : walk(staging)) {
    if (S_ISDIR(mode)) {
      if (!want_dirs.contains(path) || (mode & 07777) != 0755) {
        finding("extracted directory not needed by the manifest or not 0755: " + path);
      }
      continue;
    }
    auto it = want_files.find(path);
    if (it == want_files.end() || it->second != mode) {
      finding("extracted entry not in the manifest or with another type/mode: " + path);
    }
    want_files.erase(it);
  }
  if (!want_files.empty())
    finding("manifest file missing after success: " + want_files.begin()->first);
  for (const auto& f : m.files) {
    if (fs::file_size(staging / f.path) != f.size) finding("size differs: " + f.path);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const fs::path sandbox = epbroker_fuzz::process_temp_dir();
  static const fs::path staging = sandbox / "up2/up1/staging";
  static const pkg::ExtractLimits limits = [] {
    pkg::ExtractLimits l;
    l.max_file_bytes = std::uint64_t{16} << 20;
    l.max_total_bytes = std::uint64_t{16} << 20;
    l.fsync = false;
    return l;
  }();
  fs::create_directories(staging);

  const catalog::UniqueFd mem(::memfd_create("fuzz-package", MFD_CLOEXEC));
  if (!mem.valid()) finding("memfd_create failed");
  for (std::size_t done = 0; done < size;) {
    const ssize_t n = ::write(mem.get(), data + done, size - done);
    if (n <= 0) finding("write to memfd failed");
    done += static_cast<std::size_t>(n);
  }
  const fs::path package = "/proc/self/fd/" + std::to_string(mem.get());

  auto manifest = pkg::read_package_manifest(package, limits);
  auto extracted = pkg::extract_package(package, staging, limits);

  if (epbroker_fuzz::verbose()) {
    std::fprintf(stderr, "extract: %s\n", extracted ? "ok" : extracted.error().message.c_str());
  }
  const auto sandbox_entries = walk(sandbox);
  for (const auto& [path, mode] : sandbox_entries) {
    if (path != "up2" && path != "up2/up1" && path != "up2/up1/staging" &&
        !path.starts_with("up2/up1/staging/")) {
      finding("written outside staging: " + path);
    }
  }
  if (!extracted) {
    if (sandbox_entries.size() != 3) {
      finding("staging not empty after: " + extracted.error().message);
    }
  } else {
    check_tree(staging, *extracted);
    if (!manifest || !(*manifest == *extracted)) {
      finding("read_package_manifest disagrees with extract_package");
    }
  }
  fs::remove_all(staging);
  return 0;
}
