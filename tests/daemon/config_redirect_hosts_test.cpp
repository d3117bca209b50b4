// remotes.d's `redirect_hosts` key (docs/configuration.md): strict, lower-cased,
// bounded; every refusal names FILE:LINE: redirect_hosts.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "daemon/config/config.hpp"
#include "tests/support/temp_dir.hpp"

namespace epbrokerd::config {
namespace {

using catalog::Errc;
using ::testing::HasSubstr;
using tests::support::TempDir;
using tests::support::write_file;

class RedirectHostsConfigTest : public ::testing::Test {
 protected:
  // Loads a configuration whose one remote has `line` as its 6th line.
  Result<Config> load(const std::string& line) {
    write_file(dir_ / "remotes.d/a.conf",
               "[remote]\n"
               "name = a\n"
               "metadata_url = https://a.example.org/metadata/\n"
               "targets_url = https://a.example.org/targets/\n"
               "trusted_root = roots/a.json\n" +
                   line + "\n");
    Paths p;
    p.config_dir = dir_.path();
    return load_config(p);
  }
  TempDir dir_;
};

TEST_F(RedirectHostsConfigTest, NoneByDefault) {
  auto c = load("");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_TRUE(c->remotes.at(0).redirect_hosts.empty());
  EXPECT_TRUE(Remote{}.redirect_hosts.empty());
}

TEST_F(RedirectHostsConfigTest, HostsAndPortsSeparatedByBlanks) {
  auto c =
      load("redirect_hosts =  CDN.example.net\tdl.example.org:8443 [2001:db8::1]:443 10.0.0.7 ");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->remotes.at(0).redirect_hosts,
            (std::vector<std::string>{"cdn.example.net", "dl.example.org:8443", "[2001:db8::1]:443",
                                      "10.0.0.7"}));
  auto empty = load("redirect_hosts =");
  ASSERT_TRUE(empty) << empty.error().message;
  EXPECT_TRUE(empty->remotes.at(0).redirect_hosts.empty());
}

TEST_F(RedirectHostsConfigTest, RefusesWhatIsNotAHost) {
  for (const std::string bad :
       {"https://cdn.example.net", "cdn.example.net/", "*.example.net",
        "cdn.example.net:", "cdn.example.net:0", "cdn.example.net:65536", "u@cdn.example.net",
        "[::1", "[]:80", "cdn.example.net,dl.example.org", "a.example a.EXAMPLE"}) {
    auto c = load("redirect_hosts = " + bad);
    ASSERT_FALSE(c) << bad;
    EXPECT_EQ(c.error().code, Errc::bad_field) << c.error().message;
    EXPECT_THAT(c.error().message, HasSubstr("a.conf:6: redirect_hosts: ")) << bad;
  }
  std::string many = "redirect_hosts =";
  for (std::size_t i = 0; i <= kMaxRedirectHosts; ++i) many += " h" + std::to_string(i);
  auto c = load(many);
  ASSERT_FALSE(c);
  EXPECT_THAT(c.error().message, HasSubstr("more than 16 hosts"));
}

}  // namespace
}  // namespace epbrokerd::config
