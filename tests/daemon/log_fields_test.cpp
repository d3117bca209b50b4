// daemon/log: structured fields (issue 18, item 4) as the journal and the console
// get them, the console sink end to end (stderr into a file), the level and target
// LogControl1 sets, syslog's level names, and core::job_log_fields().
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "daemon/core/job.hpp"
#include "daemon/log/log.hpp"
#include "daemon/log/message_ids.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

using namespace epbrokerd;
using log::Level;

TEST(LogFieldsTest, JournalRecordsCarryEachFieldAfterTheStandardOnes) {
  const log::Fields fields = {{log::kMessageId, std::string(log::kMessageInstalled)},
                              {log::kPackage, "test-ep"},
                              {log::kVersion, ""},  // unknown: left out
                              {log::kCallerUid, "1000"}};
  const auto record = log::journal_record(Level::warn, "job 3: install test-ep done", fields);
  const std::vector<std::string> want = {"MESSAGE=job 3: install test-ep done",
                                         "PRIORITY=4",
                                         "SYSLOG_IDENTIFIER=epbrokerd",
                                         "MESSAGE_ID=9740fda51f9b49c0b4f6c149a182ad5e",
                                         "EPBROKER_PACKAGE=test-ep",
                                         "EPBROKER_CALLER_UID=1000"};
  EXPECT_EQ(record, want);
  EXPECT_EQ(log::journal_record(Level::debug, "x", {})[1], "PRIORITY=7");
  EXPECT_EQ(log::journal_record(Level::trace, "x", {})[1], "PRIORITY=7");
  EXPECT_EQ(log::journal_record(Level::info, "x", {})[1], "PRIORITY=6");
  EXPECT_EQ(log::journal_record(Level::err, "x", {})[1], "PRIORITY=3");
  // A value may hold anything: the journal's native protocol takes it as is.
  EXPECT_EQ(log::journal_record(Level::info, "x", {{log::kError, "a\nb"}})[3],
            "EPBROKER_ERROR=a\nb");
}

TEST(LogFieldsTest, ConsoleLinesAppendTheFieldsQuotedWhereNeeded) {
  EXPECT_EQ(log::console_text("done", {}), "done");
  EXPECT_EQ(log::console_text("done", {{log::kJob, "7"}, {log::kRemote, ""}, {log::kPackage, "a"}}),
            "done EPBROKER_JOB=7 EPBROKER_PACKAGE=a");
  EXPECT_EQ(log::console_text("x", {{log::kError, "two words \"q\" \\ \n\t\x01"}}),
            "x EPBROKER_ERROR=\"two words \\\"q\\\" \\\\ \\n\\t\\x01\"");
}

