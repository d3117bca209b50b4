// Role names are data (issue 19, item 2): a delegated role may be called "a/b",
// "..", "%2e%2e" or "vendor/../x y%z é". The parser takes them (as python-tuf
// does), and the Updater quotes them as python-tuf's ngclient does
// (urllib.parse.quote(name, "")) in metadata URLs and in the names of the files
// it keeps, so that no role's file leaves metadata_dir or lands on another's.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "catalog/tuf/metadata.hpp"
#include "catalog/tuf/updater.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/unit/mini_tuf_repo.hpp"

namespace catalog::tuf {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using testing::MapFetcher;
using testing::MiniRepo;
using testing::Signer;

const std::string kOdd = "vendor/../x y%z \xc3\xa9";  // "vendor/../x y%z é"

json targets_naming(const std::string& name) {
  return {{"_type", "targets"},
          {"spec_version", "1.0.31"},
          {"version", 1},
          {"expires", "2030-01-01T00:00:00Z"},
          {"targets", json::object()},
          {"delegations",
           {{"keys", json::object()},
            {"roles",
             {{{"name", name},
               {"keyids", json::array()},
               {"threshold", 1},
               {"terminating", false},
               {"paths", {"x/*"}}}}}}}};
}

TEST(RoleNamesTest, ParserTakesAnyNameButEmptyAndTopLevel) {
  for (const std::string name : {"a/b", "..", ".", "%2e%2e", "a%2Fb", kOdd.c_str(), "7.root"}) {
    auto t = role_from_json<Targets>(targets_naming(name));
    ASSERT_TRUE(t.has_value()) << name << ": " << t.error().message;
    EXPECT_EQ(t->delegations->roles.at(0).name, name);
  }
  // python-tuf: "Delegated roles cannot be empty or use top-level role names".
  for (const char* name : {"", "root", "timestamp", "snapshot", "targets"}) {
    auto t = role_from_json<Targets>(targets_naming(name));
    ASSERT_FALSE(t.has_value()) << "accepted '" << name << "'";
    EXPECT_EQ(t.error().code, Errc::bad_field);
    EXPECT_THAT(t.error().message,
                HasSubstr(std::string("signed.delegations.roles[0].name: invalid role name '") +
                          name + "'"));
  }
}

// urllib.parse.quote(s, "") in Python 3.11, for each.
TEST(RoleNamesTest, UrlQuoteIsPythonsQuoteWithNothingSafe) {
  const std::vector<std::pair<std::string, std::string>> vectors = {
      {kOdd, "vendor%2F..%2Fx%20y%25z%20%C3%A9"},
      {"..", ".."},
      {".", "."},
      {"a/b", "a%2Fb"},
      {"%2e%2e", "%252e%252e"},
      {"a%2Fb", "a%252Fb"},
      {"~_.-AZaz09", "~_.-AZaz09"},
      {std::string("\x00\x7f+:@!*'()", 10), "%00%7F%2B%3A%40%21%2A%27%28%29"},
      {"\xd0\xba\xd0\xbb\xd1\x8e\xd1\x87", "%D0%BA%D0%BB%D1%8E%D1%87"},
  };
  for (const auto& [raw, quoted] : vectors) EXPECT_EQ(url_quote(raw, false), quoted) << quoted;
  EXPECT_EQ(url_quote("a/b c", true), "a/b%20c");
}

// ---- the updater --------------------------------------------------------------------

struct OddRole {
  std::string name;
  std::string quoted;  // python's quote(name, "")
  std::string target;  // the one path it is trusted for and lists
};

const std::vector<OddRole> kRoles = {
    {"a/b", "a%2Fb", "ab/file"},          {"a%2Fb", "a%252Fb", "a2fb/file"},
    {"..", "..", "dotdot/file"},          {".", ".", "dot/file"},
    {"%2e%2e", "%252e%252e", "pct/file"}, {kOdd, "vendor%2F..%2Fx%20y%25z%20%C3%A9", "odd/file"},
};

class RoleNamesUpdaterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    json roles = json::array();
    for (const auto& r : kRoles) {
      const std::string dir = r.target.substr(0, r.target.find('/'));
      roles.push_back({{"name", r.name},
                       {"keyids", {key_.keyid}},
                       {"threshold", 1},
                       {"terminating", true},
                       {"paths", {dir + "/*"}}});
      repo_.role(r.name, key_)["targets"][r.target] = MiniRepo::target("bytes of " + r.target);
    }
    repo_.targets()["delegations"] = {{"keys", {{key_.keyid, key_.key_json}}}, {"roles", roles}};
  }

  void publish() {
    repo_.publish(fetcher_);
    std::filesystem::create_directories(client_.path() / "meta");
    tests::support::write_file(client_.path() / "meta/root.json", repo_.root_bytes());
  }

  Updater updater() {
    UpdaterConfig c;
    c.metadata_dir = client_.path() / "meta";
    c.metadata_base_url = MiniRepo::kMeta;
    c.target_base_url = MiniRepo::kTargets;
    c.target_dir = client_.path() / "targets";
    c.now = now_;
    c.retry.attempts = 1;
    return Updater(c, fetcher_);
  }

  // Every file under the client's directory, relative to it.
  std::set<std::string> client_files() const {
    std::set<std::string> out;
    for (const auto& e : std::filesystem::recursive_directory_iterator(client_.path())) {
      if (e.is_regular_file()) out.insert(e.path().lexically_relative(client_.path()).string());
    }
    return out;
  }

  const TimePoint now_ = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
  Signer key_ = Signer::make();
  MiniRepo repo_{now_};
  MapFetcher fetcher_;
  tests::support::TempDir client_;
};

