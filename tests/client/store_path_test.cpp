// libepbroker loads only files of the store it trusts (client/src/store_path.hpp):
// what a compromised daemon could answer RequestSession with, refused.
#include "client/src/store_path.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>

#include "tests/support/temp_dir.hpp"

namespace epbroker::detail {
namespace {

namespace fs = std::filesystem;

class StorePathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = tmp_ / "store";
    lib_ = store_ / "test-ep/1.0.0/lib/libtest.so";
    fs::create_directories(lib_.parent_path());
    tests::support::write_file(lib_, "elf");
    ::chmod(lib_.c_str(), 0444);
    for (fs::path d = lib_.parent_path(); d != tmp_.path(); d = d.parent_path()) {
      ::chmod(d.c_str(), 0755);
    }
  }
  std::string refuse(const fs::path& p) const {
    return refuse_library_path(p.string(), store_.string());
  }

  tests::support::TempDir tmp_;
  fs::path store_;
  fs::path lib_;
};

TEST_F(StorePathTest, AFileOfTheStoreIsLoaded) { EXPECT_EQ(refuse(lib_), ""); }

TEST_F(StorePathTest, APathOutsideTheStoreIsRefused) {
  tests::support::write_file(tmp_ / "evil.so", "evil");
  EXPECT_NE(refuse(tmp_ / "evil.so").find("outside the store"), std::string::npos);
  // "..": lexically under the store, really outside.
  EXPECT_NE(refuse(store_ / "test-ep/../../evil.so").find("outside the store"), std::string::npos);
  // A sibling whose name starts like the store's.
  fs::create_directories(tmp_ / "store2");
  tests::support::write_file(tmp_ / "store2/x.so", "evil");
  EXPECT_NE(refuse(tmp_ / "store2/x.so").find("outside the store"), std::string::npos);
  EXPECT_NE(refuse(store_), "");  // the store itself is no library
}

TEST_F(StorePathTest, ASymlinkInTheStoreLeadingOutIsRefused) {
  tests::support::write_file(tmp_ / "evil.so", "evil");
  fs::create_symlink(tmp_ / "evil.so", store_ / "test-ep/1.0.0/lib/link.so");
  EXPECT_NE(refuse(store_ / "test-ep/1.0.0/lib/link.so").find("outside the store"),
            std::string::npos);
}

TEST_F(StorePathTest, WhatOthersCanWriteIsRefused) {
  ::chmod(lib_.c_str(), 0664);
  EXPECT_NE(refuse(lib_).find("writable by others"), std::string::npos);
  ::chmod(lib_.c_str(), 0444);
  ::chmod(lib_.parent_path().c_str(), 0777);
  EXPECT_NE(refuse(lib_).find("writable by others"), std::string::npos);
  ::chmod(lib_.parent_path().c_str(), 0755);
  EXPECT_EQ(refuse(lib_), "");
}

TEST_F(StorePathTest, AFileOfAnotherOwnerIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a file to another uid";
  ASSERT_EQ(::chown(lib_.c_str(), 65534, 65534), 0);
  EXPECT_NE(refuse(lib_).find("does not belong to the store's owner"), std::string::npos);
}

TEST_F(StorePathTest, TheSystemStoreIsTheDefault) {
  ::unsetenv("EPBROKER_STORE_DIR");
  EXPECT_EQ(trusted_store_dir(), kSystemStoreDir);
  ::setenv("EPBROKER_STORE_DIR", store_.c_str(), 1);
  EXPECT_EQ(trusted_store_dir(), store_.string());
  ::unsetenv("EPBROKER_STORE_DIR");
}

}  // namespace
}  // namespace epbroker::detail
