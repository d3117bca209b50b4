// The package lifecycle keys of epbroker.conf's [daemon] section: keep_versions,
// keep_for_older_ort_days, remove_revoked, auto_update (docs/configuration.md).
#include "daemon/config/config.hpp"

#include "daemon/config/command_line.hpp"

#include <chrono>
#include <iterator>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/support/temp_dir.hpp"

namespace epbrokerd::config {
namespace {

using catalog::Errc;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using tests::support::TempDir;
using tests::support::write_file;

class ConfigLifecycleTest : public ::testing::Test {
 protected:
  Paths paths() const {
    Paths p;
    p.config_dir = dir_.path();
    return p;
  }
  void write_conf(const std::string& text) const { write_file(dir_ / "epbroker.conf", text); }
  DaemonSettings load_ok() const {
    auto c = load_config(paths());
    EXPECT_TRUE(c.has_value()) << c.error().message;
    return c ? c->daemon : DaemonSettings{};
  }
  // The error of a load that must fail.
  catalog::Error load_error() const {
    auto c = load_config(paths());
    EXPECT_FALSE(c.has_value());
    return c ? catalog::Error{Errc::io, "(loaded)"} : c.error();
  }
  std::string conf_file() const { return (dir_ / "epbroker.conf").string(); }

  TempDir dir_;
};

TEST_F(ConfigLifecycleTest, DefaultsAreTheDocumentedOnes) {
  const DaemonSettings d;
  EXPECT_EQ(d.keep_versions, 1u);
  EXPECT_EQ(d.keep_for_older_ort, std::chrono::days(30));
  EXPECT_FALSE(d.remove_revoked);
  EXPECT_EQ(d.auto_update, AutoUpdate::install);
}

TEST_F(ConfigLifecycleTest, AbsentKeysGiveTheDefaults) {
  write_conf("[daemon]\nlog_level = debug\nmax_jobs_per_client = 3\n");
  const DaemonSettings d = load_ok();
  EXPECT_EQ(d.keep_versions, 1u);
  EXPECT_EQ(d.keep_for_older_ort, std::chrono::days(30));
  EXPECT_FALSE(d.remove_revoked);
  EXPECT_EQ(d.auto_update, AutoUpdate::install);
}

TEST_F(ConfigLifecycleTest, ReadsEveryLifecycleKey) {
  write_conf(
      "[daemon]\n"
      "keep_versions = 3\n"
      "keep_for_older_ort_days = 90\n"
      "remove_revoked = yes\n"
      "auto_update = download\n");
  const DaemonSettings d = load_ok();
  EXPECT_EQ(d.keep_versions, 3u);
  EXPECT_EQ(d.keep_for_older_ort, std::chrono::days(90));
  EXPECT_TRUE(d.remove_revoked);
  EXPECT_EQ(d.auto_update, AutoUpdate::download);
  // Only these changed.
  DaemonSettings expected;
  expected.keep_versions = 3;
  expected.keep_for_older_ort = std::chrono::days(90);
  expected.remove_revoked = true;
  expected.auto_update = AutoUpdate::download;
  EXPECT_EQ(d, expected);
}

TEST_F(ConfigLifecycleTest, RangeEndsAreAccepted) {
  write_conf("[daemon]\nkeep_versions = 0\nkeep_for_older_ort_days = 0\n");
  DaemonSettings d = load_ok();
  EXPECT_EQ(d.keep_versions, 0u);
  EXPECT_EQ(d.keep_for_older_ort, std::chrono::days(0));
  write_conf("[daemon]\nkeep_versions = 100\nkeep_for_older_ort_days = 3650\n");
  d = load_ok();
  EXPECT_EQ(d.keep_versions, 100u);
  EXPECT_EQ(d.keep_for_older_ort, std::chrono::days(3650));
}

TEST_F(ConfigLifecycleTest, RemoveRevokedTakesTheBooleanSpellings) {
  for (const char* yes : {"1", "yes", "true", "on", "TRUE", "Yes"}) {
    write_conf(std::string("[daemon]\nremove_revoked = ") + yes + "\n");
    EXPECT_TRUE(load_ok().remove_revoked) << yes;
  }
  for (const char* no : {"0", "no", "false", "off", "OFF"}) {
    write_conf(std::string("[daemon]\nremove_revoked = ") + no + "\n");
    EXPECT_FALSE(load_ok().remove_revoked) << no;
  }
}

TEST_F(ConfigLifecycleTest, EveryAutoUpdateMode) {
  for (const AutoUpdate m : {AutoUpdate::off, AutoUpdate::download, AutoUpdate::install}) {
    write_conf("[daemon]\nauto_update = " + std::string(to_string(m)) + "\n");
    EXPECT_EQ(load_ok().auto_update, m) << to_string(m);
  }
}

TEST_F(ConfigLifecycleTest, AutoUpdateModesRoundTrip) {
  EXPECT_EQ(to_string(AutoUpdate::off), "off");
  EXPECT_EQ(to_string(AutoUpdate::download), "download");
  EXPECT_EQ(to_string(AutoUpdate::install), "install");
  for (const AutoUpdate m : {AutoUpdate::off, AutoUpdate::download, AutoUpdate::install}) {
    auto p = parse_auto_update(to_string(m));
    ASSERT_TRUE(p.has_value());
    EXPECT_EQ(*p, m);
  }
  for (const char* bad : {"Install", "OFF", "on", "no", "auto", "", " install"}) {
    auto p = parse_auto_update(bad);
    ASSERT_FALSE(p.has_value()) << bad;
    EXPECT_EQ(p.error().code, Errc::bad_field);
    EXPECT_THAT(p.error().message, HasSubstr("expected off, download or install, got")) << bad;
  }
}

TEST_F(ConfigLifecycleTest, BadValuesNameFileLineAndKey) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"keep_versions = 101", "keep_versions: expected an integer in 0..100, got \"101\""},
      {"keep_versions = -1", "keep_versions: expected an integer in 0..100, got \"-1\""},
      {"keep_versions = two", "keep_versions: expected an integer in 0..100"},
      {"keep_versions =", "keep_versions: expected an integer in 0..100, got \"\""},
      {"keep_versions = 99999999999999999999999", "keep_versions: expected an integer"},
      {"keep_for_older_ort_days = 3651",
       "keep_for_older_ort_days: expected an integer in 0..3650, got \"3651\""},
      {"keep_for_older_ort_days = 30d",
       "keep_for_older_ort_days: expected an integer in 0..3650, got \"30d\""},
      {"keep_for_older_ort_days = +5", "keep_for_older_ort_days: expected an integer"},
      {"remove_revoked = maybe",
       "remove_revoked: expected a boolean (yes/no, true/false, on/off, 1/0), got \"maybe\""},
      {"remove_revoked =", "remove_revoked: expected a boolean"},
      {"auto_update = Install", "auto_update: expected off, download or install, got \"Install\""},
      {"auto_update = on", "auto_update: expected off, download or install, got \"on\""},
      {"auto_update = yes", "auto_update: expected off, download or install, got \"yes\""},
      {"auto_update =", "auto_update: expected off, download or install, got \"\""},
      {"keep_version = 2", "keep_version: unknown key in [daemon]"},
      {"keep_for_older_ort = 30", "keep_for_older_ort: unknown key in [daemon]"},
  };
  for (const auto& [line, says] : cases) {
    SCOPED_TRACE(line);
    // The bad line is line 4, after a comment and a good key.
    write_conf("# lifecycle\n[daemon]\nlog_level = info\n" + line + "\n");
    const catalog::Error e = load_error();
    EXPECT_EQ(e.code, Errc::bad_field) << e.message;
    EXPECT_THAT(e.message, StartsWith(conf_file() + ":4: "));
    EXPECT_THAT(e.message, HasSubstr(says));
    EXPECT_EQ(e.message.find('\n'), std::string::npos) << e.message;
  }
}

