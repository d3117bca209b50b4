// The OpenVINO EP package (ep-packages/openvino) through the safe extractor, without
// loading it: the project's own code on the largest real package (a few hundred MB,
// the OpenVINO runtime, its plugins and oneTBB). This test runs in the ASan+UBSan pass
// too, where ort_openvino_test (registration and inference in a real ORT) cannot: see
// tests/ort/CMakeLists.txt.
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "catalog/package/extract.hpp"
#include "tests/support/temp_dir.hpp"

#ifndef EPBROKER_OPENVINO_PACKAGE
#error "EPBROKER_OPENVINO_PACKAGE (the packed OpenVINO EP) must be defined"
#endif

namespace tests::ort {
namespace {

namespace fs = std::filesystem;

TEST(OpenVinoPackageTest, ExtractsEveryListedFileWithItsSizeAndMode) {
  tests::support::TempDir store;
  const fs::path staging = store / "openvino";
  fs::create_directory(staging);
  auto manifest = catalog::package::extract_package(EPBROKER_OPENVINO_PACKAGE, staging);
  ASSERT_TRUE(manifest.has_value()) << manifest.error().message;

  EXPECT_EQ(manifest->ep.name, "openvino");
  EXPECT_THAT(manifest->ep.ep_names, ::testing::Contains("OpenVINOExecutionProvider"));
  const bool library_listed = std::ranges::any_of(
      manifest->files, [&](const auto& f) { return f.path == manifest->ep.library; });
  EXPECT_TRUE(library_listed) << manifest->ep.library;

  // Exactly the listed files, each with its listed size and mode (the extractor
  // verified the hashes while writing).
  std::size_t regular_files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(staging)) {
    if (entry.is_regular_file()) ++regular_files;
  }
  EXPECT_EQ(regular_files, manifest->files.size());
  EXPECT_GT(manifest->files.size(), 10U);
  for (const auto& f : manifest->files) {
    const fs::path p = staging / f.path;
    struct stat st {};
    ASSERT_EQ(::lstat(p.c_str(), &st), 0) << p;
    EXPECT_TRUE(S_ISREG(st.st_mode)) << p;
    EXPECT_EQ(static_cast<std::uint64_t>(st.st_size), f.size) << p;
    EXPECT_EQ(st.st_mode & 07777, f.executable ? 0755U : 0644U) << p;
  }
}

}  // namespace
}  // namespace tests::ort
