#include "daemon/config/config.hpp"

#include "daemon/config/command_line.hpp"

#include <stdlib.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/support/temp_dir.hpp"

namespace epbrokerd::config {
namespace {

namespace fs = std::filesystem;
using catalog::Errc;
using ::testing::HasSubstr;
using tests::support::TempDir;
using tests::support::write_file;

// A remotes.d file with every required key; `extra` lines are appended.
std::string remote_file(const std::string& name, const std::string& extra = "") {
  return "[remote]\n"
         "name = " +
         name +
         "\n"
         "metadata_url = https://" +
         name +
         ".example.org/metadata\n"
         "targets_url = https://" +
         name +
         ".example.org/targets/\n"
         "trusted_root = roots/" +
         name + ".json\n" + extra;
}

class ConfigTest : public ::testing::Test {
 protected:
  Paths paths() const {
    Paths p;
    p.config_dir = dir_.path();
    return p;
  }
  void write(const std::string& rel, const std::string& text) const {
    write_file(dir_ / rel, text);
  }
  Config load_ok() const {
    auto c = load_config(paths());
    EXPECT_TRUE(c.has_value()) << c.error().message;
    return c ? *c : Config{};
  }
  // The error of a load that must fail.
  catalog::Error load_error() const {
    auto c = load_config(paths());
    EXPECT_FALSE(c.has_value());
    return c ? catalog::Error{Errc::io, "(loaded)"} : c.error();
  }
  std::string file(const std::string& rel) const { return (dir_ / rel).string(); }

