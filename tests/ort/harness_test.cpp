// The ORT proof-test harness itself: output comparison, run_case on good and broken
// test directories, test discovery, and the EP plumbing checked against the CPU EP.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/ort/support/ep_registration.hpp"
#include "tests/ort/support/model_writer.hpp"
#include "tests/ort/support/node_test.hpp"
#include "tests/ort/support/tensor_proto.hpp"
#include "tests/support/temp_dir.hpp"

namespace tests::ort {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

Tensor floats(std::vector<std::int64_t> dims, const std::vector<float>& v) {
  return Tensor::from_values("t", ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, std::move(dims), v);
}

// ---- compare_tensors

TEST(CompareTest, WithinToleranceMatches) {
  const Tensor e = floats({3}, {1.0f, 100.0f, 0.0f});
  EXPECT_EQ(compare_tensors(e, floats({3}, {1.0009f, 100.09f, 1e-8f})), std::nullopt);
  const auto m = compare_tensors(e, floats({3}, {1.0f, 100.5f, 0.0f}));
  ASSERT_TRUE(m.has_value());
  EXPECT_THAT(
      *m,
      HasSubstr("element 1 at [1]: expected 100, got 100.5 (|diff| 0.5 > atol 1e-07 + rtol 0.001"));
  // A looser tolerance accepts it.
  EXPECT_EQ(compare_tensors(e, floats({3}, {1.0f, 100.5f, 0.0f}), {.rtol = 1e-2, .atol = 0}),
            std::nullopt);
}

TEST(CompareTest, AbsoluteToleranceNearZero) {
  const Tensor e = floats({1}, {0.0f});
  EXPECT_EQ(compare_tensors(e, floats({1}, {5e-8f})), std::nullopt);
  EXPECT_TRUE(compare_tensors(e, floats({1}, {5e-7f})).has_value());
}

TEST(CompareTest, NanEqualsNanAndInfinitiesMustMatch) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(compare_tensors(floats({2}, {nan, inf}), floats({2}, {nan, inf})), std::nullopt);
  EXPECT_TRUE(compare_tensors(floats({1}, {nan}), floats({1}, {1.0f})).has_value());
  EXPECT_TRUE(compare_tensors(floats({1}, {1.0f}), floats({1}, {nan})).has_value());
  EXPECT_TRUE(compare_tensors(floats({1}, {inf}), floats({1}, {-inf})).has_value());
  EXPECT_TRUE(compare_tensors(floats({1}, {inf}), floats({1}, {1e30f})).has_value());
}

TEST(CompareTest, IntegersAndBoolsAreExact) {
  const auto ints = [](std::vector<std::int64_t> v) {
    return Tensor::from_values("i", ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64, {2, 2}, v);
  };
  EXPECT_EQ(compare_tensors(ints({1, 2, 3, -4}), ints({1, 2, 3, -4})), std::nullopt);
  const auto m = compare_tensors(ints({1, 2, 3, -4}), ints({1, 2, 3, -5}));
  ASSERT_TRUE(m.has_value());
  EXPECT_THAT(*m, HasSubstr("element 3 at [1,1]: expected -4, got -5"));

  const auto bools = [](std::vector<std::uint8_t> v) {
    return Tensor::from_values("b", ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL, {2}, v);
  };
  EXPECT_TRUE(compare_tensors(bools({1, 0}), bools({1, 1})).has_value());
  const auto i8 = [](std::vector<std::int8_t> v) {
    return Tensor::from_values("b", ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8, {1}, v);
  };
  EXPECT_THAT(compare_tensors(i8({-3}), i8({3})).value_or(""), HasSubstr("expected -3, got 3"));
}

TEST(CompareTest, ShapeAndTypeMustMatch) {
  EXPECT_THAT(compare_tensors(floats({2, 2}, {1, 2, 3, 4}), floats({4}, {1, 2, 3, 4})).value_or(""),
              HasSubstr("expected 't' float[2,2], got 't' float[4]"));
  const Tensor d = Tensor::from_values<double>("t", ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE, {1}, {1});
  EXPECT_TRUE(compare_tensors(floats({1}, {1}), d).has_value());
  EXPECT_THAT(compare_outputs({floats({1}, {1})}, {}).value_or(""),
              HasSubstr("expected 1 outputs, got 0"));
}

// ---- run_case on hand-made test directories

