// hardware::LibraryLocator: SONAMEs found in the loader's directories under a
// fake root (ld.so.conf with includes, multiarch defaults), never by a path.
#include "daemon/hardware/libraries.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "tests/support/temp_dir.hpp"

namespace epbrokerd::hardware {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;

class LibraryLocatorTest : public ::testing::Test {
 protected:
  tests::support::TempDir root_;

  void write(const std::string& rel, const std::string& text =
                                         "\x7f"
                                         "ELF") {
    const fs::path p = root_.path() / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
  }
  LibraryLocator locator(std::string arch = "x86_64") const {
    return LibraryLocator(root_.path(), std::move(arch));
  }
};

TEST_F(LibraryLocatorTest, DefaultsAreMultiarchThenLib64ThenLib) {
  EXPECT_THAT(locator().directories(),
              ElementsAre("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64",
                          "/usr/lib64", "/lib", "/usr/lib"));
  EXPECT_EQ(locator("aarch64").directories().front(), "/lib/aarch64-linux-gnu");
  EXPECT_FALSE(locator().has("libvulkan.so.1"));
  write("usr/lib/x86_64-linux-gnu/libvulkan.so.1.3.239");
  // The SONAME link the loader follows, relative as Debian ships it.
  fs::create_symlink("libvulkan.so.1.3.239",
                     root_.path() / "usr/lib/x86_64-linux-gnu/libvulkan.so.1");
  EXPECT_TRUE(locator().has("libvulkan.so.1"));
  EXPECT_FALSE(locator("aarch64").has("libvulkan.so.1"));  // another multiarch directory
}

TEST_F(LibraryLocatorTest, LdSoConfAndItsIncludesComeFirst) {
  write("etc/ld.so.conf",
        "# comment\ninclude /etc/ld.so.conf.d/*.conf\n/opt/top/lib  # trailing\n");
  write("etc/ld.so.conf.d/b-nvidia.conf", "/usr/local/nvidia/lib64\ninclude nested/*.conf\n");
  write("etc/ld.so.conf.d/a-local.conf", "/usr/local/lib/\n\n/usr/local/lib\n");
  write("etc/ld.so.conf.d/nested/x.conf", "/opt/nested\n");
  write("etc/ld.so.conf.d/readme.txt", "/not/included\n");
  EXPECT_THAT(locator().directories(),
              ElementsAre("/usr/local/lib", "/usr/local/nvidia/lib64", "/opt/nested",
                          "/opt/top/lib", "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
                          "/lib64", "/usr/lib64", "/lib", "/usr/lib"));
  write("usr/local/nvidia/lib64/libcuda.so.1");
  write("opt/nested/libfoo.so.2");
  write("not/included/libbar.so.1");
  EXPECT_TRUE(locator().has("libcuda.so.1"));
  EXPECT_TRUE(locator().has("libfoo.so.2"));
  EXPECT_FALSE(locator().has("libbar.so.1"));
}

TEST_F(LibraryLocatorTest, IncludeLoopsAndDirectoriesAreBounded) {
  write("etc/ld.so.conf", "include /etc/ld.so.conf\n/opt/a\n");
  EXPECT_EQ(locator().directories().front(), "/opt/a");  // the loop ended, the line counted
  std::string many;
  for (int i = 0; i < 1000; ++i) many += "/opt/d" + std::to_string(i) + "\n";
  write("etc/ld.so.conf", many);
  EXPECT_EQ(locator().directories().size(), LibraryLocator::kMaxDirs);
}

TEST_F(LibraryLocatorTest, NamesThatAreNotSonamesAreNeverFound) {
  write("usr/lib/libok.so.1");
  write("etc/passwd", "root:x:0:0");
  EXPECT_TRUE(locator().has("libok.so.1"));
  for (const char* bad : {"", ".", "..", "../../etc/passwd", "/etc/passwd", "x/libok.so.1"}) {
    EXPECT_FALSE(locator().has(bad)) << bad;
  }
  fs::create_directories(root_.path() / "usr/lib/libdir.so.1");  // a directory is no library
  EXPECT_FALSE(locator().has("libdir.so.1"));
}

TEST(LibraryLocatorLive, FindsTheCLibraryOnThisMachine) {
  const LibraryLocator live;
  EXPECT_TRUE(live.has("libc.so.6"));
  EXPECT_FALSE(live.has("libepbroker-no-such-library.so.9"));
}

}  // namespace
}  // namespace epbrokerd::hardware
