// Canonical JSON as TUF signs it (OLPC form, as securesystemslib writes it).
#include "catalog/canonical_json.hpp"

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace catalog {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

std::string canon(const json& j) {
  auto r = canonical_json(j);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message);
  return r.value_or("<error>");
}

json parsed(std::string_view text) {
  auto r = parse_json(text);
  EXPECT_TRUE(r.has_value()) << text << ": " << (r ? "" : r.error().message);
  return r.value_or(json());
}

TEST(CanonicalJsonTest, SortsObjectKeys) {
  const json j = parsed(R"({"b": 1, "a": 2, "c": {"z": 0, "y": 1, "aa": 2, "a": 3}})");
  EXPECT_EQ(canon(j), R"({"a":2,"b":1,"c":{"a":3,"aa":2,"y":1,"z":0}})");
}

TEST(CanonicalJsonTest, SortsNonAsciiKeysByCodePoint) {
  // U+005A 'Z' < U+0061 'a' < U+007A 'z' < U+00E9 'e-acute' < U+FF21 'fullwidth A' <
  // U+1F600 'grinning face'. UTF-16 code-unit order would put U+1F600 (a surrogate
  // pair, 0xD83D...) before U+FF21; code-point order, as Python sorts, does not.
  const std::string e_acute = "\xc3\xa9";
  const std::string fullwidth_a = "\xef\xbc\xa1";
  const std::string grinning = "\xf0\x9f\x98\x80";
  json j = json::object();
  j[grinning] = 6;
  j[fullwidth_a] = 5;
  j[e_acute] = 4;
  j["z"] = 3;
  j["a"] = 2;
  j["Z"] = 1;
  EXPECT_EQ(canon(j), "{\"Z\":1,\"a\":2,\"z\":3,\"" + e_acute + "\":4,\"" + fullwidth_a +
                          "\":5,\"" + grinning + "\":6}");
}

TEST(CanonicalJsonTest, HasNoWhitespace) {
  const json j = parsed("{ \"a\" : [ 1 , 2 , { \"b\" : [ ] } ] ,\n\t\"c\" : { } }");
  EXPECT_EQ(canon(j), R"({"a":[1,2,{"b":[]}],"c":{}})");
}

TEST(CanonicalJsonTest, EscapesOnlyQuoteAndBackslash) {
  EXPECT_EQ(canon(json("a\"b")), R"("a\"b")");
  EXPECT_EQ(canon(json("a\\b")), R"("a\\b")");
  EXPECT_EQ(canon(json("\\\"")), R"("\\\"")");
  // Slash, control bytes and DEL go out verbatim, not as \n or \u0001.
  const std::string raw = std::string("/\n\t\r\b\f\x01\x1f\x7f") + '\0' + "end";
  EXPECT_EQ(canon(json(raw)), "\"" + raw + "\"");
  // UTF-8 is not \u-escaped either.
  const std::string utf8 = "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80";
  EXPECT_EQ(canon(json(utf8)), "\"" + utf8 + "\"");
  // Keys are escaped the same way.
  EXPECT_EQ(canon(json{{"k\"\n", 1}}), "{\"k\\\"\n\":1}");
}

TEST(CanonicalJsonTest, EscapedInputIsWrittenRaw) {
  // "\u00e9" and "\n" in the source text are decoded by the parser and then
  // written as the raw bytes they stand for.
  EXPECT_EQ(canon(parsed(R"(["\u00e9\n\u0001\/"])")), "[\"\xc3\xa9\n\x01/\"]");
}

TEST(CanonicalJsonTest, Integers) {
  EXPECT_EQ(canon(json(0)), "0");
  EXPECT_EQ(canon(json(-1)), "-1");
  EXPECT_EQ(canon(json(42u)), "42");
  EXPECT_EQ(canon(json(std::numeric_limits<std::int64_t>::min())), "-9223372036854775808");
  EXPECT_EQ(canon(json(std::numeric_limits<std::int64_t>::max())), "9223372036854775807");
  EXPECT_EQ(canon(json(std::numeric_limits<std::uint64_t>::max())), "18446744073709551615");
  EXPECT_EQ(canon(parsed("18446744073709551615")), "18446744073709551615");
  EXPECT_EQ(canon(parsed("-9223372036854775808")), "-9223372036854775808");
  EXPECT_EQ(canon(parsed("-0")), "0");
}

TEST(CanonicalJsonTest, BooleansAndNull) {
  EXPECT_EQ(canon(json(true)), "true");
  EXPECT_EQ(canon(json(false)), "false");
  EXPECT_EQ(canon(json(nullptr)), "null");
  EXPECT_EQ(canon(parsed("[true,false,null]")), "[true,false,null]");
}

TEST(CanonicalJsonTest, NestedArraysKeepOrder) {
  EXPECT_EQ(canon(parsed(R"([[3, [2, [1, []]]], {"b": [{"d": 1, "c": 2}]}, "x"])")),
            R"([[3,[2,[1,[]]]],{"b":[{"c":2,"d":1}]},"x"])");
  EXPECT_EQ(canon(json::array()), "[]");
  EXPECT_EQ(canon(json::object()), "{}");
  EXPECT_EQ(canon(json("")), R"("")");
}

