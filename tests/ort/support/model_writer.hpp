// Writes small ONNX models (ModelProto bytes) from plain structs, without protobuf or
// Python: enough for hand-built test graphs of standard ops with tensor inputs,
// initializers and simple attributes.
#pragma once

#include <onnxruntime_cxx_api.h>

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "tests/ort/support/tensor_proto.hpp"

namespace tests::ort::onnx {

// A dimension: a fixed size, or a symbolic name ("N") for a dynamic one.
using Dim = std::variant<std::int64_t, std::string>;

// ValueInfoProto of a tensor.
struct ValueInfo {
  std::string name;
  ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
  std::vector<Dim> dims;
};

// AttributeProto of the kinds INT, FLOAT, STRING, INTS, FLOATS.
struct Attribute {
  std::string name;
  std::variant<std::int64_t, float, std::string, std::vector<std::int64_t>, std::vector<float>>
      value;
};

struct Node {
  std::string op_type;
  std::vector<std::string> inputs;  // "" for an omitted optional input
  std::vector<std::string> outputs;
  std::string name;  // optional, but ORT messages read better with one
  std::vector<Attribute> attributes;
  std::string domain;  // "" = the default ONNX domain
};

struct Graph {
  std::string name = "graph";
  std::vector<Node> nodes;  // topologically sorted
  std::vector<ValueInfo> inputs;
  std::vector<ValueInfo> outputs;
  std::vector<Tensor> initializers;  // written as raw_data; Tensor::name is the value name
};

struct Model {
  Graph graph;
  std::int64_t ir_version = 8;
  std::int64_t opset = 17;  // of the default domain ""
  std::string producer_name = "epbroker-tests";
};

// onnx.TensorProto bytes (dims, data_type, name, raw_data); parse_tensor_proto reads
// them back.
std::string serialize_tensor(const Tensor& tensor);

// onnx.ModelProto bytes, loadable by Ort::Session(env, data, size, options).
std::string serialize_model(const Model& model);

}  // namespace tests::ort::onnx