TEST(LogFieldsTest, FieldNamesAreJournaldsAndNotTrusted) {
  for (const auto name : log::kFieldNames) {
    ASSERT_FALSE(name.empty());
    EXPECT_LE(name.size(), 64U) << name;
    EXPECT_NE(name.front(), '_') << name << ": '_' fields are journald's own";
    EXPECT_FALSE(name.front() >= '0' && name.front() <= '9') << name;
    for (char c : name) {
      EXPECT_TRUE((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_') << name;
    }
  }
}

TEST(LogFieldsTest, SyslogLevelNames) {
  using config::LogLevel;
  EXPECT_EQ(log::syslog_level_name(LogLevel::trace), "debug");
  EXPECT_EQ(log::syslog_level_name(LogLevel::debug), "debug");
  EXPECT_EQ(log::syslog_level_name(LogLevel::info), "info");
  EXPECT_EQ(log::syslog_level_name(LogLevel::warn), "warning");
  EXPECT_EQ(log::syslog_level_name(LogLevel::error), "err");
  for (const char* n : {"emerg", "alert", "crit", "err"}) {
    EXPECT_EQ(log::level_from_syslog_name(n), LogLevel::error) << n;
  }
  EXPECT_EQ(log::level_from_syslog_name("warning"), LogLevel::warn);
  EXPECT_EQ(log::level_from_syslog_name("notice"), LogLevel::info);
  EXPECT_EQ(log::level_from_syslog_name("info"), LogLevel::info);
  EXPECT_EQ(log::level_from_syslog_name("debug"), LogLevel::debug);
  for (const char* n : {"", "warn", "error", "trace", "DEBUG", "debug "}) {
    EXPECT_FALSE(log::level_from_syslog_name(n).has_value()) << n;
  }
}

TEST(LogFieldsTest, JobFieldsNameTheJobItsPackageAndWhoAsked) {
  core::JobSnapshot s;
  s.id = 12;
  s.kind = core::JobKind::install;
  s.target = "openvino";
  s.version = "1.8.1";
  s.remote = "vendor";
  s.starter.uid = 1000;
  const log::Fields want = {{log::kJob, "12"},           {log::kJobKind, "install"},
                            {log::kPackage, "openvino"}, {log::kVersion, "1.8.1"},
                            {log::kRemote, "vendor"},    {log::kCallerUid, "1000"}};
  EXPECT_EQ(core::job_log_fields(s), want);
  // The daemon's own work (no caller): uid 0.
  core::JobSnapshot own;
  own.kind = core::JobKind::refresh;
  EXPECT_EQ(core::job_log_fields(own).back(), (log::Field{log::kCallerUid, "0"}));
  // describe() is what an install job's snapshot then carries.
  core::Job job(5, core::JobKind::install, "test-ep", {}, nullptr);
  job.describe("0.1.0", "test");
  EXPECT_EQ(job.snapshot().version, "0.1.0");
  EXPECT_EQ(job.snapshot().remote, "test");
}

// The console sink for real: stderr into a file.
class ConsoleSinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = ::dup(STDERR_FILENO);
    const int fd = ::open((dir_.path() / "stderr").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    ::dup2(fd, STDERR_FILENO);
    ::close(fd);
    log::init(config::LogLevel::info, /*force_stderr=*/true);
  }
  void TearDown() override {
    log::flush();
    ::dup2(saved_, STDERR_FILENO);
    ::close(saved_);
  }
  std::string written() {
    log::flush();
    std::ifstream in(dir_.path() / "stderr");
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }

  tests::support::TempDir dir_;
  int saved_ = -1;
};

TEST_F(ConsoleSinkTest, EventsWriteTheirFieldsOtherLinesNone) {
  EXPECT_EQ(log::target(), log::Target::console);
  log::event(Level::info, {{log::kJob, "3"}, {log::kPackage, "test-ep"}}, "job {}: done", 3);
  log::info("plain {}", "line");
  const std::string text = written();
  EXPECT_NE(text.find("epbrokerd[" + std::to_string(::getpid()) +
                      "] info: job 3: done EPBROKER_JOB=3 EPBROKER_PACKAGE=test-ep\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("] info: plain line\n"), std::string::npos) << text;
}

TEST_F(ConsoleSinkTest, TheLevelAndTheTargetChangeWhileRunning) {
  log::event(Level::debug, {{log::kJob, "1"}}, "hidden at info");
  log::set_level(config::LogLevel::debug);
  EXPECT_EQ(log::level(), config::LogLevel::debug);
  log::event(Level::debug, {{log::kJob, "2"}}, "shown at debug");
  log::set_target(log::Target::null);
  EXPECT_FALSE(log::to_journal());
  log::warn("nowhere");
  log::set_target(log::Target::console);
  log::info("back");
  const std::string text = written();
  EXPECT_EQ(text.find("hidden at info"), std::string::npos) << text;
  EXPECT_NE(text.find("debug: shown at debug EPBROKER_JOB=2"), std::string::npos) << text;
  EXPECT_EQ(text.find("nowhere"), std::string::npos) << text;
  EXPECT_NE(text.find("info: back"), std::string::npos) << text;
  // force_stderr: "auto" is the console whatever $JOURNAL_STREAM says.
  EXPECT_EQ(log::auto_target(), log::Target::console);
}

}  // namespace
