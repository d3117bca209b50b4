#include "ep.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels.hpp"

namespace epbroker::test_ep {
namespace {

// An ORT API call failed; carries its message (the OrtStatus is released).
class OrtCallError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

void check(const Api& api, OrtStatus* status) {
  if (status == nullptr) return;
  std::string message = api.ort->GetErrorMessage(status);
  api.ort->ReleaseStatus(status);
  throw OrtCallError(message);
}

std::vector<const OrtNode*> graph_nodes(const Api& api, const OrtGraph* graph) {
  std::size_t count = 0;
  check(api, api.ort->Graph_GetNumNodes(graph, &count));
  std::vector<const OrtNode*> nodes(count);
  if (count != 0) check(api, api.ort->Graph_GetNodes(graph, nodes.data(), count));
  return nodes;
}

// Inputs of `node`; an absent optional input is nullptr.
std::vector<const OrtValueInfo*> node_inputs(const Api& api, const OrtNode* node) {
  std::size_t count = 0;
  check(api, api.ort->Node_GetNumInputs(node, &count));
  std::vector<const OrtValueInfo*> values(count);
  if (count != 0) check(api, api.ort->Node_GetInputs(node, values.data(), count));
  return values;
}

std::vector<const OrtValueInfo*> node_outputs(const Api& api, const OrtNode* node) {
  std::size_t count = 0;
  check(api, api.ort->Node_GetNumOutputs(node, &count));
  std::vector<const OrtValueInfo*> values(count);
  if (count != 0) check(api, api.ort->Node_GetOutputs(node, values.data(), count));
  return values;
}

std::string value_name(const Api& api, const OrtValueInfo* value) {
  const char* name = nullptr;
  check(api, api.ort->GetValueInfoName(value, &name));
  return name != nullptr ? name : "";
}

// "Add node 'name'" for log messages.
std::string describe_node(const Api& api, const OrtNode* node) {
  const char* op_type = nullptr;
  const char* name = nullptr;
  check(api, api.ort->Node_GetOperatorType(node, &op_type));
  check(api, api.ort->Node_GetName(node, &name));
  return std::string(op_type != nullptr ? op_type : "?") + " node '" +
         (name != nullptr ? name : "") + "'";
}

// Element type and rank of a value as the graph declares it.
struct ValueType {
  bool float_tensor = false;
  std::optional<std::size_t> rank;  // nullopt: unknown rank
};

ValueType value_type(const Api& api, const OrtValueInfo* value) {
  ValueType out;
  const OrtTypeInfo* type_info = nullptr;
  check(api, api.ort->GetValueInfoTypeInfo(value, &type_info));
  if (type_info == nullptr) return out;
  const OrtTensorTypeAndShapeInfo* tensor = nullptr;
  check(api, api.ort->CastTypeInfoToTensorInfo(type_info, &tensor));
  if (tensor == nullptr) return out;  // not a tensor (sequence, map, optional, ...)
  ONNXTensorElementDataType element_type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  check(api, api.ort->GetTensorElementType(tensor, &element_type));
  out.float_tensor = element_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
  if (api.ort->TensorTypeAndShape_HasShape(tensor)) {
    std::size_t rank = 0;
    check(api, api.ort->GetDimensionsCount(tensor, &rank));
    out.rank = rank;
  }
  return out;
}

// The attribute `name` of `node`, or nullptr when the node does not carry it.
const OrtOpAttr* find_attribute(const Api& api, const OrtNode* node, const char* name) {
  const OrtOpAttr* attr = nullptr;
  OrtStatus* status = api.ort->Node_GetAttributeByName(node, name, &attr);
  if (status != nullptr && api.ort->GetErrorCode(status) == ORT_NOT_FOUND) {
    api.ort->ReleaseStatus(status);
    return nullptr;
  }
  check(api, status);
  return attr;
}

// Whether attribute `name` is absent or holds `expected`.
template <typename T>
bool attribute_is(const Api& api, const OrtNode* node, const char* name, T expected) {
  const OrtOpAttr* attr = find_attribute(api, node, name);
  if (attr == nullptr) return true;
  constexpr OrtOpAttrType kType = std::is_same_v<T, float> ? ORT_OP_ATTR_FLOAT : ORT_OP_ATTR_INT;
  OrtOpAttrType type = ORT_OP_ATTR_UNDEFINED;
  check(api, api.ort->OpAttr_GetType(attr, &type));
  if (type != kType) return false;
  T value{};
  std::size_t size = 0;
  check(api, api.ort->ReadOpAttr(attr, kType, &value, sizeof(value), &size));
  return size == sizeof(value) && value == expected;
}

// Why the EP does not take `node`; empty when it does.
std::string unsupported_reason(const Api& api, const OrtNode* node) {
  const char* domain = nullptr;
  const char* op_type = nullptr;
  int since_version = 0;
  check(api, api.ort->Node_GetDomain(node, &domain));
  check(api, api.ort->Node_GetOperatorType(node, &op_type));
  check(api, api.ort->Node_GetSinceVersion(node, &since_version));
  const std::string_view domain_sv = domain != nullptr ? domain : "";
  if (!domain_sv.empty() && domain_sv != "ai.onnx") return "operator domain is not ai.onnx";
  const std::optional<Op> op = op_from_type_name(op_type != nullptr ? op_type : "");
  if (!op) return "operator type not implemented";

  // Older versions of these operators had other semantics (legacy broadcast
  // attributes, Gemm's mandatory C without numpy broadcasting).
  int min_version = 1;
  std::size_t min_inputs = 2;
  std::size_t max_inputs = 2;
  switch (*op) {
    case Op::add:
    case Op::mul:
    case Op::gemm:
      min_version = 7;
      break;
    case Op::relu:
      min_version = 6;
      break;
    case Op::matmul:
      break;
  }
  if (*op == Op::relu) min_inputs = max_inputs = 1;
  if (*op == Op::gemm) max_inputs = 3;
  if (since_version < min_version) return "operator version " + std::to_string(since_version);

  const auto inputs = node_inputs(api, node);
  const auto outputs = node_outputs(api, node);
  if (inputs.size() < min_inputs || inputs.size() > max_inputs) return "unexpected input count";
  if (outputs.size() != 1 || outputs[0] == nullptr) return "unexpected output count";
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] == nullptr) {
      if (i < min_inputs) return "required input " + std::to_string(i) + " missing";
      continue;  // Gemm without C
    }
    const ValueType type = value_type(api, inputs[i]);
    if (!type.float_tensor) return "input " + std::to_string(i) + " is not a float tensor";
    if (type.rank) {
      if (*op == Op::matmul && *type.rank == 0) return "MatMul of a scalar";
      if (*op == Op::gemm && i < 2 && *type.rank != 2) return "Gemm A or B not 2-D";
      if (*op == Op::gemm && i == 2 && *type.rank > 2) return "Gemm C of rank > 2";
    }
  }
  if (!value_type(api, outputs[0]).float_tensor) return "output is not a float tensor";

  if (*op == Op::gemm) {
    if (!attribute_is(api, node, "alpha", 1.0f) || !attribute_is(api, node, "beta", 1.0f) ||
        !attribute_is(api, node, "transA", std::int64_t{0}) ||
        !attribute_is(api, node, "transB", std::int64_t{0})) {
      return "Gemm with non-default alpha, beta, transA or transB";
    }
  }
  return {};
}