TEST_F(RoleNamesUpdaterTest, QuotedInUrlsAndLocalFilesWhichStayApart) {
  publish();
  {
    auto u = updater();
    for (const auto& r : kRoles) {
      auto info = u.get_targetinfo(r.target);
      ASSERT_TRUE(info.has_value()) << r.name << ": " << info.error().message;
      EXPECT_EQ(fetcher_.count(std::string(MiniRepo::kMeta) + "1." + r.quoted + ".json"), 1u)
          << r.name;
    }
  }
  // One file per role, each named as ngclient names it, all in metadata_dir.
  std::set<std::string> want = {"meta/root.json", "meta/timestamp.json", "meta/snapshot.json",
                                "meta/targets.json"};
  for (const auto& r : kRoles) want.insert("meta/" + r.quoted + ".json");
  EXPECT_EQ(client_files(), want);
  // A later update trusts those copies again: no role is fetched twice.
  auto again = updater();
  for (const auto& r : kRoles) {
    auto info = again.get_targetinfo(r.target);
    ASSERT_TRUE(info.has_value()) << r.name << ": " << info.error().message;
    EXPECT_EQ(fetcher_.count(std::string(MiniRepo::kMeta) + "1." + r.quoted + ".json"), 1u)
        << r.name;
  }
}

// Each role is trusted for its own paths only, whatever its name says.
TEST_F(RoleNamesUpdaterTest, AnOddNameIsTrustedOnlyForItsPaths) {
  repo_.role("..", key_)["targets"]["ab/file"] = MiniRepo::target("not from a/b");
  repo_.role("..", key_)["targets"]["ab/other"] = MiniRepo::target("nor this");
  publish();
  auto u = updater();
  auto info = u.get_targetinfo("ab/file");
  ASSERT_TRUE(info.has_value()) << info.error().message;
  EXPECT_EQ(info->length, std::string("bytes of ab/file").size());
  auto other = u.get_targetinfo("ab/other");
  ASSERT_FALSE(other.has_value());
  EXPECT_EQ(other.error().code, Errc::not_found);
}

// "7.root" would be kept as 7.root.json, where the root chain's version 7
// goes: refused, and nothing written there.
TEST_F(RoleNamesUpdaterTest, ARoleWhoseFileWouldBeARootChainFileIsRefused) {
  json& delegations = repo_.targets()["delegations"];
  delegations["roles"].push_back({{"name", "7.root"},
                                  {"keyids", {key_.keyid}},
                                  {"threshold", 1},
                                  {"terminating", false},
                                  {"paths", {"seven/*"}}});
  repo_.role("7.root", key_)["targets"]["seven/file"] = MiniRepo::target("seven");
  publish();
  auto u = updater();
  auto info = u.get_targetinfo("seven/file");
  ASSERT_FALSE(info.has_value());
  EXPECT_EQ(info.error().code, Errc::unsupported) << info.error().message;
  EXPECT_THAT(info.error().message, HasSubstr("7.root"));
  EXPECT_FALSE(std::filesystem::exists(client_.path() / "meta/7.root.json"));
  EXPECT_EQ(fetcher_.count(std::string(MiniRepo::kMeta) + "1.7.root.json"), 0u);
  // The other roles are unaffected.
  EXPECT_TRUE(u.get_targetinfo("ab/file").has_value());
}

}  // namespace
}  // namespace catalog::tuf
