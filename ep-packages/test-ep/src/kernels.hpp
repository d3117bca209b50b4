// Reference float32 kernels of the test EP: plain C++ loops, no ORT types.
//
// Semantics follow the ONNX operators:
//   Add, Mul  multidirectional (numpy) broadcasting, any rank;
//   Relu      elementwise max(x, 0);
//   MatMul    numpy matmul: 1-D operands promoted and the added axis removed again,
//             batch dimensions broadcast;
//   Gemm      Y = A * B + C with alpha = beta = 1 and no transposes; A and B 2-D,
//             C optional and unidirectionally broadcastable to (M, N).
#pragma once

#include <cstddef>
#include <cstdint>
#include <expected>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace epbroker::test_ep {

using Shape = std::vector<std::int64_t>;

enum class Op { add, mul, relu, matmul, gemm };

// The ONNX operator type of `op` ("Add", ...), and the inverse (nullopt for others).
std::string_view op_type_name(Op op);
std::optional<Op> op_from_type_name(std::string_view op_type);

// A read-only view of one float tensor.
struct TensorView {
  const float* data = nullptr;
  std::span<const std::int64_t> shape;
};

// Number of elements of `shape`; nullopt for a negative dimension or on overflow.
std::optional<std::size_t> element_count(std::span<const std::int64_t> shape);

// Numpy broadcasting of two shapes; nullopt when they are incompatible.
std::optional<Shape> broadcast_shapes(std::span<const std::int64_t> a,
                                      std::span<const std::int64_t> b);

// The output shape of `op` applied to `inputs` (Gemm: 2 or 3 inputs), or why the
// inputs are not valid for it. Every output of this function is safe to compute.
std::expected<Shape, std::string> infer_output_shape(Op op, std::span<const TensorView> inputs);

// Computes `op` into `out`, which holds element_count(out_shape) floats;
// `out_shape` must be what infer_output_shape() returned for these inputs.
void compute(Op op, std::span<const TensorView> inputs, std::span<const std::int64_t> out_shape,
             float* out);

}  // namespace epbroker::test_ep
