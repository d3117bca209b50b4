// test-ep (ep-packages/test-ep) in a real ORT: its package is extracted with the safe
// extractor into a temporary store, the library registered with the test Env, ONNX node
// tests run with CPU fallback disabled (so every node ran on the plugin), and the mixed
// model shows ORT splitting the graph between the plugin and the CPU EP.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "catalog/package/extract.hpp"
#include "tests/ort/support/ep_registration.hpp"
#include "tests/ort/support/mixed_model.hpp"
#include "tests/ort/support/node_test.hpp"
#include "tests/support/temp_dir.hpp"

#ifndef EPBROKER_TEST_EP_LIBRARY
#error "EPBROKER_TEST_EP_LIBRARY (the staged libepbroker_test_ep.so) must be defined"
#endif

namespace tests::ort {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr const char* kEpName = "EpbrokerTestEp";

// The plugin, installed and registered once per process (in the order the first test
// asks for it), unregistered and deleted at exit, after every session is gone.
struct Installed {
  std::unique_ptr<tests::support::TempDir> store;
  std::unique_ptr<ScopedPlugin> plugin;
  fs::path library;
  std::string source;  // "package ..." or "stage ..."
  std::string error;   // non-empty: installation failed, tests fail with it
};

Installed install() {
  Installed in;
  try {
#ifdef EPBROKER_TEST_EP_PACKAGE
    // The real path: the package epbroker-publish packed, through the safe extractor.
    const fs::path package = EPBROKER_TEST_EP_PACKAGE;
    in.store = std::make_unique<tests::support::TempDir>();
    const fs::path staging = in.store->path() / "test-ep";
    fs::create_directory(staging);
    auto manifest = catalog::package::extract_package(package, staging);
    if (!manifest) {
      in.error = "extracting " + package.string() + ": " + manifest.error().message;
      return in;
    }
    if (manifest->ep.ep_names != std::vector<std::string>{kEpName}) {
      in.error = "the package's manifest does not name " + std::string(kEpName);
      return in;
    }
    in.library = staging / manifest->ep.library;
    in.source = "package " + package.string();
#else
    in.library = EPBROKER_TEST_EP_LIBRARY;
    in.source = "stage " + in.library.string();
#endif
    in.plugin = std::make_unique<ScopedPlugin>(test_env(), "test-ep", in.library);
  } catch (const std::exception& e) {
    in.error = "installing test-ep from " + in.library.string() + ": " + e.what();
  }
  return in;
}

const Installed& installed() {
  static const Installed in = install();
  return in;
}

class TestEpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(installed().error, "");
    RecordProperty("test_ep_source", installed().source);
  }
};

TEST_F(TestEpTest, RegistersOneCpuDevice) {
  const auto devices = ep_devices_for(test_env(), kEpName);
  ASSERT_EQ(devices.size(), 1U) << ::testing::PrintToString(describe_ep_devices(test_env()));
  EXPECT_STREQ(devices[0].EpVendor(), "epbroker");
  EXPECT_EQ(devices[0].Device().Type(), OrtHardwareDeviceType_CPU);
  EXPECT_TRUE(fs::is_regular_file(installed().library));
#ifdef EPBROKER_TEST_EP_PACKAGE
  // Loaded from the extracted package, not from the build tree.
  EXPECT_THAT(installed().source, HasSubstr("package"));
#endif
}

// ---- ONNX node tests, every node on the plugin.

std::vector<std::string> node_cases() { return test_ep_node_cases(); }

class TestEpNodeTest : public TestEpTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(TestEpNodeTest, RunsEveryNodeOnThePlugin) {
  // use_ep disables CPU fallback: session creation fails unless test-ep takes every node.
  const RunResult r = run_case(test_env(), GetParam(), use_ep(test_env(), kEpName));
  EXPECT_TRUE(r.passed) << r.message;
  EXPECT_GT(r.data_sets, 0U);
}

INSTANTIATE_TEST_SUITE_P(Onnx, TestEpNodeTest, ::testing::ValuesIn(node_cases()),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           return test_param_name(p.param);
                         });

TEST_F(TestEpTest, NodeCasesArePresent) { EXPECT_EQ(node_cases().size(), 14U); }