  TempDir dir_;
};

TEST_F(ConfigTest, MissingConfigDirGivesDefaults) {
  Paths p;
  p.config_dir = dir_ / "does-not-exist";
  auto c = load_config(p);
  ASSERT_TRUE(c.has_value()) << c.error().message;
  EXPECT_EQ(c->paths, p);
  EXPECT_EQ(c->daemon, DaemonSettings{});
  EXPECT_TRUE(c->remotes.empty());
  EXPECT_EQ(c->bus_address, "");
}

TEST_F(ConfigTest, DefaultsAreTheDocumentedOnes) {
  const DaemonSettings d;
  EXPECT_EQ(d.idle_timeout, std::chrono::seconds(60));
  EXPECT_EQ(d.refresh_interval, std::chrono::seconds(86400));
  EXPECT_EQ(d.max_sessions_per_client, 64u);
  EXPECT_EQ(d.max_jobs_per_client, 8u);
  EXPECT_EQ(d.install_group, "");
  EXPECT_EQ(d.log_level, LogLevel::info);
  const Paths p;
  EXPECT_EQ(p.config_dir, "/etc/epbroker");
  EXPECT_EQ(p.state_dir, "/var/lib/epbroker/daemon");
  // The store is root's, beside (not in) the daemon's state (Paths::store_root).
  EXPECT_EQ(p.store_root, "/var/lib/epbroker");
  EXPECT_EQ(p.commit_socket, "/run/epbroker/commit.sock");
  EXPECT_EQ(p.cache_dir, "/var/cache/epbroker");
  EXPECT_EQ(p.sysfs_root, "/sys");
  EXPECT_EQ(p.procfs_root, "/proc");
}

TEST_F(ConfigTest, EmptyAndCommentOnlyFilesGiveDefaults) {
  write("epbroker.conf", "");
  EXPECT_EQ(load_ok().daemon, DaemonSettings{});
  write("epbroker.conf", "# nothing here\n\n   ; nor here\n[daemon]\n");
  EXPECT_EQ(load_ok().daemon, DaemonSettings{});
  fs::create_directories(dir_ / "remotes.d");
  EXPECT_TRUE(load_ok().remotes.empty());
}

TEST_F(ConfigTest, ReadsEveryDaemonKey) {
  write("epbroker.conf",
        "# epbroker daemon settings\n"
        "; another comment style\n"
        "\n"
        "  [daemon]  \n"
        "idle_timeout_sec=0\n"
        "\trefresh_interval_sec  =  3600\t\n"
        "max_sessions_per_client = 4096\n"
        "max_jobs_per_client = 1\n"
        "install_group = epbroker-admins\n"
        "log_level = debug");  // no final newline
  const Config c = load_ok();
  EXPECT_EQ(c.daemon.idle_timeout, std::chrono::seconds(0));
  EXPECT_EQ(c.daemon.refresh_interval, std::chrono::seconds(3600));
  EXPECT_EQ(c.daemon.max_sessions_per_client, 4096u);
  EXPECT_EQ(c.daemon.max_jobs_per_client, 1u);
  EXPECT_EQ(c.daemon.install_group, "epbroker-admins");
  EXPECT_EQ(c.daemon.log_level, LogLevel::debug);
}

TEST_F(ConfigTest, RefreshIntervalZeroAndEmptyInstallGroupAreAccepted) {
  write("epbroker.conf", "[daemon]\nrefresh_interval_sec = 0\ninstall_group =\n");
  const Config c = load_ok();
  EXPECT_EQ(c.daemon.refresh_interval, std::chrono::seconds(0));
  EXPECT_EQ(c.daemon.install_group, "");
}

TEST_F(ConfigTest, FetchKeysHaveTheDocumentedDefaultsAndAreRead) {
  const FetchSettings d;
  EXPECT_EQ(d.connect_timeout, std::chrono::seconds(10));
  EXPECT_EQ(d.low_speed_limit_bytes, 1024u);
  EXPECT_EQ(d.low_speed_time, std::chrono::seconds(30));
  EXPECT_EQ(d.transfer_timeout, std::chrono::seconds(300));
  EXPECT_EQ(d.attempts, 4u);
  EXPECT_EQ(d.max_retry_after, std::chrono::seconds(60));
  EXPECT_EQ(DaemonSettings{}.fetch, d);

  write("epbroker.conf",
        "[daemon]\n"
        "connect_timeout_sec = 1\n"
        "low_speed_limit_bytes = 0\n"
        "low_speed_time_sec = 3600\n"
        "transfer_timeout_sec = 0\n"
        "fetch_attempts = 16\n"
        "max_retry_after_sec = 0\n");
  const FetchSettings f = load_ok().daemon.fetch;
  EXPECT_EQ(f.connect_timeout, std::chrono::seconds(1));
  EXPECT_EQ(f.low_speed_limit_bytes, 0u);
  EXPECT_EQ(f.low_speed_time, std::chrono::seconds(3600));
  EXPECT_EQ(f.transfer_timeout, std::chrono::seconds(0));
  EXPECT_EQ(f.attempts, 16u);
  EXPECT_EQ(f.max_retry_after, std::chrono::seconds(0));
}

TEST_F(ConfigTest, FetchKeysOutOfRangeNameFileLineAndKey) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"connect_timeout_sec = 0", "connect_timeout_sec: expected an integer in 1..300"},
      {"connect_timeout_sec = 301", "connect_timeout_sec: expected an integer in 1..300"},
      {"low_speed_limit_bytes = 1073741825", "low_speed_limit_bytes: expected an integer in"},
      {"low_speed_limit_bytes = -1", "low_speed_limit_bytes: expected"},
      {"low_speed_time_sec = 0", "low_speed_time_sec: expected an integer in 1..3600"},
      {"transfer_timeout_sec = 86401", "transfer_timeout_sec: expected an integer in 0..86400"},
      {"transfer_timeout_sec = 5m", "transfer_timeout_sec: expected an integer"},
      {"fetch_attempts = 0", "fetch_attempts: expected an integer in 1..16"},
      {"fetch_attempts = 17", "fetch_attempts: expected an integer in 1..16"},
      {"max_retry_after_sec = 3601", "max_retry_after_sec: expected an integer in 0..3600"},
  };
  for (const auto& [line, says] : cases) {
    SCOPED_TRACE(line);
    write("epbroker.conf", "[daemon]\n" + line + "\n");
    const catalog::Error e = load_error();
    EXPECT_EQ(e.code, Errc::bad_field) << e.message;
    EXPECT_THAT(e.message, ::testing::StartsWith(file("epbroker.conf") + ":2: "));
    EXPECT_THAT(e.message, HasSubstr(says));
  }
}

TEST_F(ConfigTest, CaFileIsOptionalAndRelativeToTheConfigDir) {
  write("remotes.d/a.conf", remote_file("a", "ca_file = certs/a.pem\n"));
  write("remotes.d/b.conf", remote_file("b", "ca_file = /etc/ssl/b.pem\n"));
  write("remotes.d/c.conf", remote_file("c"));
  const Config c = load_ok();
  ASSERT_EQ(c.remotes.size(), 3u);
  EXPECT_EQ(c.remotes[0].ca_file, dir_ / "certs/a.pem");
  EXPECT_EQ(c.remotes[1].ca_file, "/etc/ssl/b.pem");
  EXPECT_EQ(c.remotes[2].ca_file, "");
  write("remotes.d/c.conf", remote_file("c", "ca_file =\n"));
  const catalog::Error e = load_error();
  EXPECT_THAT(e.message, HasSubstr(file("remotes.d/c.conf") + ":6: ca_file: empty path"));
}

