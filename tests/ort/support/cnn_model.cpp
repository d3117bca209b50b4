#include "tests/ort/support/cnn_model.hpp"

#include <cmath>
#include <random>

#include "tests/ort/support/model_writer.hpp"

namespace tests::ort {
namespace {

Tensor random_tensor(std::string name, std::vector<std::int64_t> dims, float bound,
                     std::mt19937& rng) {
  std::size_t n = 1;
  for (auto d : dims) n *= static_cast<std::size_t>(d);
  std::uniform_real_distribution<float> dist(-bound, bound);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return Tensor::from_values(std::move(name), ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, std::move(dims),
                             v);
}

}  // namespace

CnnModel cnn_model(std::uint32_t seed) {
  std::mt19937 rng(seed);
  onnx::Model model;
  onnx::Graph& g = model.graph;
  g.name = "vgg_like";
  using onnx::Dim;
  const Dim batch{std::string("N")};
  g.inputs.push_back({"X",
                      ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT,
                      {batch, Dim{std::int64_t{3}}, Dim{std::int64_t{32}}, Dim{std::int64_t{32}}}});
  CnnModel out;
  std::string x = "X";
  std::int64_t in_ch = 3;
  int layer = 0;
  auto conv = [&](std::int64_t out_ch) {
    const std::string n = std::to_string(layer++);
    const auto fan_in = static_cast<float>(in_ch * 9);
    g.initializers.push_back(
        random_tensor("W" + n, {out_ch, in_ch, 3, 3}, std::sqrt(6.0f / fan_in), rng));
    g.initializers.push_back(random_tensor("B" + n, {out_ch}, 0.05f, rng));
    out.parameters += static_cast<std::uint64_t>(out_ch * in_ch * 9 + out_ch);
    g.nodes.push_back({"Conv",
                       {x, "W" + n, "B" + n},
                       {"C" + n},
                       "conv" + n,
                       {{"kernel_shape", std::vector<std::int64_t>{3, 3}},
                        {"pads", std::vector<std::int64_t>{1, 1, 1, 1}}},
                       ""});
    g.nodes.push_back({"Relu", {"C" + n}, {"R" + n}, "relu" + n, {}, ""});
    x = "R" + n;
    in_ch = out_ch;
  };
  auto pool = [&]() {
    const std::string n = std::to_string(layer++);
    g.nodes.push_back({"MaxPool",
                       {x},
                       {"P" + n},
                       "pool" + n,
                       {{"kernel_shape", std::vector<std::int64_t>{2, 2}},
                        {"strides", std::vector<std::int64_t>{2, 2}}},
                       ""});
    x = "P" + n;
  };
  conv(64);
  conv(128);
  pool();
  conv(256);
  conv(512);
  pool();
  for (int i = 0; i < 4; ++i) conv(512);
  g.nodes.push_back({"GlobalAveragePool", {x}, {"G"}, "gap", {}, ""});
  g.nodes.push_back({"Flatten", {"G"}, {"F"}, "flatten", {{"axis", std::int64_t{1}}}, ""});
  g.initializers.push_back(random_tensor("FcW", {1000, 512}, std::sqrt(6.0f / 512.0f), rng));
  g.initializers.push_back(random_tensor("FcB", {1000}, 0.05f, rng));
  out.parameters += 1000 * 512 + 1000;
  g.nodes.push_back({"Gemm", {"F", "FcW", "FcB"}, {"Y"}, "fc", {{"transB", std::int64_t{1}}}, ""});
  g.outputs.push_back({"Y", ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, {batch, Dim{std::int64_t{1000}}}});
  out.bytes = onnx::serialize_model(model);
  return out;
}

std::vector<Tensor> cnn_model_inputs(std::int64_t batch, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(static_cast<std::size_t>(batch * 3 * 32 * 32));
  for (auto& x : v) x = dist(rng);
  return {Tensor::from_values("X", ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, {batch, 3, 32, 32}, v)};
}

}  // namespace tests::ort
