#include "catalog/package/manifest.hpp"

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace catalog::package {
namespace {

using ::nlohmann::json;
using ::testing::HasSubstr;
using ::testing::StartsWith;

const std::string kHashA(64, 'a');
const std::string kHashB(64, 'b');

json valid() {
  return json::parse(R"({
    "manifest_version": 1,
    "epbroker": {
      "schema": 1, "name": "test-ep", "version": "1.0.0", "ep_names": ["TestEp"],
      "vendor": "epbroker", "arch": "x86_64", "ort_min": "1.23.0", "library": "lib/libep.so",
      "supports": [{"type": "cpu"}, {"type": "gpu", "vendor_ids": [4318], "driver": "nvidia",
                    "driver_min": "550.1"}],
      "requires": ["libstdc++.so.6"], "description": "test"},
    "files": [
      {"path": "LICENSE", "size": 11, "sha256": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
       "mode": 420},
      {"path": "lib/libep.so", "size": 12345,
       "sha256": "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "mode": 493},
      {"path": "lib/plugins/x.so", "size": 0,
       "sha256": "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "mode": 420}
    ]})");
}

Manifest parse_ok(const std::string& text) {
  auto r = parse_manifest(text);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message);
  return r ? *r : Manifest{};
}

TEST(ManifestTest, ParsesValidManifest) {
  const Manifest m = parse_ok(valid().dump());
  EXPECT_EQ(m.ep.name, "test-ep");
  EXPECT_EQ(m.ep.library, "lib/libep.so");
  ASSERT_EQ(m.files.size(), 3u);
  EXPECT_EQ(m.files[0], (FileEntry{"LICENSE", 11, kHashA, false}));
  EXPECT_EQ(m.files[1], (FileEntry{"lib/libep.so", 12345, kHashB, true}));
  EXPECT_EQ(m.files[2], (FileEntry{"lib/plugins/x.so", 0, kHashB, false}));
}

TEST(ManifestTest, RoundTripsThroughJsonAndText) {
  const Manifest m = parse_ok(valid().dump());
  EXPECT_EQ(parse_ok(to_json(m).dump()), m);
  EXPECT_EQ(parse_ok(to_text(m)), m);
  EXPECT_EQ(to_text(m), to_text(parse_ok(to_text(m))));  // deterministic
  EXPECT_EQ(to_text(m).back(), '\n');
}

TEST(ManifestTest, AcceptsUtf8PathsAndLargeSizes) {
  json j = valid();
  j["files"].push_back({{"path", "share/d\xC3\xA9j\xC3\xA0.txt"},
                        {"size", 18446744073709551615ull},
                        {"sha256", kHashA},
                        {"mode", 420}});
  const Manifest m = parse_ok(j.dump());
  ASSERT_EQ(m.files.size(), 4u);
  EXPECT_EQ(m.files[3].size, 18446744073709551615ull);
}

struct BadCase {
  std::string name;
  std::function<void(json&)> mutate;
  Errc code;
  std::string message_start;  // the field path the message must start with
  std::string mentions = "";  // and something it must say
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

class ManifestRefusal : public ::testing::TestWithParam<BadCase> {};

TEST_P(ManifestRefusal, RefusesWithTypedErrorNamingTheField) {
  json j = valid();
  GetParam().mutate(j);
  auto r = parse_manifest(j.dump());
  ASSERT_FALSE(r.has_value()) << "accepted: " << j.dump();
  EXPECT_EQ(errc_name(r.error().code), errc_name(GetParam().code)) << r.error().message;
  EXPECT_THAT(r.error().message, StartsWith(GetParam().message_start));
  EXPECT_THAT(r.error().message, HasSubstr(GetParam().mentions));
}

json file(const std::string& path, json size = 1, json sha = std::string(64, 'a'),
          json mode = 420) {
  return {{"path", path}, {"size", size}, {"sha256", sha}, {"mode", mode}};
}

INSTANTIATE_TEST_SUITE_P(
    Malformed, ManifestRefusal,
    ::testing::Values(
        BadCase{"not_an_object", [](json& j) { j = json::array(); }, Errc::bad_field, "manifest",
                "expected object"},
        BadCase{"version_missing", [](json& j) { j.erase("manifest_version"); }, Errc::bad_field,
                "manifest_version: missing"},
        BadCase{"version_2", [](json& j) { j["manifest_version"] = 2; }, Errc::unsupported,
                "manifest_version", "unsupported"},
        BadCase{"version_string", [](json& j) { j["manifest_version"] = "1"; }, Errc::bad_field,
                "manifest_version", "expected integer"},
        BadCase{"version_float", [](json& j) { j["manifest_version"] = 1.0; }, Errc::bad_field,
                "manifest_version", "expected integer"},
        BadCase{"unknown_top_key", [](json& j) { j["extra"] = 1; }, Errc::bad_field, "\"extra\"",
                "unknown key"},
        BadCase{"epbroker_missing", [](json& j) { j.erase("epbroker"); }, Errc::bad_field,
                "epbroker: missing"},
        BadCase{"epbroker_bad_field", [](json& j) { j["epbroker"]["arch"] = "mips"; },
                Errc::bad_field, "epbroker.arch", "unknown architecture"},
        BadCase{"epbroker_unknown_key", [](json& j) { j["epbroker"]["x"] = 1; }, Errc::bad_field,
                "epbroker.x", "unknown key"},
        BadCase{"files_missing", [](json& j) { j.erase("files"); }, Errc::bad_field,
                "files: missing"},
        BadCase{"files_not_array", [](json& j) { j["files"] = json::object(); }, Errc::bad_field,
                "files", "expected array"},
        BadCase{"files_empty", [](json& j) { j["files"] = json::array(); }, Errc::bad_field,
                "files", "at least 1"},
        BadCase{"file_not_object", [](json& j) { j["files"][1] = "lib/libep.so"; },
                Errc::bad_field, "files[1]", "expected object"},
        BadCase{"file_unknown_key", [](json& j) { j["files"][0]["owner"] = "root"; },
                Errc::bad_field, "files[0][\"owner\"]", "unknown key"},
        BadCase{"file_path_missing", [](json& j) { j["files"][0].erase("path"); },
                Errc::bad_field, "files[0].path: missing"},
        BadCase{"file_path_not_string", [](json& j) { j["files"][0]["path"] = 7; },
                Errc::bad_field, "files[0].path", "expected string"},
        BadCase{"path_absolute", [](json& j) { j["files"][0] = file("/etc/passwd"); },
                Errc::bad_field, "files[0].path", "absolute"},
        BadCase{"path_dotdot", [](json& j) { j["files"][0] = file("../x"); }, Errc::bad_field,
                "files[0].path", "'..'"},
        BadCase{"path_inner_dotdot", [](json& j) { j["files"][0] = file("a/../../x"); },
                Errc::bad_field, "files[0].path", "'..'"},
        BadCase{"path_dot", [](json& j) { j["files"][0] = file("./LICENSE"); }, Errc::bad_field,
                "files[0].path", "'.'"},
        BadCase{"path_empty_component", [](json& j) { j["files"][0] = file("A//b"); },
                Errc::bad_field, "files[0].path", "empty path component"},
        BadCase{"path_trailing_slash", [](json& j) { j["files"][0] = file("A/"); },
                Errc::bad_field, "files[0].path", "empty path component"},
        BadCase{"path_empty", [](json& j) { j["files"][0] = file(""); }, Errc::bad_field,
                "files[0].path", "empty path"},
        BadCase{"path_backslash", [](json& j) { j["files"][0] = file("A\\b"); },
                Errc::bad_field, "files[0].path", "backslash"},
        BadCase{"path_control", [](json& j) { j["files"][0] = file("A\x1b[31m"); },
                Errc::bad_field, "files[0].path", "control character"},
        BadCase{"path_c1_control", [](json& j) { j["files"][0] = file("A\xC2\x9B"); },
                Errc::bad_field, "files[0].path", "control character"},
        BadCase{"path_too_long", [](json& j) { j["files"][0] = file("A" + std::string(1024, 'x')); },
                Errc::bad_field, "files[0].path", "longer than 1024"},
        BadCase{"path_manifest_itself", [](json& j) { j["files"][0] = file("LICENSE");
                                                      j["files"][2] = file("manifest.json"); },
                Errc::bad_field, "files[2].path", "must not list itself"},
        BadCase{"size_negative", [](json& j) { j["files"][0]["size"] = -1; }, Errc::bad_field,
                "files[0].size", "negative"},
        BadCase{"size_float", [](json& j) { j["files"][0]["size"] = 1.5; }, Errc::bad_field,
                "files[0].size", "expected non-negative integer"},
        BadCase{"size_string", [](json& j) { j["files"][0]["size"] = "11"; }, Errc::bad_field,
                "files[0].size", "expected non-negative integer"},
        BadCase{"sha_short", [](json& j) { j["files"][0]["sha256"] = "abc"; }, Errc::bad_field,
                "files[0].sha256", "64 lower-case hex"},
        BadCase{"sha_upper", [](json& j) { j["files"][0]["sha256"] = std::string(64, 'A'); },
                Errc::bad_field, "files[0].sha256", "64 lower-case hex"},
        BadCase{"sha_not_hex", [](json& j) { j["files"][0]["sha256"] = std::string(64, 'g'); },
                Errc::bad_field, "files[0].sha256", "64 lower-case hex"},
        BadCase{"mode_setuid", [](json& j) { j["files"][1]["mode"] = 04755; }, Errc::bad_field,
                "files[1].mode", "must be 493 (0755) or 420 (0644)"},
        BadCase{"mode_777", [](json& j) { j["files"][1]["mode"] = 0777; }, Errc::bad_field,
                "files[1].mode", "got 511"},
        BadCase{"mode_octal_string", [](json& j) { j["files"][1]["mode"] = "0755"; },
                Errc::bad_field, "files[1].mode", "expected non-negative integer"},
        BadCase{"duplicate_path", [](json& j) { j["files"][2] = j["files"][1]; },
                Errc::bad_field, "files[2].path", "duplicate"},
        BadCase{"unsorted", [](json& j) { std::swap(j["files"][0], j["files"][1]); },
                Errc::bad_field, "files[1].path", "not sorted"},
        BadCase{"file_is_also_directory",
                [](json& j) { j["files"][0] = file("lib"); }, Errc::bad_field, "files[1].path",
                "listed as a file"},
        BadCase{"library_not_listed", [](json& j) { j["files"].erase(1); }, Errc::bad_field,
                "epbroker.library", "not listed"}),
    [](const ::testing::TestParamInfo<BadCase>& p) { return p.param.name; });

TEST(ManifestTest, RefusesTextThatIsNotJson) {
  for (const std::string text : {"", "{", "{\"manifest_version\": 1,}", "null x", "\xff"}) {
    auto r = parse_manifest(text);
    ASSERT_FALSE(r.has_value()) << text;
    EXPECT_EQ(r.error().code, Errc::malformed) << text;
  }
}

TEST(ManifestTest, RefusesDuplicateJsonKeys) {
  const std::string text = valid().dump();
  // The same key twice at the top level and inside a file entry.
  const std::string top = "{\"manifest_version\": 1, " + text.substr(1);
  auto r = parse_manifest(top);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Errc::malformed);
  EXPECT_THAT(r.error().message, HasSubstr("manifest_version"));
  std::string inner = text;
  inner.replace(inner.find("\"mode\":420"), 10, "\"mode\":420,\"mode\":493");
  r = parse_manifest(inner);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Errc::malformed);
}

TEST(ManifestTest, RefusesOversizedTextAndTooManyFiles) {
  auto r = parse_manifest(std::string(kMaxManifestBytes + 1, ' '));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Errc::too_large);

  // The count is checked before the entries (which need not even be valid).
  json j = valid();
  json files = json::array();
  for (std::size_t i = 0; i <= kMaxManifestFiles; ++i) files.push_back(0);
  j["files"] = files;
  r = parse_manifest(j.dump());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Errc::too_many) << r.error().message;
}