TEST_F(ConfigTest, LogLevelsRoundTrip) {
  for (const LogLevel l :
       {LogLevel::trace, LogLevel::debug, LogLevel::info, LogLevel::warn, LogLevel::error}) {
    auto p = parse_log_level(to_string(l));
    ASSERT_TRUE(p.has_value());
    EXPECT_EQ(*p, l);
  }
  EXPECT_FALSE(parse_log_level("INFO").has_value());
  EXPECT_FALSE(parse_log_level("warning").has_value());
}

TEST_F(ConfigTest, ReadsRemotesInPriorityOrder) {
  write("remotes.d/10-vendor.conf",
        "# a vendor catalog\n"
        "[remote]\n"
        "name = vendor\n"
        "metadata_url = https://vendor.example.com:8443/ep/metadata\n"
        "targets_url = https://vendor.example.com:8443/ep/targets/\n"
        "mirrors = https://mirror1.example.net/vendor   https://[2001:db8::1]:443/v/\n"
        "trusted_root = /usr/share/epbroker/roots/vendor.json\n"
        "priority = 10\n"
        "enabled = no\n");
  write("remotes.d/20-distro.conf", remote_file("distro", "priority = -5\nallow_http = false\n"));
  write("remotes.d/30-local.conf", remote_file("local", "enabled = Yes\n"));
  write("remotes.d/05-another.conf", remote_file("another"));
  // Ignored: hidden files, other suffixes, a directory that does not end in .conf.
  write("remotes.d/.hidden.conf", "garbage");
  write("remotes.d/README", "garbage");
  write("remotes.d/x.conf.dpkg-old", "garbage");
  fs::create_directories(dir_ / "remotes.d/sub");

  const Config c = load_ok();
  ASSERT_EQ(c.remotes.size(), 4u);
  EXPECT_EQ(c.remotes[0].name, "vendor");
  EXPECT_EQ(c.remotes[1].name, "another");  // priority 0, name order
  EXPECT_EQ(c.remotes[2].name, "local");
  EXPECT_EQ(c.remotes[3].name, "distro");

  const Remote& v = c.remotes[0];
  EXPECT_EQ(v.primary.metadata_url, "https://vendor.example.com:8443/ep/metadata/");
  EXPECT_EQ(v.primary.targets_url, "https://vendor.example.com:8443/ep/targets/");
  ASSERT_EQ(v.mirrors.size(), 2u);
  EXPECT_EQ(v.mirrors[0].metadata_url, "https://mirror1.example.net/vendor/metadata/");
  EXPECT_EQ(v.mirrors[0].targets_url, "https://mirror1.example.net/vendor/targets/");
  EXPECT_EQ(v.mirrors[1].metadata_url, "https://[2001:db8::1]:443/v/metadata/");
  EXPECT_EQ(v.trusted_root, "/usr/share/epbroker/roots/vendor.json");
  EXPECT_EQ(v.priority, 10);
  EXPECT_FALSE(v.enabled);
  EXPECT_FALSE(v.allow_http);
  EXPECT_EQ(v.source, dir_ / "remotes.d/10-vendor.conf");

  const Remote& d = c.remotes[3];
  EXPECT_EQ(d.priority, -5);
  EXPECT_TRUE(d.enabled);
  EXPECT_TRUE(d.mirrors.empty());
  // A relative trusted_root is relative to the config dir.
  EXPECT_EQ(d.trusted_root, dir_ / "roots/distro.json");
  EXPECT_TRUE(c.remotes[2].enabled);
}

TEST_F(ConfigTest, HttpNeedsAllowHttpWhereverItIsWritten) {
  // allow_http after the URLs still counts.
  write("remotes.d/lan.conf",
        "[remote]\n"
        "name = lan\n"
        "metadata_url = http://127.0.0.1:8080/metadata/\n"
        "targets_url = http://localhost/targets\n"
        "mirrors = http://10.0.0.2/repo\n"
        "trusted_root = lan-root.json\n"
        "allow_http = on\n");
  const Config c = load_ok();
  ASSERT_EQ(c.remotes.size(), 1u);
  EXPECT_TRUE(c.remotes[0].allow_http);
  EXPECT_EQ(c.remotes[0].primary.metadata_url, "http://127.0.0.1:8080/metadata/");
  EXPECT_EQ(c.remotes[0].primary.targets_url, "http://localhost/targets/");
  EXPECT_EQ(c.remotes[0].mirrors[0].targets_url, "http://10.0.0.2/repo/targets/");
}

