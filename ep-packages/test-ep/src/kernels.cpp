#include "kernels.hpp"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <utility>

namespace epbroker::test_ep {
namespace {

using Dims = std::span<const std::int64_t>;

std::string shape_text(Dims shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i != 0) s += ",";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::unexpected<std::string> invalid(Op op, std::string what) {
  return std::unexpected(std::string(op_type_name(op)) + ": " + std::move(what));
}

// Strides (in elements) of a row-major tensor of shape `in`, laid against the
// right-aligned `out_rank` axes of the broadcast output; 0 where `in` is broadcast.
Shape broadcast_strides(Dims in, std::size_t out_rank) {
  Shape strides(out_rank, 0);
  std::int64_t stride = 1;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const std::size_t in_axis = in.size() - 1 - i;
    const std::size_t out_axis = out_rank - 1 - i;
    strides[out_axis] = in[in_axis] == 1 ? 0 : stride;
    stride *= in[in_axis];
  }
  return strides;
}

// Walks a row-major output shape element by element, keeping for each input the
// offset of the element that broadcasts to the current output position.
class Odometer {
 public:
  Odometer(Dims out_shape, std::initializer_list<Dims> in_shapes)
      : dims_(out_shape.begin(), out_shape.end()),
        index_(out_shape.size(), 0),
        offsets_(in_shapes.size(), 0) {
    strides_.reserve(in_shapes.size());
    for (Dims in : in_shapes) strides_.push_back(broadcast_strides(in, dims_.size()));
  }

  std::int64_t offset(std::size_t input) const { return offsets_[input]; }

  void next() {
    for (std::size_t axis = dims_.size(); axis-- > 0;) {
      ++index_[axis];
      for (std::size_t k = 0; k < offsets_.size(); ++k) offsets_[k] += strides_[k][axis];
      if (index_[axis] < dims_[axis]) return;
      for (std::size_t k = 0; k < offsets_.size(); ++k) {
        offsets_[k] -= strides_[k][axis] * dims_[axis];
      }
      index_[axis] = 0;
    }
  }

