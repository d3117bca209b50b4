// The OpenVINO EP (ep-packages/openvino) in a real ORT: its package is extracted with
// the safe extractor into a temporary store and registered from there; then ONNX's
// pytorch-converted convolution / pooling / linear tests and a >10 M-parameter CNN
// run on OpenVINO's CPU device with CPU-EP fallback disabled, against the expected
// outputs and the CPU EP.
//
// The OpenVINO EP offers devices of Intel's PCI vendor id (0x8086) only. On other
// CPUs registration is still checked (it must load and offer no device), and the
// inference tests report themselves SKIPPED naming the CPU vendor: they are not
// passes. docs/ep-packages.md records runs on an Intel machine.
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "catalog/package/extract.hpp"
#include "tests/ort/support/cnn_model.hpp"
#include "tests/ort/support/ep_registration.hpp"
#include "tests/ort/support/mixed_model.hpp"
#include "tests/ort/support/node_test.hpp"
#include "tests/support/temp_dir.hpp"

#ifndef EPBROKER_OPENVINO_PACKAGE
#error "EPBROKER_OPENVINO_PACKAGE (the packed OpenVINO EP) must be defined"
#endif

namespace tests::ort {
namespace {

namespace fs = std::filesystem;

constexpr const char* kEpName = "OpenVINOExecutionProvider";

// Full precision on OpenVINO's CPU device (its default may be bf16 on recent CPUs).
const std::unordered_map<std::string, std::string> kF32 = {
    {"load_config", R"({"CPU":{"INFERENCE_PRECISION_HINT":"f32"}})"}};

std::string cpu_vendor() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("vendor_id", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown";
}

struct Installed {
  std::unique_ptr<tests::support::TempDir> store;
  std::unique_ptr<ScopedPlugin> plugin;
  fs::path library;
  std::string error;
};

Installed install() {
  Installed in;
  try {
    in.store = std::make_unique<tests::support::TempDir>();
    const fs::path staging = in.store->path() / "openvino";
    fs::create_directory(staging);
    auto manifest = catalog::package::extract_package(EPBROKER_OPENVINO_PACKAGE, staging);
    if (!manifest) {
      in.error =
          std::string("extracting ") + EPBROKER_OPENVINO_PACKAGE + ": " + manifest.error().message;
      return in;
    }
    in.library = staging / manifest->ep.library;
    in.plugin = std::make_unique<ScopedPlugin>(test_env(), "openvino", in.library);
  } catch (const std::exception& e) {
    in.error = "registering " + in.library.string() + ": " + e.what();
  }
  return in;
}

const Installed& installed() {
  static const Installed in = install();
  return in;
}

std::vector<Ort::ConstEpDevice> cpu_devices() {
  std::vector<Ort::ConstEpDevice> out;
  for (const auto& d : ep_devices_for(test_env(), kEpName)) {
    if (d.Device().Type() == OrtHardwareDeviceType_CPU) out.push_back(d);
  }
  return out;
}

class OpenVinoTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(installed().error, ""); }

  // Why the inference tests cannot run here ("" when they can).
  static std::string no_device_reason() {
    if (!cpu_devices().empty()) return "";
    return "no OpenVINO CPU device: this CPU's vendor is '" + cpu_vendor() +
           "' and the OpenVINO EP offers Intel (0x8086) devices only";
  }
};

TEST_F(OpenVinoTest, RegistersFromTheInstalledPackage) {
  EXPECT_TRUE(fs::is_regular_file(installed().library));
  const auto devices = cpu_devices();
  const auto all = describe_ep_devices(test_env());
  RecordProperty("ep_devices", ::testing::PrintToString(all));
  if (cpu_vendor() == "GenuineIntel") {
    ASSERT_FALSE(devices.empty()) << ::testing::PrintToString(all);
    EXPECT_EQ(devices[0].Device().VendorId(), 0x8086U);
  } else {
    // The vendor filter of the EP: nothing offered, nothing crashed.
    EXPECT_TRUE(devices.empty()) << ::testing::PrintToString(all);
  }
}

// ---- pytorch-converted conv / pool / linear tests, every node on OpenVINO.

std::vector<std::string> pytorch_cases() {
  const fs::path root = onnx_testdata_root() / "pytorch-converted";
  std::vector<std::string> out;
  for (const char* glob : {"test_Conv*", "test_MaxPool*", "test_AvgPool*", "test_Linear*"}) {
    for (const auto& d : list_test_dirs(root, glob)) out.push_back(d.string());
  }
  return out;
}

class OpenVinoPytorchTest : public OpenVinoTest,
                            public ::testing::WithParamInterface<std::string> {};

TEST_P(OpenVinoPytorchTest, MatchesExpectedOutputs) {
  if (const auto why = no_device_reason(); !why.empty()) GTEST_SKIP() << why;
  const RunResult r =
      run_case(test_env(), GetParam(), use_ep(test_env(), kEpName, {.ep_options = kF32}),
               Tolerance{1e-3, 1e-5});
  EXPECT_TRUE(r.passed) << r.message;
  EXPECT_GT(r.data_sets, 0U);
}

INSTANTIATE_TEST_SUITE_P(Onnx, OpenVinoPytorchTest, ::testing::ValuesIn(pytorch_cases()),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           return test_param_name(p.param);
                         });

TEST_F(OpenVinoTest, PytorchCasesArePresent) { EXPECT_GE(pytorch_cases().size(), 40U); }

// ---- A larger model: > 10 M parameters, against the CPU EP.

TEST_F(OpenVinoTest, LargeCnnMatchesTheCpuEp) {
  const CnnModel model = cnn_model();
  ASSERT_GT(model.parameters, 10'000'000U);
  RecordProperty("parameters", std::to_string(model.parameters));
  if (const auto why = no_device_reason(); !why.empty()) GTEST_SKIP() << why;
  const auto inputs = cnn_model_inputs(4);
  auto cpu = run_model_bytes(test_env(), model.bytes, inputs);
  ASSERT_TRUE(cpu.has_value()) << cpu.error();
  auto ov = run_model_bytes(test_env(), model.bytes, inputs,
                            use_ep(test_env(), kEpName, {.ep_options = kF32}));
  ASSERT_TRUE(ov.has_value()) << ov.error();
  EXPECT_EQ(compare_outputs(*cpu, *ov, Tolerance{1e-3, 1e-4}), std::nullopt);
}

}  // namespace
}  // namespace tests::ort
