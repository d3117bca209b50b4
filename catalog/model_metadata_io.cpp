// Model metadata: the JSON form, text parsing, SPDX expression syntax, blob paths
// and the check of a model's files against the signed targets (parsing is in
// model_metadata.cpp).
#include <algorithm>
#include <utility>

#include <nlohmann/json.hpp>

#include "catalog/ep_metadata.hpp"
#include "catalog/json_fields.hpp"
#include "catalog/model_metadata.hpp"
#include "catalog/text.hpp"

namespace catalog {

namespace {

bool is_license_id_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '+' || c == '-';
}

// A recursive-descent reader of SPDX license expressions (SPDX 2.3, annex D),
// syntax only:
//   expr := term { ("AND" | "OR") term }
//   term := "(" expr ")" | id [ "WITH" id ]
// Precedence does not matter for a syntax check, so AND and OR read alike.
class LicenseReader {
 public:
  explicit LicenseReader(std::string_view s) : s_(s) {}

  std::optional<std::string> check() {
    if (auto p = expr(0)) return p;
    skip_spaces();
    if (at_ < s_.size()) return "unexpected " + describe_next();
    return std::nullopt;
  }

 private:
  // Deeper nesting than this is refused (bounds the recursion on any input).
  static constexpr int kMaxDepth = 32;

  enum class Kind { end, open, close, word, bad };

  void skip_spaces() {
    while (at_ < s_.size() && s_[at_] == ' ') ++at_;
  }

  // The next token without consuming it; `word` receives a word's text.
  Kind peek(std::string_view& word) {
    skip_spaces();
    if (at_ == s_.size()) return Kind::end;
    if (s_[at_] == '(') return Kind::open;
    if (s_[at_] == ')') return Kind::close;
    std::size_t end = at_;
    while (end < s_.size() && is_license_id_char(s_[end])) ++end;
    if (end == at_) return Kind::bad;
    word = s_.substr(at_, end - at_);
    return Kind::word;
  }

  std::string describe_next() {
    std::string_view word;
    switch (peek(word)) {
      case Kind::end:
        return std::string("end of expression");
      case Kind::open:
      case Kind::close:
      case Kind::bad:
        return "character " + quote_for_message(s_.substr(at_, 1)) + " at offset " +
               std::to_string(at_);
      case Kind::word:
        return quote_for_message(word) + " at offset " + std::to_string(at_);
    }
    return std::string("token");
  }

  static bool is_operator(std::string_view w) { return w == "AND" || w == "OR" || w == "WITH"; }

  std::optional<std::string> id(std::string_view what) {
    std::string_view word;
    if (peek(word) != Kind::word || is_operator(word)) {
      return "expected " + std::string(what) + ", got " + describe_next();
    }
    if (word == "LicenseRef-" || word == "DocumentRef-") {
      return quote_for_message(word) + " at offset " + std::to_string(at_) + " needs a suffix";
    }
    at_ += word.size();
    return std::nullopt;
  }

  std::optional<std::string> term(int depth) {
    std::string_view word;
    if (peek(word) == Kind::open) {
      if (depth >= kMaxDepth) return "nested deeper than " + std::to_string(kMaxDepth);
      ++at_;
      if (auto p = expr(depth + 1)) return p;
      if (peek(word) != Kind::close) return "expected ')', got " + describe_next();
      ++at_;
      return std::nullopt;
    }
    if (auto p = id("a license identifier or '('")) return p;
    if (peek(word) == Kind::word && word == "WITH") {
      at_ += word.size();
      if (auto p = id("an exception identifier after WITH")) return p;
    }
    return std::nullopt;
  }

  std::optional<std::string> expr(int depth) {
    if (auto p = term(depth)) return p;
    std::string_view word;
    while (peek(word) == Kind::word && (word == "AND" || word == "OR")) {
      at_ += word.size();
      if (auto p = term(depth)) return p;
    }
    return std::nullopt;
  }