// The compute function of one fused node (one claimed ONNX node).
class FusedKernel : public OrtNodeComputeInfo {
 public:
  // `inputs[i]` is the fused-node input that feeds input i of the ONNX node
  // (nullopt: absent optional input); `output` is the fused-node output of the
  // node's output (nullopt: nobody reads it).
  FusedKernel(const Api& api, Op op, std::vector<std::optional<std::size_t>> inputs,
              std::optional<std::size_t> output)
      : OrtNodeComputeInfo{}, api_(api), op_(op), inputs_(std::move(inputs)), output_(output) {
    ort_version_supported = ORT_API_VERSION;
    CreateState = create_state_impl;
    Compute = compute_impl;
    ReleaseState = release_state_impl;
  }

 private:
  static OrtStatus* ORT_API_CALL create_state_impl(OrtNodeComputeInfo* this_ptr,
                                                   OrtNodeComputeContext* /*context*/,
                                                   void** state) noexcept {
    *state = this_ptr;  // the kernel is stateless: the state is the kernel itself
    return nullptr;
  }

  static OrtStatus* ORT_API_CALL compute_impl(OrtNodeComputeInfo* this_ptr, void* /*state*/,
                                              OrtKernelContext* context) noexcept {
    const auto* self = static_cast<const FusedKernel*>(this_ptr);
    return guard(self->api_, [&] { return self->run(context); });
  }

