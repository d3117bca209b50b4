// The WebGPU EP (ep-packages/webgpu) in a real ORT: extracted from its package with the
// safe extractor and registered from there. Whether Dawn finds a Vulkan adapter depends
// on the machine (a GPU driver, or Mesa's lavapipe with a software adapter allowed), so
// this test checks what must hold everywhere: the library loads and registers, and the
// devices it offers are reported. Running a model is exercised where an adapter exists.
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "catalog/package/extract.hpp"
#include "tests/ort/support/ep_registration.hpp"
#include "tests/ort/support/mixed_model.hpp"
#include "tests/ort/support/node_test.hpp"
#include "tests/support/temp_dir.hpp"

#ifndef EPBROKER_WEBGPU_PACKAGE
#error "EPBROKER_WEBGPU_PACKAGE (the packed WebGPU EP) must be defined"
#endif

namespace tests::ort {
namespace {

namespace fs = std::filesystem;

TEST(WebGpuTest, RegistersFromTheInstalledPackageAndReportsDevices) {
  tests::support::TempDir store;
  const fs::path staging = store / "webgpu";
  fs::create_directory(staging);
  auto manifest = catalog::package::extract_package(EPBROKER_WEBGPU_PACKAGE, staging);
  ASSERT_TRUE(manifest.has_value()) << manifest.error().message;
  ASSERT_EQ(manifest->ep.required_sonames, std::vector<std::string>{"libvulkan.so.1"});
  const fs::path library = staging / manifest->ep.library;
  {
    ScopedPlugin plugin(test_env(), "webgpu", library);
    // The plugin's devices carry its library path; ORT's own build may list a built-in
    // WebGPU EP of the same name, which is not what we installed.
    std::vector<std::string> ours;
    for (const auto& d : ep_devices_for(test_env(), manifest->ep.ep_names.at(0))) {
      const char* path = d.EpMetadata().GetValue("library_path");
      if (path != nullptr && fs::path(path) == library) {
        std::ostringstream desc;
        desc << d.EpVendor() << " type " << static_cast<int>(d.Device().Type()) << " vendor 0x"
             << std::hex << d.Device().VendorId() << " device 0x" << d.Device().DeviceId();
        ours.push_back(desc.str());
      }
    }
    RecordProperty("webgpu_devices", ::testing::PrintToString(ours));
    std::cout << "WebGPU EP devices from the package: " << ::testing::PrintToString(ours)
              << "\nall EP devices: " << ::testing::PrintToString(describe_ep_devices(test_env()))
              << "\n";
  }
  // Unregistering released the library: registering again works.
  ScopedPlugin again(test_env(), "webgpu", library);
}

}  // namespace
}  // namespace tests::ort
