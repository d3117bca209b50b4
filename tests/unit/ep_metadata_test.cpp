#include "catalog/ep_metadata.hpp"

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace catalog {
namespace {

using ::nlohmann::json;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr const char* kFullExample = R"({
  "other-tool": {"weight": 1.5, "anything": [null, true]},
  "epbroker": {
    "schema": 1,
    "name": "test-ep",
    "version": "1.0.0",
    "ep_names": ["EpbrokerTestEp", "EpbrokerTestEp.Debug"],
    "vendor": "epbroker",
    "arch": "x86_64",
    "ort_min": "1.23.0",
    "library": "lib/libep.so",
    "supports": [
      {"type": "cpu"},
      {"type": "gpu", "vendor_ids": [4318], "device_ids": [8995, 8996], "driver": "nvidia",
       "driver_min": "550.54.14"},
      {"type": "npu", "vendor_ids": [], "driver": "amdxdna"}
    ],
    "requires": ["libvulkan.so.1", "libstdc++.so.6"],
    "description": "A test EP.\nIt does nothing useful."
  }
})";

json full() { return json::parse(kFullExample); }

json minimal() {
  return json::parse(R"({"epbroker": {
    "schema": 1, "name": "m", "version": "2", "ep_names": ["E"], "vendor": "v",
    "arch": "aarch64", "ort_min": "1.20", "library": "libm.so",
    "supports": [{"type": "npu"}]}})");
}

EpMetadata parse_ok(const json& custom) {
  auto r = parse_ep_metadata(custom);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message);
  return r ? *r : EpMetadata{};
}

TEST(EpMetadataTest, ParsesFullExample) {
  const EpMetadata m = parse_ok(full());
  EXPECT_EQ(m.name, "test-ep");
  EXPECT_EQ(m.version.text, "1.0.0");
  EXPECT_EQ(m.version.value.parts, (std::vector<std::uint32_t>{1, 0, 0}));
  EXPECT_EQ(m.ep_names, (std::vector<std::string>{"EpbrokerTestEp", "EpbrokerTestEp.Debug"}));
  EXPECT_EQ(m.vendor, "epbroker");
  EXPECT_EQ(m.arch, "x86_64");
  EXPECT_EQ(m.ort_min.text, "1.23.0");
  EXPECT_EQ(m.library, "lib/libep.so");
  ASSERT_EQ(m.supports.size(), 3u);
  EXPECT_EQ(m.supports[0].type, DeviceType::cpu);
  EXPECT_TRUE(m.supports[0].vendor_ids.empty());
  EXPECT_FALSE(m.supports[0].driver.has_value());
  EXPECT_FALSE(m.supports[0].driver_min.has_value());
  EXPECT_EQ(m.supports[1].type, DeviceType::gpu);
  EXPECT_EQ(m.supports[1].vendor_ids, (std::vector<std::uint16_t>{0x10de}));
  EXPECT_EQ(m.supports[1].device_ids, (std::vector<std::uint16_t>{8995, 8996}));
  EXPECT_EQ(m.supports[1].driver, "nvidia");
  ASSERT_TRUE(m.supports[1].driver_min.has_value());
  EXPECT_EQ(m.supports[1].driver_min->text, "550.54.14");
  EXPECT_EQ(m.supports[1].driver_min->value.parts, (std::vector<std::uint32_t>{550, 54, 14}));
  EXPECT_EQ(m.supports[2].type, DeviceType::npu);
  EXPECT_EQ(m.supports[2].driver, "amdxdna");
  EXPECT_EQ(m.required_sonames, (std::vector<std::string>{"libvulkan.so.1", "libstdc++.so.6"}));
  EXPECT_EQ(m.description, "A test EP.\nIt does nothing useful.");
}

TEST(EpMetadataTest, ParsesMinimalExample) {
  const EpMetadata m = parse_ok(minimal());
  EXPECT_EQ(m.name, "m");
  EXPECT_EQ(m.arch, "aarch64");
  EXPECT_TRUE(m.required_sonames.empty());
  EXPECT_TRUE(m.description.empty());
  ASSERT_EQ(m.supports.size(), 1u);
  EXPECT_EQ(m.supports[0].type, DeviceType::npu);
}

