// What the daemon remembers about each package's lifecycle
// (daemon/core/lifecycle_state.hpp): the in-memory operations, lifecycle.json's
// text and its strict parser, and the file's load/save (a corrupt file is set
// aside as lifecycle.json.bad).
#include "daemon/core/lifecycle_state.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/support/temp_dir.hpp"

namespace epbrokerd::core {
namespace {

namespace fs = std::filesystem;
using catalog::Errc;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using tests::support::read_file;
using tests::support::TempDir;
using tests::support::write_file;

using Strings = std::vector<std::string>;

// ---- PackageLifecycle ------------------------------------------------------

TEST(PackageLifecycleTest, MakeCurrentMovesTheOldCurrentToTheFrontOfPrevious) {
  PackageLifecycle p;
  p.make_current("1.1.0");
  EXPECT_EQ(p.current, "1.1.0");
  EXPECT_TRUE(p.previous.empty()) << "nothing was current before";

  p.make_current("1.2.0");
  p.make_current("1.3.0");
  EXPECT_EQ(p.current, "1.3.0");
  EXPECT_EQ(p.previous, (Strings{"1.2.0", "1.1.0"}));
}

TEST(PackageLifecycleTest, MakeCurrentOfAPreviousVersionLeavesNoDuplicate) {
  PackageLifecycle p;
  p.current = "1.3.0";
  p.previous = {"1.2.0", "1.1.0"};
  // A rollback to 1.2.0: it leaves previous, 1.3.0 goes first.
  p.make_current("1.2.0");
  EXPECT_EQ(p.current, "1.2.0");
  EXPECT_EQ(p.previous, (Strings{"1.3.0", "1.1.0"}));
  // And back: 1.3.0 leaves previous, 1.2.0 goes first, once.
  p.make_current("1.3.0");
  EXPECT_EQ(p.current, "1.3.0");
  EXPECT_EQ(p.previous, (Strings{"1.2.0", "1.1.0"}));
  // Back to an older one: the old current moves to the front, not duplicated.
  p.make_current("1.1.0");
  EXPECT_EQ(p.previous, (Strings{"1.3.0", "1.2.0"}));
}

TEST(PackageLifecycleTest, MakeCurrentWhenTheOldCurrentIsAlreadyInPrevious) {
  PackageLifecycle p;
  p.current = "1.1.0";
  p.previous = {"1.2.0", "1.1.0", "1.0.0"};
  p.make_current("1.2.0");
  EXPECT_EQ(p.current, "1.2.0");
  EXPECT_EQ(p.previous, (Strings{"1.1.0", "1.0.0"}));
}

TEST(PackageLifecycleTest, MakeCurrentOfTheCurrentChangesNothing) {
  PackageLifecycle p;
  p.current = "1.2.0";
  p.previous = {"1.1.0"};
  p.make_current("1.2.0");
  EXPECT_EQ(p.current, "1.2.0");
  EXPECT_EQ(p.previous, (Strings{"1.1.0"}));
}

TEST(PackageLifecycleTest, MakeCurrentLeavesRemoving) {
  PackageLifecycle p;
  p.current = "1.2.0";
  p.removing = {"1.1.0", "1.0.0"};
  ASSERT_TRUE(p.is_removing("1.1.0"));
  p.make_current("1.1.0");
  EXPECT_FALSE(p.is_removing("1.1.0"));
  EXPECT_TRUE(p.is_removing("1.0.0"));
  EXPECT_EQ(p.removing, (Strings{"1.0.0"}));
  EXPECT_EQ(p.current, "1.1.0");
  EXPECT_EQ(p.previous, (Strings{"1.2.0"}));
}

TEST(PackageLifecycleTest, ForgetDropsEveryMention) {
  PackageLifecycle p;
  p.current = "1.2.0";
  p.previous = {"1.1.0", "1.0.0"};
  p.revoked = {{"1.1.0", "revoked"}, {"0.9.0", "revoked"}};
  p.removing = {"1.1.0"};
  p.older_ort = {{"1.1.0", 100}, {"1.0.0", 50}};
  p.held = true;

  p.forget("1.1.0");
  EXPECT_EQ(p.current, "1.2.0");
  EXPECT_EQ(p.previous, (Strings{"1.0.0"}));
  EXPECT_FALSE(p.is_revoked("1.1.0"));
  EXPECT_TRUE(p.is_revoked("0.9.0"));
  EXPECT_FALSE(p.is_removing("1.1.0"));
  EXPECT_EQ(p.older_ort.count("1.1.0"), 0u);
  EXPECT_EQ(p.older_ort.at("1.0.0"), 50);
  EXPECT_TRUE(p.held);

  p.forget("1.2.0");
  EXPECT_EQ(p.current, "");
}

TEST(PackageLifecycleTest, EmptyMeansNothingRemembered) {
  EXPECT_TRUE(PackageLifecycle{}.empty());
  PackageLifecycle p;
  p.held = true;
  EXPECT_FALSE(p.empty());
  p = {};
  p.older_ort["1.0.0"] = 1;
  EXPECT_FALSE(p.empty());
  p.forget("1.0.0");
  EXPECT_TRUE(p.empty());
}

TEST(LifecycleStateTest, AtGetAndPrune) {
  LifecycleState s;
  EXPECT_TRUE(s.get("ep").empty());
  EXPECT_TRUE(s.packages.empty()) << "get does not create";
  s.at("ep").current = "1.0.0";
  s.at("other");
  EXPECT_EQ(s.get("ep").current, "1.0.0");
  EXPECT_EQ(s.packages.size(), 2u);
  s.prune();
  EXPECT_EQ(s.packages.size(), 1u);
  EXPECT_EQ(s.packages.count("ep"), 1u);
}

// ---- text ------------------------------------------------------------------

LifecycleState sample() {
  LifecycleState s;
  auto& a = s.at("test-ep");
  a.current = "1.3.0";
  a.previous = {"1.2.0", "1.10.0"};
  a.held = true;
  a.hold_reason = "rolled back from 1.4.0";
  a.revoked = {{"1.4.0", "no trusted catalog lists it since 2024-01-01"}};
  a.removing = {"1.1.0"};
  a.older_ort = {{"1.2.0", 1'700'000'000}};
  auto& b = s.at("cuda-ep");
  b.current = "2.0.0-rc1";
  b.held = true;  // an admin's hold: no reason
  return s;
}

TEST(LifecycleTextTest, RoundTripGivesAnEqualState) {
  const auto s = sample();
  const auto text = to_text(s);
  auto parsed = parse_lifecycle(text);
  ASSERT_TRUE(parsed.has_value()) << parsed.error().message << "\n" << text;
  EXPECT_EQ(*parsed, s);
  EXPECT_EQ(to_text(*parsed), text) << "deterministic";
}

TEST(LifecycleTextTest, TextHasTheVersionAndAFinalNewline) {
  const auto text = to_text(sample());
  EXPECT_THAT(text, HasSubstr("\"lifecycle_version\": 1"));
  EXPECT_THAT(text, HasSubstr("\"test-ep\""));
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
}

TEST(LifecycleTextTest, EmptyStateRoundTrips) {
  auto parsed = parse_lifecycle(to_text(LifecycleState{}));
  ASSERT_TRUE(parsed.has_value()) << parsed.error().message;
  EXPECT_TRUE(parsed->packages.empty());
}

TEST(LifecycleTextTest, ParsesTheDocumentedForm) {
  auto parsed = parse_lifecycle(R"({"lifecycle_version": 1, "packages": {"ep": {
      "current": "1.3.0", "previous": ["1.2.0", "1.1.0"],
      "held": true, "hold_reason": "rolled back from 1.3.0",
      "revoked": {"1.4.0": "gone"}, "removing": ["1.1.0"],
      "older_ort": {"1.2.0": 1700000000}}}})");
  ASSERT_TRUE(parsed.has_value()) << parsed.error().message;
  const auto p = parsed->get("ep");
  EXPECT_EQ(p.current, "1.3.0");
  EXPECT_EQ(p.previous, (Strings{"1.2.0", "1.1.0"}));
  EXPECT_TRUE(p.held);
  EXPECT_EQ(p.hold_reason, "rolled back from 1.3.0");
  EXPECT_EQ(p.revoked.at("1.4.0"), "gone");
  EXPECT_EQ(p.removing, (Strings{"1.1.0"}));
  EXPECT_EQ(p.older_ort.at("1.2.0"), 1700000000);
}

TEST(LifecycleTextTest, NotJsonIsMalformed) {
  for (const char* text : {"", "not json", "{\"lifecycle_version\": 1,", "{'a': 1}"}) {
    auto parsed = parse_lifecycle(text);
    ASSERT_FALSE(parsed.has_value()) << text;
    EXPECT_EQ(parsed.error().code, Errc::malformed) << text << ": " << parsed.error().message;
  }
}

TEST(LifecycleTextTest, UnknownKeyIsRefusedNamingItsPath) {
  auto parsed =
      parse_lifecycle(R"({"lifecycle_version": 1, "packages": {"ep": {"curent": "1.0.0"}}})");
  ASSERT_FALSE(parsed.has_value());
  EXPECT_EQ(parsed.error().code, Errc::bad_field);
  EXPECT_THAT(parsed.error().message, HasSubstr("packages.ep.curent"));

  parsed = parse_lifecycle(R"({"lifecycle_version": 1, "packages": {}, "extra": 1})");
  ASSERT_FALSE(parsed.has_value());
  EXPECT_EQ(parsed.error().code, Errc::bad_field);
  EXPECT_THAT(parsed.error().message, HasSubstr("extra"));
}

TEST(LifecycleTextTest, WrongTypeIsRefusedNamingItsPath) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"lifecycle_version": 1, "packages": []})", "packages"},
      {R"({"lifecycle_version": 1, "packages": {"ep": "1.0.0"}})", "packages.ep"},
      {R"({"lifecycle_version": 1, "packages": {"ep": {"current": 1}}})", "packages.ep.current"},
      {R"({"lifecycle_version": 1, "packages": {"ep": {"held": "yes"}}})", "packages.ep.held"},
      {R"({"lifecycle_version": 1, "packages": {"ep": {"previous": "1.0.0"}}})",
       "packages.ep.previous"},
      {R"({"lifecycle_version": 1, "packages": {"ep": {"previous": ["1.0.0", 2]}}})",
       "packages.ep.previous[1]"},
      {R"({"lifecycle_version": 1, "packages": {"ep": {"revoked": {"1.0.0": true}}}})",
       "packages.ep.revoked.1.0.0"},
      {R"({"lifecycle_version": 1, "packages": {"ep": {"older_ort": {"1.0.0": "x"}}}})",
       "packages.ep.older_ort.1.0.0"},
      {R"({"lifecycle_version": 1, "packages": {"ep": {"older_ort": {"1.0.0": 1.5}}}})",
       "packages.ep.older_ort.1.0.0"},
      {R"({"lifecycle_version": "1", "packages": {}})", "lifecycle_version"},
  };
  for (const auto& [text, path] : cases) {
    auto parsed = parse_lifecycle(text);
    ASSERT_FALSE(parsed.has_value()) << text;
    EXPECT_EQ(parsed.error().code, Errc::bad_field) << text << ": " << parsed.error().message;
    EXPECT_THAT(parsed.error().message, HasSubstr(path)) << text;
  }
}

