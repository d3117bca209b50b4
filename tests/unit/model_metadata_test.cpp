#include "catalog/model_metadata.hpp"

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "catalog/ep_metadata.hpp"

namespace catalog {
namespace {

using ::nlohmann::json;
using ::testing::HasSubstr;
using ::testing::StartsWith;

const std::string kShaFp32(64, 'a');
const std::string kShaInt8(64, 'b');
const std::string kShaLabels = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

// Two variants: fp32 for any device and EP, int8 QDQ for an NPU through
// OpenVINO; both carry labels.txt (one blob, shared).
json full() {
  json c = json::parse(R"({
  "other-tool": {"x": 1.5},
  "epbroker": {
    "schema": 2, "kind": "model", "name": "resnet50", "version": "1.0.2",
    "publisher": "Example Models \u00e9", "license": "(Apache-2.0 OR MIT) AND LicenseRef-extra",
    "license_url": "https://example.org/license.txt", "description": "ResNet-50.\nImageNet.",
    "task": "image-classification",
    "inputs": [{"name": "data", "type": "float", "shape": ["N", 3, 224, 224],
                "description": "NCHW, RGB"}],
    "outputs": [{"name": "prob", "type": "float", "shape": ["N", 1000]},
                {"name": "top1 index", "type": "int64", "shape": []}],
    "variants": [
      {"id": "fp32", "ort_min": "1.20", "opset": 17, "precision": "fp32",
       "main": "model.onnx", "files": []},
      {"id": "int8-qdq", "devices": ["npu"], "eps": ["OpenVINOExecutionProvider"],
       "ort_min": "1.22.0", "opset": 17, "precision": "int8", "main": "int8/model.onnx",
       "files": []}
    ]
  }})");
  json& v = c["epbroker"]["variants"];
  v[0]["files"] = {{{"path", "model.onnx"}, {"size", 102'400'000}, {"sha256", kShaFp32}},
                   {{"path", "labels.txt"}, {"size", 21'000}, {"sha256", kShaLabels}}};
  v[1]["files"] = {{{"path", "int8/model.onnx"}, {"size", 25'600'000}, {"sha256", kShaInt8}},
                   {{"path", "labels.txt"}, {"size", 21'000}, {"sha256", kShaLabels}}};
  return c;
}

ModelMetadata parse_ok(const json& custom) {
  auto r = parse_model_metadata(custom);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message);
  return r ? *r : ModelMetadata{};
}

TEST(ModelMetadataTest, ParsesFullExample) {
  const ModelMetadata m = parse_ok(full());
  EXPECT_EQ(m.name, "resnet50");
  EXPECT_EQ(m.version.text, "1.0.2");
  EXPECT_EQ(m.publisher, "Example Models \xc3\xa9");
  EXPECT_EQ(m.license, "(Apache-2.0 OR MIT) AND LicenseRef-extra");
  EXPECT_EQ(m.license_url, "https://example.org/license.txt");
  EXPECT_EQ(m.task, "image-classification");
  ASSERT_EQ(m.inputs.size(), 1u);
  EXPECT_EQ(m.inputs[0].shape, (std::vector<TensorDim>{std::string("N"), std::uint64_t{3},
                                                       std::uint64_t{224}, std::uint64_t{224}}));
  EXPECT_EQ(m.inputs[0].description, "NCHW, RGB");
  ASSERT_EQ(m.outputs.size(), 2u);
  EXPECT_EQ(m.outputs[1].type, "int64");
  EXPECT_TRUE(m.outputs[1].shape.empty());
  ASSERT_EQ(m.variants.size(), 2u);
  EXPECT_TRUE(m.variants[0].devices.empty());
  EXPECT_TRUE(m.variants[0].eps.empty());
  EXPECT_EQ(m.variants[0].main, "model.onnx");
  EXPECT_EQ(m.variants[1].devices, (std::vector<DeviceType>{DeviceType::npu}));
  EXPECT_EQ(m.variants[1].eps, (std::vector<std::string>{"OpenVINOExecutionProvider"}));
  EXPECT_EQ(m.variants[1].ort_min.text, "1.22.0");
  EXPECT_EQ(m.variants[1].opset, 17u);
  EXPECT_EQ(m.variants[1].precision, "int8");
  ASSERT_EQ(m.variants[1].files.size(), 2u);
  EXPECT_EQ(m.variants[1].files[1], m.variants[0].files[1]);  // the shared file
  EXPECT_EQ(m.variants[1].files[0].size, 25'600'000u);
}

TEST(ModelMetadataTest, RoundTrips) {
  const ModelMetadata m = parse_ok(full());
  const json out = to_json(m);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(parse_ok(out), m);
  json expected = full()["epbroker"];
  EXPECT_EQ(out["epbroker"], expected);
  const auto again = parse_model_metadata_text(out.dump());
  ASSERT_TRUE(again.has_value()) << again.error().message;
  EXPECT_EQ(*again, m);
}

TEST(ModelMetadataTest, AcceptsLicenseExpressions) {
  for (const char* ok : {"MIT", "GPL-2.0+", "GPL-2.0-or-later WITH Classpath-exception-2.0",
                         "((MIT))", "MIT AND (BSD-3-Clause OR Apache-2.0 WITH LLVM-exception)",
                         "LicenseRef-my.license", "MIT  OR  Apache-2.0"}) {
    EXPECT_EQ(license_expression_problem(ok), std::nullopt) << ok;
  }
  for (const char* no :
       {"", "MIT OR", "AND MIT", "(MIT", "MIT)", "MIT and Apache-2.0", "MIT WITH", "MIT WITH (X)",
        "LicenseRef-", "MIT/Apache", "()", "MIT Apache-2.0", "WITH"}) {
    EXPECT_NE(license_expression_problem(no), std::nullopt) << no;
  }
  EXPECT_NE(license_expression_problem(std::string(40, '(') + "MIT" + std::string(40, ')')),
            std::nullopt);
}

TEST(ModelMetadataTest, TextInput) {
  EXPECT_EQ(parse_model_metadata_text("{").error().code, Errc::malformed);
  EXPECT_EQ(
      parse_model_metadata_text(std::string(kMaxModelMetadataTextBytes + 1, ' ')).error().code,
      Errc::too_large);
  const auto dup = parse_model_metadata_text(R"({"epbroker": {}, "epbroker": {}})");
  EXPECT_EQ(dup.error().code, Errc::malformed);
}

// ---- schemas and kinds: EP and model parsers side by side ---------------------------

json ep_schema2() {
  return json::parse(R"({"epbroker": {
    "schema": 2, "name": "m", "version": "2", "ep_names": ["E"], "vendor": "v",
    "arch": "aarch64", "ort_min": "1.20", "library": "libm.so",
    "supports": [{"type": "npu"}]}})");
}

TEST(ModelMetadataSchemaTest, EpParserSkipsModels) {
  const auto r = parse_ep_metadata(full());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Errc::unsupported);
  EXPECT_THAT(r.error().message, StartsWith("epbroker.kind: a model package"));
  EXPECT_THAT(r.error().message, HasSubstr("parse_model_metadata"));
}

TEST(ModelMetadataSchemaTest, Schema1ModelIsRefusedByBoth) {
  json c = full();
  c["epbroker"]["schema"] = 1;
  const auto model = parse_model_metadata(c);
  ASSERT_FALSE(model.has_value());
  EXPECT_EQ(model.error().code, Errc::bad_field);
  EXPECT_EQ(model.error().message, "epbroker.schema: a model needs schema 2");
  const auto ep = parse_ep_metadata(c);
  ASSERT_FALSE(ep.has_value());
  EXPECT_EQ(ep.error().code, Errc::bad_field);
  EXPECT_THAT(ep.error().message, StartsWith("epbroker.kind: kind \"model\" needs schema 2"));
}

TEST(ModelMetadataSchemaTest, EpSchema2ParsesAndIsWrittenAsSchema1) {
  auto r = parse_ep_metadata(ep_schema2());
  ASSERT_TRUE(r.has_value()) << r.error().message;
  const json out = to_json(*r);
  EXPECT_EQ(out["epbroker"]["schema"], 1);
  json as1 = ep_schema2();
  as1["epbroker"]["schema"] = 1;
  EXPECT_EQ(parse_ep_metadata(as1).value(), *r);
  EXPECT_EQ(kEpMetadataSchema, 2);
  EXPECT_EQ(kMinEpMetadataSchema, 1);
}

TEST(ModelMetadataSchemaTest, ModelParserSkipsEpPackages) {
  for (int schema : {1, 2}) {
    json c = ep_schema2();
    c["epbroker"]["schema"] = schema;
    const auto r = parse_model_metadata(c);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code, Errc::unsupported);
    EXPECT_THAT(r.error().message, StartsWith("epbroker.kind: not a model package (no kind"));
    c["epbroker"]["kind"] = "runtime";
    EXPECT_EQ(parse_model_metadata(c).error().code, Errc::unsupported);
  }
  json c = full();
  c["epbroker"]["schema"] = 3;
  EXPECT_EQ(parse_model_metadata(c).error().code, Errc::unsupported);
  EXPECT_EQ(parse_ep_metadata(c).error().code, Errc::unsupported);
}

// ---- malformed inputs --------------------------------------------------------------

struct BadCase {
  const char* name;
  std::function<void(json& custom)> mutate;
  Errc code;
  const char* message;  // expected substring: the field path and what is wrong
};

json& top(json& c) { return c["epbroker"]; }
json& var(json& c, std::size_t i) { return c["epbroker"]["variants"][i]; }
json& file(json& c, std::size_t v, std::size_t f) { return var(c, v)["files"][f]; }
json& input(json& c) { return c["epbroker"]["inputs"][0]; }
auto set(const char* key, json value) {
  return [key, value](json& c) { top(c)[key] = value; };
}
auto erase(const char* key) {
  return [key](json& c) { top(c).erase(key); };
}
auto set_var(std::size_t i, const char* key, json value) {
  return [i, key, value](json& c) { var(c, i)[key] = value; };
}
auto erase_var(std::size_t i, const char* key) {
  return [i, key](json& c) { var(c, i).erase(key); };
}
auto set_file(std::size_t v, std::size_t f, const char* key, json value) {
  return [v, f, key, value](json& c) { file(c, v, f)[key] = value; };
}
auto set_input(const char* key, json value) {
  return [key, value](json& c) { input(c)[key] = value; };
}
json many(std::size_t n, const json& item) { return json(std::vector<json>(n, item)); }

const Errc kBad = Errc::bad_field;

const BadCase kBadCases[] = {
    // The container, schema and kind.
    {"CustomNotObject", [](json& c) { c = json::array(); }, kBad, "custom: expected object"},
    {"NoEpbrokerKey", [](json& c) { c.erase("epbroker"); }, kBad, "epbroker: missing"},
    {"EpbrokerNotObject", [](json& c) { c["epbroker"] = 1; }, kBad,
     "epbroker: expected object, got integer"},
    {"MissingSchema", erase("schema"), kBad, "epbroker.schema: missing"},
    {"SchemaString", set("schema", "2"), kBad, "epbroker.schema: expected integer, got string"},
    {"Schema3", set("schema", 3), Errc::unsupported, "epbroker.schema: unsupported schema 3"},
    {"KindNotString", set("kind", 7), kBad, "epbroker.kind: expected string, got integer"},
    {"KindMissing", erase("kind"), Errc::unsupported, "epbroker.kind: not a model package"},
    // Unknown and EP-only keys.
    {"UnknownKey", set("weights", 1), kBad, "epbroker.weights: unknown key"},
    {"EpNames", set("ep_names", json::array({"E"})), kBad,
     "epbroker.ep_names: an EP package's key, not a model's"},
    {"Vendor", set("vendor", "v"), kBad, "epbroker.vendor: an EP package's key"},
    {"Arch", set("arch", "x86_64"), kBad, "epbroker.arch: an EP package's key"},
    {"Library", set("library", "a.so"), kBad, "epbroker.library: an EP package's key"},
    {"Supports", set("supports", json::array()), kBad, "epbroker.supports: an EP package's key"},
    {"Requires", set("requires", json::array()), kBad, "epbroker.requires: an EP package's key"},
    {"UnknownInputKey", set_input("dtype", "float"), kBad, "epbroker.inputs[0].dtype: unknown key"},
    {"UnknownVariantKey", set_var(1, "quant", 1), kBad, "epbroker.variants[1].quant: unknown key"},
    {"UnknownFileKey", set_file(1, 0, "mode", 420), kBad,
     "epbroker.variants[1].files[0].mode: unknown key"},
    // Top-level fields.
    {"MissingName", erase("name"), kBad, "epbroker.name: missing"},
    {"NameUpper", set("name", "ResNet"), kBad, "epbroker.name: invalid character \"R\""},
    {"NameLeadingDot", set("name", ".r"), kBad, "epbroker.name: must start with [a-z0-9]"},
    {"NameTooLong", set("name", std::string(65, 'a')), kBad, "epbroker.name: longer than 64"},
    {"MissingVersion", erase("version"), kBad, "epbroker.version: missing"},
    {"VersionBad", set("version", "v1"), kBad, "epbroker.version: invalid version"},
    {"MissingPublisher", erase("publisher"), kBad, "epbroker.publisher: missing"},
    {"PublisherEmpty", set("publisher", ""), kBad, "epbroker.publisher: empty"},
    {"PublisherTooLong", set("publisher", std::string(129, 'p')), kBad,
     "epbroker.publisher: longer than 128 characters"},
    {"PublisherNewline", set("publisher", "a\nb"), kBad,
     "epbroker.publisher: control or bidirectional character at offset 1"},
    {"MissingLicense", erase("license"), kBad, "epbroker.license: missing"},
    {"LicenseNumber", set("license", 1), kBad, "epbroker.license: expected string, got integer"},
    {"LicenseBadSyntax", set("license", "MIT or Apache-2.0"), kBad,
     "epbroker.license: invalid SPDX license expression"},
    {"LicenseUnbalanced", set("license", "(MIT"), kBad, "epbroker.license: invalid SPDX"},
    {"LicenseTooLong", set("license", std::string(129, 'M')), kBad,
     "epbroker.license: longer than 128"},
    {"MissingLicenseUrl", erase("license_url"), kBad, "epbroker.license_url: missing"},
    {"LicenseUrlHttp", set("license_url", "http://example.org/l"), kBad,
     "epbroker.license_url: must start with https://"},
    {"LicenseUrlSpace", set("license_url", "https://a b"), kBad,
     "epbroker.license_url: invalid character \" \""},
    {"LicenseUrlNoHost", set("license_url", "https://"), kBad, "epbroker.license_url: no host"},
    {"LicenseUrlTooLong", set("license_url", "https://" + std::string(505, 'a')), kBad,
     "epbroker.license_url: longer than 512"},
    {"DescriptionTooLong", set("description", std::string(1025, 'd')), kBad,
     "epbroker.description: longer than 1024"},
    {"DescriptionBidi", set("description", "a\u202eb"), kBad,
     "epbroker.description: control or bidirectional character"},
    {"MissingTask", erase("task"), kBad, "epbroker.task: missing"},
    {"TaskUnderscore", set("task", "image_classification"), kBad,
     "epbroker.task: invalid character \"_\""},
    {"TaskTooLong", set("task", std::string(65, 't')), kBad, "epbroker.task: longer than 64"},
    // Inputs and outputs.
    {"MissingInputs", erase("inputs"), kBad, "epbroker.inputs: missing"},
    {"InputsEmpty", set("inputs", json::array()), kBad, "epbroker.inputs: needs at least 1 entry"},
    {"OutputsNotArray", set("outputs", json::object()), kBad,
     "epbroker.outputs: expected array, got object"},
    {"OutputsTooMany",
     [](json& c) {
       json& o = top(c)["outputs"];
       for (int i = 0; i < 65; ++i) o.push_back({{"name", "o" + std::to_string(i)}});
     },
     kBad, "epbroker.outputs: too many entries (67 > 64)"},
    {"InputNotObject", [](json& c) { input(c) = "data"; }, kBad,
     "epbroker.inputs[0]: expected object, got string"},
    {"InputMissingName", [](json& c) { input(c).erase("name"); }, kBad,
     "epbroker.inputs[0].name: missing"},
    {"InputNameTab", set_input("name", "a\tb"), kBad,
     "epbroker.inputs[0].name: invalid character \"\\x09\""},
    {"InputNameTooLong", set_input("name", std::string(129, 'n')), kBad,
     "epbroker.inputs[0].name: longer than 128"},
    {"OutputDuplicateName", [](json& c) { top(c)["outputs"][1]["name"] = "prob"; }, kBad,
     "epbroker.outputs[1].name: duplicate tensor name"},
    {"InputMissingType", [](json& c) { input(c).erase("type"); }, kBad,
     "epbroker.inputs[0].type: missing"},
    {"InputTypeUnknown", set_input("type", "float32"), kBad,
     "epbroker.inputs[0].type: unknown tensor element type \"float32\""},
    {"InputMissingShape", [](json& c) { input(c).erase("shape"); }, kBad,
     "epbroker.inputs[0].shape: missing"},
    {"ShapeTooLong", set_input("shape", many(17, 1)), kBad,
     "epbroker.inputs[0].shape: too many entries (17 > 16)"},
    {"DimNegative", set_input("shape", json::array({-1})), kBad,
     "epbroker.inputs[0].shape[0]: out of range"},
    {"DimFloat", set_input("shape", json::array({1, 2.5})), kBad,
     "epbroker.inputs[0].shape[1]: expected integer or string, got float"},
    {"DimSymbolDigit", set_input("shape", json::array({"1N"})), kBad,
     "epbroker.inputs[0].shape[0]: must start with [A-Za-z_]"},
    {"DimSymbolDash", set_input("shape", json::array({"batch-size"})), kBad,
     "epbroker.inputs[0].shape[0]: invalid character \"-\""},
    {"DimSymbolTooLong", set_input("shape", json::array({std::string(65, 'N')})), kBad,
     "epbroker.inputs[0].shape[0]: longer than 64"},
    {"InputDescriptionNotString", set_input("description", 1), kBad,
     "epbroker.inputs[0].description: expected string"},
    // Variants.
    {"MissingVariants", erase("variants"), kBad, "epbroker.variants: missing"},
    {"VariantsEmpty", set("variants", json::array()), kBad,
     "epbroker.variants: needs at least 1 entry"},
    {"VariantsTooMany", [](json& c) { top(c)["variants"] = many(17, var(c, 0)); }, kBad,
     "epbroker.variants: too many entries (17 > 16)"},
    {"VariantIdDuplicate", set_var(1, "id", "fp32"), kBad,
     "epbroker.variants[1].id: duplicate variant id"},
    {"VariantMissingId", erase_var(1, "id"), kBad, "epbroker.variants[1].id: missing"},
    {"VariantIdUpper", set_var(1, "id", "Int8"), kBad,
     "epbroker.variants[1].id: invalid character"},
    {"VariantIdLeadingDash", set_var(1, "id", "-x"), kBad,
     "epbroker.variants[1].id: must start with [a-z0-9]"},
    {"VariantIdTooLong", set_var(1, "id", std::string(33, 'v')), kBad,
     "epbroker.variants[1].id: longer than 32"},
    {"DevicesEmpty", set_var(1, "devices", json::array()), kBad,
     "epbroker.variants[1].devices: needs at least 1 entry"},
    {"DevicesUnknown", set_var(1, "devices", json::array({"tpu"})), kBad,
     "epbroker.variants[1].devices[0]: unknown device type \"tpu\""},
    {"DevicesDuplicate", set_var(1, "devices", json::array({"npu", "gpu", "npu"})), kBad,
     "epbroker.variants[1].devices[2]: duplicate device type"},
    {"DevicesNotArray", set_var(1, "devices", "npu"), kBad,
     "epbroker.variants[1].devices: expected array, got string"},
    {"EpsEmpty", set_var(1, "eps", json::array()), kBad,
     "epbroker.variants[1].eps: needs at least 1 entry"},
    {"EpsBadName", set_var(1, "eps", json::array({"Open VINO"})), kBad,
     "epbroker.variants[1].eps[0]: invalid character \" \""},
    {"EpsDuplicate", set_var(1, "eps", json::array({"A", "A"})), kBad,
     "epbroker.variants[1].eps[1]: duplicate EP name"},
    {"MissingOrtMin", erase_var(1, "ort_min"), kBad, "epbroker.variants[1].ort_min: missing"},
    {"OrtMinBad", set_var(1, "ort_min", "1..2"), kBad,
     "epbroker.variants[1].ort_min: invalid version"},
    {"MissingOpset", erase_var(1, "opset"), kBad, "epbroker.variants[1].opset: missing"},
    {"OpsetZero", set_var(1, "opset", 0), kBad, "epbroker.variants[1].opset: out of range 1..1000"},
    {"OpsetTooBig", set_var(1, "opset", 1001), kBad, "epbroker.variants[1].opset: out of range"},
    {"OpsetString", set_var(1, "opset", "17"), kBad,
     "epbroker.variants[1].opset: expected integer, got string"},
    {"PrecisionUpper", set_var(1, "precision", "INT8"), kBad,
     "epbroker.variants[1].precision: invalid character \"I\""},
    {"PrecisionTooLong", set_var(1, "precision", std::string(17, 'p')), kBad,
     "epbroker.variants[1].precision: longer than 16"},
    {"MissingMain", erase_var(1, "main"), kBad, "epbroker.variants[1].main: missing"},
    {"MainNotAmongFiles", set_var(1, "main", "other.onnx"), kBad,
     "epbroker.variants[1].main: \"other.onnx\" is not among the variant's files"},
    {"MainNotOnnx", set_var(1, "main", "labels.txt"), kBad,
     "epbroker.variants[1].main: must end in .onnx"},
    {"MainUnsafe", set_var(1, "main", "../model.onnx"), kBad,
     "epbroker.variants[1].main: '..' path component"},
    // Files.
    {"MissingFiles", erase_var(1, "files"), kBad, "epbroker.variants[1].files: missing"},
    {"FilesEmpty", set_var(1, "files", json::array()), kBad,
     "epbroker.variants[1].files: needs at least 1 entry"},
    {"FilesTooMany", [](json& c) { var(c, 1)["files"] = many(1001, file(c, 1, 0)); }, kBad,
     "epbroker.variants[1].files: too many entries (1001 > 1000)"},
    {"FileDuplicatePath", set_file(1, 1, "path", "int8/model.onnx"), kBad,
     "epbroker.variants[1].files[1].path: duplicate file path"},
    // One content, one size (found by the fuzzer: two sizes for one sha256 were
    // accepted, and the daemon then refused the model as not signed as it says).
    {"FileSameHashOtherSize", set_file(1, 1, "size", 20), kBad,
     "epbroker.variants[1].files[1].size: 20, but epbroker.variants[0].files[1] has the same "
     "sha256 with size 21000"},
    {"FileOtherFilesHash", set_file(1, 0, "sha256", kShaLabels), kBad,
     "epbroker.variants[1].files[0].size: 25600000, but epbroker.variants[0].files[1] has the "
     "same sha256 with size 21000"},
    {"FileMissingPath", [](json& c) { file(c, 1, 0).erase("path"); }, kBad,
     "epbroker.variants[1].files[0].path: missing"},
    {"FilePathAbsolute", set_file(1, 0, "path", "/etc/passwd"), kBad,
     "epbroker.variants[1].files[0].path: absolute path"},
    {"FilePathDotDot", set_file(1, 0, "path", "a/../b"), kBad,
     "epbroker.variants[1].files[0].path: '..' path component"},
    {"FilePathBackslash", set_file(1, 0, "path", "a\\b"), kBad,
     "epbroker.variants[1].files[0].path: backslash"},
    {"FileMissingSize", [](json& c) { file(c, 1, 0).erase("size"); }, kBad,
     "epbroker.variants[1].files[0].size: missing"},
    {"FileSizeNegative", set_file(1, 0, "size", -1), kBad,
     "epbroker.variants[1].files[0].size: out of range 0..1099511627776"},
    {"FileSizeTooBig", set_file(1, 0, "size", (std::uint64_t{1} << 40) + 1), kBad,
     "epbroker.variants[1].files[0].size: out of range"},
    {"FileSizeFloat", set_file(1, 0, "size", 1.0), kBad,
     "epbroker.variants[1].files[0].size: expected integer, got float"},
    {"FileMissingSha", [](json& c) { file(c, 1, 0).erase("sha256"); }, kBad,
     "epbroker.variants[1].files[0].sha256: missing"},
    {"FileShaUpper", set_file(1, 0, "sha256", std::string(64, 'A')), kBad,
     "epbroker.variants[1].files[0].sha256: expected 64 lower-case hex digits"},
    {"FileShaShort", set_file(1, 0, "sha256", std::string(63, 'a')), kBad,
     "epbroker.variants[1].files[0].sha256: expected 64 lower-case hex digits"},
    {"FileShaNotHex", set_file(1, 0, "sha256", std::string(64, 'g')), kBad,
     "epbroker.variants[1].files[0].sha256: expected 64"},
};

class ModelMetadataBadTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(ModelMetadataBadTest, IsRejectedNamingTheField) {
  const BadCase& bad = GetParam();
  json custom = full();
  bad.mutate(custom);
  const auto r = parse_model_metadata(custom);
  ASSERT_FALSE(r.has_value()) << "accepted: " << bad.name;
  EXPECT_EQ(errc_name(r.error().code), errc_name(bad.code)) << r.error().message;
  EXPECT_THAT(r.error().message, HasSubstr(bad.message));
  EXPECT_THAT(r.error().message, ::testing::AnyOf(StartsWith("epbroker"), StartsWith("custom")));
}

INSTANTIATE_TEST_SUITE_P(Malformed, ModelMetadataBadTest, ::testing::ValuesIn(kBadCases),
                         [](const ::testing::TestParamInfo<BadCase>& param_info) {
                           return std::string(param_info.param.name);
                         });

TEST(ModelMetadataTest, AcceptsBoundaries) {
  json c = full();
  top(c)["description"] = std::string(1024, 'd');
  top(c)["task"] = std::string(64, 't');
  input(c)["shape"] = many(16, "_");
  input(c)["shape"][0] = (std::uint64_t{1} << 63) - 1;
  input(c)["shape"][1] = 0;
  var(c, 1)["devices"] = json::array({"cpu", "gpu", "npu"});
  var(c, 1)["opset"] = 1000;
  var(c, 1)["id"] = "0" + std::string(31, '.');
  file(c, 1, 0)["size"] = std::uint64_t{1} << 40;
  file(c, 1, 1)["size"] = 0;  // labels.txt, shared with variant 0: one content, one size
  file(c, 0, 1)["size"] = 0;
  const ModelMetadata m = parse_ok(c);
  EXPECT_EQ(parse_ok(to_json(m)), m);
}

// ---- signed targets ----------------------------------------------------------------

struct Targets {
  std::map<std::string, ModelTargetInfo, std::less<>> by_path;
  ModelTargetLookup lookup() const {
    return [this](std::string_view path) -> std::optional<ModelTargetInfo> {
      const auto it = by_path.find(path);
      if (it == by_path.end()) return std::nullopt;
      return it->second;
    };
  }
};

Targets signed_targets(const ModelMetadata& m) {
  Targets t;
  for (const ModelVariant& v : m.variants) {
    for (const ModelFile& f : v.files) {
      t.by_path[model_blob_path(m.name, f.sha256)] = {f.size, f.sha256};
    }
  }
  return t;
}

TEST(ModelTargetsTest, BlobPath) {
  EXPECT_EQ(model_blob_path("resnet50", kShaFp32), "resnet50/blobs/" + kShaFp32);
}

TEST(ModelTargetsTest, AllFilesSigned) {
  const ModelMetadata m = parse_ok(full());
  const Targets t = signed_targets(m);
  EXPECT_EQ(t.by_path.size(), 3u);  // labels.txt is one blob
  const auto r = check_model_targets(m, t.lookup());
  EXPECT_TRUE(r.has_value()) << r.error().message;
}

TEST(ModelTargetsTest, MissingTarget) {
  const ModelMetadata m = parse_ok(full());
  Targets t = signed_targets(m);
  t.by_path.erase("resnet50/blobs/" + kShaInt8);
  const auto r = check_model_targets(m, t.lookup());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Errc::not_found);
  EXPECT_THAT(r.error().message, HasSubstr("variant \"int8-qdq\", file \"int8/model.onnx\""));
  EXPECT_THAT(r.error().message, HasSubstr("resnet50/blobs/" + kShaInt8));
}

TEST(ModelTargetsTest, LengthMismatch) {
  const ModelMetadata m = parse_ok(full());
  Targets t = signed_targets(m);
  t.by_path["resnet50/blobs/" + kShaLabels].length = 20'999;
  const auto r = check_model_targets(m, t.lookup());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Errc::length_mismatch);
  EXPECT_THAT(r.error().message, HasSubstr("variant \"fp32\", file \"labels.txt\""));
  EXPECT_THAT(r.error().message, HasSubstr("20999"));
}

TEST(ModelTargetsTest, HashMismatch) {
  const ModelMetadata m = parse_ok(full());
  Targets t = signed_targets(m);
  t.by_path["resnet50/blobs/" + kShaFp32].sha256 = kShaInt8;
  auto r = check_model_targets(m, t.lookup());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Errc::hash_mismatch);
  EXPECT_THAT(r.error().message, HasSubstr("variant \"fp32\", file \"model.onnx\""));
  t.by_path["resnet50/blobs/" + kShaFp32].sha256.clear();  // signed with sha512 only
  r = check_model_targets(m, t.lookup());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Errc::hash_mismatch);
  EXPECT_THAT(r.error().message, HasSubstr("no signed sha256"));
}

}  // namespace
}  // namespace catalog
