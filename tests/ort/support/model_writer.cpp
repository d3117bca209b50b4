#include "tests/ort/support/model_writer.hpp"

#include <bit>
#include <type_traits>

#include "tests/ort/support/protobuf_wire.hpp"

namespace tests::ort::onnx {

namespace {

using wire::Writer;

// onnx.proto field numbers.
namespace model_f {
constexpr std::uint32_t kIrVersion = 1;
constexpr std::uint32_t kProducerName = 2;
constexpr std::uint32_t kGraph = 7;
constexpr std::uint32_t kOpsetImport = 8;
}  // namespace model_f
namespace opset_f {
constexpr std::uint32_t kDomain = 1;
constexpr std::uint32_t kVersion = 2;
}  // namespace opset_f
namespace graph_f {
constexpr std::uint32_t kNode = 1;
constexpr std::uint32_t kName = 2;
constexpr std::uint32_t kInitializer = 5;
constexpr std::uint32_t kInput = 11;
constexpr std::uint32_t kOutput = 12;
}  // namespace graph_f
namespace node_f {
constexpr std::uint32_t kInput = 1;
constexpr std::uint32_t kOutput = 2;
constexpr std::uint32_t kName = 3;
constexpr std::uint32_t kOpType = 4;
constexpr std::uint32_t kAttribute = 5;
constexpr std::uint32_t kDomain = 7;
}  // namespace node_f
namespace attr_f {
constexpr std::uint32_t kName = 1;
constexpr std::uint32_t kF = 2;
constexpr std::uint32_t kI = 3;
constexpr std::uint32_t kS = 4;
constexpr std::uint32_t kFloats = 7;
constexpr std::uint32_t kInts = 8;
constexpr std::uint32_t kType = 20;
// AttributeProto.AttributeType
constexpr std::uint64_t kTypeFloat = 1;
constexpr std::uint64_t kTypeInt = 2;
constexpr std::uint64_t kTypeString = 3;
constexpr std::uint64_t kTypeFloats = 6;
constexpr std::uint64_t kTypeInts = 7;
}  // namespace attr_f
namespace value_info_f {
constexpr std::uint32_t kName = 1;
constexpr std::uint32_t kType = 2;
}  // namespace value_info_f
namespace type_f {
constexpr std::uint32_t kTensorType = 1;  // TypeProto.tensor_type
constexpr std::uint32_t kElemType = 1;    // TypeProto.Tensor.elem_type
constexpr std::uint32_t kShape = 2;       // TypeProto.Tensor.shape
constexpr std::uint32_t kDim = 1;         // TensorShapeProto.dim
constexpr std::uint32_t kDimValue = 1;    // Dimension.dim_value
constexpr std::uint32_t kDimParam = 2;    // Dimension.dim_param
}  // namespace type_f
namespace tensor_f {
constexpr std::uint32_t kDims = 1;
constexpr std::uint32_t kDataType = 2;
constexpr std::uint32_t kName = 8;
constexpr std::uint32_t kRawData = 9;
}  // namespace tensor_f

Writer value_info(const ValueInfo& vi) {
  Writer shape;
  for (const Dim& d : vi.dims) {
    Writer dim;
    if (const auto* v = std::get_if<std::int64_t>(&d)) {
      dim.int_field(type_f::kDimValue, *v);
    } else {
      dim.bytes_field(type_f::kDimParam, std::get<std::string>(d));
    }
    shape.message_field(type_f::kDim, dim);
  }
  Writer tensor_type;
  tensor_type.int_field(type_f::kElemType, static_cast<std::int64_t>(vi.type));
  tensor_type.message_field(type_f::kShape, shape);
  Writer type;
  type.message_field(type_f::kTensorType, tensor_type);
  Writer out;
  out.bytes_field(value_info_f::kName, vi.name);
  out.message_field(value_info_f::kType, type);
  return out;
}

Writer attribute(const Attribute& a) {
  Writer out;
  out.bytes_field(attr_f::kName, a.name);
  std::visit(
      [&out](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::int64_t>) {
          out.int_field(attr_f::kI, v);
          out.varint_field(attr_f::kType, attr_f::kTypeInt);
        } else if constexpr (std::is_same_v<T, float>) {
          out.fixed32_field(attr_f::kF, std::bit_cast<std::uint32_t>(v));
          out.varint_field(attr_f::kType, attr_f::kTypeFloat);
        } else if constexpr (std::is_same_v<T, std::string>) {
          out.bytes_field(attr_f::kS, v);
          out.varint_field(attr_f::kType, attr_f::kTypeString);
        } else if constexpr (std::is_same_v<T, std::vector<std::int64_t>>) {
          for (std::int64_t i : v) out.int_field(attr_f::kInts, i);
          out.varint_field(attr_f::kType, attr_f::kTypeInts);
        } else {
          static_assert(std::is_same_v<T, std::vector<float>>);
          for (float f : v) out.fixed32_field(attr_f::kFloats, std::bit_cast<std::uint32_t>(f));
          out.varint_field(attr_f::kType, attr_f::kTypeFloats);
        }
      },
      a.value);
  return out;
}

Writer node(const Node& n) {
  Writer out;
  for (const auto& i : n.inputs) out.bytes_field(node_f::kInput, i);
  for (const auto& o : n.outputs) out.bytes_field(node_f::kOutput, o);
  if (!n.name.empty()) out.bytes_field(node_f::kName, n.name);
  out.bytes_field(node_f::kOpType, n.op_type);
  for (const auto& a : n.attributes) out.message_field(node_f::kAttribute, attribute(a));
  if (!n.domain.empty()) out.bytes_field(node_f::kDomain, n.domain);
  return out;
}

}  // namespace

std::string serialize_tensor(const Tensor& tensor) {
  Writer out;
  for (std::int64_t d : tensor.dims) out.int_field(tensor_f::kDims, d);
  out.int_field(tensor_f::kDataType, static_cast<std::int64_t>(tensor.type));
  if (!tensor.name.empty()) out.bytes_field(tensor_f::kName, tensor.name);
  out.bytes_field(
      tensor_f::kRawData,
      std::string_view(reinterpret_cast<const char*>(tensor.bytes.data()), tensor.bytes.size()));
  return out.take();
}

std::string serialize_model(const Model& model) {
  Writer graph;
  for (const auto& n : model.graph.nodes) graph.message_field(graph_f::kNode, node(n));
  graph.bytes_field(graph_f::kName, model.graph.name);
  for (const auto& t : model.graph.initializers) {
    graph.bytes_field(graph_f::kInitializer, serialize_tensor(t));
  }
  for (const auto& vi : model.graph.inputs) graph.message_field(graph_f::kInput, value_info(vi));
  for (const auto& vi : model.graph.outputs) {
    graph.message_field(graph_f::kOutput, value_info(vi));
  }

  Writer opset;
  opset.bytes_field(opset_f::kDomain, "");
  opset.int_field(opset_f::kVersion, model.opset);

  Writer out;
  out.int_field(model_f::kIrVersion, model.ir_version);
  out.bytes_field(model_f::kProducerName, model.producer_name);
  out.message_field(model_f::kGraph, graph);
  out.message_field(model_f::kOpsetImport, opset);
  return out.take();
}

}  // namespace tests::ort::onnx