TEST_F(ConfigTest, BooleanSpellings) {
  for (const char* yes : {"1", "yes", "true", "on", "TRUE", "Yes"}) {
    write("remotes.d/a.conf", remote_file("a", std::string("enabled = ") + yes + "\n"));
    EXPECT_TRUE(load_ok().remotes.at(0).enabled) << yes;
  }
  for (const char* no : {"0", "no", "false", "off", "OFF"}) {
    write("remotes.d/a.conf", remote_file("a", std::string("enabled = ") + no + "\n"));
    EXPECT_FALSE(load_ok().remotes.at(0).enabled) << no;
  }
}

// ---- malformed files: each names FILE:LINE and (where there is one) the key ------

struct BadCase {
  const char* what;
  const char* rel;   // file under the config dir
  std::string text;  // its content
  int line;          // the line the error must name
  const char* says;  // a substring the message must contain (after "FILE:LINE: ")
};

TEST_F(ConfigTest, EveryMalformedFileNamesFileLineAndKey) {
  const std::string long_line = "[daemon]\nlog_level = " + std::string(kMaxLineBytes, 'x') + "\n";
  const std::vector<BadCase> cases = {
      {"unknown daemon key", "epbroker.conf", "[daemon]\nidle_timeout = 5\n", 2,
       "idle_timeout: unknown key in [daemon]"},
      {"unknown section", "epbroker.conf", "# x\n[main]\n", 2, "unknown section \"[main]\""},
      {"remote section in main file", "epbroker.conf", "[daemon]\n[remote]\n", 2,
       "remotes go in remotes.d/*.conf"},
      {"key outside section", "epbroker.conf", "log_level = info\n[daemon]\n", 1,
       "log_level: key outside any section"},
      {"duplicate key", "epbroker.conf", "[daemon]\nlog_level = info\n\nlog_level = debug\n", 4,
       "log_level: duplicate key (first set at line 2)"},
      {"duplicate section", "epbroker.conf", "[daemon]\n[daemon]\n", 2,
       "section [daemon] given twice (first at line 1)"},
      {"integer with unit", "epbroker.conf", "[daemon]\nidle_timeout_sec = 5s\n", 2,
       "idle_timeout_sec: expected an integer in 0..604800, got \"5s\""},
      {"integer too large", "epbroker.conf", "[daemon]\nidle_timeout_sec = 604801\n", 2,
       "idle_timeout_sec: expected an integer"},
      {"integer overflow", "epbroker.conf",
       "[daemon]\nidle_timeout_sec = 99999999999999999999999\n", 2, "idle_timeout_sec: expected"},
      {"negative count", "epbroker.conf", "[daemon]\nmax_jobs_per_client = -1\n", 2,
       "max_jobs_per_client: expected an integer in 1..256"},
      {"zero sessions", "epbroker.conf", "[daemon]\nmax_sessions_per_client = 0\n", 2,
       "max_sessions_per_client: expected an integer in 1..4096"},
      {"signed integer", "epbroker.conf", "[daemon]\nmax_sessions_per_client = +3\n", 2,
       "max_sessions_per_client: expected"},
      {"refresh too often", "epbroker.conf", "[daemon]\nrefresh_interval_sec = 30\n", 2,
       "refresh_interval_sec: expected 0 (no automatic refresh) or 60..31536000"},
      {"bad log level", "epbroker.conf", "[daemon]\nlog_level = verbose\n", 2,
       "log_level: expected trace, debug, info, warn or error, got \"verbose\""},
      {"bad group", "epbroker.conf", "[daemon]\ninstall_group = Admins\n", 2,
       "install_group: not a group name"},
      {"empty integer", "epbroker.conf", "[daemon]\nmax_jobs_per_client =\n", 2,
       "max_jobs_per_client: expected an integer"},
      {"no equals sign", "epbroker.conf", "[daemon]\nlog_level debug\n", 2,
       "expected \"key = value\" or \"[section]\""},
      {"bad key characters", "epbroker.conf", "[daemon]\nLog-Level = debug\n", 2,
       "invalid key \"Log-Level\""},
      {"unterminated section", "epbroker.conf", "[daemon\n", 1, "malformed section header"},
      {"CRLF", "epbroker.conf", "[daemon]\r\nlog_level = info\r\n", 1, "carriage return"},
      {"control character", "epbroker.conf",
       std::string("[daemon]\nlog_level = in\x01"
                   "fo\n"),
       2, "control character 0x01"},
      {"NUL byte", "epbroker.conf", std::string("[daemon]\n\0\n", 11), 2, "control character 0x00"},
      {"invalid UTF-8", "epbroker.conf", "[daemon]\n# caf\xe9\n", 2, "not valid UTF-8"},
      {"line too long", "epbroker.conf", long_line, 2, "line longer than 4096 bytes"},
      {"missing name", "remotes.d/a.conf",
       "# c\n[remote]\nmetadata_url = https://a/m\ntargets_url = https://a/t\ntrusted_root = r\n",
       2, "name: missing (required in [remote])"},
      {"missing trusted_root", "remotes.d/a.conf",
       "[remote]\nname = a\nmetadata_url = https://a/m\ntargets_url = https://a/t\n", 1,
       "trusted_root: missing"},
      {"missing targets_url", "remotes.d/a.conf",
       "[remote]\nname = a\nmetadata_url = https://a/m\ntrusted_root = r\n", 1,
       "targets_url: missing"},
      {"bad remote name", "remotes.d/a.conf", remote_file("a").replace(9, 8, "name = My_Remote"), 2,
       "name: expected [a-z0-9][a-z0-9-]{0,31}, got \"My_Remote\""},
      {"remote name too long", "remotes.d/a.conf", remote_file(std::string(33, 'a')), 2,
       "name: expected [a-z0-9]"},
      {"http without allow_http", "remotes.d/a.conf",
       "[remote]\nname = a\nmetadata_url = http://a.example/m\ntargets_url = https://a/t\n"
       "trusted_root = r\n",
       3, "metadata_url: \"http://a.example/m\": http:// URL needs allow_http = true"},
      {"http mirror without allow_http", "remotes.d/a.conf",
       remote_file("a", "mirrors = https://m1/ http://m2/\n"), 6, "mirrors: \"http://m2/\""},
      {"ftp scheme", "remotes.d/a.conf",
       "[remote]\nname = a\nmetadata_url = ftp://a.example.org/\ntargets_url = https://a/t\n"
       "trusted_root = r\n",
       3, "metadata_url: \"ftp://a.example.org/\": scheme must be https://"},
      {"file scheme with allow_http", "remotes.d/a.conf",
       "[remote]\nname = a\nallow_http = yes\nmetadata_url = https://a/m\n"
       "targets_url = file:///srv/t\ntrusted_root = r\n",
       5, "targets_url: \"file:///srv/t\": scheme must be"},
      {"credentials", "remotes.d/a.conf",
       "[remote]\nname = a\nmetadata_url = https://user:pw@a/m\ntargets_url = https://a/t\n"
       "trusted_root = r\n",
       3, "metadata_url: \"https://user:pw@a/m\": credentials in URLs are not accepted"},
      {"query", "remotes.d/a.conf",
       "[remote]\nname = a\nmetadata_url = https://a/m?x=1\ntargets_url = https://a/t\n"
       "trusted_root = r\n",
       3, "no query or fragment"},
      {"space in URL", "remotes.d/a.conf",
       "[remote]\nname = a\nmetadata_url = https://a/m\ntargets_url = https://a/my targets\n"
       "trusted_root = r\n",
       4, "targets_url: \"https://a/my targets\": space or non-ASCII"},
      {"no host", "remotes.d/a.conf",
       "[remote]\nname = a\nmetadata_url = https:///m\ntargets_url = https://a/t\n"
       "trusted_root = r\n",
       3, "missing or bad host"},
      {"bad port", "remotes.d/a.conf",
       "[remote]\nname = a\nmetadata_url = https://a:99999/m\ntargets_url = https://a/t\n"
       "trusted_root = r\n",
       3, "metadata_url: \"https://a:99999/m\": bad port"},
      {"empty URL", "remotes.d/a.conf",
       "[remote]\nname = a\nmetadata_url =\ntargets_url = https://a/t\ntrusted_root = r\n", 3,
       "metadata_url: empty URL"},
      {"bad bool", "remotes.d/a.conf", remote_file("a", "allow_http = maybe\n"), 6,
       "allow_http: expected a boolean"},
      {"priority out of range", "remotes.d/a.conf", remote_file("a", "priority = 5000\n"), 6,
       "priority: expected an integer in -1000..1000, got \"5000\""},
      {"priority not a number", "remotes.d/a.conf", remote_file("a", "priority = high\n"), 6,
       "priority: expected an integer"},
      {"duplicate mirror", "remotes.d/a.conf",
       remote_file("a", "mirrors = https://m/x https://m/x/\n"), 6,
       "mirrors: mirror \"https://m/x/\" listed twice"},
      {"too many mirrors", "remotes.d/a.conf",
       remote_file("a",
                   "mirrors = https://m/1 https://m/2 https://m/3 https://m/4 https://m/5 "
                   "https://m/6 https://m/7 https://m/8 https://m/9\n"),
       6, "mirrors: more than 8 mirrors"},
      {"unknown remote key", "remotes.d/a.conf", remote_file("a", "\ngpg_key = x\n"), 7,
       "gpg_key: unknown key in [remote]"},
      {"two remote sections", "remotes.d/a.conf", remote_file("a") + remote_file("b"), 6,
       "section [remote] given twice (first at line 1)"},
      {"daemon section in remote file", "remotes.d/a.conf", "[daemon]\n", 1,
       "unknown section \"[daemon]\""},
      {"no section", "remotes.d/a.conf", "# only a comment\n", 1, "no [remote] section"},
      {"empty trusted_root", "remotes.d/a.conf",
       "[remote]\nname = a\nmetadata_url = https://a/m\ntargets_url = https://a/t\n"
       "trusted_root =\n",
       5, "trusted_root: empty path"},
  };
  ASSERT_GE(cases.size(), 15u);
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.what);
    fs::remove_all(dir_.path());
    fs::create_directories(dir_.path());
    write(c.rel, c.text);
    const catalog::Error e = load_error();
    EXPECT_EQ(e.code, Errc::bad_field) << e.message;
    const std::string prefix = file(c.rel) + ":" + std::to_string(c.line) + ": ";
    EXPECT_THAT(e.message, ::testing::StartsWith(prefix));
    EXPECT_THAT(e.message, HasSubstr(c.says));
  }
}