TEST_F(ConfigLifecycleTest, DuplicateLifecycleKeyIsRefused) {
  write_conf("[daemon]\nauto_update = off\nauto_update = install\n");
  const catalog::Error e = load_error();
  EXPECT_EQ(e.code, Errc::bad_field);
  EXPECT_THAT(e.message, StartsWith(conf_file() + ":3: auto_update: duplicate key"));
}

TEST_F(ConfigLifecycleTest, CommandLineFlagsLeaveTheLifecycleKeysAlone) {
  write_conf("[daemon]\nkeep_versions = 2\nremove_revoked = on\nauto_update = off\n");
  const char* argv[] = {"epbrokerd",   "--config-dir", dir_.path().c_str(),
                        "--log-level", "error",        "--idle-timeout",
                        "0",           nullptr};
  auto o = parse_command_line(static_cast<int>(std::size(argv)) - 1, argv);
  ASSERT_TRUE(o.has_value()) << o.error().message;
  auto c = load_config(*o);
  ASSERT_TRUE(c.has_value()) << c.error().message;
  EXPECT_EQ(c->daemon.keep_versions, 2u);
  EXPECT_EQ(c->daemon.keep_for_older_ort, std::chrono::days(30));
  EXPECT_TRUE(c->daemon.remove_revoked);
  EXPECT_EQ(c->daemon.auto_update, AutoUpdate::off);
  EXPECT_EQ(c->daemon.log_level, LogLevel::error);
}

}  // namespace
}  // namespace epbrokerd::config
