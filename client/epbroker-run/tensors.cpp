#include "client/epbroker-run/tensors.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <numeric>
#include <random>

namespace epbroker_run {

namespace {

std::optional<DType> dtype_of(ONNXTensorElementDataType t) {
  switch (t) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT:
      return DType::float32;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32:
      return DType::int32;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64:
      return DType::int64;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8:
      return DType::uint8;
    default:
      return std::nullopt;
  }
}

double get(const Array& a, std::size_t i) {
  const unsigned char* p = a.data.data() + i * dtype_size(a.dtype);
  switch (a.dtype) {
    case DType::float32: {
      float v;
      std::memcpy(&v, p, sizeof v);
      return v;
    }
    case DType::int32: {
      std::int32_t v;
      std::memcpy(&v, p, sizeof v);
      return v;
    }
    case DType::int64: {
      std::int64_t v;
      std::memcpy(&v, p, sizeof v);
      return static_cast<double>(v);
    }
    case DType::uint8:
      return *p;
  }
  return 0;
}

void put(Array& a, std::size_t i, double v) {
  unsigned char* p = a.data.data() + i * dtype_size(a.dtype);
  switch (a.dtype) {
    case DType::float32: {
      const auto f = static_cast<float>(v);
      std::memcpy(p, &f, sizeof f);
      break;
    }
    case DType::int32: {
      const auto n = static_cast<std::int32_t>(v);
      std::memcpy(p, &n, sizeof n);
      break;
    }
    case DType::int64: {
      const auto n = static_cast<std::int64_t>(v);
      std::memcpy(p, &n, sizeof n);
      break;
    }
    case DType::uint8:
      *p = static_cast<unsigned char>(v);
      break;
  }
}

// Whether `v` is exactly representable in `t` (integers: integral and in range).
bool fits(double v, DType t) {
  switch (t) {
    case DType::float32:
      return true;
    case DType::int32:
      return std::trunc(v) == v && v >= -2147483648.0 && v <= 2147483647.0;
    case DType::int64:
      return std::trunc(v) == v && std::fabs(v) < 9.007199254740992e15;
    case DType::uint8:
      return std::trunc(v) == v && v >= 0 && v <= 255;
  }
  return false;
}

// `a` converted to `t` when every value fits.
std::expected<Array, std::string> convert(const Array& a, DType t) {
  Array out{t, a.shape, std::vector<unsigned char>(a.elements() * dtype_size(t))};
  for (std::size_t i = 0; i < a.elements(); ++i) {
    const double v = get(a, i);
    if (!fits(v, t)) {
      return std::unexpected("element " + std::to_string(i) + " (" + std::to_string(v) +
                             ") does not fit " + dtype_name(t));
    }
    put(out, i, v);
  }
  return out;
}

Array random_array(DType t, const std::vector<std::int64_t>& shape, std::mt19937& gen) {
  Array a{t, shape, {}};
  a.data.resize(a.elements() * dtype_size(t));
  std::uniform_real_distribution<float> real(0.0F, 1.0F);
  std::uniform_int_distribution<int> byte(0, 255);
  for (std::size_t i = 0; i < a.elements(); ++i) {
    put(a, i, t == DType::float32 ? static_cast<double>(real(gen)) : byte(gen));
  }
  return a;
}

std::vector<TensorInfo> infos(const Ort::Session& s, bool inputs) {
  std::vector<TensorInfo> out;
  Ort::AllocatorWithDefaultOptions alloc;
  const std::size_t n = inputs ? s.GetInputCount() : s.GetOutputCount();
  for (std::size_t i = 0; i < n; ++i) {
    TensorInfo t;
    t.name =
        (inputs ? s.GetInputNameAllocated(i, alloc) : s.GetOutputNameAllocated(i, alloc)).get();
    const Ort::TypeInfo type = inputs ? s.GetInputTypeInfo(i) : s.GetOutputTypeInfo(i);
    if (type.GetONNXType() == ONNX_TYPE_TENSOR) {
      const auto tensor = type.GetTensorTypeAndShapeInfo();
      t.type = tensor.GetElementType();
      t.shape = tensor.GetShape();
    }
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace

std::string type_name(ONNXTensorElementDataType type) {
  switch (type) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT:
      return "float32";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE:
      return "float64";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16:
      return "float16";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8:
      return "int8";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8:
      return "uint8";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32:
      return "int32";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64:
      return "int64";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL:
      return "bool";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING:
      return "string";
    default:
      return "type " + std::to_string(static_cast<int>(type));
  }
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    out += (i > 0 ? "," : "") + (shape[i] < 0 ? std::string("?") : std::to_string(shape[i]));
  }
  return out + "]";
}

std::vector<TensorInfo> model_inputs(const Ort::Session& session) { return infos(session, true); }
std::vector<TensorInfo> model_outputs(const Ort::Session& session) { return infos(session, false); }

std::expected<std::vector<InputData>, std::string> prepare_inputs(
    const std::vector<TensorInfo>& inputs, const Options& options) {
  for (const auto& spec : options.inputs) {
    if (std::none_of(inputs.begin(), inputs.end(),
                     [&](const TensorInfo& t) { return t.name == spec.name; })) {
      std::string names;
      for (const auto& t : inputs) names += (names.empty() ? "" : ", ") + t.name;
      return std::unexpected("--input " + spec.name +
                             ": the model has no such input (it has: " + names + ")");
    }
  }
  std::mt19937 gen(42);  // the same random inputs on every run: comparable results
  std::vector<InputData> out;
  for (const auto& info : inputs) {
    const std::string where =
        "input '" + info.name + "' " + type_name(info.type) + shape_text(info.shape);
    const auto dtype = dtype_of(info.type);
    if (!dtype) {
      return std::unexpected(where +
                             ": epbroker-run can feed only float32, int32, int64 and "
                             "uint8 inputs");
    }
    const auto spec = std::find_if(options.inputs.begin(), options.inputs.end(),
                                   [&](const InputSpec& s) { return s.name == info.name; });
    InputData d{info, {}, "random"};
    if (spec == options.inputs.end() || spec->random) {
      // Dynamic dimensions: the first is the batch, the others 1.
      for (std::size_t i = 0; i < d.info.shape.size(); ++i) {
        if (d.info.shape[i] < 0) d.info.shape[i] = i == 0 ? options.batch : 1;
      }
      d.array = random_array(*dtype, d.info.shape, gen);
      out.push_back(std::move(d));
      continue;
    }
    auto array = read_npy(spec->file);
    if (!array) return std::unexpected("--input " + info.name + ": " + array.error());
    d.source = spec->file.string();
    if (array->dtype != *dtype) {
      auto converted = convert(*array, *dtype);
      if (!converted) {
        return std::unexpected("--input " + info.name + ": " + spec->file.string() + " holds " +
                               dtype_name(array->dtype) + ", the input is " + type_name(info.type) +
                               ", and " + converted.error() + "; save it as " + dtype_name(*dtype));
      }
      d.source += std::string(" (converted from ") + dtype_name(array->dtype) + ")";
      array = std::move(converted);
    }
    // Repeat a batch of one to --batch.
    if (options.batch_set && options.batch > 1 && !array->shape.empty() && array->shape[0] == 1) {
      const auto one = array->data;
      for (std::int64_t b = 1; b < options.batch; ++b) {
        array->data.insert(array->data.end(), one.begin(), one.end());
      }
      array->shape[0] = options.batch;
      d.source += " x" + std::to_string(options.batch);
    }
    bool ok = array->shape.size() == info.shape.size();
    for (std::size_t i = 0; ok && i < info.shape.size(); ++i) {
      ok = info.shape[i] < 0 || info.shape[i] == array->shape[i];
    }
    if (!ok) {
      return std::unexpected("--input " + info.name + ": " + spec->file.string() + " has shape " +
                             shape_text(array->shape) + ", the model wants " +
                             shape_text(info.shape) + " (? = any size)");
    }
    d.info.shape = array->shape;
    d.array = std::move(*array);
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<Ort::Value> as_values(std::vector<InputData>& inputs) {
  const Ort::MemoryInfo mem = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
  std::vector<Ort::Value> out;
  for (auto& in : inputs) {
    out.push_back(Ort::Value::CreateTensor(mem, in.array.data.data(), in.array.data.size(),
                                           in.info.shape.data(), in.info.shape.size(),
                                           in.info.type));
  }
  return out;
}

std::vector<std::int64_t> shape_of(const Ort::Value& value) {
  if (!value.IsTensor()) return {};
  return value.GetTensorTypeAndShapeInfo().GetShape();
}

std::expected<std::vector<double>, std::string> as_doubles(const Ort::Value& value) {
  if (!value.IsTensor()) return std::unexpected("not a tensor");
  const auto info = value.GetTensorTypeAndShapeInfo();
  const std::size_t n = info.GetElementCount();
  std::vector<double> out(n);
  const void* raw = value.GetTensorRawData();
  auto copy = [&](auto tag) {
    using T = decltype(tag);
    const auto* p = static_cast<const T*>(raw);
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<double>(p[i]);
  };
  switch (info.GetElementType()) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT:
      copy(float{});
      break;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE:
      copy(double{});
      break;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8:
      copy(std::int8_t{});
      break;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8:
      copy(std::uint8_t{});
      break;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32:
      copy(std::int32_t{});
      break;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64:
      copy(std::int64_t{});
      break;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL:
      copy(bool{});
      break;
    default:
      return std::unexpected(type_name(info.GetElementType()) + " is not compared");
  }
  return out;
}

Difference compare(const std::vector<Ort::Value>& got, const std::vector<Ort::Value>& reference,
                   double atol, double rtol) {
  Difference d;
  if (got.size() != reference.size()) {
    d.within = false;
    d.note = "different output counts";
    return d;
  }
  for (std::size_t o = 0; o < got.size(); ++o) {
    auto a = as_doubles(got[o]);
    auto b = as_doubles(reference[o]);
    if (!a || !b) {
      d.note += (d.note.empty() ? "" : "; ") + std::string("output ") + std::to_string(o) + ": " +
                (!a ? a.error() : b.error());
      continue;
    }
    if (shape_of(got[o]) != shape_of(reference[o])) {
      d.within = false;
      d.note += (d.note.empty() ? "" : "; ") + std::string("output ") + std::to_string(o) +
                ": shapes differ";
      continue;
    }
    for (std::size_t i = 0; i < a->size(); ++i) {
      const double x = (*a)[i];
      const double y = (*b)[i];
      if (std::isnan(x) || std::isnan(y)) {
        if (std::isnan(x) != std::isnan(y)) d.within = false;
        continue;
      }
      const double diff = std::fabs(x - y);
      d.max_abs = std::max(d.max_abs, diff);
      if (std::fabs(y) > atol) d.max_rel = std::max(d.max_rel, diff / std::fabs(y));
      if (diff > atol + rtol * std::fabs(y)) d.within = false;
    }
  }
  return d;
}

std::vector<Scored> top_k(const std::vector<double>& scores, std::size_t row, std::size_t k,
                          const std::vector<std::string>& labels, bool& applied_softmax) {
  std::vector<double> p(scores.begin(),
                        scores.begin() + static_cast<std::ptrdiff_t>(std::min(row, scores.size())));
  const double sum = std::accumulate(p.begin(), p.end(), 0.0);
  const bool probabilities =
      std::fabs(sum - 1.0) <= 1e-3 &&
      std::all_of(p.begin(), p.end(), [](double v) { return v >= 0 && v <= 1; });
  applied_softmax = !probabilities;
  if (applied_softmax && !p.empty()) {
    const double m = *std::max_element(p.begin(), p.end());
    double total = 0;
    for (auto& v : p) total += (v = std::exp(v - m));
    for (auto& v : p) v /= total;
  }
  std::vector<std::size_t> idx(p.size());
  std::iota(idx.begin(), idx.end(), std::size_t{0});
  k = std::min(k, idx.size());
  std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(k), idx.end(),
                    [&](std::size_t x, std::size_t y) { return p[x] > p[y]; });
  std::vector<Scored> out;
  for (std::size_t i = 0; i < k; ++i) {
    const std::size_t j = idx[i];
    out.push_back(Scored{j, j < labels.size() ? labels[j] : "#" + std::to_string(j), p[j]});
  }
  return out;
}

std::expected<std::vector<std::string>, std::string> read_labels(
    const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) return std::unexpected(file.string() + ": cannot open (" + std::strerror(errno) + ")");
  std::vector<std::string> out;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    out.push_back(line);
  }
  while (!out.empty() && out.back().empty()) out.pop_back();
  if (out.empty()) return std::unexpected(file.string() + ": no labels (one label per line)");
  return out;
}

}  // namespace epbroker_run