 private:
  Shape dims_;
  std::vector<Shape> strides_;
  Shape index_;
  Shape offsets_;
};

// `shape` must describe a tensor whose size fits the index type.
std::expected<std::size_t, std::string> checked_count(Op op, Dims shape) {
  auto n = element_count(shape);
  if (!n) return invalid(op, "invalid or too large shape " + shape_text(shape));
  return *n;
}

std::expected<Shape, std::string> infer_elementwise(Op op, std::span<const TensorView> in) {
  const std::size_t expected_inputs = op == Op::relu ? 1 : 2;
  if (in.size() != expected_inputs) {
    return invalid(op, "expected " + std::to_string(expected_inputs) + " inputs");
  }
  for (const TensorView& t : in) {
    if (auto n = checked_count(op, t.shape); !n) return std::unexpected(std::move(n.error()));
  }
  if (op == Op::relu) return Shape(in[0].shape.begin(), in[0].shape.end());
  auto out = broadcast_shapes(in[0].shape, in[1].shape);
  if (!out) {
    return invalid(op, "shapes " + shape_text(in[0].shape) + " and " + shape_text(in[1].shape) +
                           " do not broadcast");
  }
  return std::move(*out);
}

// The (M, K) x (K, N) view of numpy matmul operands; 1-D operands are promoted.
struct MatMulDims {
  std::int64_t m = 1, k = 1, n = 1;
  Dims a_batch, b_batch;
  Shape batch;  // broadcast of a_batch and b_batch
};

std::expected<MatMulDims, std::string> matmul_dims(Dims a, Dims b) {
  if (a.empty() || b.empty()) return invalid(Op::matmul, "scalar operand");
  MatMulDims d;
  d.m = a.size() == 1 ? 1 : a[a.size() - 2];
  d.k = a.back();
  const std::int64_t b_k = b.size() == 1 ? b[0] : b[b.size() - 2];
  d.n = b.size() == 1 ? 1 : b.back();
  if (d.k != b_k) {
    return invalid(Op::matmul, "inner dimensions differ: " + shape_text(a) + " x " + shape_text(b));
  }
  d.a_batch = a.size() > 2 ? a.first(a.size() - 2) : Dims{};
  d.b_batch = b.size() > 2 ? b.first(b.size() - 2) : Dims{};
  auto batch = broadcast_shapes(d.a_batch, d.b_batch);
  if (!batch) {
    return invalid(Op::matmul,
                   "batch dimensions do not broadcast: " + shape_text(a) + " x " + shape_text(b));
  }
  d.batch = std::move(*batch);
  return d;
}

std::expected<Shape, std::string> infer_matmul(std::span<const TensorView> in) {
  if (in.size() != 2) return invalid(Op::matmul, "expected 2 inputs");
  for (const TensorView& t : in) {
    if (auto n = checked_count(Op::matmul, t.shape); !n) {
      return std::unexpected(std::move(n.error()));
    }
  }
  auto d = matmul_dims(in[0].shape, in[1].shape);
  if (!d) return std::unexpected(std::move(d.error()));
  Shape out = d->batch;
  if (in[0].shape.size() != 1) out.push_back(d->m);
  if (in[1].shape.size() != 1) out.push_back(d->n);
  if (auto n = checked_count(Op::matmul, out); !n) return std::unexpected(std::move(n.error()));
  return out;
}

std::expected<Shape, std::string> infer_gemm(std::span<const TensorView> in) {
  if (in.size() != 2 && in.size() != 3) return invalid(Op::gemm, "expected 2 or 3 inputs");
  for (const TensorView& t : in) {
    if (auto n = checked_count(Op::gemm, t.shape); !n) return std::unexpected(std::move(n.error()));
  }
  const Dims a = in[0].shape;
  const Dims b = in[1].shape;
  if (a.size() != 2 || b.size() != 2) {
    return invalid(Op::gemm, "A and B must be 2-D, got " + shape_text(a) + " and " + shape_text(b));
  }
  if (a[1] != b[0]) {
    return invalid(Op::gemm, "inner dimensions differ: " + shape_text(a) + " x " + shape_text(b));
  }
  Shape out = {a[0], b[1]};
  if (in.size() == 3) {
    const Dims c = in[2].shape;
    bool ok = c.size() <= 2;
    for (std::size_t i = 0; ok && i < c.size(); ++i) {
      const std::int64_t target = out[out.size() - c.size() + i];
      ok = c[i] == 1 || c[i] == target;
    }
    if (!ok) {
      return invalid(Op::gemm, "C " + shape_text(c) + " does not broadcast to " + shape_text(out));
    }
  }
  if (auto n = checked_count(Op::gemm, out); !n) return std::unexpected(std::move(n.error()));
  return out;
}

void compute_elementwise(Op op, std::span<const TensorView> in, Dims out_shape, float* out) {
  const auto n = static_cast<std::int64_t>(*element_count(out_shape));
  if (op == Op::relu) {
    const float* x = in[0].data;
    for (std::int64_t i = 0; i < n; ++i) out[i] = x[i] > 0.0f ? x[i] : 0.0f;
    return;
  }
  const bool add = op == Op::add;
  const float* a = in[0].data;
  const float* b = in[1].data;
  if (std::ranges::equal(in[0].shape, in[1].shape)) {
    for (std::int64_t i = 0; i < n; ++i) out[i] = add ? a[i] + b[i] : a[i] * b[i];
    return;
  }
  Odometer walk(out_shape, {in[0].shape, in[1].shape});
  for (std::int64_t i = 0; i < n; ++i, walk.next()) {
    const float x = a[walk.offset(0)];
    const float y = b[walk.offset(1)];
    out[i] = add ? x + y : x * y;
  }
}

// out (m x n) = a (m x k) * b (k x n), row-major, accumulated in double.
void matmul_2d(const float* a, const float* b, std::int64_t m, std::int64_t k, std::int64_t n,
               float* out) {
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      double sum = 0.0;
      for (std::int64_t p = 0; p < k; ++p) {
        sum += static_cast<double>(a[i * k + p]) * static_cast<double>(b[p * n + j]);
      }
      out[i * n + j] = static_cast<float>(sum);
    }
  }
}

