// Model metadata: what a catalog publisher says about one signed ML model, carried
// like EP metadata in custom["epbroker"] of the model's TUF target (EP metadata
// schema 2, kind "model"; see catalog/ep_metadata.hpp).
//
// A model is published as one target per version, "NAME/<anything>", whose
// custom["epbroker"] is this metadata, plus one content-addressed target per file,
// model_blob_path(NAME, sha256) = "NAME/blobs/<sha256>" (so, as for EP packages,
// only a role trusted for "NAME/*" can publish a model named NAME or its files;
// catalog/name_binding.hpp). A model has 1..16 variants (e.g. fp32 for any
// device, int8 for one NPU's EP), each a set of files with one main .onnx file;
// variants may share files.
//
//   {"epbroker": {"schema": 2, "kind": "model", "name": "resnet50", "version": "1.0",
//     "publisher": "...", "license": "Apache-2.0", "license_url": "https://...",
//     "task": "image-classification",
//     "inputs": [{"name": "data", "type": "float", "shape": ["N", 3, 224, 224]}],
//     "outputs": [{"name": "prob", "type": "float", "shape": ["N", 1000]}],
//     "variants": [{"id": "fp32", "ort_min": "1.20", "opset": 17, "main": "model.onnx",
//                   "files": [{"path": "model.onnx", "size": 123, "sha256": "<64 hex>"}]}]}}
//
// Parsing is strict like EP metadata: every field typed, bounded and checked,
// unknown keys are errors naming their field path, and the keys of EP packages
// (ep_names, vendor, arch, library, supports, requires) are refused in a model.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "catalog/device_type.hpp"
#include "catalog/error.hpp"
#include "catalog/version.hpp"

namespace catalog {

// The schema of model metadata (EP metadata schema 2; models need it).
inline constexpr int kModelMetadataSchema = 2;

// Bounds of the format (lengths in characters; every field except `publisher` and
// `description` is ASCII-only, so there it is also bytes).
inline constexpr std::size_t kMaxModelPublisherLength = 128;
inline constexpr std::size_t kMaxLicenseLength = 128;
inline constexpr std::size_t kMaxLicenseUrlLength = 512;
inline constexpr std::size_t kMaxModelDescriptionLength = 1024;
inline constexpr std::size_t kMaxTaskLength = 64;
inline constexpr std::size_t kMaxModelTensors = 64;  // inputs, and outputs
inline constexpr std::size_t kMaxTensorNameLength = 128;
inline constexpr std::size_t kMaxTensorRank = 16;
inline constexpr std::size_t kMaxDimSymbolLength = 64;
inline constexpr std::uint64_t kMaxDimSize = (std::uint64_t{1} << 63) - 1;  // ONNX dims are int64
inline constexpr std::size_t kMaxModelVariants = 16;
inline constexpr std::size_t kMaxVariantIdLength = 32;
inline constexpr std::size_t kMaxVariantEps = 16;
inline constexpr std::uint64_t kMaxOpset = 1000;
inline constexpr std::size_t kMaxPrecisionLength = 16;
inline constexpr std::size_t kMaxModelFiles = 1000;  // per variant
inline constexpr std::uint64_t kMaxModelFileSize = std::uint64_t{1} << 40;
// parse_model_metadata_text() refuses larger input (Errc::too_large).
inline constexpr std::size_t kMaxModelMetadataTextBytes = 1 << 20;

// The ONNX tensor element types a tensor's `type` may name.
inline constexpr std::string_view kTensorElementTypes[] = {
    "float", "float16", "bfloat16", "double", "int8",   "int16", "int32",
    "int64", "uint8",   "uint16",   "uint32", "uint64", "bool",  "string"};

// One dimension of a tensor's shape: a fixed size, or a symbolic name
// [A-Za-z_][A-Za-z0-9_]{0,63} ("N", "batch") for a size known only at run time.
using TensorDim = std::variant<std::uint64_t, std::string>;

// One input or output of the model.
struct TensorInfo {
  std::string name;              // printable ASCII, 1..128 characters; unique in its list
  std::string type;              // one of kTensorElementTypes
  std::vector<TensorDim> shape;  // 0..16 dimensions
  std::string description;       // optional free text; "" when absent

  friend bool operator==(const TensorInfo&, const TensorInfo&) = default;
};

// One file of a variant; its bytes are the signed target
// model_blob_path(model name, sha256).
struct ModelFile {
  std::string path;        // relative path in the variant (package::path_problem()), unique
  std::uint64_t size = 0;  // bytes, 0..kMaxModelFileSize
  std::string sha256;      // 64 lower-case hex digits