  std::string_view s_;
  std::size_t at_ = 0;
};

nlohmann::json tensors_to_json(const std::vector<TensorInfo>& tensors) {
  nlohmann::json out = nlohmann::json::array();
  for (const TensorInfo& t : tensors) {
    nlohmann::json e = nlohmann::json::object();
    e["name"] = t.name;
    e["type"] = t.type;
    nlohmann::json shape = nlohmann::json::array();
    for (const TensorDim& d : t.shape) {
      if (const auto* n = std::get_if<std::uint64_t>(&d)) {
        shape.push_back(*n);
      } else {
        shape.push_back(std::get<std::string>(d));
      }
    }
    e["shape"] = std::move(shape);
    if (!t.description.empty()) e["description"] = t.description;
    out.push_back(std::move(e));
  }
  return out;
}

nlohmann::json variant_to_json(const ModelVariant& v) {
  nlohmann::json e = nlohmann::json::object();
  e["id"] = v.id;
  if (!v.devices.empty()) {
    nlohmann::json devices = nlohmann::json::array();
    for (DeviceType d : v.devices) devices.push_back(std::string(device_type_name(d)));
    e["devices"] = std::move(devices);
  }
  if (!v.eps.empty()) e["eps"] = v.eps;
  e["ort_min"] = v.ort_min.text;
  e["opset"] = v.opset;
  if (!v.precision.empty()) e["precision"] = v.precision;
  e["main"] = v.main;
  nlohmann::json files = nlohmann::json::array();
  for (const ModelFile& f : v.files) {
    files.push_back({{"path", f.path}, {"size", f.size}, {"sha256", f.sha256}});
  }
  e["files"] = std::move(files);
  return e;
}

}  // namespace

std::optional<std::string> license_expression_problem(std::string_view expr) {
  return LicenseReader(expr).check();
}

nlohmann::json to_json(const ModelMetadata& m) {
  nlohmann::json o = nlohmann::json::object();
  o["schema"] = kModelMetadataSchema;
  o["kind"] = "model";
  o["name"] = m.name;
  o["version"] = m.version.text;
  o["publisher"] = m.publisher;
  o["license"] = m.license;
  o["license_url"] = m.license_url;
  if (!m.description.empty()) o["description"] = m.description;
  o["task"] = m.task;
  o["inputs"] = tensors_to_json(m.inputs);
  o["outputs"] = tensors_to_json(m.outputs);
  nlohmann::json variants = nlohmann::json::array();
  for (const ModelVariant& v : m.variants) variants.push_back(variant_to_json(v));
  o["variants"] = std::move(variants);
  nlohmann::json custom = nlohmann::json::object();
  custom[std::string(kEpMetadataKey)] = std::move(o);
  return custom;
}

Result<ModelMetadata> parse_model_metadata_text(std::string_view json_text) {
  auto doc = ::catalog::json::parse_strict(json_text, "model metadata", kMaxModelMetadataTextBytes);
  if (!doc) return std::unexpected(std::move(doc.error()));
  return parse_model_metadata(*doc);
}

std::string model_blob_path(std::string_view name, std::string_view sha256) {
  std::string out;
  out.reserve(name.size() + 7 + sha256.size());
  out.append(name).append("/blobs/").append(sha256);
  return out;
}

Result<void> check_model_targets(const ModelMetadata& m, const ModelTargetLookup& lookup) {
  for (const ModelVariant& v : m.variants) {
    for (const ModelFile& f : v.files) {
      const std::string target = model_blob_path(m.name, f.sha256);
      // The names come from parsed metadata (safe characters), but the path is
      // the publisher's text: quoted, as everything served is.
      const std::string what = "variant " + quote_for_message(v.id) + ", file " +
                               quote_for_message(f.path) + ": target " +
                               quote_for_message(target, 160);
      const std::optional<ModelTargetInfo> info = lookup(target);
      if (!info) return fail(Errc::not_found, what + " is not among the signed targets");
      if (info->length != f.size) {
        return fail(Errc::length_mismatch, what + " is signed with length " +
                                               std::to_string(info->length) + ", the file has " +
                                               std::to_string(f.size) + " bytes");
      }
      if (info->sha256 != f.sha256) {
        return fail(Errc::hash_mismatch,
                    what + (info->sha256.empty()
                                ? std::string(" has no signed sha256")
                                : " is signed with sha256 " + quote_for_message(info->sha256, 80)));
      }
    }
  }
  return {};
}

}  // namespace catalog
