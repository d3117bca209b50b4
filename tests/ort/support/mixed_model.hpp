// A small float32 model that ORT must split between a plugin EP claiming Add, Mul, Relu,
// MatMul and Gemm (such as test-ep) and the CPU EP:
//
//   X[3,4] -MatMul(W[4,5])-> -Add(B[5])-> -Softmax(axis -1)-> -Mul(S[5])-> -Relu-> Y[3,5]
//
// Softmax is not claimed, so it stays on the CPU EP, between two plugin subgraphs.
// W, B and S are initializers. S has negative entries, so Relu zeroes some outputs.
// Opset 17, IR version 8.
#pragma once

#include <onnxruntime_cxx_api.h>

#include <expected>
#include <string>
#include <vector>

#include "tests/ort/support/node_test.hpp"
#include "tests/ort/support/tensor_proto.hpp"

namespace tests::ort {

// The ModelProto bytes (Ort::Session(env, bytes.data(), bytes.size(), options)).
std::string mixed_model_bytes();

// The model's one input, "X" (float [3,4]).
std::vector<Tensor> mixed_model_inputs();

// "Y" computed in plain C++ (double precision, rounded to float): the truth the CPU EP
// run is checked against.
std::vector<Tensor> mixed_model_reference();

// Runs the model on `inputs` in a session configured by `configure` (nothing: CPU EP
// only) and returns its outputs.
std::expected<std::vector<Tensor>, std::string> run_model_bytes(Ort::Env& env,
                                                                const std::string& model_bytes,
                                                                const std::vector<Tensor>& inputs,
                                                                const Configure& configure = {});

// The expected outputs for a plugin-EP run: the model on the CPU EP alone.
std::expected<std::vector<Tensor>, std::string> mixed_model_cpu_outputs(Ort::Env& env);

}  // namespace tests::ort
