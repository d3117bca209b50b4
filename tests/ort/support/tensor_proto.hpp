// A minimal, bounds-checked decoder for onnx.TensorProto (the input_K.pb / output_K.pb
// files of ONNX backend test data), without a protobuf library.
//
// Reads dims (1, packed or not), data_type (2), float_data (4), int32_data (5),
// int64_data (7), name (8), raw_data (9), double_data (10), uint64_data (11) and
// data_location (14, EXTERNAL is refused); every other field is skipped by wire type.
// Malformed input (truncated varints or lengths, wrong wire types, element counts that
// disagree with dims, values out of range for the element type) is an error, never UB.
#pragma once

#include <onnxruntime_cxx_api.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <expected>
#include <filesystem>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace tests::ort {

// A dense tensor in host (little-endian) byte order, row-major.
struct Tensor {
  std::string name;
  ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  std::vector<std::int64_t> dims;  // empty: a scalar
  std::vector<std::byte> bytes;    // element_count() * element_size(type) bytes

  // Product of dims (1 for a scalar).
  std::size_t element_count() const;

  // The elements as T (sizeof(T) must equal element_size(type); checked, throws
  // std::logic_error on a mismatch).
  template <typename T>
  std::vector<T> values() const {
    static_assert(std::is_trivially_copyable_v<T>);
    check_element_size(sizeof(T));
    std::vector<T> out(bytes.size() / sizeof(T));
    if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
    return out;
  }

  // Builds a tensor from typed values; `type` must have element size sizeof(T).
  template <typename T>
  static Tensor from_values(std::string name, ONNXTensorElementDataType type,
                            std::vector<std::int64_t> dims, const std::vector<T>& values) {
    static_assert(std::is_trivially_copyable_v<T>);
    Tensor t{std::move(name), type, std::move(dims), {}};
    t.check_element_size(sizeof(T));
    t.bytes.resize(values.size() * sizeof(T));
    if (!values.empty()) std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
    return t;
  }

 private:
  void check_element_size(std::size_t size) const;
};

// Bytes per element of a supported fixed-size type; 0 for anything else (STRING,
// UNDEFINED, sub-byte and 8-bit float types).
std::size_t element_size(ONNXTensorElementDataType type);

// "float", "int64", ... ("type N" for others), for messages.
std::string type_name(ONNXTensorElementDataType type);

// "[2,3,4]".
std::string dims_string(const std::vector<std::int64_t>& dims);

// Decodes one serialized onnx.TensorProto.
std::expected<Tensor, std::string> parse_tensor_proto(std::string_view bytes);

// Reads and decodes a .pb file (at most 1 GiB).
std::expected<Tensor, std::string> load_tensor_proto(const std::filesystem::path& file);

}  // namespace tests::ort
