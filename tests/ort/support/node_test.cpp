#include "tests/ort/support/node_test.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <map>
#include <sstream>
#include <system_error>
#include <utility>

#ifndef EPBROKER_ONNX_TESTDATA
#define EPBROKER_ONNX_TESTDATA "/usr/share/libonnx-testdata/data"
#endif

namespace tests::ort {

namespace {

namespace fs = std::filesystem;

// Files named <prefix><N>.pb in `dir`, ordered by N; N must run 0..count-1.
std::expected<std::vector<fs::path>, std::string> numbered(const fs::path& dir,
                                                           const std::string& prefix) {
  std::map<std::size_t, fs::path> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(prefix) || !name.ends_with(".pb")) continue;
    const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - 3);
    if (digits.empty() || digits.size() > 6 ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      continue;
    }
    found.emplace(static_cast<std::size_t>(std::stoul(digits)), entry.path());
  }
  if (ec) return std::unexpected(dir.string() + ": " + ec.message());
  std::vector<fs::path> out;
  for (auto& [n, p] : found) {
    if (n != out.size()) {
      return std::unexpected(dir.string() + ": " + prefix + std::to_string(out.size()) +
                             ".pb is missing");
    }
    out.push_back(p);
  }
  return out;
}

std::expected<std::vector<Tensor>, std::string> load_all(const std::vector<fs::path>& files) {
  std::vector<Tensor> out;
  for (const auto& f : files) {
    auto t = load_tensor_proto(f);
    if (!t) return std::unexpected(t.error());
    out.push_back(std::move(*t));
  }
  return out;
}

// float16 / bfloat16 bits to float.
float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = (h >> 15) & 1U;
  const std::uint32_t exp = (h >> 10) & 0x1fU;
  const std::uint32_t mant = h & 0x3ffU;
  float v = 0;
  if (exp == 0) {
    v = std::ldexp(static_cast<float>(mant), -24);
  } else if (exp == 31) {
    v = mant == 0 ? std::numeric_limits<float>::infinity()
                  : std::numeric_limits<float>::quiet_NaN();
  } else {
    v = std::ldexp(static_cast<float>(mant | 0x400U), static_cast<int>(exp) - 25);
  }
  return sign != 0 ? -v : v;
}

float bfloat_to_float(std::uint16_t b) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

// Element i as double (floating types) or as exact integers (others).
double float_at(const Tensor& t, std::size_t i) {
  const std::byte* p = t.bytes.data() + i * element_size(t.type);
  switch (t.type) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT: {
      float v;
      std::memcpy(&v, p, sizeof v);
      return static_cast<double>(v);
    }
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE: {
      double v;
      std::memcpy(&v, p, sizeof v);
      return v;
    }
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16: {
      std::uint16_t v;
      std::memcpy(&v, p, sizeof v);
      return static_cast<double>(
          t.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16 ? half_to_float(v) : bfloat_to_float(v));
    }
    default:
      return 0;
  }
}

bool is_floating(ONNXTensorElementDataType type) {
  return type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT ||
         type == ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE ||
         type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16 ||
         type == ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16;
}

bool is_signed_int(ONNXTensorElementDataType type) {
  return type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8 ||
         type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16 ||
         type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32 || type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64;
}

// Integers and bools as text, for messages (sign-extended for signed types).
std::string int_at(const Tensor& t, std::size_t i) {
  const std::size_t size = element_size(t.type);
  std::uint64_t bits = 0;
  std::memcpy(&bits, t.bytes.data() + i * size, size);  // little-endian host
  if (is_signed_int(t.type) && size < 8) {
    const unsigned shift = static_cast<unsigned>(64 - 8 * size);
    return std::to_string(std::bit_cast<std::int64_t>(bits << shift) >> shift);
  }
  if (is_signed_int(t.type)) return std::to_string(std::bit_cast<std::int64_t>(bits));
  return std::to_string(bits);
}

std::string coordinates(const std::vector<std::int64_t>& dims, std::size_t flat) {
  std::vector<std::int64_t> idx(dims.size());
  for (std::size_t d = dims.size(); d-- > 0;) {
    const auto extent = static_cast<std::size_t>(dims[d]);
    if (extent == 0) break;
    idx[d] = static_cast<std::int64_t>(flat % extent);
    flat /= extent;
  }
  return dims_string(idx);
}

std::string describe(const Tensor& t) {
  return "'" + t.name + "' " + type_name(t.type) + dims_string(t.dims);
}

std::string number(double v) {
  std::ostringstream s;
  s.precision(9);
  s << v;
  return s.str();
}

}  // namespace