TEST_F(ConfigTest, DuplicateRemoteNamesNameBothFiles) {
  write("remotes.d/a.conf", remote_file("shared"));
  write("remotes.d/b.conf", "\n\n" + remote_file("shared"));
  const catalog::Error e = load_error();
  EXPECT_EQ(e.code, Errc::bad_field);
  EXPECT_THAT(e.message, ::testing::StartsWith(file("remotes.d/b.conf") + ":4: name: "));
  EXPECT_THAT(e.message,
              HasSubstr("remote \"shared\" already defined at " + file("remotes.d/a.conf") + ":2"));
}

TEST_F(ConfigTest, OversizedFileIsRefused) {
  std::string big = "[daemon]\n";
  while (big.size() <= kMaxFileBytes) big += "# padding padding padding padding padding\n";
  write("epbroker.conf", big);
  const catalog::Error e = load_error();
  EXPECT_EQ(e.code, Errc::too_large);
  EXPECT_THAT(e.message, HasSubstr(file("epbroker.conf")));
}

TEST_F(ConfigTest, NonRegularFilesAreRefused) {
  fs::create_directories(dir_ / "epbroker.conf");
  EXPECT_EQ(load_error().code, Errc::io);
  fs::remove(dir_ / "epbroker.conf");

  write("remotes.d", "not a directory");
  EXPECT_THAT(load_error().message, HasSubstr("remotes.d: not a directory"));
  fs::remove(dir_ / "remotes.d");

  fs::create_directories(dir_ / "remotes.d/dir.conf");
  const catalog::Error e = load_error();
  EXPECT_EQ(e.code, Errc::io);
  EXPECT_THAT(e.message, HasSubstr("dir.conf: not a regular file"));
}

