// RootedFs: symlinks resolved inside the root, bounded reads, no blocking.
#include "daemon/hardware/rooted_fs.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/support/temp_dir.hpp"

namespace epbrokerd::hardware {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using tests::support::TempDir;
using tests::support::write_file;

class RootedFsTest : public ::testing::Test {
 protected:
  RootedFsTest() : root_(tmp_ / "root"), fs_(root_) {
    write_file(root_ / "devices/pci0000:00/0000:00:02.0/vendor", "0x8086\n");
    write_file(tmp_ / "secret", "0x10de\n");
  }

  void link(const std::string& rel, const std::string& target) const {
    fs::create_directories((root_ / rel).parent_path());
    fs::create_symlink(target, root_ / rel);
  }

  TempDir tmp_;
  fs::path root_;
  RootedFs fs_;
};

TEST_F(RootedFsTest, ResolvesRelativeLinksInsideTheRoot) {
  link("bus/pci/devices/0000:00:02.0", "../../../devices/pci0000:00/0000:00:02.0");
  link("devices/pci0000:00/0000:00:02.0/drm/card0/device", "../../../0000:00:02.0");
  link("class/drm/card0", "../../devices/pci0000:00/0000:00:02.0/drm/card0");
  EXPECT_EQ(fs_.resolve("class/drm/card0/device"), fs::path("devices/pci0000:00/0000:00:02.0"));
  EXPECT_EQ(fs_.resolve("/class/drm/card0/device/vendor"),
            fs::path("devices/pci0000:00/0000:00:02.0/vendor"));
  EXPECT_EQ(fs_.resolve("bus/pci/devices/0000:00:02.0/../0000:00:02.0/./vendor"),
            fs::path("devices/pci0000:00/0000:00:02.0/vendor"));
  // ".." after a link is the parent of the link's target.
  EXPECT_EQ(fs_.resolve("class/drm/card0/.."), fs::path("devices/pci0000:00/0000:00:02.0/drm"));
  EXPECT_EQ(fs_.resolve(""), fs::path(""));
  EXPECT_EQ(fs_.read("class/drm/card0/device/vendor", 64), "0x8086\n");
  EXPECT_EQ(fs_.resolve("class/drm/card1"), std::nullopt);
}

TEST_F(RootedFsTest, NeverLeavesTheRoot) {
  link("up", "../secret");
  link("deep/up", "../../../secret");
  link("abs", (tmp_ / "secret").string());
  link("dir-out", "..");
  ASSERT_TRUE(fs::exists(root_ / "up"));  // the OS would follow them out
  ASSERT_TRUE(fs::exists(root_ / "abs"));
  for (const char* rel :
       {"up", "deep/up", "abs", "dir-out/secret", "../secret", "..", "devices/../../secret"}) {
    EXPECT_EQ(fs_.resolve(rel), std::nullopt) << rel;
    EXPECT_EQ(fs_.read(rel, 64), std::nullopt) << rel;
  }
}

TEST_F(RootedFsTest, LinkLoopsEnd) {
  link("self", "self");
  link("a", "b/x");
  link("b", "a/y");
  EXPECT_EQ(fs_.resolve("self"), std::nullopt);
  EXPECT_EQ(fs_.resolve("a"), std::nullopt);
  // A chain of exactly kMaxLinks links resolves; one more does not.
  write_file(root_ / "end", "x");
  link("l0", "end");
  for (int i = 1; i <= RootedFs::kMaxLinks; ++i) {
    link("l" + std::to_string(i), "l" + std::to_string(i - 1));
  }
  EXPECT_EQ(fs_.resolve("l" + std::to_string(RootedFs::kMaxLinks - 1)), fs::path("end"));
  EXPECT_EQ(fs_.resolve("l" + std::to_string(RootedFs::kMaxLinks)), std::nullopt);
}

TEST_F(RootedFsTest, ReadsAreBounded) {
  write_file(root_ / "page", std::string(4096, 'a'));
  EXPECT_EQ(fs_.read("page", 4096)->size(), 4096U);
  EXPECT_EQ(fs_.read("page", 4095), std::nullopt);
  EXPECT_EQ(fs_.read("page", 100, RootedFs::Oversize::truncate), std::string(100, 'a'));
  EXPECT_EQ(fs_.read("page", 0, RootedFs::Oversize::truncate), "");
  write_file(root_ / "empty", "");
  EXPECT_EQ(fs_.read("empty", 0), "");
  // A sparse 4 GiB file is not read whole.
  write_file(root_ / "huge", "");
  fs::resize_file(root_ / "huge", 4ULL << 30);
  EXPECT_EQ(fs_.read("huge", 1 << 20), std::nullopt);
  EXPECT_EQ(fs_.read("huge", 1 << 20, RootedFs::Oversize::truncate)->size(), 1U << 20);
}

TEST_F(RootedFsTest, OnlyRegularFilesAreRead) {
  EXPECT_EQ(fs_.read("devices", 64), std::nullopt);  // a directory
  EXPECT_EQ(fs_.read("missing", 64), std::nullopt);
  ASSERT_EQ(::mkfifo((root_ / "fifo").c_str(), 0600), 0);
  EXPECT_EQ(fs_.read("fifo", 64), std::nullopt);  // returns at once, no writer needed
  write_file(root_ / "unreadable", "x");
  fs::permissions(root_ / "unreadable", fs::perms::none);
  if (::geteuid() != 0) {
    EXPECT_EQ(fs_.read("unreadable", 64), std::nullopt);
  }
}

TEST_F(RootedFsTest, Lists) {
  write_file(root_ / "class/drm/version", "drm\n");
  link("class/drm/card1", "../../devices/pci0000:00/0000:00:02.0");
  link("class/drm/card0", "../../devices/pci0000:00/0000:00:02.0");
  link("class/drm/renderD128", "missing");
  EXPECT_THAT(fs_.list("class/drm"), ElementsAre("card0", "card1", "renderD128", "version"));
  EXPECT_EQ(fs_.list("class/drm", 2).size(), 2U);
  EXPECT_THAT(fs_.list("class/missing"), IsEmpty());
  EXPECT_THAT(fs_.list("class/drm/version"), IsEmpty());
  link("outside", "..");
  EXPECT_THAT(fs_.list("outside"), IsEmpty());
}

TEST_F(RootedFsTest, LinkNames) {
  const std::string dev = "devices/pci0000:00/0000:00:02.0";
  link(dev + "/driver", "../../../bus/pci/drivers/i915");  // target need not exist
  EXPECT_EQ(fs_.link_name(dev + "/driver"), "i915");
  link(dev + "/up", "../../../../bus/pci/drivers/i915");  // one level too many
  EXPECT_EQ(fs_.link_name(dev + "/up"), std::nullopt);
  link(dev + "/abs", "/sys/bus/pci/drivers/i915");
  EXPECT_EQ(fs_.link_name(dev + "/abs"), std::nullopt);
  link(dev + "/dots", "../..");
  EXPECT_EQ(fs_.link_name(dev + "/dots"), std::nullopt);
  EXPECT_EQ(fs_.link_name(dev + "/vendor"), std::nullopt);  // not a link
  EXPECT_EQ(fs_.link_name(dev + "/missing"), std::nullopt);
  // The link's directory is resolved inside the root first.
  link("bus/pci/devices/0000:00:02.0", "../../../" + dev);
  EXPECT_EQ(fs_.link_name("bus/pci/devices/0000:00:02.0/driver"), "i915");
}

}  // namespace
}  // namespace epbrokerd::hardware