  static void ORT_API_CALL release_state_impl(OrtNodeComputeInfo* /*this_ptr*/,
                                              void* /*state*/) noexcept {}

  OrtStatus* run(OrtKernelContext* context) const {
    if (!output_) return nullptr;
    std::vector<TensorView> views;
    views.reserve(inputs_.size());
    for (const std::optional<std::size_t>& index : inputs_) {
      if (!index) continue;  // only Gemm's optional C, the last input
      const OrtValue* value = nullptr;
      TEST_EP_RETURN_IF_ERROR(api_.ort->KernelContext_GetInput(context, *index, &value));
      if (value == nullptr) {
        return make_status(api_, ORT_EP_FAIL, std::string(op_type_name(op_)) + ": missing input");
      }
      ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
      const std::int64_t* dims = nullptr;
      std::size_t rank = 0;
      TEST_EP_RETURN_IF_ERROR(
          api_.ort->GetTensorElementTypeAndShapeDataReference(value, &type, &dims, &rank));
      if (type != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) {
        return make_status(api_, ORT_EP_FAIL,
                           std::string(op_type_name(op_)) + ": input is not float32");
      }
      const void* data = nullptr;
      TEST_EP_RETURN_IF_ERROR(api_.ort->GetTensorData(value, &data));
      views.push_back({static_cast<const float*>(data), {dims, rank}});
    }

    auto shape = infer_output_shape(op_, views);
    if (!shape) return make_status(api_, ORT_INVALID_ARGUMENT, shape.error());

    OrtValue* output = nullptr;
    TEST_EP_RETURN_IF_ERROR(api_.ort->KernelContext_GetOutput(context, *output_, shape->data(),
                                                              shape->size(), &output));
    if (element_count(*shape).value_or(0) == 0) return nullptr;
    void* out = nullptr;
    TEST_EP_RETURN_IF_ERROR(api_.ort->GetTensorMutableData(output, &out));
    compute(op_, views, *shape, static_cast<float*>(out));
    return nullptr;
  }

  Api api_;
  Op op_;
  std::vector<std::optional<std::size_t>> inputs_;
  std::optional<std::size_t> output_;
};

std::optional<std::size_t> index_of(const std::vector<std::string>& names,
                                    const std::string& name) {
  const auto it = std::ranges::find(names, name);
  if (it == names.end()) return std::nullopt;
  return static_cast<std::size_t>(it - names.begin());
}

std::vector<std::string> value_names(const Api& api,
                                     const std::vector<const OrtValueInfo*>& values) {
  std::vector<std::string> names;
  names.reserve(values.size());
  for (const OrtValueInfo* v : values) names.push_back(v != nullptr ? value_name(api, v) : "");
  return names;
}

}  // namespace

TestEp::TestEp(const Api& api, const OrtLogger& logger) : OrtEp{}, api_(api), logger_(logger) {
  ort_version_supported = ORT_API_VERSION;
  GetName = get_name_impl;
  GetCapability = get_capability_impl;
  Compile = compile_impl;
  ReleaseNodeComputeInfos = release_node_compute_infos_impl;
  // Everything else stays nullptr: ORT's defaults fit an EP that computes in CPU
  // memory with ORT's CPU allocator and no streams.
}

const char* ORT_API_CALL TestEp::get_name_impl(const OrtEp* /*this_ptr*/) noexcept {
  return kEpName;
}

OrtStatus* ORT_API_CALL TestEp::get_capability_impl(OrtEp* this_ptr, const OrtGraph* graph,
                                                    OrtEpGraphSupportInfo* support) noexcept {
  const auto* self = static_cast<const TestEp*>(this_ptr);
  return guard(self->api_, [&] { return self->get_capability(graph, support); });
}

OrtStatus* TestEp::get_capability(const OrtGraph* graph, OrtEpGraphSupportInfo* support) const {
  for (const OrtNode* node : graph_nodes(api_, graph)) {
    // A node the EP cannot inspect is left to ORT rather than failing the session.
    std::string what = "node";
    std::string reason;
    try {
      what = describe_node(api_, node);
      reason = unsupported_reason(api_, node);
    } catch (const OrtCallError& e) {
      reason = std::string("cannot inspect it: ") + e.what();
    }
    if (!reason.empty()) {
      log(ORT_LOGGING_LEVEL_VERBOSE, std::string(kEpName) + ": not taking " + what + ": " + reason);
      continue;
    }
    // One fused node per ONNX node: no unsupported node can lie between the nodes
    // of a group, and each compiled kernel stays a single operator.
    OrtNodeFusionOptions options{};
    options.ort_version_supported = ORT_API_VERSION;
    options.drop_constant_initializers = false;  // initializers arrive as inputs
    TEST_EP_RETURN_IF_ERROR(
        api_.ep->EpGraphSupportInfo_AddNodesToFuse(support, &node, 1, &options));
    log(ORT_LOGGING_LEVEL_INFO, std::string(kEpName) + ": taking " + what);
  }
  return nullptr;
}

