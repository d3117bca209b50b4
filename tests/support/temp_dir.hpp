// A temporary directory removed with everything in it when the object dies.
#pragma once

#include <filesystem>
#include <string>

namespace tests::support {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& rel) const { return path_ / rel; }

 private:
  std::filesystem::path path_;
};

// Reads a whole file; fails the calling test (ADD_FAILURE) and returns "" if absent.
std::string read_file(const std::filesystem::path& p);
// Writes `bytes` to `p`, creating parent directories.
void write_file(const std::filesystem::path& p, const std::string& bytes);

}  // namespace tests::support
