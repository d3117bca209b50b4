// ONNX backend test cases (a directory holding model.onnx and test_data_set_N/ with
// input_K.pb / output_K.pb) run through a real ORT session, outputs compared the way
// ONNX's backend tests compare them.
#pragma once

#include <onnxruntime_cxx_api.h>

#include <cstddef>
#include <expected>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tests/ort/support/tensor_proto.hpp"

namespace tests::ort {

// |actual - expected| <= atol + rtol * |expected| (numpy.isclose with `expected` as the
// reference, as onnx.backend.test uses it). Integer and bool outputs compare exactly;
// NaN equals NaN; infinities must match exactly.
struct Tolerance {
  double rtol = 1e-3;
  double atol = 1e-7;
};

struct DataSet {
  std::filesystem::path dir;    // .../test_data_set_N
  std::vector<Tensor> inputs;   // input_0.pb, input_1.pb, ... (model input order)
  std::vector<Tensor> outputs;  // output_0.pb, ...          (model output order)
};

struct TestCase {
  std::filesystem::path dir;
  std::vector<DataSet> data_sets;  // sorted by N

  std::filesystem::path model() const { return dir / "model.onnx"; }
  std::string name() const { return dir.filename().string(); }
};

// Loads model path and every data set of a backend test directory. A directory without
// model.onnx or without data sets, or an unreadable .pb, is an error.
std::expected<TestCase, std::string> load_test_case(const std::filesystem::path& dir);

struct RunResult {
  bool passed = false;
  std::string message;        // empty when passed; otherwise the first failure, readable
  std::size_t data_sets = 0;  // data sets that ran and matched
  explicit operator bool() const { return passed; }
};

// Configures the session options of one run (EPs, config entries, logging ...).
using Configure = std::function<void(Ort::SessionOptions&)>;

// Creates a session for dir/model.onnx with options set by `configure` (nothing: the
// CPU EP), runs every data set, compares every output (type, shape, values) with
// output_K.pb. Any exception (session creation, configure, Run) becomes a failed result.
RunResult run_case(Ort::Env& env, const std::filesystem::path& dir, const Configure& configure = {},
                   Tolerance tolerance = {});

// --- Building blocks, for tests that build their own sessions (e.g. from model bytes).

// A tensor Ort::Value over CPU memory borrowed from `t` (keep `t` alive and unmoved
// while the value is used). Throws Ort::Exception.
Ort::Value as_ort_value(const Tensor& t);

// Copies a tensor value in CPU memory (as Run returns outputs) into a Tensor named
// `name`; a value in device memory is an error.
std::expected<Tensor, std::string> to_tensor(const Ort::Value& value, std::string name);

// Feeds inputs[i] to the session's i-th input (by its name), runs, returns every output
// (named after the session's outputs).
std::expected<std::vector<Tensor>, std::string> run_session(Ort::Session& session,
                                                            const std::vector<Tensor>& inputs);

// nullopt when `actual` matches `expected` within `tolerance`; otherwise a message
// naming the first mismatching element (flat index and coordinates).
std::optional<std::string> compare_tensors(const Tensor& expected, const Tensor& actual,
                                           Tolerance tolerance = {});

// Same for lists (count first, then each tensor by position).
std::optional<std::string> compare_outputs(const std::vector<Tensor>& expected,
                                           const std::vector<Tensor>& actual,
                                           Tolerance tolerance = {});

// --- Locating test data.

// The ONNX backend test data root (holding node/, pytorch-converted/, ...): the
// EPBROKER_ONNX_TESTDATA environment variable, else the path CMake compiled in
// (/usr/share/libonnx-testdata/data from Debian's libonnx-testdata).
std::filesystem::path onnx_testdata_root();

// Test directories directly under `root` whose name matches the shell glob `pattern`
// (fnmatch) and which hold a model.onnx, sorted by name. Missing root: empty.
std::vector<std::filesystem::path> list_test_dirs(const std::filesystem::path& root,
                                                  std::string_view pattern);

// A process-wide Ort::Env (ORT keeps one per process), id "epbroker-tests", logging at
// ERROR unless EPBROKER_ORT_LOG_LEVEL is verbose, info, warning or fatal. Plugin EP
// registrations made on it last until unregistered or the process ends.
Ort::Env& test_env();

// The ONNX node test directories (EPBROKER_ONNX_TESTDATA/node/...) whose every
// node test-ep takes: Add, Mul, Relu, MatMul (with broadcasting) and Gemm with its
// default attributes; 14 in the bookworm data.
std::vector<std::string> test_ep_node_cases();

// A GoogleTest-safe parameter name for a test directory ("test_add_bcast").
std::string test_param_name(const std::filesystem::path& dir);

}  // namespace tests::ort
