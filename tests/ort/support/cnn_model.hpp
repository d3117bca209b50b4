// A VGG-style convolutional network with random (seeded) weights and more than
// 10 M parameters, written as an ONNX model in memory: a "larger real model" for
// comparing an EP's outputs with ORT's CPU EP.
//
//   X[1,3,32,32] -> 2x(Conv3x3+Relu) -> MaxPool -> 2x(Conv3x3+Relu) -> MaxPool
//   -> 4x(Conv3x3 512+Relu) -> GlobalAveragePool -> Flatten -> Gemm(1000) -> Y[1,1000]
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tests/ort/support/tensor_proto.hpp"

namespace tests::ort {

struct CnnModel {
  std::string bytes;             // onnx.ModelProto
  std::uint64_t parameters = 0;  // weights + biases
};

// Deterministic for a given seed (He-uniform weights keep activations bounded).
CnnModel cnn_model(std::uint32_t seed = 7);
// One input image "X" of [batch, 3, 32, 32], values in [0, 1).
std::vector<Tensor> cnn_model_inputs(std::int64_t batch = 1, std::uint32_t seed = 11);

}  // namespace tests::ort