void compute_matmul(std::span<const TensorView> in, float* out) {
  const MatMulDims d = *matmul_dims(in[0].shape, in[1].shape);
  const auto batches = static_cast<std::int64_t>(*element_count(d.batch));
  Odometer walk(d.batch, {d.a_batch, d.b_batch});
  for (std::int64_t i = 0; i < batches; ++i, walk.next()) {
    matmul_2d(in[0].data + walk.offset(0) * d.m * d.k, in[1].data + walk.offset(1) * d.k * d.n, d.m,
              d.k, d.n, out + i * d.m * d.n);
  }
}

void compute_gemm(std::span<const TensorView> in, Dims out_shape, float* out) {
  const std::int64_t m = in[0].shape[0];
  const std::int64_t k = in[0].shape[1];
  const std::int64_t n = in[1].shape[1];
  matmul_2d(in[0].data, in[1].data, m, k, n, out);
  if (in.size() == 3) {
    Odometer walk(out_shape, {in[2].shape});
    for (std::int64_t i = 0; i < m * n; ++i, walk.next()) out[i] += in[2].data[walk.offset(0)];
  }
}

}  // namespace

std::string_view op_type_name(Op op) {
  switch (op) {
    case Op::add:
      return "Add";
    case Op::mul:
      return "Mul";
    case Op::relu:
      return "Relu";
    case Op::matmul:
      return "MatMul";
    case Op::gemm:
      return "Gemm";
  }
  return "?";
}

std::optional<Op> op_from_type_name(std::string_view op_type) {
  for (Op op : {Op::add, Op::mul, Op::relu, Op::matmul, Op::gemm}) {
    if (op_type == op_type_name(op)) return op;
  }
  return std::nullopt;
}

std::optional<std::size_t> element_count(std::span<const std::int64_t> shape) {
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  std::uint64_t count = 1;
  for (std::int64_t dim : shape) {
    if (dim < 0) return std::nullopt;
    const auto d = static_cast<std::uint64_t>(dim);
    if (d != 0 && count > kMax / d) return std::nullopt;
    count *= d;
  }
  return static_cast<std::size_t>(count);
}

std::optional<Shape> broadcast_shapes(std::span<const std::int64_t> a,
                                      std::span<const std::int64_t> b) {
  const std::size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    const std::int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    std::int64_t d = 0;
    if (da == db || db == 1) {
      d = da;
    } else if (da == 1) {
      d = db;
    } else {
      return std::nullopt;
    }
    out[rank - 1 - i] = d;
  }
  return out;
}

std::expected<Shape, std::string> infer_output_shape(Op op, std::span<const TensorView> inputs) {
  switch (op) {
    case Op::add:
    case Op::mul:
    case Op::relu:
      return infer_elementwise(op, inputs);
    case Op::matmul:
      return infer_matmul(inputs);
    case Op::gemm:
      return infer_gemm(inputs);
  }
  return std::unexpected("unknown operator");
}

void compute(Op op, std::span<const TensorView> inputs, std::span<const std::int64_t> out_shape,
             float* out) {
  if (element_count(out_shape).value_or(0) == 0) return;
  switch (op) {
    case Op::add:
    case Op::mul:
    case Op::relu:
      compute_elementwise(op, inputs, out_shape, out);
      return;
    case Op::matmul:
      compute_matmul(inputs, out);
      return;
    case Op::gemm:
      compute_gemm(inputs, out_shape, out);
      return;
  }
}

}  // namespace epbroker::test_ep