TEST(EpMetadataTest, RoundTrips) {
  for (const json& custom : {full(), minimal()}) {
    const EpMetadata m = parse_ok(custom);
    const json out = to_json(m);
    ASSERT_TRUE(out.is_object());
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(parse_ok(out), m);
    // Through text as well (what a publisher writes and a client reads).
    const auto again = parse_ep_metadata_text(out.dump());
    ASSERT_TRUE(again.has_value()) << again.error().message;
    EXPECT_EQ(*again, m);
  }
  // The full example is written in the canonical form, except for the empty
  // vendor_ids list, which to_json() leaves out.
  json expected = full()["epbroker"];
  expected["supports"][2].erase("vendor_ids");
  EXPECT_EQ(to_json(parse_ok(full()))["epbroker"], expected);
}

TEST(EpMetadataTest, AcceptsBoundaries) {
  json c = minimal();
  json& e = c["epbroker"];
  e["name"] = "0" + std::string(kMaxPackageNameLength - 1, 'a');
  e["ep_names"] = json::array();
  for (std::size_t i = 0; i < kMaxEpNames; ++i) e["ep_names"].push_back("Ep" + std::to_string(i));
  e["ep_names"][0] = std::string(kMaxEpNameLength, 'E');
  e["vendor"] = "\xc3\x9cnicode GmbH \xe2\x84\xa2";  // "Ünicode GmbH ™"
  e["library"] = std::string(kMaxLibraryPathLength - 3, 'a') + ".so";
  e["version"] = "999999999.0.0.1-rc.1";
  e["supports"] = json::array();
  for (std::size_t i = 0; i < kMaxSupports; ++i) e["supports"].push_back({{"type", "gpu"}});
  e["supports"][0]["vendor_ids"] = json::array({0, 65535});
  e["supports"][0]["device_ids"] = json::array();
  for (std::size_t i = 0; i < kMaxPciIds; ++i) e["supports"][0]["device_ids"].push_back(i);
  e["supports"][0]["driver"] = std::string(kMaxDriverNameLength, 'd');
  e["requires"] = json::array();
  for (std::size_t i = 0; i < kMaxRequires; ++i) {
    e["requires"].push_back("lib" + std::to_string(i) + ".so");
  }
  e["requires"][0] = std::string(kMaxSonameLength, 's');
  std::string description;
  for (std::size_t i = 0; i < kMaxDescriptionLength; ++i) description += "\xc3\xa9";  // é
  e["description"] = description;
  const EpMetadata m = parse_ok(c);
  EXPECT_EQ(m.supports[0].vendor_ids, (std::vector<std::uint16_t>{0, 65535}));
  EXPECT_EQ(m.description.size(), 2 * kMaxDescriptionLength);
  EXPECT_EQ(parse_ok(to_json(m)), m);
}

TEST(EpMetadataTest, IgnoresOtherCustomKeys) {
  json c = minimal();
  c["epbroker-next"] = {{"schema", 99}};
  c["x"] = 1.25;
  EXPECT_EQ(parse_ok(c), parse_ok(minimal()));
}

TEST(EpMetadataTest, KindDefaultsToExecutionProvider) {
  EXPECT_EQ(parse_ok(minimal()).kind, PackageKind::execution_provider);
  // The default is not written back, so schema-1 readers without `kind` still parse it.
  EXPECT_FALSE(to_json(parse_ok(minimal()))["epbroker"].contains("kind"));
}

TEST(EpMetadataTest, RuntimePackageMayListNoEp) {
  json c = minimal();
  c["epbroker"]["kind"] = "runtime";
  c["epbroker"]["ep_names"] = json::array();
  c["epbroker"]["library"] = "lib/libonnxruntime.so.1";
  const EpMetadata m = parse_ok(c);
  EXPECT_EQ(m.kind, PackageKind::runtime);
  EXPECT_TRUE(m.ep_names.empty());
  EXPECT_EQ(to_json(m)["epbroker"]["kind"], "runtime");
  EXPECT_EQ(parse_ok(to_json(m)), m);
}

TEST(EpMetadataTest, ExecutionProviderNeedsAnEpName) {
  json c = minimal();
  c["epbroker"]["kind"] = "execution_provider";
  c["epbroker"]["ep_names"] = json::array();
  const auto r = parse_ep_metadata(c);
  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error().message, HasSubstr("epbroker.ep_names"));
}

