// Model inputs and outputs for epbroker-run: what the model declares, input data
// (from .npy files or random), outputs as numbers, comparison and top-K.
#pragma once

#include <onnxruntime_cxx_api.h>

#include <cstdint>
#include <expected>
#include <filesystem>
#include <string>
#include <vector>

#include "client/epbroker-run/args.hpp"
#include "client/epbroker-run/npy.hpp"

namespace epbroker_run {

// One declared input or output; shape has -1 for dynamic dimensions.
struct TensorInfo {
  std::string name;
  ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  std::vector<std::int64_t> shape;
};

// "float32", "int64", ... (ONNX's names); "type N" for others.
std::string type_name(ONNXTensorElementDataType type);
// "[N,2048]" with dynamic dimensions as their symbolic name or "?".
std::string shape_text(const std::vector<std::int64_t>& shape);

std::vector<TensorInfo> model_inputs(const Ort::Session& session);
std::vector<TensorInfo> model_outputs(const Ort::Session& session);

// An input ready to feed: the data and where it came from.
struct InputData {
  TensorInfo info;     // with the shape actually fed
  Array array;         // in the input's element type
  std::string source;  // "random", "file.npy", "file.npy (converted from int64)", ...
};

// The data for every model input: from --input files (converted to the input's
// type when every value fits, tiled along a first dimension of 1 to --batch),
// random for the rest. Error messages name the input and what to do.
std::expected<std::vector<InputData>, std::string> prepare_inputs(
    const std::vector<TensorInfo>& inputs, const Options& options);

// Ort values over the data (which must outlive them).
std::vector<Ort::Value> as_values(std::vector<InputData>& inputs);

// An output's elements as doubles; an error for types that are not numbers.
std::expected<std::vector<double>, std::string> as_doubles(const Ort::Value& value);
std::vector<std::int64_t> shape_of(const Ort::Value& value);

struct Difference {
  double max_abs = 0;
  double max_rel = 0;  // over elements with |reference| > atol
  bool within = true;  // every |a-b| <= atol + rtol*|b|, and equal shapes and NaNs
  std::string note;    // e.g. why an output could not be compared
};

// Compares outputs (same order) against the reference outputs.
Difference compare(const std::vector<Ort::Value>& got, const std::vector<Ort::Value>& reference,
                   double atol, double rtol);

struct Scored {
  std::size_t index = 0;
  std::string label;
  double score = 0;
};

// The top `k` of `scores` (the first row: the first `row` values); softmax first
// unless they already look like probabilities (in [0,1], summing to 1 within 1e-3).
// `applied_softmax` says which.
std::vector<Scored> top_k(const std::vector<double>& scores, std::size_t row, std::size_t k,
                          const std::vector<std::string>& labels, bool& applied_softmax);

// One label per line (trailing '\r' and blank last line dropped).
std::expected<std::vector<std::string>, std::string> read_labels(const std::filesystem::path& file);

}  // namespace epbroker_run