std::expected<TestCase, std::string> load_test_case(const std::filesystem::path& dir) {
  TestCase tc{dir, {}};
  std::error_code ec;
  if (!fs::is_regular_file(tc.model(), ec)) {
    return std::unexpected(tc.model().string() + ": not found");
  }
  std::vector<std::pair<std::size_t, fs::path>> sets;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    constexpr std::string_view kPrefix = "test_data_set_";
    std::error_code entry_ec;
    if (!entry.is_directory(entry_ec) || !name.starts_with(kPrefix)) continue;
    const std::string digits = name.substr(kPrefix.size());
    if (digits.empty() || digits.size() > 6 ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      continue;
    }
    sets.emplace_back(static_cast<std::size_t>(std::stoul(digits)), entry.path());
  }
  if (ec) return std::unexpected(dir.string() + ": " + ec.message());
  if (sets.empty()) return std::unexpected(dir.string() + ": no test_data_set_N directories");
  std::sort(sets.begin(), sets.end());
  for (const auto& [n, set_dir] : sets) {
    DataSet ds{set_dir, {}, {}};
    auto inputs = numbered(set_dir, "input_");
    if (!inputs) return std::unexpected(inputs.error());
    auto outputs = numbered(set_dir, "output_");
    if (!outputs) return std::unexpected(outputs.error());
    if (outputs->empty()) return std::unexpected(set_dir.string() + ": no output_N.pb");
    auto in = load_all(*inputs);
    if (!in) return std::unexpected(in.error());
    auto out = load_all(*outputs);
    if (!out) return std::unexpected(out.error());
    ds.inputs = std::move(*in);
    ds.outputs = std::move(*out);
    tc.data_sets.push_back(std::move(ds));
  }
  return tc;
}

Ort::Value as_ort_value(const Tensor& t) {
  static const Ort::MemoryInfo cpu =
      Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
  // An empty tensor still needs a valid pointer.
  static std::byte empty[16];
  void* data = t.bytes.empty() ? static_cast<void*>(empty)
                               : const_cast<void*>(static_cast<const void*>(t.bytes.data()));
  return Ort::Value::CreateTensor(cpu, data, t.bytes.size(), t.dims.data(), t.dims.size(), t.type);
}

std::expected<Tensor, std::string> to_tensor(const Ort::Value& value, std::string name) {
  if (!value.IsTensor()) return std::unexpected("output '" + name + "' is not a tensor");
  if (value.GetTensorMemoryInfo().GetDeviceType() != OrtMemoryInfoDeviceType_CPU) {
    return std::unexpected("output '" + name + "' is not in CPU memory");
  }
  const auto info = value.GetTensorTypeAndShapeInfo();
  Tensor t;
  t.name = std::move(name);
  t.type = info.GetElementType();
  t.dims = info.GetShape();
  const std::size_t esize = element_size(t.type);
  if (esize == 0) return std::unexpected("output " + describe(t) + ": unsupported element type");
  const std::size_t count = info.GetElementCount();
  if (count != t.element_count()) {
    return std::unexpected("output " + describe(t) + ": element count disagrees with shape");
  }
  t.bytes.resize(count * esize);
  if (count != 0) std::memcpy(t.bytes.data(), value.GetTensorRawData(), t.bytes.size());
  return t;
}

std::expected<std::vector<Tensor>, std::string> run_session(Ort::Session& session,
                                                            const std::vector<Tensor>& inputs) {
  try {
    const std::vector<std::string> input_names = session.GetInputNames();
    const std::vector<std::string> output_names = session.GetOutputNames();
    if (input_names.size() != inputs.size()) {
      return std::unexpected("the model has " + std::to_string(input_names.size()) +
                             " inputs, the test gives " + std::to_string(inputs.size()));
    }
    std::vector<Ort::Value> values;
    std::vector<const char*> in_names;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      values.push_back(as_ort_value(inputs[i]));
      in_names.push_back(input_names[i].c_str());
    }
    std::vector<const char*> out_names;
    for (const auto& n : output_names) out_names.push_back(n.c_str());
    std::vector<Ort::Value> results =
        session.Run(Ort::RunOptions{nullptr}, in_names.data(), values.data(), values.size(),
                    out_names.data(), out_names.size());
    std::vector<Tensor> out;
    for (std::size_t i = 0; i < results.size(); ++i) {
      auto t = to_tensor(results[i], output_names[i]);
      if (!t) return std::unexpected(t.error());
      out.push_back(std::move(*t));
    }
    return out;
  } catch (const Ort::Exception& e) {
    return std::unexpected(std::string("ORT: ") + e.what());
  }
}