// ---- malformed inputs ------------------------------------------------------------

struct BadCase {
  const char* name;
  std::function<void(json& custom)> mutate;
  Errc code;
  const char* message;  // expected substring: the field path and what is wrong
};

json& ep(json& custom) { return custom["epbroker"]; }
json& sup(json& custom, std::size_t i) { return custom["epbroker"]["supports"][i]; }
auto set(const char* key, json value) {
  return [key, value](json& c) { ep(c)[key] = value; };
}
auto erase(const char* key) {
  return [key](json& c) { ep(c).erase(key); };
}
auto set_support(std::size_t i, const char* key, json value) {
  return [i, key, value](json& c) { sup(c, i)[key] = value; };
}
json many(std::size_t n, const json& item) { return json(std::vector<json>(n, item)); }
json numbered(std::size_t n, const std::string& prefix) {
  json a = json::array();
  for (std::size_t i = 0; i < n; ++i) a.push_back(prefix + std::to_string(i));
  return a;
}

const Errc kBad = Errc::bad_field;

const BadCase kBadCases[] = {
    // Missing required fields.
    {"MissingSchema", erase("schema"), kBad, "epbroker.schema: missing"},
    {"MissingName", erase("name"), kBad, "epbroker.name: missing"},
    {"MissingVersion", erase("version"), kBad, "epbroker.version: missing"},
    {"MissingEpNames", erase("ep_names"), kBad, "epbroker.ep_names: missing"},
    {"MissingVendor", erase("vendor"), kBad, "epbroker.vendor: missing"},
    {"MissingArch", erase("arch"), kBad, "epbroker.arch: missing"},
    {"MissingOrtMin", erase("ort_min"), kBad, "epbroker.ort_min: missing"},
    {"MissingLibrary", erase("library"), kBad, "epbroker.library: missing"},
    {"MissingSupports", erase("supports"), kBad, "epbroker.supports: missing"},
    {"MissingSupportType", [](json& c) { sup(c, 1).erase("type"); }, kBad,
     "epbroker.supports[1].type: missing"},
    // The container.
    {"CustomIsArray", [](json& c) { c = json::array({full()}); }, kBad,
     "custom: expected object, got array"},
    {"CustomIsNull", [](json& c) { c = nullptr; }, kBad, "custom: expected object, got null"},
    {"CustomIsString", [](json& c) { c = "epbroker"; }, kBad, "custom: expected object"},
    {"NoEpbrokerKey", [](json& c) { c.erase("epbroker"); }, kBad, "epbroker: missing"},
    {"EpbrokerIsArray", [](json& c) { c["epbroker"] = json::array(); }, kBad,
     "epbroker: expected object, got array"},
    // Schema.
    {"Schema3", set("schema", 3), Errc::unsupported,
     "epbroker.schema: unsupported schema 3 (this build knows 1..2)"},
    {"Schema0", set("schema", 0), Errc::unsupported, "epbroker.schema: unsupported schema 0"},
    {"SchemaNegative", set("schema", -1), Errc::unsupported, "epbroker.schema: unsupported"},
    {"Schema3WithNewKeys",
     [](json& c) {
       ep(c)["schema"] = 3;
       ep(c)["new_field"] = true;
     },
     Errc::unsupported, "epbroker.schema: unsupported schema 3"},
    // Schema 2 knows no new EP key.
    {"Schema2WithNewKeys",
     [](json& c) {
       ep(c)["schema"] = 2;
       ep(c)["new_field"] = true;
     },
     kBad, "epbroker.new_field: unknown key"},
    {"Schema1KindModel", set("kind", "model"), kBad,
     "epbroker.kind: kind \"model\" needs schema 2"},
    {"SchemaString", set("schema", "1"), kBad, "epbroker.schema: expected integer, got string"},
    {"SchemaFloat", set("schema", 1.0), kBad, "epbroker.schema: expected integer, got float"},
    {"SchemaBool", set("schema", true), kBad, "epbroker.schema: expected integer, got boolean"},
    // Unknown keys.
    {"UnknownTopKey", set("extra", 1), kBad, "epbroker.extra: unknown key"},
    {"UnknownTopKeyOddBytes", set("\x01\xff", 1), kBad, "epbroker[\"\\x01\\xff\"]: unknown key"},
    {"UnknownSupportKey", set_support(0, "vram_gb", 8), kBad,
     "epbroker.supports[0].vram_gb: unknown key"},
    // name.
    {"NameNumber", set("name", 7), kBad, "epbroker.name: expected string, got integer"},
    {"NameEmpty", set("name", ""), kBad, "epbroker.name: empty"},
    {"NameUppercase", set("name", "Test-ep"), kBad, "epbroker.name: invalid character \"T\""},
    {"NameLeadingDash", set("name", "-ep"), kBad, "epbroker.name: must start with [a-z0-9]"},
    {"NameLeadingDot", set("name", ".ep"), kBad, "epbroker.name: must start with"},
    {"NameSlash", set("name", "a/b"), kBad, "epbroker.name: invalid character \"/\""},
    {"NameOverlong", set("name", std::string(65, 'a')), kBad,
     "epbroker.name: longer than 64 characters"},
    // version / ort_min.
    {"VersionDoubleDot", set("version", "1..2"), kBad, "epbroker.version: invalid version"},
    {"VersionLeadingV", set("version", "v1"), kBad, "epbroker.version: invalid version \"v1\""},
    {"VersionEmpty", set("version", ""), kBad, "epbroker.version: invalid version \"\": empty"},
    {"VersionFiveParts", set("version", "1.2.3.4.5"), kBad,
     "epbroker.version: invalid version \"1.2.3.4.5\": more than 4 components"},
    {"VersionTenDigits", set("version", "1234567890"), kBad, "epbroker.version: invalid"},
    {"VersionEmptySuffix", set("version", "1.0-"), kBad, "epbroker.version: invalid version"},
    {"VersionBadSuffix", set("version", "1.0-rc_1"), kBad, "epbroker.version: invalid version"},
    {"VersionNumber", set("version", 1), kBad, "epbroker.version: expected string, got integer"},
    {"OrtMinWord", set("ort_min", "latest"), kBad, "epbroker.ort_min: invalid version"},
    {"OrtMinFloat", set("ort_min", 1.23), kBad, "epbroker.ort_min: expected string, got float"},
    // ep_names.
    {"EpNamesString", set("ep_names", "Ep"), kBad, "epbroker.ep_names: expected array, got string"},
    {"EpNamesEmpty", set("ep_names", json::array()), kBad,
     "epbroker.ep_names: needs at least 1 entry"},
    {"EpNamesTooMany", set("ep_names", numbered(17, "Ep")), kBad,
     "epbroker.ep_names: too many entries (17 > 16)"},
    {"EpNameEmpty", set("ep_names", {"Ep", ""}), kBad, "epbroker.ep_names[1]: empty"},
    {"EpNameSpace", set("ep_names", {"Ep Name"}), kBad,
     "epbroker.ep_names[0]: invalid character \" \""},
    {"EpNameOverlong", set("ep_names", {std::string(129, 'E')}), kBad,
     "epbroker.ep_names[0]: longer than 128"},
    {"EpNameNull", set("ep_names", {"Ep", nullptr}), kBad,
     "epbroker.ep_names[1]: expected string, got null"},
    {"EpNameDuplicate", set("ep_names", {"A", "B", "A"}), kBad, "epbroker.ep_names[2]: duplicate"},
    {"EpNameOverlongUtf8", set("ep_names", {"Ep\xc0\xaf"}), kBad,
     "epbroker.ep_names[0]: invalid UTF-8"},
    // vendor.
    {"VendorEmpty", set("vendor", ""), kBad, "epbroker.vendor: empty"},
    {"VendorOverlong", set("vendor", std::string(129, 'v')), kBad,
     "epbroker.vendor: longer than 128"},
    {"VendorEscape", set("vendor", "Evil\x1b[2J"), kBad, "epbroker.vendor: control"},
    {"VendorBidiOverride", set("vendor", "abc\xe2\x80\xae"), kBad,
     "epbroker.vendor: control or bidirectional character at offset 3"},
    {"VendorInvalidUtf8", set("vendor", "caf\xe9"), kBad, "epbroker.vendor: invalid UTF-8"},
    {"VendorArray", set("vendor", json::array({"a"})), kBad,
     "epbroker.vendor: expected string, got array"},
    // arch.
    {"ArchArm64", set("arch", "arm64"), kBad, "epbroker.arch: unknown architecture \"arm64\""},
    {"ArchUppercase", set("arch", "X86_64"), kBad, "epbroker.arch: unknown architecture"},
    {"ArchNumber", set("arch", 64), kBad, "epbroker.arch: expected string"},
    // library.
    {"LibraryAbsolute", set("library", "/usr/lib/libep.so"), kBad,
     "epbroker.library: absolute path"},
    {"LibraryDotDot", set("library", "lib/../../etc/libep.so"), kBad,
     "epbroker.library: '..' path component"},
    {"LibraryOnlyDotDot", set("library", ".."), kBad, "epbroker.library: '..' path component"},
    {"LibraryDotSlash", set("library", "./x"), kBad, "epbroker.library: '.' path component"},
    {"LibraryDot", set("library", "."), kBad, "epbroker.library: '.' path component"},
    {"LibraryDoubleSlash", set("library", "a//b"), kBad, "epbroker.library: empty path component"},
    {"LibraryTrailingSlash", set("library", "lib/"), kBad,
     "epbroker.library: empty path component"},
    {"LibraryBackslash", set("library", "lib\\libep.so"), kBad,
     "epbroker.library: contains a backslash"},
    {"LibraryNul", set("library", std::string("lib/libep.so\0.txt", 17)), kBad,
     "epbroker.library: contains a NUL byte"},
    {"LibraryEmpty", set("library", ""), kBad, "epbroker.library: empty"},
    {"LibraryOverlong", set("library", std::string(253, 'a') + ".so"), kBad,
     "epbroker.library: longer than 255"},
    {"LibrarySpace", set("library", "lib/lib ep.so"), kBad,
     "epbroker.library: invalid character \" \" at offset 7"},
    {"LibraryNonAscii", set("library", "lib/\xc3\xa9.so"), kBad,
     "epbroker.library: invalid character"},
    // supports.
    {"SupportsEmpty", set("supports", json::array()), kBad,
     "epbroker.supports: needs at least 1 entry"},
    {"SupportsTooMany", set("supports", many(65, {{"type", "cpu"}})), kBad,
     "epbroker.supports: too many entries (65 > 64)"},
    {"SupportsObject", set("supports", {{"type", "cpu"}}), kBad,
     "epbroker.supports: expected array, got object"},
    {"SupportNotObject", set("supports", {"cpu"}), kBad,
     "epbroker.supports[0]: expected object, got string"},
    {"SupportTypeTpu", set_support(0, "type", "tpu"), kBad,
     "epbroker.supports[0].type: unknown device type \"tpu\""},
    {"SupportTypeUppercase", set_support(0, "type", "GPU"), kBad,
     "epbroker.supports[0].type: unknown device type"},
    {"SupportTypeNumber", set_support(0, "type", 1), kBad,
     "epbroker.supports[0].type: expected string"},
    {"VendorId70000", set_support(1, "vendor_ids", {70000}), kBad,
     "epbroker.supports[1].vendor_ids[0]: out of range 0..65535"},
    {"VendorId65536", set_support(1, "vendor_ids", {4318, 65536}), kBad,
     "epbroker.supports[1].vendor_ids[1]: out of range 0..65535"},
    {"VendorIdNegative", set_support(1, "vendor_ids", {-1}), kBad,
     "epbroker.supports[1].vendor_ids[0]: out of range 0..65535"},
    {"VendorIdFloat", set_support(1, "vendor_ids", {4318.0}), kBad,
     "epbroker.supports[1].vendor_ids[0]: expected integer, got float"},
    {"VendorIdString", set_support(1, "vendor_ids", {"0x10de"}), kBad,
     "epbroker.supports[1].vendor_ids[0]: expected integer, got string"},
    {"VendorIdBool", set_support(1, "vendor_ids", {true}), kBad,
     "epbroker.supports[1].vendor_ids[0]: expected integer, got boolean"},
    {"VendorIdsScalar", set_support(1, "vendor_ids", 4318), kBad,
     "epbroker.supports[1].vendor_ids: expected array, got integer"},
    {"VendorIdsTooMany", set_support(1, "vendor_ids", many(65, 1)), kBad,
     "epbroker.supports[1].vendor_ids: too many entries (65 > 64)"},
    {"DeviceIdNegative", set_support(1, "device_ids", {8995, -5}), kBad,
     "epbroker.supports[1].device_ids[1]: out of range 0..65535"},
    {"DeviceIdHuge", set_support(1, "device_ids", {std::uint64_t{1} << 40}), kBad,
     "epbroker.supports[1].device_ids[0]: out of range"},
    {"DeviceIdFloat", set_support(0, "device_ids", {1.5}), kBad,
     "epbroker.supports[0].device_ids[0]: expected integer, got float"},
    {"DriverUppercase", set_support(1, "driver", "NVIDIA"), kBad,
     "epbroker.supports[1].driver: invalid character \"N\""},
    {"DriverEmpty", set_support(1, "driver", ""), kBad, "epbroker.supports[1].driver: empty"},
    {"DriverOverlong", set_support(1, "driver", std::string(65, 'd')), kBad,
     "epbroker.supports[1].driver: longer than 64"},
    {"DriverNull", set_support(1, "driver", nullptr), kBad,
     "epbroker.supports[1].driver: expected string, got null"},
    {"DriverMinWithoutDriver", set_support(0, "driver_min", "1.0"), kBad,
     "epbroker.supports[0].driver_min: requires \"driver\""},
    {"DriverMinBad", set_support(1, "driver_min", "550..54"), kBad,
     "epbroker.supports[1].driver_min: invalid version"},
    {"DriverMinNumber", set_support(1, "driver_min", 550), kBad,
     "epbroker.supports[1].driver_min: expected string, got integer"},
    // requires.
    {"RequiresString", set("requires", "libvulkan.so.1"), kBad,
     "epbroker.requires: expected array, got string"},
    {"RequiresTooMany", set("requires", numbered(17, "lib")), kBad,
     "epbroker.requires: too many entries (17 > 16)"},
    {"RequiresPath", set("requires", {"/usr/lib/libvulkan.so.1"}), kBad,
     "epbroker.requires[0]: invalid character \"/\""},
    {"RequiresEmptyName", set("requires", {""}), kBad, "epbroker.requires[0]: empty"},
    {"RequiresOverlong", set("requires", {std::string(129, 'l')}), kBad,
     "epbroker.requires[0]: longer than 128"},
    // description.
    {"DescriptionOverlong", set("description", std::string(1025, 'd')), kBad,
     "epbroker.description: longer than 1024 characters"},
    {"DescriptionNumber", set("description", 3), kBad,
     "epbroker.description: expected string, got integer"},
    {"KindUnknown", set("kind", "driver"), kBad,
     "epbroker.kind: unknown kind \"driver\" (known: execution_provider, runtime)"},
    {"KindNotString", set("kind", 1), kBad, "epbroker.kind: expected string, got integer"},
    {"DescriptionNul", set("description", std::string("a\0b", 3)), kBad,
     "epbroker.description: control or bidirectional character at offset 1"},
    {"DescriptionSurrogate", set("description", "x\xed\xa0\x80"), kBad,
     "epbroker.description: invalid UTF-8"},
    {"DescriptionTruncatedUtf8", set("description", "x\xe2\x82"), kBad,
     "epbroker.description: invalid UTF-8"},
};