TEST(CanonicalJsonTest, RejectsFloatsAnywhere) {
  for (const json& j : {json(1.5), json(0.0), json::array({1, 2.5}), json{{"a", {{"b", -0.5}}}},
                        parsed("1.0"), parsed("1e3"), parsed(R"({"x": [1, {"y": 2E-1}]})")}) {
    auto r = canonical_json(j);
    ASSERT_FALSE(r.has_value()) << j.dump();
    EXPECT_EQ(r.error().code, Errc::malformed);
    EXPECT_THAT(r.error().message, HasSubstr("floating-point"));
  }
}

TEST(CanonicalJsonTest, RejectsBinary) {
  auto r = canonical_json(json::binary({1, 2, 3}));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Errc::malformed);
}

TEST(CanonicalJsonTest, KnownVector) {
  // Worked out by hand: keys sorted at every level, "ü" (U+00FC) after ASCII,
  // only '"' and '\' escaped, no whitespace.
  const json j = parsed(R"({
    "signed": {
      "b": [1, -2, {"d": null, "c": true}],
      "a": "x\"y\\z\u00fc",
      "\u00fc": false,
      "A": {}
    },
    "n": 18446744073709551615,
    "signatures": []
  })");
  EXPECT_EQ(canon(j),
            "{\"n\":18446744073709551615,\"signatures\":[],\"signed\":{\"A\":{},"
            "\"a\":\"x\\\"y\\\\z\xc3\xbc\",\"b\":[1,-2,{\"c\":true,\"d\":null}],"
            "\"\xc3\xbc\":false}}");
}

TEST(CanonicalJsonTest, KnownTufKeyVector) {
  // The form TUF key ids are computed over.
  const json key = {
      {"scheme", "ed25519"}, {"keytype", "ed25519"}, {"keyval", {{"public", "d75a980182b10ab7"}}}};
  EXPECT_EQ(canon(key),
            R"({"keytype":"ed25519","keyval":{"public":"d75a980182b10ab7"},"scheme":"ed25519"})");
}

TEST(CanonicalJsonTest, IsIdempotentThroughParse) {
  const std::string once = canon(parsed(R"({"z": [1, {"b": "\"", "a": null}], "a": true})"));
  EXPECT_EQ(canon(parsed(once)), once);
}

TEST(ParseJsonTest, ParsesValidText) {
  auto r = parse_json(R"({"a": [1, "two", null]})");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ((*r)["a"][1], "two");
}

TEST(ParseJsonTest, BadTextIsMalformedWithoutThrowing) {
  for (const std::string_view bad :
       {std::string_view(""), std::string_view("{"), std::string_view(R"({"a":})"),
        std::string_view("[1,]"), std::string_view("tru"), std::string_view("{'a':1}"),
        std::string_view("1 2"), std::string_view("NaN"), std::string_view("/* c */ 1"),
        std::string_view("\"\xff\""), std::string_view("\"unterminated"),
        std::string_view("{\"a\":1}}"), std::string_view("[1]\0", 4)}) {
    Result<json> r;
    EXPECT_NO_THROW(r = parse_json(bad)) << bad;
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_EQ(r.error().code, Errc::malformed) << bad;
  }
}

TEST(ParseJsonTest, NulByteIsMalformed) {
  // nlohmann alone would stop at the NUL and accept what came before it.
  for (const std::string_view bad : {std::string_view("[1]\0garbage", 11),
                                     std::string_view("{}\0", 3), std::string_view("\0", 1)}) {
    auto r = parse_json(bad);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code, Errc::malformed);
  }
}

std::string nested(std::size_t depth, char open, char close) {
  return std::string(depth, open) + (open == '{' ? "" : "0") + std::string(depth, close);
}

TEST(ParseJsonTest, NestingIsBounded) {
  // 512 levels parse; 513 do not.
  auto ok = parse_json(nested(512, '[', ']'));
  ASSERT_TRUE(ok.has_value()) << ok.error().message;
  EXPECT_EQ(canon(*ok), nested(512, '[', ']'));
  std::string objects;
  for (int i = 0; i < 512; ++i) objects += R"({"a":)";
  objects += "1" + std::string(512, '}');
  EXPECT_TRUE(parse_json(objects).has_value());

  auto deep = parse_json(nested(513, '[', ']'));
  ASSERT_FALSE(deep.has_value());
  EXPECT_EQ(deep.error().code, Errc::malformed);
  EXPECT_THAT(deep.error().message, HasSubstr("nested too deeply"));
  // Hostile depth (within the 512 KB a root may have) fails cleanly instead of
  // overflowing the stack in later recursive walks.
  auto hostile = parse_json(nested(300000, '[', ']'));
  ASSERT_FALSE(hostile.has_value());
  EXPECT_EQ(hostile.error().code, Errc::malformed);
}

TEST(ParseJsonTest, BracketsInStringsDoNotCountAsNesting) {
  const std::string many(2000, '[');
  auto r = parse_json("{\"k\":\"" + many + "\\\"" + many + "\"}");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ((*r)["k"], many + "\"" + many);
}

}  // namespace
}  // namespace catalog