std::optional<std::string> compare_tensors(const Tensor& expected, const Tensor& actual,
                                           Tolerance tolerance) {
  if (expected.type != actual.type || expected.dims != actual.dims) {
    return "expected " + describe(expected) + ", got " + describe(actual);
  }
  const std::size_t esize = element_size(expected.type);
  const std::size_t count = expected.element_count();
  if (esize == 0) return "cannot compare " + describe(expected);
  if (expected.bytes.size() != count * esize || actual.bytes.size() != count * esize) {
    return "byte size disagrees with the shape of " + describe(expected);
  }
  const auto where = [&](std::size_t i) {
    return "output " + describe(expected) + " element " + std::to_string(i) + " at " +
           coordinates(expected.dims, i) + ": ";
  };
  if (!is_floating(expected.type)) {
    for (std::size_t i = 0; i < count; ++i) {
      if (std::memcmp(expected.bytes.data() + i * esize, actual.bytes.data() + i * esize, esize) !=
          0) {
        return where(i) + "expected " + int_at(expected, i) + ", got " + int_at(actual, i);
      }
    }
    return std::nullopt;
  }
  for (std::size_t i = 0; i < count; ++i) {
    const double e = float_at(expected, i);
    const double a = float_at(actual, i);
    if (std::isnan(e) || std::isnan(a)) {
      if (std::isnan(e) && std::isnan(a)) continue;
    } else if (std::isinf(e) || std::isinf(a)) {
      if (e == a) continue;
    } else {
      const double allowed = tolerance.atol + tolerance.rtol * std::fabs(e);
      if (std::fabs(a - e) <= allowed) continue;
    }
    return where(i) + "expected " + number(e) + ", got " + number(a) + " (|diff| " +
           number(std::fabs(a - e)) + " > atol " + number(tolerance.atol) + " + rtol " +
           number(tolerance.rtol) + " * |expected|)";
  }
  return std::nullopt;
}

std::optional<std::string> compare_outputs(const std::vector<Tensor>& expected,
                                           const std::vector<Tensor>& actual, Tolerance tolerance) {
  if (expected.size() != actual.size()) {
    return "expected " + std::to_string(expected.size()) + " outputs, got " +
           std::to_string(actual.size());
  }
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (auto m = compare_tensors(expected[i], actual[i], tolerance)) {
      return "output " + std::to_string(i) + ": " + *m;
    }
  }
  return std::nullopt;
}

RunResult run_case(Ort::Env& env, const std::filesystem::path& dir, const Configure& configure,
                   Tolerance tolerance) {
  RunResult result;
  auto tc = load_test_case(dir);
  if (!tc) {
    result.message = "loading " + dir.string() + ": " + tc.error();
    return result;
  }
  std::optional<Ort::Session> session;
  try {
    Ort::SessionOptions options;
    if (configure) configure(options);
    session.emplace(env, tc->model().c_str(), options);
  } catch (const std::exception& e) {
    result.message = tc->name() + ": creating the session: " + e.what();
    return result;
  }
  for (const DataSet& ds : tc->data_sets) {
    const std::string set_name = tc->name() + "/" + ds.dir.filename().string();
    auto outputs = run_session(*session, ds.inputs);
    if (!outputs) {
      result.message = set_name + ": " + outputs.error();
      return result;
    }
    if (auto mismatch = compare_outputs(ds.outputs, *outputs, tolerance)) {
      result.message = set_name + ": " + *mismatch;
      return result;
    }
    ++result.data_sets;
  }
  result.passed = true;
  return result;
}

std::filesystem::path onnx_testdata_root() {
  if (const char* env = std::getenv("EPBROKER_ONNX_TESTDATA"); env != nullptr && *env != 0) {
    return env;
  }
  return EPBROKER_ONNX_TESTDATA;
}

std::vector<std::filesystem::path> list_test_dirs(const std::filesystem::path& root,
                                                  std::string_view pattern) {
  std::vector<fs::path> out;
  const std::string pat(pattern);
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    std::error_code entry_ec;
    if (!entry.is_directory(entry_ec)) continue;
    const std::string name = entry.path().filename().string();
    if (fnmatch(pat.c_str(), name.c_str(), 0) != 0) continue;
    if (!fs::is_regular_file(entry.path() / "model.onnx", entry_ec)) continue;
    out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> test_ep_node_cases() {
  const std::filesystem::path node = onnx_testdata_root() / "node";
  std::vector<std::string> out;
  for (const char* name : {"test_add", "test_add_bcast", "test_mul", "test_mul_bcast", "test_relu",
                           "test_matmul_2d", "test_matmul_3d", "test_matmul_4d"}) {
    out.push_back((node / name).string());
  }
  // All six have Gemm's default attributes (alpha = beta = 1, no transposes), which is
  // what test-ep claims.
  for (const auto& d : list_test_dirs(node, "test_gemm_default_*")) out.push_back(d.string());
  return out;
}

Ort::Env& test_env() {
  static Ort::Env env = [] {
    OrtLoggingLevel level = ORT_LOGGING_LEVEL_ERROR;
    if (const char* v = std::getenv("EPBROKER_ORT_LOG_LEVEL"); v != nullptr) {
      const std::string_view s(v);
      if (s == "verbose") level = ORT_LOGGING_LEVEL_VERBOSE;
      if (s == "info") level = ORT_LOGGING_LEVEL_INFO;
      if (s == "warning") level = ORT_LOGGING_LEVEL_WARNING;
      if (s == "fatal") level = ORT_LOGGING_LEVEL_FATAL;
    }
    return Ort::Env(level, "epbroker-tests");
  }();
  return env;
}

std::string test_param_name(const std::filesystem::path& dir) {
  std::string name = dir.filename().string();
  for (char& c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!ok) c = '_';
  }
  return name;
}

}  // namespace tests::ort
