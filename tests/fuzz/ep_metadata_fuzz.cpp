// libFuzzer target: the EP custom metadata of a TUF target (catalog/ep_metadata),
// parsed strictly, and the package manifest that embeds it
// (catalog/package/manifest).
//
// The input is JSON text of a target's `custom` ({"epbroker": {...}}) or of a
// manifest.json. Both parsers run on every input, both ways the project reads
// the metadata: from text (the CLIs, parse_ep_metadata_text) and from a parsed
// document (the daemon, parse_ep_metadata over the catalog's JSON). What the
// headers promise is checked on every success: the two agree, the JSON form
// parses back to the same value, a manifest matches its own metadata; then
// compatibility is decided against a fixed machine (catalog/compat).
#include <compare>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "catalog/canonical_json.hpp"
#include "catalog/compat.hpp"
#include "catalog/ep_metadata.hpp"
#include "catalog/package/manifest.hpp"
#include "catalog/version.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

using epbroker_fuzz::finding;

const catalog::MachineInfo& machine() {
  static const catalog::MachineInfo m = [] {
    catalog::MachineInfo info;
    info.arch = "x86_64";
    info.devices = {
        {"cpu0", catalog::DeviceType::cpu, 0, 0, "", ""},
        {"gpu0", catalog::DeviceType::gpu, 0x10de, 8995, "nvidia", "550.54.14"},
        {"gpu1", catalog::DeviceType::gpu, 0x8086, 0x56a0, "i915", ""},
        {"npu0", catalog::DeviceType::npu, 0x1022, 0x1502, "amdxdna", "2.18.0-rc1"},
    };
    info.has_library = [](const std::string& soname) { return soname != "libvulkan.so.1"; };
    return info;
  }();
  return m;
}

void check_versions(const catalog::Version& a, const catalog::Version& b) {
  const auto ab = a <=> b;
  const auto ba = b <=> a;
  if ((ab < 0) != (ba > 0) || (ab == 0) != (ba == 0) || (ab == 0) != (a == b)) {
    finding("version ordering is not antisymmetric: " + catalog::to_string(a) + " vs " +
            catalog::to_string(b));
  }
}

void use(const catalog::EpMetadata& m) {
  auto again = catalog::parse_ep_metadata(catalog::to_json(m));
  if (!again) finding("to_json(ep metadata) refused: " + again.error().message);
  if (!(*again == m)) finding("ep metadata round trip differs");
  auto text = catalog::parse_ep_metadata_text(catalog::to_json(m).dump());
  if (!text || !(*text == m)) finding("ep metadata text round trip differs");
  check_versions(m.version.value, m.ort_min.value);
  for (const auto& s : m.supports) {
    if (s.driver_min) check_versions(s.driver_min->value, m.ort_min.value);
  }
  for (const char* ort : {"1.22.0", "1.30.0"}) {
    auto v = catalog::parse_version(ort);
    if (!v) finding("parse_version(" + std::string(ort) + ")");
    const auto c = catalog::check_compatibility(machine(), *v, m, 7);
    if (const auto* match = std::get_if<catalog::Match>(&c)) {
      if (match->device_ids.empty() || match->index != 7) finding("empty or misnumbered match");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  auto from_text = catalog::parse_ep_metadata_text(text);
  if (epbroker_fuzz::verbose()) {
    std::fprintf(stderr, "parse_ep_metadata_text: %s\n",
                 from_text ? "ok" : from_text.error().message.c_str());
  }
  if (auto doc = catalog::parse_json(text)) {
    auto from_doc = catalog::parse_ep_metadata(*doc);
    // Where both parse, the text parser (which also refuses duplicate keys)
    // accepts nothing the document parser refuses, and reads the same value.
    if (from_text && !(from_doc && *from_doc == *from_text)) {
      finding("parse_ep_metadata_text accepted what parse_ep_metadata refused or read otherwise");
    }
    if (from_doc) use(*from_doc);
  }
  // (parse_json refuses nesting deeper than 512 where the text parser does not:
  // deep padding under other tools' keys is no reason to refuse the metadata.)

  auto m = catalog::package::parse_manifest(text);
  if (epbroker_fuzz::verbose()) {
    std::fprintf(stderr, "parse_manifest: %s\n", m ? "ok" : m.error().message.c_str());
  }
  if (m) {
    auto again = catalog::package::parse_manifest(catalog::package::to_json(*m).dump());
    if (!again || !(*again == *m)) finding("manifest round trip differs");
    auto pretty = catalog::package::parse_manifest(catalog::package::to_text(*m));
    if (!pretty || !(*pretty == *m)) finding("manifest to_text round trip differs");
    if (!catalog::package::check_manifest_matches(*m, m->ep)) {
      finding("a manifest does not match its own metadata");
    }
    use(m->ep);
  }

  (void)catalog::parse_version(text);
  return 0;
}