TEST(LifecycleTextTest, AnotherVersionIsUnsupported) {
  auto parsed = parse_lifecycle(R"({"lifecycle_version": 2, "packages": {}})");
  ASSERT_FALSE(parsed.has_value());
  EXPECT_EQ(parsed.error().code, Errc::unsupported);
  EXPECT_THAT(parsed.error().message, HasSubstr("2"));
}

TEST(LifecycleTextTest, MissingVersionIsRefused) {
  auto parsed = parse_lifecycle(R"({"packages": {}})");
  ASSERT_FALSE(parsed.has_value());
  EXPECT_THAT(parsed.error().message, HasSubstr("lifecycle_version"));
}

// ---- the file --------------------------------------------------------------

TEST(LifecycleFileTest, MissingFileLoadsEmpty) {
  TempDir dir;
  std::optional<catalog::Error> problem;
  const auto s = load_lifecycle(dir.path(), &problem);
  EXPECT_TRUE(s.packages.empty());
  EXPECT_FALSE(problem.has_value());
  EXPECT_FALSE(fs::exists(dir / "lifecycle.json.bad"));
}

TEST(LifecycleFileTest, CorruptFileIsSetAsideAndLoadsEmpty) {
  TempDir dir;
  const std::string bad = "{\"lifecycle_version\": 1, \"packages\": {";  // torn
  write_file(dir / kLifecycleFileName, bad);
  std::optional<catalog::Error> problem;
  const auto s = load_lifecycle(dir.path(), &problem);
  EXPECT_TRUE(s.packages.empty());
  ASSERT_TRUE(problem.has_value());
  EXPECT_EQ(problem->code, Errc::malformed);
  EXPECT_FALSE(fs::exists(dir / kLifecycleFileName));
  ASSERT_TRUE(fs::exists(dir / "lifecycle.json.bad"));
  EXPECT_EQ(read_file(dir / "lifecycle.json.bad"), bad);

  // Then: as if there were none.
  problem.reset();
  EXPECT_TRUE(load_lifecycle(dir.path(), &problem).packages.empty());
  EXPECT_FALSE(problem.has_value());
}

