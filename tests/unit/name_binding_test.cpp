// catalog/name_binding: a package NAME is trusted only from target paths "NAME/...".
#include "catalog/name_binding.hpp"

#include <string>
#include <string_view>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace catalog {
namespace {

using ::testing::HasSubstr;

TEST(NameBindingTest, FirstSegmentEqualToTheNameBinds) {
  EXPECT_TRUE(check_name_binding("openvino", "openvino/openvino-1.0.0.tar.zst"));
  EXPECT_TRUE(check_name_binding("test-ep", "test-ep/x"));
  EXPECT_TRUE(check_name_binding("a", "a/b/c/d.tar.zst"));  // deeper paths too
  EXPECT_TRUE(check_name_binding("ep.v2_x", "ep.v2_x/"));   // the segment is what counts
}

// The attack of issue 17: a role trusted for vendor-a/* claims another name.
TEST(NameBindingTest, AnotherNamespaceDoesNotBind) {
  auto r = check_name_binding("openvino", "vendor-a/x.tar.zst");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::bad_field);
  EXPECT_THAT(r.error().message, HasSubstr("'vendor-a/x.tar.zst'"));
  EXPECT_THAT(r.error().message, HasSubstr("'openvino'"));
  EXPECT_THAT(r.error().message, HasSubstr("first segment is 'vendor-a'"));
}

TEST(NameBindingTest, OnlyAnExactByteEqualSegmentBinds) {
  for (const auto& [name, path] :
       std::initializer_list<std::pair<std::string_view, std::string_view>>{
           {"openvino", "OpenVINO/x"},        // case
           {"openvino", "openvino-evil/x"},   // the name as a prefix
           {"openvino", "openvin/x"},         // the segment as a prefix of the name
           {"openvino", "openvino.tar.zst"},  // no '/': binds nothing
           {"openvino", "openvino"},          // the name alone, no '/'
           {"openvino", "/openvino/x"},       // empty first segment
           {"openvino", "./openvino/x"},      // no normalisation
           {"openvino", "x/openvino/y"},      // a later segment does not count
           {"openvino", ""},                  // nothing
           {"", "/x"},                        // empty name, empty segment
           {"", "x"},                         // empty name
           {"openvino", std::string_view("openvino\0/x", 11)},  // embedded NUL
           {"opénvino", "ope\xcc\x81nvino/x"},  // another Unicode form of the same text
       }) {
    SCOPED_TRACE(std::string(name) + " @ " + std::string(path));
    auto r = check_name_binding(name, path);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::bad_field);
  }
}

TEST(NameBindingTest, APathWithoutSlashSaysItBindsNoName) {
  auto r = check_name_binding("x", "x.tar.zst");
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("no '/'"));
}

}  // namespace
}  // namespace catalog
