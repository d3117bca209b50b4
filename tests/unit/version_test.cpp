#include "catalog/version.hpp"

#include <string>
#include <string_view>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace catalog {
namespace {

using ::testing::HasSubstr;

Version v(std::string_view text) {
  auto r = parse_version(text);
  EXPECT_TRUE(r.has_value()) << text << ": " << (r ? "" : r.error().message);
  return r ? *r : Version{};
}

TEST(VersionTest, ParsesComponentsAndSuffix) {
  EXPECT_EQ(v("1").parts, (std::vector<std::uint32_t>{1}));
  EXPECT_EQ(v("1.23.0").parts, (std::vector<std::uint32_t>{1, 23, 0}));
  EXPECT_EQ(v("550.54.14").parts, (std::vector<std::uint32_t>{550, 54, 14}));
  EXPECT_EQ(v("1.2.3.4").parts, (std::vector<std::uint32_t>{1, 2, 3, 4}));
  EXPECT_EQ(v("999999999.0").parts, (std::vector<std::uint32_t>{999999999, 0}));
  EXPECT_EQ(v("535.104.05").parts, (std::vector<std::uint32_t>{535, 104, 5}));

  const Version pre = v("1.2.0-rc1");
  EXPECT_EQ(pre.parts, (std::vector<std::uint32_t>{1, 2, 0}));
  EXPECT_EQ(pre.suffix, "rc1");
  EXPECT_EQ(v("2.0-beta.2").suffix, "beta.2");
  EXPECT_EQ(v("1.0").suffix, "");
}

TEST(VersionTest, RejectsMalformed) {
  for (const std::string_view bad : std::initializer_list<std::string_view>{
           "",           "v1",         "1..2",
           ".1",         "1.",         "1.2.3.4.5",
           "1.2.3-",     "-rc1",       "1.2 ",
           " 1.2",       "1,2",        "1.2.3-rc_1",
           "1.2.3-rc 1", "1234567890", "1.0000000000",
           "+1",         "-1",         "1.2-rc-1",
           "0x10",       "1.a",        std::string_view("1\0", 2)}) {
    const auto r = parse_version(bad);
    ASSERT_FALSE(r.has_value()) << '"' << bad << '"';
    EXPECT_EQ(r.error().code, Errc::bad_field);
    EXPECT_THAT(r.error().message, HasSubstr("invalid version"));
  }
  EXPECT_THAT(parse_version("1..2").error().message, HasSubstr("empty component"));
  EXPECT_THAT(parse_version("1.2.3.4.5").error().message, HasSubstr("more than 4"));
  EXPECT_THAT(parse_version("").error().message, HasSubstr("empty"));
  EXPECT_THAT(parse_version("v1").error().message, HasSubstr("\"v1\""));
}

TEST(VersionTest, SuffixIsBounded) {
  EXPECT_TRUE(parse_version("1-" + std::string(kMaxVersionSuffix, 'a')).has_value());
  EXPECT_FALSE(parse_version("1-" + std::string(kMaxVersionSuffix + 1, 'a')).has_value());
}

TEST(VersionTest, ComparesNumerically) {
  EXPECT_LT(v("1.2"), v("1.10"));
  EXPECT_LT(v("1.9.9"), v("2"));
  EXPECT_GT(v("550.54.14"), v("535.1"));
  EXPECT_LT(v("1.22.1"), v("1.24.0"));
  EXPECT_GT(v("1.24.0.1"), v("1.24"));
  EXPECT_LT(v("0.9"), v("1"));
}

TEST(VersionTest, MissingComponentsCountAsZero) {
  EXPECT_EQ(v("1"), v("1.0.0"));
  EXPECT_EQ(v("1.2.0.0"), v("1.2"));
  EXPECT_TRUE((v("1.0") <=> v("1")) == 0);
  EXPECT_LT(v("1"), v("1.0.1"));
  EXPECT_EQ(Version{}, v("0"));
}

TEST(VersionTest, SuffixOrdersBeforeReleaseOnly) {
  EXPECT_LT(v("1.2.0-rc1"), v("1.2.0"));
  EXPECT_LT(v("1.2-rc1"), v("1.2.0"));
  EXPECT_GT(v("1.2.1-rc1"), v("1.2.0"));
  EXPECT_LT(v("1.1"), v("1.2.0-rc1"));
  // Suffixes are not ordered among themselves.
  EXPECT_TRUE((v("1.2.0-rc1") <=> v("1.2.0-rc2")) == 0);
  EXPECT_EQ(v("1.2.0-alpha"), v("1.2.0-beta"));
  EXPECT_NE(v("1.2.0-alpha"), v("1.2.0"));
}

TEST(VersionTest, ToStringIsCanonical) {
  EXPECT_EQ(to_string(v("1.23.0")), "1.23.0");
  EXPECT_EQ(to_string(v("1.2.0-rc1")), "1.2.0-rc1");
  EXPECT_EQ(to_string(v("535.104.05")), "535.104.5");
  EXPECT_EQ(to_string(Version{}), "0");
}

TEST(VersionTest, VersionTextKeepsText) {
  const auto t = parse_version_text("535.104.05");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->text, "535.104.05");
  EXPECT_EQ(t->value, v("535.104.5"));
  EXPECT_FALSE(parse_version_text("x").has_value());
}

}  // namespace
}  // namespace catalog