TEST_F(TestEpTest, UnclaimedNodesFailWithoutCpuFallback) {
  // Negative control: test-ep does not take Softmax, so with fallback disabled the
  // session cannot be created; with fallback allowed the same case passes.
  const fs::path softmax = onnx_testdata_root() / "node/test_softmax_example";
  const RunResult refused = run_case(test_env(), softmax, use_ep(test_env(), kEpName));
  EXPECT_FALSE(refused.passed);
  EXPECT_THAT(refused.message, HasSubstr("creating the session"));
  const RunResult mixed =
      run_case(test_env(), softmax,
               use_ep(test_env(), kEpName, {.ep_options = {}, .allow_cpu_fallback = true}));
  EXPECT_TRUE(mixed.passed) << mixed.message;
}

// ---- The mixed model: MatMul -> Add -> Softmax -> Mul -> Relu.

struct MixedRun {
  std::vector<AssignedNode> assigned;
  std::vector<ProfiledNode> profiled;
  std::vector<Tensor> outputs;
};

// Runs the mixed model with test-ep appended (CPU fallback allowed), recording the
// assignment and a profile.
std::optional<MixedRun> run_mixed(GraphOptimizationLevel level) {
  tests::support::TempDir tmp;
  Ort::SessionOptions options;
  use_ep(test_env(), kEpName, {.ep_options = {}, .allow_cpu_fallback = true})(options);
  options.SetGraphOptimizationLevel(level);
  record_ep_assignment(options);
  enable_profiling(options, tmp / "mixed");
  const std::string bytes = mixed_model_bytes();
  Ort::Session session(test_env(), bytes.data(), bytes.size(), options);
  MixedRun run;
  run.assigned = ep_assignment(session);
  auto outputs = run_session(session, mixed_model_inputs());
  EXPECT_TRUE(outputs.has_value()) << (outputs ? "" : outputs.error());
  if (!outputs) return std::nullopt;
  run.outputs = std::move(*outputs);
  auto profiled = end_profiling(session);
  EXPECT_TRUE(profiled.has_value()) << (profiled ? "" : profiled.error());
  if (!profiled) return std::nullopt;
  run.profiled = std::move(*profiled);
  return run;
}

TEST_F(TestEpTest, MixedModelSplitsBetweenThePluginAndTheCpuEp) {
  const auto run = run_mixed(ORT_ENABLE_ALL);
  ASSERT_TRUE(run.has_value());
  const auto by_ep = ops_by_ep(run->assigned);
  const std::string where = describe_assignment(run->assigned);
  ASSERT_TRUE(by_ep.contains(kEpName)) << where;
  ASSERT_TRUE(by_ep.contains(kCpuEp)) << where;
  // Softmax alone on the CPU EP; MatMul + Add (fused into Gemm by ORT's basic
  // optimizations, or not), Mul and Relu on test-ep.
  EXPECT_EQ(by_ep.at(kCpuEp), std::multiset<std::string>{"Softmax"}) << where;
  const auto& ours = by_ep.at(kEpName);
  EXPECT_TRUE(ours.contains("Mul") && ours.contains("Relu")) << where;
  EXPECT_TRUE(ours.contains("Gemm") || (ours.contains("MatMul") && ours.contains("Add"))) << where;

  // Both EPs really ran kernels.
  EXPECT_EQ(providers_of(run->profiled), (std::set<std::string>{kCpuEp, kEpName}));

  // Same outputs as the CPU EP alone, and as the plain C++ reference.
  auto cpu = mixed_model_cpu_outputs(test_env());
  ASSERT_TRUE(cpu.has_value()) << cpu.error();
  EXPECT_EQ(compare_outputs(*cpu, run->outputs), std::nullopt);
  EXPECT_EQ(compare_outputs(mixed_model_reference(), run->outputs), std::nullopt);
}

TEST_F(TestEpTest, MixedModelUnoptimizedKeepsEveryNodeApart) {
  const auto run = run_mixed(ORT_DISABLE_ALL);
  ASSERT_TRUE(run.has_value());
  EXPECT_EQ(describe_assignment(run->assigned),
            "CPUExecutionProvider: Softmax; EpbrokerTestEp: Add, MatMul, Mul, Relu");
  EXPECT_EQ(providers_of(run->profiled), (std::set<std::string>{kCpuEp, kEpName}));
  EXPECT_EQ(compare_outputs(mixed_model_reference(), run->outputs), std::nullopt);
}

TEST_F(TestEpTest, MixedModelNeedsTheCpuEp) {
  auto r = run_model_bytes(test_env(), mixed_model_bytes(), mixed_model_inputs(),
                           use_ep(test_env(), kEpName));
  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error(), HasSubstr("creating the session"));
}

}  // namespace
}  // namespace tests::ort
