#include "tests/ort/support/mixed_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <exception>
#include <optional>

#include "tests/ort/support/model_writer.hpp"

namespace tests::ort {

namespace {

constexpr std::int64_t kRows = 3;
constexpr std::int64_t kIn = 4;
constexpr std::int64_t kOut = 5;

std::vector<float> x_values() {
  std::vector<float> v;
  for (std::int64_t i = 0; i < kRows * kIn; ++i) v.push_back(static_cast<float>(i) * 0.25f - 1.5f);
  return v;
}

std::vector<float> w_values() {
  std::vector<float> v;
  for (std::int64_t i = 0; i < kIn * kOut; ++i) {
    v.push_back(static_cast<float>(i % 7 - 3) * 0.2f);
  }
  return v;
}

std::vector<float> b_values() { return {-0.2f, -0.1f, 0.0f, 0.1f, 0.2f}; }
std::vector<float> s_values() { return {1.0f, -2.0f, 0.5f, 3.0f, -0.25f}; }

Tensor float_tensor(std::string name, std::vector<std::int64_t> dims, const std::vector<float>& v) {
  return Tensor::from_values(std::move(name), ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, std::move(dims),
                             v);
}

}  // namespace

std::string mixed_model_bytes() {
  onnx::Model m;
  m.graph.name = "epbroker_mixed";
  m.graph.inputs = {{"X", ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, {kRows, kIn}}};
  m.graph.outputs = {{"Y", ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, {kRows, kOut}}};
  m.graph.initializers = {float_tensor("W", {kIn, kOut}, w_values()),
                          float_tensor("B", {kOut}, b_values()),
                          float_tensor("S", {kOut}, s_values())};
  m.graph.nodes = {
      {"MatMul", {"X", "W"}, {"xw"}, "matmul", {}, ""},
      {"Add", {"xw", "B"}, {"logits"}, "add", {}, ""},
      {"Softmax", {"logits"}, {"probs"}, "softmax", {{"axis", std::int64_t{-1}}}, ""},
      {"Mul", {"probs", "S"}, {"scaled"}, "mul", {}, ""},
      {"Relu", {"scaled"}, {"Y"}, "relu", {}, ""},
  };
  return onnx::serialize_model(m);
}

std::vector<Tensor> mixed_model_inputs() { return {float_tensor("X", {kRows, kIn}, x_values())}; }

std::vector<Tensor> mixed_model_reference() {
  const auto x = x_values();
  const auto w = w_values();
  const auto b = b_values();
  const auto s = s_values();
  std::vector<float> y;
  for (std::int64_t r = 0; r < kRows; ++r) {
    std::vector<double> logits(kOut);
    for (std::int64_t n = 0; n < kOut; ++n) {
      double acc = static_cast<double>(b[static_cast<std::size_t>(n)]);
      for (std::int64_t k = 0; k < kIn; ++k) {
        acc += static_cast<double>(x[static_cast<std::size_t>(r * kIn + k)]) *
               static_cast<double>(w[static_cast<std::size_t>(k * kOut + n)]);
      }
      logits[static_cast<std::size_t>(n)] = acc;
    }
    const double top = *std::max_element(logits.begin(), logits.end());
    double sum = 0;
    for (double& l : logits) sum += (l = std::exp(l - top));
    for (std::int64_t n = 0; n < kOut; ++n) {
      const double v = logits[static_cast<std::size_t>(n)] / sum *
                       static_cast<double>(s[static_cast<std::size_t>(n)]);
      y.push_back(static_cast<float>(std::max(v, 0.0)));
    }
  }
  return {float_tensor("Y", {kRows, kOut}, y)};
}

std::expected<std::vector<Tensor>, std::string> run_model_bytes(Ort::Env& env,
                                                                const std::string& model_bytes,
                                                                const std::vector<Tensor>& inputs,
                                                                const Configure& configure) {
  std::optional<Ort::Session> session;
  try {
    Ort::SessionOptions options;
    if (configure) configure(options);
    session.emplace(env, model_bytes.data(), model_bytes.size(), options);
  } catch (const std::exception& e) {
    return std::unexpected(std::string("creating the session: ") + e.what());
  }
  return run_session(*session, inputs);
}

std::expected<std::vector<Tensor>, std::string> mixed_model_cpu_outputs(Ort::Env& env) {
  return run_model_bytes(env, mixed_model_bytes(), mixed_model_inputs());
}

}  // namespace tests::ort