// Names the case in test output instead of dumping its bytes.
void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

class EpMetadataBadTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(EpMetadataBadTest, IsRejectedNamingTheField) {
  const BadCase& bad = GetParam();
  json custom = full();
  bad.mutate(custom);
  const auto r = parse_ep_metadata(custom);
  ASSERT_FALSE(r.has_value()) << "accepted: " << bad.name;
  EXPECT_EQ(errc_name(r.error().code), errc_name(bad.code)) << r.error().message;
  EXPECT_THAT(r.error().message, HasSubstr(bad.message));
  EXPECT_THAT(r.error().message, ::testing::AnyOf(StartsWith("epbroker"), StartsWith("custom")));
}

INSTANTIATE_TEST_SUITE_P(Malformed, EpMetadataBadTest, ::testing::ValuesIn(kBadCases),
                         [](const ::testing::TestParamInfo<BadCase>& param_info) {
                           return std::string(param_info.param.name);
                         });

// ---- text input ------------------------------------------------------------------

TEST(EpMetadataTextTest, ParsesText) {
  const auto r = parse_ep_metadata_text(kFullExample);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(*r, parse_ok(full()));
}

TEST(EpMetadataTextTest, MalformedJsonIsMalformed) {
  for (const std::string_view text :
       {"", "{", "not json", "{\"epbroker\": {}} trailing", "{\"epbroker\": {\"schema\": 1,}}",
        "// comment\n{}", "{'epbroker': 1}", "[1, 2"}) {
    const auto r = parse_ep_metadata_text(text);
    ASSERT_FALSE(r.has_value()) << text;
    EXPECT_EQ(r.error().code, Errc::malformed) << text << ": " << r.error().message;
  }
}

