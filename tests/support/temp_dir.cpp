#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <sstream>
#include <system_error>

namespace tests::support {

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "epbroker-test-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) throw std::system_error(errno, std::generic_category());
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) {
    ADD_FAILURE() << "cannot read " << p;
    return {};
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const std::filesystem::path& p, const std::string& bytes) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace tests::support