// dir/model.onnx: Z = X + Y, float [2,3]; one data set with `z` as the expected output.
void write_add_case(const std::filesystem::path& dir, const std::vector<float>& z) {
  onnx::Model m;
  m.graph.inputs = {{"X", ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, {2, 3}},
                    {"Y", ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, {2, 3}}};
  m.graph.outputs = {{"Z", ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, {2, 3}}};
  m.graph.nodes = {{"Add", {"X", "Y"}, {"Z"}, "add", {}, ""}};
  tests::support::write_file(dir / "model.onnx", onnx::serialize_model(m));
  const auto set = dir / "test_data_set_0";
  tests::support::write_file(set / "input_0.pb",
                             onnx::serialize_tensor(floats({2, 3}, {1, 2, 3, 4, 5, 6})));
  tests::support::write_file(set / "input_1.pb",
                             onnx::serialize_tensor(floats({2, 3}, {10, 20, 30, 40, 50, 60})));
  tests::support::write_file(set / "output_0.pb", onnx::serialize_tensor(floats({2, 3}, z)));
}

TEST(RunCaseTest, PassesOnCorrectOutputs) {
  tests::support::TempDir tmp;
  write_add_case(tmp / "test_mine", {11, 22, 33, 44, 55, 66});
  const RunResult r = run_case(test_env(), tmp / "test_mine");
  EXPECT_TRUE(r.passed) << r.message;
  EXPECT_EQ(r.data_sets, 1U);
}

TEST(RunCaseTest, ReportsTheFirstMismatch) {
  tests::support::TempDir tmp;
  write_add_case(tmp / "test_mine", {11, 22, 33, 44, 56, 67});
  const RunResult r = run_case(test_env(), tmp / "test_mine");
  EXPECT_FALSE(r.passed);
  EXPECT_THAT(r.message, HasSubstr("test_mine/test_data_set_0: output 0: output 't' float[2,3] "
                                   "element 4 at [1,1]: expected 56, got 55"));
}

TEST(RunCaseTest, ReportsBrokenDirectories) {
  tests::support::TempDir tmp;
  EXPECT_THAT(run_case(test_env(), tmp / "nothing").message, HasSubstr("model.onnx: not found"));

  write_add_case(tmp / "test_missing_input", {11, 22, 33, 44, 55, 66});
  std::filesystem::remove(tmp / "test_missing_input/test_data_set_0/input_0.pb");
  EXPECT_THAT(run_case(test_env(), tmp / "test_missing_input").message,
              HasSubstr("input_0.pb is missing"));

  write_add_case(tmp / "test_bad_pb", {11, 22, 33, 44, 55, 66});
  tests::support::write_file(tmp / "test_bad_pb/test_data_set_0/output_0.pb", "\x4a\x7f");
  EXPECT_THAT(run_case(test_env(), tmp / "test_bad_pb").message, HasSubstr("output_0.pb"));

  write_add_case(tmp / "test_bad_model", {11, 22, 33, 44, 55, 66});
  tests::support::write_file(tmp / "test_bad_model/model.onnx", "not a model");
  EXPECT_THAT(run_case(test_env(), tmp / "test_bad_model").message,
              HasSubstr("creating the session"));
}

TEST(RunCaseTest, ConfigureExceptionsFailTheCase) {
  const RunResult r =
      run_case(test_env(), onnx_testdata_root() / "node/test_add",
               [](Ort::SessionOptions&) { throw std::runtime_error("configure broke"); });
  EXPECT_FALSE(r.passed);
  EXPECT_THAT(r.message, HasSubstr("configure broke"));
}

// ---- discovery

TEST(ListTestDirsTest, GlobsAndSorts) {
  const auto dirs = list_test_dirs(onnx_testdata_root() / "node", "test_matmul_[234]d");
  std::vector<std::string> names;
  for (const auto& d : dirs) names.push_back(d.filename().string());
  EXPECT_THAT(names, ElementsAre("test_matmul_2d", "test_matmul_3d", "test_matmul_4d"));
  EXPECT_THAT(list_test_dirs(onnx_testdata_root() / "node", "no_such_*"), IsEmpty());
  EXPECT_THAT(list_test_dirs("/nonexistent", "*"), IsEmpty());
  EXPECT_EQ(test_param_name("/x/test_add-bcast.v2"), "test_add_bcast_v2");
}

// ---- EP plumbing against the CPU EP

TEST(EpRegistrationTest, CpuEpHasADevice) {
  const auto devices = ep_devices_for(test_env(), kCpuEp);
  ASSERT_FALSE(devices.empty()) << ::testing::PrintToString(describe_ep_devices(test_env()));
  EXPECT_STREQ(devices.front().EpName(), kCpuEp);
  EXPECT_EQ(devices.front().Device().Type(), OrtHardwareDeviceType_CPU);
  EXPECT_THAT(describe_ep_devices(test_env()), Contains("CPUExecutionProvider/CPU"));
  EXPECT_TRUE(ep_devices_for(test_env(), "NoSuchEp").empty());
}