TEST(EpMetadataTextTest, InvalidUtf8IsMalformed) {
  std::string text = full().dump();
  const auto at = text.find("epbroker\",");  // the vendor value
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 8, "ep\xff\xfe");
  const auto r = parse_ep_metadata_text(text);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Errc::malformed);
}

TEST(EpMetadataTextTest, DuplicateKeyIsMalformed) {
  std::string text = full().dump();
  const auto at = text.find("\"name\":");
  ASSERT_NE(at, std::string::npos);
  text.insert(at, "\"name\":\"other-ep\",");
  const auto r = parse_ep_metadata_text(text);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Errc::malformed);
  EXPECT_THAT(r.error().message, HasSubstr("duplicate key \"name\""));
  // Equal keys in different objects are fine.
  EXPECT_TRUE(
      parse_ep_metadata_text(R"({"a": {"type": 1}, "epbroker": )" + full()["epbroker"].dump() + "}")
          .has_value());
}

TEST(EpMetadataTextTest, FloatsAreBadFields) {
  struct Case {
    const char* from;
    const char* to;
    const char* message;
  };
  for (const Case& c : {
           Case{"[4318]", "[4318.0]", "epbroker.supports[1].vendor_ids[0]: expected integer"},
           Case{"[4318]", "[4.318e3]", "epbroker.supports[1].vendor_ids[0]: expected integer"},
           Case{"[4318]", "[100000000000000000000000]", "vendor_ids[0]: expected integer"},
           Case{"\"schema\":1", "\"schema\":1.0", "epbroker.schema: expected integer"},
           Case{"\"schema\":1", "\"schema\":1e0", "epbroker.schema: expected integer"},
           Case{"\"1.0.0\"", "1.0", "epbroker.version: expected string, got float"},
       }) {
    std::string text = full().dump();
    const auto at = text.find(c.from);
    ASSERT_NE(at, std::string::npos) << c.from;
    text.replace(at, std::string_view(c.from).size(), c.to);
    const auto r = parse_ep_metadata_text(text);
    ASSERT_FALSE(r.has_value()) << text;
    EXPECT_EQ(r.error().code, Errc::bad_field) << r.error().message;
    EXPECT_THAT(r.error().message, HasSubstr(c.message));
  }
}

TEST(EpMetadataTextTest, StructuralErrorsAreBadFields) {
  const auto r = parse_ep_metadata_text("[1, 2]");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Errc::bad_field);
  EXPECT_THAT(r.error().message, HasSubstr("custom: expected object"));
}

TEST(EpMetadataTextTest, OversizedTextIsRefused) {
  const std::string text = R"({"pad": ")" + std::string(kMaxEpMetadataTextBytes, 'x') + "\"}";
  const auto r = parse_ep_metadata_text(text);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Errc::too_large);  // a size in bytes (too_many counts things)
}

TEST(EpMetadataTextTest, DeepNestingDoesNotCrash) {
  const std::size_t depth = 100000;
  const std::string text = R"({"pad": )" + std::string(depth, '[') + std::string(depth, ']') +
                           R"(, "epbroker": )" + full()["epbroker"].dump() + "}";
  const auto r = parse_ep_metadata_text(text);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->name, "test-ep");
  const auto unbalanced = parse_ep_metadata_text(std::string(depth, '['));
  ASSERT_FALSE(unbalanced.has_value());
  EXPECT_EQ(unbalanced.error().code, Errc::malformed);
}

}  // namespace
}  // namespace catalog