TEST_F(ConfigTest, TooManyRemoteFiles) {
  for (std::size_t i = 0; i <= kMaxRemoteFiles; ++i) {
    write("remotes.d/r" + std::to_string(i) + ".conf", remote_file("r" + std::to_string(i)));
  }
  EXPECT_EQ(load_error().code, Errc::too_many);
}

TEST_F(ConfigTest, SymlinkedRemoteFileIsFollowed) {
  write("shared/vendor.conf", remote_file("vendor"));
  fs::create_directories(dir_ / "remotes.d");
  fs::create_symlink(dir_ / "shared/vendor.conf", dir_ / "remotes.d/vendor.conf");
  const Config c = load_ok();
  ASSERT_EQ(c.remotes.size(), 1u);
  EXPECT_EQ(c.remotes[0].name, "vendor");
}

// ---- command line ----------------------------------------------------------------

class CommandLineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* v = getenv("EPBROKER_BUS_ADDRESS")) saved_ = v;
    unsetenv("EPBROKER_BUS_ADDRESS");
  }
  void TearDown() override {
    if (saved_) {
      setenv("EPBROKER_BUS_ADDRESS", saved_->c_str(), 1);
    } else {
      unsetenv("EPBROKER_BUS_ADDRESS");
    }
  }
  static Result<Options> parse(std::vector<std::string> args) {
    args.insert(args.begin(), "epbrokerd");
    std::vector<const char*> argv;
    for (const std::string& a : args) argv.push_back(a.c_str());
    argv.push_back(nullptr);
    return parse_command_line(static_cast<int>(args.size()), argv.data());
  }
  static Options parse_ok(std::vector<std::string> args) {
    auto o = parse(std::move(args));
    EXPECT_TRUE(o.has_value()) << o.error().message;
    return o ? *o : Options{};
  }

  std::optional<std::string> saved_;
  TempDir dir_;
};

