// The model writer and the mixed-partition model, proven on the CPU EP.
#include "tests/ort/support/mixed_model.hpp"

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/ort/support/ep_registration.hpp"
#include "tests/ort/support/model_writer.hpp"
#include "tests/ort/support/node_test.hpp"

namespace tests::ort {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(MixedModelTest, LoadsWithTheDeclaredInterface) {
  const std::string bytes = mixed_model_bytes();
  Ort::Session session(test_env(), bytes.data(), bytes.size(), Ort::SessionOptions{});
  EXPECT_THAT(session.GetInputNames(), ElementsAre("X"));
  EXPECT_THAT(session.GetOutputNames(), ElementsAre("Y"));
  EXPECT_EQ(session.GetOpset(""), 17);
  // The TypeInfo owns what GetTensorTypeAndShapeInfo() points into: keep it alive.
  const Ort::TypeInfo in = session.GetInputTypeInfo(0);
  EXPECT_EQ(in.GetTensorTypeAndShapeInfo().GetElementType(), ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);
  EXPECT_THAT(in.GetTensorTypeAndShapeInfo().GetShape(), ElementsAre(3, 4));
  const Ort::TypeInfo out = session.GetOutputTypeInfo(0);
  EXPECT_THAT(out.GetTensorTypeAndShapeInfo().GetShape(), ElementsAre(3, 5));
}

TEST(MixedModelTest, CpuOutputsMatchTheReference) {
  auto cpu = mixed_model_cpu_outputs(test_env());
  ASSERT_TRUE(cpu.has_value()) << cpu.error();
  const auto reference = mixed_model_reference();
  EXPECT_EQ(compare_outputs(reference, *cpu, {.rtol = 1e-5, .atol = 1e-6}), std::nullopt);

  // The data exercise every stage: Relu zeroed some outputs and kept others.
  const auto y = reference[0].values<float>();
  std::size_t zeros = 0;
  for (float v : y) zeros += v == 0.0f ? 1 : 0;
  EXPECT_GT(zeros, 0U);
  EXPECT_LT(zeros, y.size());
}

TEST(MixedModelTest, EverythingRunsOnTheCpuEpWithoutAPlugin) {
  const std::string bytes = mixed_model_bytes();
  Ort::SessionOptions options;
  record_ep_assignment(options);
  Ort::Session session(test_env(), bytes.data(), bytes.size(), options);
  const auto assigned = ep_assignment(session);
  const auto by_ep = ops_by_ep(assigned);
  ASSERT_EQ(by_ep.size(), 1U) << describe_assignment(assigned);
  ASSERT_TRUE(by_ep.contains(kCpuEp));
  // Basic optimizations may fuse MatMul + Add into Gemm; Softmax, Mul, Relu stay.
  const auto& ops = by_ep.at(kCpuEp);
  EXPECT_TRUE(ops.contains("Softmax")) << describe_assignment(assigned);
  EXPECT_TRUE(ops.contains("Mul")) << describe_assignment(assigned);
  EXPECT_TRUE(ops.contains("Relu")) << describe_assignment(assigned);
  EXPECT_TRUE(ops.contains("MatMul") || ops.contains("Gemm")) << describe_assignment(assigned);
}

TEST(MixedModelTest, UnoptimizedGraphKeepsEveryNode) {
  const std::string bytes = mixed_model_bytes();
  Ort::SessionOptions options;
  options.SetGraphOptimizationLevel(ORT_DISABLE_ALL);
  record_ep_assignment(options);
  Ort::Session session(test_env(), bytes.data(), bytes.size(), options);
  EXPECT_EQ(describe_assignment(ep_assignment(session)),
            "CPUExecutionProvider: Add, MatMul, Mul, Relu, Softmax");
}

// ---- The writer on its own: attributes of each kind, dynamic dims, initializers.

TEST(ModelWriterTest, AttributesAndDynamicDims) {
  // Y = Transpose(Gemm(A, B, C; alpha, transB), perm [1, 0]) with a dynamic row count.
  onnx::Model m;
  m.graph.inputs = {{"A", ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, {std::string("N"), 2}}};
  m.graph.outputs = {{"Y", ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, {2, std::string("N")}}};
  m.graph.initializers = {
      Tensor::from_values<float>("B", ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, {2, 2},
                                 {1, 2, 3, 4}),  // used transposed: [[1, 3], [2, 4]]
      Tensor::from_values<float>("C", ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, {2}, {0.5f, -0.5f})};
  m.graph.nodes = {
      {"Gemm", {"A", "B", "C"}, {"G"}, "gemm", {{"alpha", 2.0f}, {"transB", std::int64_t{1}}}, ""},
      {"Transpose", {"G"}, {"Y"}, "transpose", {{"perm", std::vector<std::int64_t>{1, 0}}}, ""},
  };
  const std::string bytes = onnx::serialize_model(m);
  const std::vector<Tensor> inputs = {Tensor::from_values<float>(
      "A", ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, {3, 2}, {1, 0, 0, 1, 1, 1})};
  auto out = run_model_bytes(test_env(), bytes, inputs);
  ASSERT_TRUE(out.has_value()) << out.error();
  // G = 2 * A * B^T + C: rows [2.5, 5.5], [4.5, 7.5], [6.5, 13.5]; Y = G^T.
  const Tensor expected = Tensor::from_values<float>("Y", ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT,
                                                     {2, 3}, {2.5f, 4.5f, 6.5f, 5.5f, 7.5f, 13.5f});
  EXPECT_EQ(compare_outputs({expected}, *out), std::nullopt);
}

TEST(ModelWriterTest, StringAndFloatListAttributesReachOrt) {
  // DepthToSpace of 8 channels by 2: the STRING attribute "mode" picks the channel order.
  const auto d2s = [](const char* mode) {
    onnx::Model m;
    m.graph.inputs = {{"X", ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, {1, 8, 1, 1}}};
    m.graph.outputs = {{"Y", ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, {1, 2, 2, 2}}};
    m.graph.nodes = {{"DepthToSpace",
                      {"X"},
                      {"Y"},
                      "d2s",
                      {{"blocksize", std::int64_t{2}}, {"mode", std::string(mode)}},
                      ""}};
    return onnx::serialize_model(m);
  };
  const std::vector<Tensor> inputs = {Tensor::from_values<float>(
      "X", ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, {1, 8, 1, 1}, {0, 1, 2, 3, 4, 5, 6, 7})};
  auto dcr = run_model_bytes(test_env(), d2s("DCR"), inputs);
  ASSERT_TRUE(dcr.has_value()) << dcr.error();
  EXPECT_THAT((*dcr)[0].values<float>(), ElementsAre(0, 2, 4, 6, 1, 3, 5, 7));
  auto crd = run_model_bytes(test_env(), d2s("CRD"), inputs);
  ASSERT_TRUE(crd.has_value()) << crd.error();
  EXPECT_THAT((*crd)[0].values<float>(), ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
  auto bad = run_model_bytes(test_env(), d2s("NOPE"), inputs);
  ASSERT_FALSE(bad.has_value());
  EXPECT_THAT(bad.error(), HasSubstr("creating the session"));

  // Constant with a FLOATS attribute, no graph inputs.
  onnx::Model c;
  c.graph.outputs = {{"Y", ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, {3}}};
  c.graph.nodes = {{"Constant",
                    {},
                    {"Y"},
                    "const",
                    {{"value_floats", std::vector<float>{1.5f, -2.0f, 1e-3f}}},
                    ""}};
  auto constant = run_model_bytes(test_env(), onnx::serialize_model(c), {});
  ASSERT_TRUE(constant.has_value()) << constant.error();
  EXPECT_THAT((*constant)[0].values<float>(), ElementsAre(1.5f, -2.0f, 1e-3f));
}

}  // namespace
}  // namespace tests::ort
