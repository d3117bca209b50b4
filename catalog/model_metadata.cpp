// Parsing of model metadata (the JSON form, text, blob paths and the target
// check are in model_metadata_io.cpp).
#include "catalog/model_metadata.hpp"

#include <algorithm>
#include <array>
#include <exception>
#include <map>
#include <utility>

#include <nlohmann/json.hpp>

#include "catalog/ep_metadata.hpp"
#include "catalog/metadata_fields.hpp"
#include "catalog/package/manifest.hpp"
#include "catalog/text.hpp"

namespace catalog {

namespace {

using nlohmann::json;
using namespace ::catalog::metadata;  // the shared strict readers

constexpr std::array<std::string_view, 12> kTopKeys = {
    "schema",      "kind",        "name", "version", "publisher", "license",
    "license_url", "description", "task", "inputs",  "outputs",   "variants"};
// Keys of EP packages: refused by name, so a document mixing the two kinds says so.
constexpr std::array<std::string_view, 6> kEpOnlyKeys = {"ep_names", "vendor",   "arch",
                                                         "library",  "supports", "requires"};
constexpr std::array<std::string_view, 4> kTensorKeys = {"name", "type", "shape", "description"};
constexpr std::array<std::string_view, 8> kVariantKeys = {"id",    "devices",   "eps",  "ort_min",
                                                          "opset", "precision", "main", "files"};
constexpr std::array<std::string_view, 3> kFileKeys = {"path", "size", "sha256"};

#define EPB_TRY(var, expr) \
  auto var = (expr);       \
  if (!var) return std::unexpected(std::move(var.error()))

bool is_printable_ascii(char c) { return c >= 0x20 && c <= 0x7E; }
bool is_task_char(char c) { return is_lower_alnum(c) || c == '-'; }
bool is_precision_char(char c) { return is_lower_alnum(c) || c == '_' || c == '-'; }
bool is_symbol_char(char c) { return is_alnum(c) || c == '_'; }
bool is_lower_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

// Index of the first entry equal to an earlier one, or std::nullopt.
template <typename T, typename Key>
std::optional<std::size_t> first_duplicate(const std::vector<T>& v, Key key) {
  for (std::size_t i = 0; i < v.size(); ++i) {
    for (std::size_t k = 0; k < i; ++k) {
      if (key(v[i]) == key(v[k])) return i;
    }
  }
  return std::nullopt;
}

Result<TensorDim> read_dim(const json& v, const std::string& path) {
  if (v.is_string()) {
    EPB_TRY(s, read_token(v, path, kMaxDimSymbolLength, is_symbol_char, "[A-Za-z0-9_]"));
    if (s->front() >= '0' && s->front() <= '9') return bad(path, "must start with [A-Za-z_]");
    return TensorDim(std::move(*s));
  }
  if (!v.is_number_integer()) return wrong_type(path, "integer or string", v);
  EPB_TRY(n, read_uint(v, path, 0, kMaxDimSize));
  return TensorDim(*n);
}

Result<TensorInfo> read_tensor(const json& v, const std::string& path) {
  EPB_TRY(ok, check_object(v, path, kTensorKeys));
  TensorInfo t;
  {
    EPB_TRY(p, require_member(v, path, "name"));
    EPB_TRY(r, read_token(**p, member_path(path, "name"), kMaxTensorNameLength, is_printable_ascii,
                          "printable ASCII"));
    t.name = std::move(*r);
  }
  {
    EPB_TRY(p, require_member(v, path, "type"));
    const std::string type_path = member_path(path, "type");
    std::size_t chars = 0;
    EPB_TRY(r, read_string(**p, type_path, chars));
    if (std::find(std::begin(kTensorElementTypes), std::end(kTensorElementTypes), *r) ==
        std::end(kTensorElementTypes)) {
      return bad(type_path, "unknown tensor element type " + quote_for_message(*r) +
                                " (known: the ONNX names float, float16, ..., string)");
    }
    t.type = std::move(*r);
  }
  {
    EPB_TRY(p, require_member(v, path, "shape"));
    EPB_TRY(r, read_list<TensorDim>(**p, member_path(path, "shape"), 0, kMaxTensorRank, read_dim));
    t.shape = std::move(*r);
  }
  if (const json* p = find_member(v, "description")) {
    EPB_TRY(r, read_text(*p, member_path(path, "description"), kMaxModelDescriptionLength,
                         /*allow_empty=*/true, /*allow_newline_tab=*/true));
    t.description = std::move(*r);
  }
  return t;
}

Result<std::vector<TensorInfo>> read_tensors(const json& obj, const std::string& path,
                                             const char* key) {
  EPB_TRY(p, require_member(obj, path, key));
  const std::string list_path = member_path(path, key);
  EPB_TRY(r, read_list<TensorInfo>(**p, list_path, 1, kMaxModelTensors, read_tensor));
  if (auto dup = first_duplicate(*r, [](const TensorInfo& t) { return t.name; })) {
    return bad(member_path(index_path(list_path, *dup), "name"), "duplicate tensor name");
  }
  return r;
}

Result<ModelFile> read_model_file(const json& v, const std::string& path) {
  EPB_TRY(ok, check_object(v, path, kFileKeys));
  ModelFile f;
  {
    EPB_TRY(p, require_member(v, path, "path"));
    const std::string field = member_path(path, "path");
    std::size_t chars = 0;
    EPB_TRY(r, read_string(**p, field, chars));
    if (auto problem = package::path_problem(*r)) return bad(field, *problem);
    f.path = std::move(*r);
  }
  {
    EPB_TRY(p, require_member(v, path, "size"));
    EPB_TRY(r, read_uint(**p, member_path(path, "size"), 0, kMaxModelFileSize));
    f.size = *r;
  }
  {
    EPB_TRY(p, require_member(v, path, "sha256"));
    const std::string field = member_path(path, "sha256");
    std::size_t chars = 0;
    EPB_TRY(r, read_string(**p, field, chars));
    if (r->size() != 64 || !std::all_of(r->begin(), r->end(), is_lower_hex)) {
      return bad(field, "expected 64 lower-case hex digits");
    }
    f.sha256 = std::move(*r);
  }
  return f;
}

Result<DeviceType> read_device(const json& v, const std::string& path) {
  std::size_t chars = 0;
  EPB_TRY(name, read_string(v, path, chars));
  const auto type = parse_device_type(*name);
  if (!type) {
    return bad(path, "unknown device type " + quote_for_message(*name) + " (known: cpu, gpu, npu)");
  }
  return *type;
}

Result<ModelVariant> read_variant(const json& v, const std::string& path) {
  EPB_TRY(ok, check_object(v, path, kVariantKeys));
  ModelVariant out;
  {
    EPB_TRY(p, require_member(v, path, "id"));
    const std::string field = member_path(path, "id");
    EPB_TRY(r, read_token(**p, field, kMaxVariantIdLength, is_name_char, "[a-z0-9._-]"));
    if (!is_lower_alnum(r->front())) return bad(field, "must start with [a-z0-9]");
    out.id = std::move(*r);
  }
  // Absent means any; an empty list would mean none, which no variant can want.
  if (const json* p = find_member(v, "devices")) {
    const std::string field = member_path(path, "devices");
    EPB_TRY(r, read_list<DeviceType>(*p, field, 1, 3, read_device));
    if (auto dup = first_duplicate(*r, [](DeviceType d) { return d; })) {
      return bad(index_path(field, *dup), "duplicate device type");
    }
    out.devices = std::move(*r);
  }
  if (const json* p = find_member(v, "eps")) {
    const std::string field = member_path(path, "eps");
    EPB_TRY(r, read_list<std::string>(
                   *p, field, 1, kMaxVariantEps, [](const json& e, const std::string& ep) {
                     return read_token(e, ep, kMaxEpNameLength, is_ep_name_char, "[A-Za-z0-9_.-]");
                   }));
    if (auto dup = first_duplicate(*r, [](const std::string& s) { return s; })) {
      return bad(index_path(field, *dup), "duplicate EP name");
    }
    out.eps = std::move(*r);
  }
  {
    EPB_TRY(p, require_member(v, path, "ort_min"));
    EPB_TRY(r, read_version(**p, member_path(path, "ort_min")));
    out.ort_min = std::move(*r);
  }
  {
    EPB_TRY(p, require_member(v, path, "opset"));
    EPB_TRY(r, read_uint(**p, member_path(path, "opset"), 1, kMaxOpset));
    out.opset = static_cast<std::uint32_t>(*r);
  }
  if (const json* p = find_member(v, "precision")) {
    EPB_TRY(r, read_token(*p, member_path(path, "precision"), kMaxPrecisionLength,
                          is_precision_char, "[a-z0-9_-]"));
    out.precision = std::move(*r);
  }
  {
    EPB_TRY(p, require_member(v, path, "files"));
    const std::string field = member_path(path, "files");
    EPB_TRY(r, read_list<ModelFile>(**p, field, 1, kMaxModelFiles, read_model_file));
    // Quadratic at 1000 files is ~500k short compares: bounded and simple.
    if (auto dup = first_duplicate(*r, [](const ModelFile& f) { return f.path; })) {
      return bad(member_path(index_path(field, *dup), "path"), "duplicate file path");
    }
    out.files = std::move(*r);
  }
  // `main` after the files: it must name one of them.
  {
    EPB_TRY(p, require_member(v, path, "main"));
    const std::string field = member_path(path, "main");
    std::size_t chars = 0;
    EPB_TRY(r, read_string(**p, field, chars));
    if (auto problem = package::path_problem(*r)) return bad(field, *problem);
    if (!r->ends_with(".onnx")) return bad(field, "must end in .onnx");
    if (std::none_of(out.files.begin(), out.files.end(),
                     [&](const ModelFile& f) { return f.path == *r; })) {
      return bad(field, quote_for_message(*r) + " is not among the variant's files");
    }
    out.main = std::move(*r);
  }
  return out;
}

Result<std::string> read_license(const json& v, const std::string& path) {
  EPB_TRY(r, read_token(v, path, kMaxLicenseLength, is_printable_ascii, "printable ASCII"));
  if (auto problem = license_expression_problem(*r)) {
    return bad(path, "invalid SPDX license expression: " + *problem);
  }
  return r;
}

Result<std::string> read_license_url(const json& v, const std::string& path) {
  EPB_TRY(r, read_token(
                 v, path, kMaxLicenseUrlLength, [](char c) { return c > 0x20 && c < 0x7F; },
                 "printable ASCII without spaces"));
  constexpr std::string_view kScheme = "https://";
  if (!r->starts_with(kScheme)) return bad(path, "must start with https://");
  if (r->size() == kScheme.size() || (*r)[kScheme.size()] == '/') {
    return bad(path, "no host after https://");
  }
  return r;
}

Result<ModelMetadata> parse_object(const json& obj, const std::string& path) {
  if (!obj.is_object()) return wrong_type(path, "object", obj);
  // Schema, then kind, before any other key: they say which keys are known.
  EPB_TRY(schema_v, require_member(obj, path, "schema"));
  const std::string schema_path = member_path(path, "schema");
  EPB_TRY(schema, read_schema(**schema_v, schema_path, kMinEpMetadataSchema, kEpMetadataSchema));
  {
    const std::string kind_path = member_path(path, "kind");
    const json* kind = find_member(obj, "kind");
    // No kind: an EP package (schemas 1 and 2). Other kinds are parse_ep_metadata()'s.
    const bool is_model =
        kind != nullptr && kind->is_string() && kind->get_ref<const std::string&>() == "model";
    if (!is_model) {
      if (kind != nullptr && !kind->is_string()) return wrong_type(kind_path, "string", *kind);
      return fail(Errc::unsupported,
                  kind_path + ": not a model package (" +
                      (kind == nullptr ? std::string("no kind")
                                       : quote_for_message(kind->get_ref<const std::string&>())) +
                      "; read it with parse_ep_metadata())");
    }
    if (*schema < kModelMetadataSchema) {
      return bad(schema_path, "a model needs schema " + std::to_string(kModelMetadataSchema));
    }
  }
  for (const auto& item : obj.items()) {
    if (std::find(kEpOnlyKeys.begin(), kEpOnlyKeys.end(), item.key()) != kEpOnlyKeys.end()) {
      return bad(member_path(path, item.key()), "an EP package's key, not a model's");
    }
  }
  EPB_TRY(known, check_object(obj, path, kTopKeys));

  ModelMetadata m;
  auto member = [&](const char* key) { return require_member(obj, path, key); };
  {
    EPB_TRY(v, member("name"));
    EPB_TRY(r, read_package_name(**v, member_path(path, "name")));
    m.name = std::move(*r);
  }
  {
    EPB_TRY(v, member("version"));
    EPB_TRY(r, read_version(**v, member_path(path, "version")));
    m.version = std::move(*r);
  }
  {
    EPB_TRY(v, member("publisher"));
    EPB_TRY(r, read_text(**v, member_path(path, "publisher"), kMaxModelPublisherLength,
                         /*allow_empty=*/false, /*allow_newline_tab=*/false));
    m.publisher = std::move(*r);
  }
  {
    EPB_TRY(v, member("license"));
    EPB_TRY(r, read_license(**v, member_path(path, "license")));
    m.license = std::move(*r);
  }
  {
    EPB_TRY(v, member("license_url"));
    EPB_TRY(r, read_license_url(**v, member_path(path, "license_url")));
    m.license_url = std::move(*r);
  }
  if (const json* v = find_member(obj, "description")) {
    EPB_TRY(r, read_text(*v, member_path(path, "description"), kMaxModelDescriptionLength,
                         /*allow_empty=*/true, /*allow_newline_tab=*/true));
    m.description = std::move(*r);
  }
  {
    EPB_TRY(v, member("task"));
    EPB_TRY(r,
            read_token(**v, member_path(path, "task"), kMaxTaskLength, is_task_char, "[a-z0-9-]"));
    m.task = std::move(*r);
  }
  {
    EPB_TRY(r, read_tensors(obj, path, "inputs"));
    m.inputs = std::move(*r);
  }
  {
    EPB_TRY(r, read_tensors(obj, path, "outputs"));
    m.outputs = std::move(*r);
  }
  {
    EPB_TRY(v, member("variants"));
    const std::string field = member_path(path, "variants");
    EPB_TRY(r, read_list<ModelVariant>(**v, field, 1, kMaxModelVariants, read_variant));
    if (auto dup = first_duplicate(*r, [](const ModelVariant& x) { return x.id; })) {
      return bad(member_path(index_path(field, *dup), "id"), "duplicate variant id");
    }
    // One content, one size: a sha256 listed twice (variants share files) with two
    // sizes cannot be signed as both, so such a card is refused here, by its
    // field, rather than later as a target that does not match.
    std::map<std::string_view, std::pair<std::uint64_t, std::string>> sizes;
    for (std::size_t i = 0; i < r->size(); ++i) {
      const auto& files = (*r)[i].files;
      for (std::size_t k = 0; k < files.size(); ++k) {
        const std::string at = index_path(member_path(index_path(field, i), "files"), k);
        auto [it, fresh] = sizes.try_emplace(files[k].sha256, files[k].size, at);
        if (!fresh && it->second.first != files[k].size) {
          return bad(member_path(at, "size"),
                     std::to_string(files[k].size) + ", but " + it->second.second +
                         " has the same sha256 with size " + std::to_string(it->second.first));
        }
      }
    }
    m.variants = std::move(*r);
  }
  return m;
}

#undef EPB_TRY

}  // namespace

Result<ModelMetadata> parse_model_metadata(const nlohmann::json& custom) {
  const std::string key(kEpMetadataKey);
  try {
    if (!custom.is_object()) return wrong_type("custom", "object", custom);
    const nlohmann::json* obj = find_member(custom, key.c_str());
    if (obj == nullptr) return bad(key, "missing");
    return parse_object(*obj, key);
  } catch (const std::exception& e) {
    // Not expected (the readers avoid throwing accessors); memory exhaustion at most.
    return fail(Errc::bad_field, key + ": " + e.what());
  }
}

}  // namespace catalog