TEST_F(CommandLineTest, NoArgumentsGiveDefaults) {
  const Options o = parse_ok({});
  EXPECT_FALSE(o.help);
  EXPECT_FALSE(o.version);
  EXPECT_EQ(o.paths, Paths{});
  EXPECT_EQ(o.bus_address, "");
  EXPECT_FALSE(o.idle_timeout.has_value());
  EXPECT_FALSE(o.log_level.has_value());
}

TEST_F(CommandLineTest, EveryFlagInBothForms) {
  const Options o =
      parse_ok({"--config-dir", "/c", "--state-dir=/s", "--cache-dir", "/k/",
                "--sysfs-root=/fake/sys", "--procfs-root", "/fake/proc",
                "--bus-address=unix:path=/tmp/bus", "--idle-timeout", "0", "--log-level=trace"});
  EXPECT_EQ(o.paths.config_dir, "/c");
  EXPECT_EQ(o.paths.state_dir, "/s");
  EXPECT_EQ(o.paths.store_root, "/s");  // --state-dir alone: one private tree
  EXPECT_EQ(o.paths.cache_dir, "/k/");
  EXPECT_EQ(o.paths.sysfs_root, "/fake/sys");
  EXPECT_EQ(o.paths.procfs_root, "/fake/proc");
  EXPECT_EQ(o.bus_address, "unix:path=/tmp/bus");
  EXPECT_EQ(o.idle_timeout, std::chrono::seconds(0));
  EXPECT_EQ(o.log_level, LogLevel::trace);
}

TEST_F(CommandLineTest, StoreRootAndCommitSocket) {
  const Options o =
      parse_ok({"--state-dir", "/s", "--store-root=/r", "--commit-socket", "/run/x/commit.sock"});
  EXPECT_EQ(o.paths.state_dir, "/s");
  EXPECT_EQ(o.paths.store_root, "/r");
  EXPECT_EQ(o.paths.commit_socket, "/run/x/commit.sock");
  // Without --state-dir the store root keeps its default, whatever else is given.
  EXPECT_EQ(parse_ok({"--cache-dir", "/k"}).paths.store_root, "/var/lib/epbroker");
}

TEST_F(CommandLineTest, RelativeDirectoriesBecomeAbsolute) {
  const Options o = parse_ok({"--state-dir", "some/./state"});
  EXPECT_TRUE(o.paths.state_dir.is_absolute());
  EXPECT_EQ(o.paths.state_dir, (fs::current_path() / "some/state").lexically_normal());
}

TEST_F(CommandLineTest, HelpAndVersion) {
  EXPECT_TRUE(parse_ok({"--help"}).help);
  EXPECT_TRUE(parse_ok({"-h"}).help);
  EXPECT_TRUE(parse_ok({"--version"}).version);
  // What follows --help is not looked at.
  EXPECT_TRUE(parse_ok({"--help", "--bogus"}).help);
  EXPECT_THAT(usage(), HasSubstr("Usage: epbrokerd"));
  for (const char* flag :
       {"--config-dir", "--state-dir", "--cache-dir", "--sysfs-root", "--procfs-root",
        "--bus-address", "--idle-timeout", "--log-level", "--help", "--version"}) {
    EXPECT_THAT(usage(), HasSubstr(flag));
  }
  EXPECT_THAT(usage(), HasSubstr("EPBROKER_BUS_ADDRESS"));
}

TEST_F(CommandLineTest, BadCommandLines) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--bogus"}, "unknown option \"--bogus\""},
      {{"--bogus=1"}, "unknown option \"--bogus\""},
      {{"-x"}, "unexpected argument \"-x\""},
      {{"positional"}, "unexpected argument \"positional\""},
      {{"--config-dir"}, "--config-dir needs a value"},
      {{"--config-dir", "--state-dir", "/s"}, "--config-dir needs a value"},
      {{"--state-dir="}, "--state-dir: empty value"},
      {{"--log-level", "loud"}, "--log-level: expected trace, debug"},
      {{"--idle-timeout", "-1"}, "--idle-timeout: expected an integer in 0..604800"},
      {{"--idle-timeout", "1m"}, "--idle-timeout: expected an integer"},
      {{"--idle-timeout=604801"}, "--idle-timeout: expected an integer"},
      {{"--cache-dir", "/a", "--cache-dir=/b"}, "--cache-dir given twice"},
      {{"--help=yes"}, "--help takes no value"},
  };
  for (const auto& [args, says] : cases) {
    auto o = parse(args);
    ASSERT_FALSE(o.has_value()) << args.front();
    EXPECT_EQ(o.error().code, Errc::invalid_argument);
    EXPECT_THAT(o.error().message, HasSubstr(says));
  }
}

