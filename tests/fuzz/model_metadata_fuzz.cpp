// libFuzzer target: the model metadata of a TUF target (catalog/model_metadata),
// parsed strictly, as the publisher and the daemon read it.
//
// The input is JSON text of a target's `custom` ({"epbroker": {...}}). It is read
// both ways the project reads it: from text (epbroker-publish,
// parse_model_metadata_text) and from a parsed document (the daemon's refresh,
// parse_model_metadata over the catalog's JSON). On every success what the header
// promises is checked: the two agree; the JSON form parses back to the same value;
// no document is both a model and an EP package; every file's signed target is
// found by check_model_targets() when the targets say what the card says, and a
// target whose length or hash differs is refused. Then the license is re-checked
// and a store-style lookup of every variant's main file is made.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "catalog/canonical_json.hpp"
#include "catalog/ep_metadata.hpp"
#include "catalog/model_metadata.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

using epbroker_fuzz::finding;

// Every file of `m` signed as the card says, keyed by target path.
std::map<std::string, catalog::ModelTargetInfo> signed_targets(const catalog::ModelMetadata& m) {
  std::map<std::string, catalog::ModelTargetInfo> out;
  for (const auto& v : m.variants) {
    for (const auto& f : v.files) {
      out[catalog::model_blob_path(m.name, f.sha256)] = catalog::ModelTargetInfo{f.size, f.sha256};
    }
  }
  return out;
}

void check_targets(const catalog::ModelMetadata& m) {
  auto targets = signed_targets(m);
  auto lookup = [&](std::string_view path) -> std::optional<catalog::ModelTargetInfo> {
    auto it = targets.find(std::string(path));
    if (it == targets.end()) return std::nullopt;
    return it->second;
  };
  if (auto ok = catalog::check_model_targets(m, lookup); !ok) {
    finding("check_model_targets refused targets signed as the card says: " + ok.error().message);
  }
  // One target one byte longer: refused (a variant lists that file).
  auto& first = targets.begin()->second;
  first.length += 1;
  if (catalog::check_model_targets(m, lookup)) finding("a target of another length was accepted");
  first.length -= 1;
  // Its hash changed: refused.
  first.sha256[0] = first.sha256[0] == '0' ? '1' : '0';
  if (catalog::check_model_targets(m, lookup)) finding("a target of another hash was accepted");
}

void use(const catalog::ModelMetadata& m) {
  auto again = catalog::parse_model_metadata(catalog::to_json(m));
  if (!again) finding("to_json(model metadata) refused: " + again.error().message);
  if (!(*again == m)) finding("model metadata round trip differs");
  auto text = catalog::parse_model_metadata_text(catalog::to_json(m).dump());
  if (!text || !(*text == m)) finding("model metadata text round trip differs");
  if (auto problem = catalog::license_expression_problem(m.license)) {
    finding("an accepted license is not an SPDX expression: " + *problem);
  }
  if (m.variants.empty() || m.inputs.empty() || m.outputs.empty()) {
    finding("accepted a model without variants, inputs or outputs");
  }
  for (const auto& v : m.variants) {
    if (v.files.empty()) finding("accepted a variant without files");
    const bool main_listed =
        std::any_of(v.files.begin(), v.files.end(),
                    [&](const catalog::ModelFile& f) { return f.path == v.main; });
    if (!main_listed) finding("accepted a variant whose main file is not among its files");
  }
  check_targets(m);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  auto from_text = catalog::parse_model_metadata_text(text);
  if (epbroker_fuzz::verbose()) {
    std::fprintf(stderr, "parse_model_metadata_text: %s\n",
                 from_text ? "ok" : from_text.error().message.c_str());
  }
  if (auto doc = catalog::parse_json(text)) {
    auto from_doc = catalog::parse_model_metadata(*doc);
    // The text parser (which also refuses duplicate keys) accepts nothing the
    // document parser refuses, and reads the same value.
    if (from_text && !(from_doc && *from_doc == *from_text)) {
      finding(
          "parse_model_metadata_text accepted what parse_model_metadata refused or read otherwise");
    }
    if (from_doc) {
      // A document is a model or a package, never both: the daemon lists each
      // target under one of them.
      if (catalog::parse_ep_metadata(*doc))
        finding("a document parsed as a model and as an EP package");
      use(*from_doc);
    }
  }
  (void)catalog::license_expression_problem(text);
  return 0;
}