TEST(PathProblemTest, ClassifiesPaths) {
  EXPECT_EQ(path_problem("lib/libx.so"), std::nullopt);
  EXPECT_EQ(path_problem("a b/\xE2\x82\xAC.txt"), std::nullopt);  // space, euro sign
  EXPECT_EQ(path_problem("..a/b.."), std::nullopt);               // dots inside names are fine
  EXPECT_NE(path_problem(std::string("a\0b", 3)), std::nullopt);
  EXPECT_NE(path_problem("\xC3\x28"), std::nullopt);       // invalid UTF-8
  EXPECT_NE(path_problem("\xC0\xAF"), std::nullopt);       // overlong '/'
  EXPECT_NE(path_problem("\xED\xA0\x80x"), std::nullopt);  // surrogate
  EXPECT_NE(path_problem("a\x7F"), std::nullopt);          // DEL
  EXPECT_NE(path_problem("a/."), std::nullopt);
  EXPECT_NE(path_problem("a/.."), std::nullopt);
  EXPECT_NE(path_problem(std::string(11, 'x'), 10), std::nullopt);
  EXPECT_EQ(path_problem(std::string(10, 'x'), 10), std::nullopt);
}

// ---- check_manifest_matches ------------------------------------------------------

class ManifestMatchTest : public ::testing::Test {
 protected:
  Manifest manifest = parse_ok(valid().dump());
  EpMetadata signed_meta = manifest.ep;