TEST_F(CommandLineTest, HelpWinsAndEveryFlagIsListed) {
  // --help is answered whatever else is on the line, but never takes a value.
  EXPECT_TRUE(parse_ok({"--idle-timeout", "1m", "--help", "stray"}).help);
  EXPECT_TRUE(parse_ok({"--log-level", "loud", "--version"}).version);
  for (const char* flag : {"--version=", "--help=1"}) {
    const auto o = parse({flag});
    ASSERT_FALSE(o.has_value()) << flag;
    EXPECT_THAT(o.error().message, HasSubstr("takes no value")) << flag;
  }
  const std::string text = usage();
  for (const char* s : {"--library-root", "-h,--help", "(default /etc/epbroker)",
                        "brokers ONNX Runtime execution provider packages", "max_retry_after_sec",
                        "remotes.d/*.conf [remote] keys"}) {
    EXPECT_THAT(text, HasSubstr(s));
  }
  EXPECT_EQ(parse_ok({"--library-root=lib/"}).paths.library_root,
            (fs::current_path() / "lib/").lexically_normal());
}

TEST_F(CommandLineTest, EveryErrorIsOneLine) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"--bogus"},
                                             {"--"},
                                             {"--procfs-root"},
                                             {"--sysfs-root", "/a", "--sysfs-root", "/b"},
                                             {"--bus-address", std::string(5000, 'a')},
                                             {"--log-level="}}) {
    const auto o = parse(args);
    ASSERT_FALSE(o.has_value()) << args.front();
    EXPECT_EQ(o.error().code, Errc::invalid_argument);
    EXPECT_EQ(o.error().message.find('\n'), std::string::npos) << o.error().message;
    const std::string flag = args.front().substr(0, args.front().find('='));
    EXPECT_THAT(o.error().message, HasSubstr(flag.substr(0, 13))) << o.error().message;
  }
}

TEST_F(CommandLineTest, BusAddressFromEnvironmentUnlessFlagGiven) {
  setenv("EPBROKER_BUS_ADDRESS", "unix:path=/run/test-bus", 1);
  EXPECT_EQ(parse_ok({}).bus_address, "unix:path=/run/test-bus");
  EXPECT_EQ(parse_ok({"--bus-address", "unix:path=/flag"}).bus_address, "unix:path=/flag");
  setenv("EPBROKER_BUS_ADDRESS", "", 1);
  EXPECT_EQ(parse_ok({}).bus_address, "");
}

TEST_F(CommandLineTest, FlagsOverrideTheConfigFile) {
  write_file(dir_ / "epbroker.conf",
             "[daemon]\nidle_timeout_sec = 120\nlog_level = debug\nmax_jobs_per_client = 3\n");
  setenv("EPBROKER_BUS_ADDRESS", "unix:path=/env", 1);

  // Without flags the file's values hold.
  auto c = load_config(parse_ok({"--config-dir", dir_.path().string()}));
  ASSERT_TRUE(c.has_value()) << c.error().message;
  EXPECT_EQ(c->daemon.idle_timeout, std::chrono::seconds(120));
  EXPECT_EQ(c->daemon.log_level, LogLevel::debug);
  EXPECT_EQ(c->bus_address, "unix:path=/env");
  EXPECT_EQ(c->paths.config_dir, dir_.path());

  // Flags win; what they do not set stays from the file.
  c = load_config(
      parse_ok({"--config-dir", dir_.path().string(), "--idle-timeout", "0", "--log-level", "error",
                "--state-dir", "/st", "--bus-address", "unix:path=/flag"}));
  ASSERT_TRUE(c.has_value()) << c.error().message;
  EXPECT_EQ(c->daemon.idle_timeout, std::chrono::seconds(0));
  EXPECT_EQ(c->daemon.log_level, LogLevel::error);
  EXPECT_EQ(c->daemon.max_jobs_per_client, 3u);
  EXPECT_EQ(c->paths.state_dir, "/st");
  EXPECT_EQ(c->bus_address, "unix:path=/flag");
}

TEST_F(CommandLineTest, BadConfigFileFailsLoadEvenWithFlags) {
  write_file(dir_ / "epbroker.conf", "[daemon]\nidle_timeout_sec = never\n");
  auto c = load_config(parse_ok({"--config-dir", dir_.path().string(), "--idle-timeout", "5"}));
  ASSERT_FALSE(c.has_value());
  EXPECT_THAT(c.error().message, HasSubstr("epbroker.conf:2: idle_timeout_sec:"));
}

}  // namespace
}  // namespace epbrokerd::config