TEST(LifecycleFileTest, FileWithABadFieldIsSetAsideToo) {
  TempDir dir;
  write_file(dir / kLifecycleFileName, R"({"lifecycle_version": 1, "packages": {"ep": {"x": 1}}})");
  std::optional<catalog::Error> problem;
  EXPECT_TRUE(load_lifecycle(dir.path(), &problem).packages.empty());
  ASSERT_TRUE(problem.has_value());
  EXPECT_EQ(problem->code, Errc::bad_field);
  EXPECT_TRUE(fs::exists(dir / "lifecycle.json.bad"));
  EXPECT_FALSE(fs::exists(dir / kLifecycleFileName));
}

TEST(LifecycleFileTest, CorruptFileWithoutProblemPointerStillSetAside) {
  TempDir dir;
  write_file(dir / kLifecycleFileName, "garbage");
  EXPECT_TRUE(load_lifecycle(dir.path()).packages.empty());
  EXPECT_TRUE(fs::exists(dir / "lifecycle.json.bad"));
}

TEST(LifecycleFileTest, SaveThenLoadRoundTrips) {
  TempDir dir;
  const auto s = sample();
  auto saved = save_lifecycle(dir.path(), s);
  ASSERT_TRUE(saved.has_value()) << saved.error().message;
  EXPECT_EQ(read_file(dir / kLifecycleFileName), to_text(s));

  std::optional<catalog::Error> problem;
  EXPECT_EQ(load_lifecycle(dir.path(), &problem), s);
  EXPECT_FALSE(problem.has_value());

  // A second save replaces the first.
  LifecycleState t;
  t.at("other").current = "0.1.0";
  ASSERT_TRUE(save_lifecycle(dir.path(), t).has_value());
  EXPECT_EQ(load_lifecycle(dir.path(), &problem), t);
  EXPECT_FALSE(problem.has_value());
  EXPECT_FALSE(fs::exists(dir / "lifecycle.json.bad"));
}

}  // namespace
}  // namespace epbrokerd::core
