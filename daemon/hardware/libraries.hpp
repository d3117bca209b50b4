// Whether the system's dynamic loader would find a shared library by its SONAME:
// what an EP package's "requires" names (e.g. "libvulkan.so.1"), for
// catalog::MachineInfo::has_library.
//
// A library is present when a file named SONAME (or a symlink that resolves to a
// file) is in one of the loader's directories under `root`: those listed in
// etc/ld.so.conf and the files it includes ("include" lines with glob patterns,
// relative ones from the including file's directory, nested 4 deep at most; 256
// directories at most), then the defaults for the architecture: lib/<triplet>,
// usr/lib/<triplet> (Debian multiarch), lib64, usr/lib64, lib, usr/lib. Neither
// ld.so.cache nor LD_LIBRARY_PATH is read: the daemon judges the machine, not one
// process's environment. Nothing is loaded or executed. ld.so.conf is read again on
// each call, so a library installed later is seen once the provider list is
// rebuilt.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace epbrokerd::hardware {

class LibraryLocator {
 public:
  static constexpr int kMaxIncludeDepth = 4;
  static constexpr std::size_t kMaxDirs = 256;
  static constexpr std::size_t kMaxConfBytes = 64 * 1024;  // per configuration file

  // `root` stands for "/" ("/" on the live system); `arch` as `uname -m` ("" = this
  // machine's).
  explicit LibraryLocator(std::filesystem::path root = "/", std::string arch = {});

  // True when SONAME is found as above; false for a name with '/', ".", ".." or
  // an empty one, which no package may require.
  bool has(const std::string& soname) const;

  // The directories searched, in order, as absolute paths inside the root
  // ("/usr/lib/x86_64-linux-gnu"), without duplicates.
  std::vector<std::string> directories() const;

 private:
  std::filesystem::path root_;
  std::string arch_;
};

}  // namespace epbrokerd::hardware