  friend bool operator==(const ModelFile&, const ModelFile&) = default;
};

// One build of the model for some devices and EPs.
struct ModelVariant {
  std::string id;                   // [a-z0-9][a-z0-9._-]{0,31}, unique in the model
  std::vector<DeviceType> devices;  // unique; empty: any device (JSON: key absent)
  std::vector<std::string> eps;     // EP names, unique; empty: any EP (JSON: key absent)
  VersionText ort_min;              // minimum ONNX Runtime version
  std::uint32_t opset = 0;          // ONNX opset, 1..kMaxOpset
  std::string precision;            // optional [a-z0-9_-]{1,16} ("fp32", "int8"); "" when absent
  std::string main;                 // the path of the .onnx file to load; one of `files`
  std::vector<ModelFile> files;     // 1..kMaxModelFiles

  friend bool operator==(const ModelVariant&, const ModelVariant&) = default;
};

// The parsed custom["epbroker"] object of a model. Plain data: values produced by
// parse_model_metadata() satisfy every rule; values built by hand are checked
// only when parsed (e.g. parse_model_metadata(to_json(m))).
struct ModelMetadata {
  std::string name;                    // package name, [a-z0-9][a-z0-9._-]{0,63}
  VersionText version;                 // model version
  std::string publisher;               // who publishes the model (free text, printable, 1..128)
  std::string license;                 // SPDX license expression (syntax checked only)
  std::string license_url;             // https:// URL of the license text, printable ASCII
  std::string description;             // optional free text; "" when absent
  std::string task;                    // [a-z0-9-]{1,64}, e.g. "image-classification"
  std::vector<TensorInfo> inputs;      // 1..64
  std::vector<TensorInfo> outputs;     // 1..64
  std::vector<ModelVariant> variants;  // 1..16

  friend bool operator==(const ModelMetadata&, const ModelMetadata&) = default;
};

// Parses the model metadata found at custom["epbroker"] of a TUF target.
// Errors: Errc::unsupported for a schema other than 1 or 2 (a later one) and for
// a document whose kind is not "model" (an EP or runtime package: read it with
// parse_ep_metadata(); so callers listing models skip it); Errc::bad_field for
// anything else (kind "model" in schema 1, key missing, wrong type, out of range,
// unknown or EP-only key, duplicate id or path, main not among the files, ...),
// with a message starting with the field path, e.g.
// "epbroker.variants[1].files[0].sha256: expected 64 lower-case hex digits".
// Never throws.
Result<ModelMetadata> parse_model_metadata(const nlohmann::json& custom);

// The JSON form of `m`, as {"epbroker": {...}} with schema 2 and kind "model".
// Absent optionals (description, devices, eps, precision) are left out. For any m
// returned by parse_model_metadata(), parse_model_metadata(to_json(m)) == m. Does
// not validate `m`.
nlohmann::json to_json(const ModelMetadata& m);

// parse_model_metadata() on JSON text of the same shape, for the CLIs. Errors:
// Errc::malformed when the text is not JSON (or has a duplicate object key),
// Errc::too_large above kMaxModelMetadataTextBytes, else as
// parse_model_metadata(). Never throws.
Result<ModelMetadata> parse_model_metadata_text(std::string_view json_text);

// Why `expr` is not a well-formed SPDX license expression, or std::nullopt when
// it is. Syntax only (identifiers are not looked up): identifiers
// [A-Za-z0-9.+-]+ (LicenseRef-... included; "LicenseRef-" needs a suffix),
// joined by AND, OR and WITH (upper case, separated by spaces), with
// parentheses; WITH takes an identifier on each side. Not bounded here.
std::optional<std::string> license_expression_problem(std::string_view expr);

// The TUF target path of one model file: "NAME/blobs/<sha256>". Does not validate.
std::string model_blob_path(std::string_view name, std::string_view sha256);

// What the signed targets say of one target path.
struct ModelTargetInfo {
  std::uint64_t length = 0;
  std::string sha256;  // lower-case hex; "" when the target has no sha256 hash
};
// Looks a target path up among the verified targets; std::nullopt when none.
using ModelTargetLookup = std::function<std::optional<ModelTargetInfo>(std::string_view)>;

// Checks that every file of every variant of `m` is signed: a target at
// model_blob_path(m.name, file.sha256) whose length equals file.size and whose
// sha256 equals file.sha256. Errors name the variant, the file and the target:
// Errc::not_found (no such target), Errc::length_mismatch, Errc::hash_mismatch
// (including a target without a sha256 hash). `lookup` must not throw.
Result<void> check_model_targets(const ModelMetadata& m, const ModelTargetLookup& lookup);

}  // namespace catalog