TEST(EpRegistrationTest, RunsANodeTestOnAnAppendedEp) {
  // Appending the CPU EP by device is allowed; disabling the CPU fallback on top of that
  // is not (ORT refuses the combination), which shows the config entry reaches ORT.
  const auto test_add = onnx_testdata_root() / "node/test_add";
  const RunResult ok =
      run_case(test_env(), test_add,
               use_ep(test_env(), kCpuEp, {.ep_options = {}, .allow_cpu_fallback = true}));
  EXPECT_TRUE(ok.passed) << ok.message;
  const RunResult refused = run_case(test_env(), test_add, use_ep(test_env(), kCpuEp));
  EXPECT_FALSE(refused.passed);
  EXPECT_THAT(refused.message, HasSubstr("creating the session"));
}

TEST(EpRegistrationTest, UnknownEpFailsWithTheDeviceList) {
  const RunResult r =
      run_case(test_env(), onnx_testdata_root() / "node/test_add", use_ep(test_env(), "NoSuchEp"));
  EXPECT_FALSE(r.passed);
  EXPECT_THAT(r.message, HasSubstr("no EP device for NoSuchEp; the env has: "));
  EXPECT_THAT(r.message, HasSubstr("CPUExecutionProvider/CPU"));
}

TEST(EpRegistrationTest, RegisteringAMissingLibraryThrows) {
  EXPECT_THROW(register_plugin(test_env(), "missing", "/nonexistent/libnothing.so"),
               Ort::Exception);
  EXPECT_THROW(ScopedPlugin(test_env(), "missing2", "/nonexistent/libnothing.so"), Ort::Exception);
  EXPECT_THROW(unregister_plugin(test_env(), "never-registered"), Ort::Exception);
}

TEST(EpRegistrationTest, AssignmentAndProfileNameTheCpuEp) {
  tests::support::TempDir tmp;
  Ort::SessionOptions options;
  record_ep_assignment(options);
  enable_profiling(options, tmp / "profile");
  const auto dir = onnx_testdata_root() / "node/test_add";
  Ort::Session session(test_env(), (dir / "model.onnx").c_str(), options);

  const auto assigned = ep_assignment(session);
  ASSERT_EQ(assigned.size(), 1U);
  EXPECT_EQ(assigned[0].ep, kCpuEp);
  EXPECT_EQ(assigned[0].op_type, "Add");
  EXPECT_EQ(describe_assignment(assigned), "CPUExecutionProvider: Add");

  auto tc = load_test_case(dir);
  ASSERT_TRUE(tc.has_value()) << tc.error();
  auto outputs = run_session(session, tc->data_sets[0].inputs);
  ASSERT_TRUE(outputs.has_value()) << outputs.error();
  auto profiled = end_profiling(session);
  ASSERT_TRUE(profiled.has_value()) << profiled.error();
  ASSERT_THAT(*profiled, Not(IsEmpty()));
  EXPECT_THAT(providers_of(*profiled), ElementsAre(kCpuEp));
  EXPECT_EQ(profiled->front().op_name, "Add");
}

TEST(EpRegistrationTest, AssignmentNeedsTheConfigEntry) {
  Ort::Session session(test_env(), (onnx_testdata_root() / "node/test_add/model.onnx").c_str(),
                       Ort::SessionOptions{});
  EXPECT_THROW((void)ep_assignment(session), Ort::Exception);
}

TEST(EpRegistrationTest, ParseProfileRejectsGarbage) {
  tests::support::TempDir tmp;
  tests::support::write_file(tmp / "p.json", "{not json");
  EXPECT_FALSE(parse_profile(tmp / "p.json").has_value());
  tests::support::write_file(tmp / "q.json",
                             R"({"traceEvents": [{"cat": "Node", "name": "n_kernel_time",
          "args": {"op_name": "Relu", "provider": "SomeEp"}},
         {"cat": "Node", "name": "n_fence_before", "args": {"op_name": "Relu"}},
         {"cat": "Session", "name": "model_run", "args": {}}, 7]})");
  auto nodes = parse_profile(tmp / "q.json");
  ASSERT_TRUE(nodes.has_value()) << nodes.error();
  ASSERT_EQ(nodes->size(), 1U);
  EXPECT_EQ((*nodes)[0].node_name, "n");
  EXPECT_EQ((*nodes)[0].op_name, "Relu");
  EXPECT_EQ((*nodes)[0].provider, "SomeEp");
}

}  // namespace
}  // namespace tests::ort