  void expect_mismatch(const std::string& field) {
    auto r = check_manifest_matches(manifest, signed_meta);
    ASSERT_FALSE(r.has_value()) << field;
    EXPECT_EQ(r.error().code, Errc::manifest_mismatch);
    EXPECT_THAT(r.error().message, HasSubstr("epbroker." + field + " is ")) << r.error().message;
  }
};

TEST_F(ManifestMatchTest, AcceptsEqualMetadata) {
  EXPECT_TRUE(check_manifest_matches(manifest, signed_meta).has_value());
}

TEST_F(ManifestMatchTest, RefusesEachDifferingField) {
  const EpMetadata original = signed_meta;
  const std::vector<std::pair<std::string, std::function<void(EpMetadata&)>>> changes = {
      {"name", [](EpMetadata& m) { m.name = "other-ep"; }},
      {"version", [](EpMetadata& m) { m.version = *parse_version_text("1.0.1"); }},
      // Equal as versions, different as published text: still refused.
      {"version", [](EpMetadata& m) { m.version = *parse_version_text("1.0"); }},
      {"ep_names", [](EpMetadata& m) { m.ep_names.push_back("Extra"); }},
      {"vendor", [](EpMetadata& m) { m.vendor = "someone else"; }},
      {"arch", [](EpMetadata& m) { m.arch = "aarch64"; }},
      {"ort_min", [](EpMetadata& m) { m.ort_min = *parse_version_text("1.22.0"); }},
      {"library", [](EpMetadata& m) { m.library = "lib/other.so"; }},
      {"supports", [](EpMetadata& m) { m.supports.pop_back(); }},
      {"supports", [](EpMetadata& m) { m.supports[1].vendor_ids = {0x8086}; }},
      {"supports", [](EpMetadata& m) { m.supports[1].driver_min.reset(); }},
      {"requires", [](EpMetadata& m) { m.required_sonames.clear(); }},
      {"description", [](EpMetadata& m) { m.description = "changed"; }},
  };
  for (const auto& [field, change] : changes) {
    signed_meta = original;
    change(signed_meta);
    expect_mismatch(field);
  }
}

TEST_F(ManifestMatchTest, MessageShowsBothValues) {
  signed_meta.version = *parse_version_text("9.9.9");
  auto r = check_manifest_matches(manifest, signed_meta);
  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error().message, HasSubstr("\"1.0.0\" in the package"));
  EXPECT_THAT(r.error().message, HasSubstr("\"9.9.9\" in the catalog"));
}

// What the daemon reports each code as: tests/daemon/core_error_test.cpp.
TEST(ErrcTest, PackageCodesHaveNames) {
  EXPECT_EQ(errc_name(Errc::too_large), "too_large");
  EXPECT_EQ(errc_name(Errc::unsafe_entry), "unsafe_entry");
  EXPECT_EQ(errc_name(Errc::manifest_mismatch), "manifest_mismatch");
}

}  // namespace
}  // namespace catalog::package