OrtStatus* ORT_API_CALL TestEp::compile_impl(OrtEp* this_ptr, const OrtGraph** graphs,
                                             const OrtNode** fused_nodes, std::size_t count,
                                             OrtNodeComputeInfo** node_compute_infos,
                                             OrtNode** ep_context_nodes) noexcept {
  const auto* self = static_cast<const TestEp*>(this_ptr);
  for (std::size_t i = 0; i < count; ++i) node_compute_infos[i] = nullptr;
  if (ep_context_nodes != nullptr) {
    for (std::size_t i = 0; i < count; ++i) ep_context_nodes[i] = nullptr;
  }
  OrtStatus* status = guard(self->api_, [&]() -> OrtStatus* {
    for (std::size_t i = 0; i < count; ++i) {
      TEST_EP_RETURN_IF_ERROR(self->compile_one(graphs[i], fused_nodes[i], &node_compute_infos[i]));
    }
    return nullptr;
  });
  if (status != nullptr) {
    for (std::size_t i = 0; i < count; ++i) {
      delete static_cast<FusedKernel*>(node_compute_infos[i]);
      node_compute_infos[i] = nullptr;
    }
  }
  return status;
}

OrtStatus* TestEp::compile_one(const OrtGraph* graph, const OrtNode* fused_node,
                               OrtNodeComputeInfo** info) const {
  const auto nodes = graph_nodes(api_, graph);
  if (nodes.size() != 1) {
    return make_status(api_, ORT_EP_FAIL,
                       std::string(kEpName) + ": expected one node per fused node, got " +
                           std::to_string(nodes.size()));
  }
  const OrtNode* node = nodes[0];
  const char* op_type = nullptr;
  TEST_EP_RETURN_IF_ERROR(api_.ort->Node_GetOperatorType(node, &op_type));
  const std::optional<Op> op = op_from_type_name(op_type != nullptr ? op_type : "");
  if (!op) {
    return make_status(api_, ORT_EP_FAIL,
                       std::string(kEpName) + ": asked to compile " + describe_node(api_, node));
  }

  // The fused node lists each distinct value once (Add(x, x) has one input), in an
  // order of ORT's choosing: map the node's inputs and output onto it by name.
  const auto fused_inputs = value_names(api_, node_inputs(api_, fused_node));
  const auto fused_outputs = value_names(api_, node_outputs(api_, fused_node));
  std::vector<std::optional<std::size_t>> inputs;
  for (const OrtValueInfo* input : node_inputs(api_, node)) {
    if (input == nullptr) {
      inputs.emplace_back();
      continue;
    }
    const std::string name = value_name(api_, input);
    const auto index = index_of(fused_inputs, name);
    if (!index) {
      return make_status(api_, ORT_EP_FAIL,
                         std::string(kEpName) + ": input '" + name + "' of " +
                             describe_node(api_, node) + " is not an input of its fused node");
    }
    inputs.push_back(index);
  }
  const auto outputs = node_outputs(api_, node);
  std::optional<std::size_t> output;
  if (!outputs.empty() && outputs[0] != nullptr) {
    output = index_of(fused_outputs, value_name(api_, outputs[0]));
  }

  *info = new FusedKernel(api_, *op, std::move(inputs), output);
  return nullptr;
}

void ORT_API_CALL TestEp::release_node_compute_infos_impl(OrtEp* /*this_ptr*/,
                                                          OrtNodeComputeInfo** infos,
                                                          std::size_t count) noexcept {
  for (std::size_t i = 0; i < count; ++i) delete static_cast<FusedKernel*>(infos[i]);
}

void TestEp::log(OrtLoggingLevel level, const std::string& message,
                 std::source_location where) const noexcept {
  OrtStatus* status = api_.ort->Logger_LogMessage(
      &logger_, level, message.c_str(), where.file_name(), static_cast<int>(where.line()), kEpName);
  if (status != nullptr) api_.ort->ReleaseStatus(status);
}

}  // namespace epbroker::test_ep
