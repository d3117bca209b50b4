// daemon/log: the journal check of $JOURNAL_STREAM (systemd.exec(5): "DEV:INO" of
// the stream stderr is connected to, in decimal).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "daemon/log/log.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

using epbrokerd::log::is_journal_stream;

class JournalStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fd_ = ::open((dir_.path() / "stream").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    ASSERT_GE(fd_, 0);
    struct stat st {};
    ASSERT_EQ(::fstat(fd_, &st), 0);
    id_ = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  }
  void TearDown() override {
    if (fd_ >= 0) ::close(fd_);
  }

  tests::support::TempDir dir_;
  int fd_ = -1;
  std::string id_;
};

TEST_F(JournalStreamTest, MatchesOnlyTheStreamItNames) {
  EXPECT_TRUE(is_journal_stream(fd_, id_.c_str()));
  // Another file (a stderr redirected elsewhere that inherited the variable).
  const int other = ::open((dir_.path() / "other").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(other, 0);
  EXPECT_FALSE(is_journal_stream(other, id_.c_str()));
  ::close(other);
}

TEST_F(JournalStreamTest, RefusesMissingOrMalformedValues) {
  EXPECT_FALSE(is_journal_stream(fd_, nullptr));
  EXPECT_FALSE(is_journal_stream(fd_, ""));
  EXPECT_FALSE(is_journal_stream(fd_, ":"));
  EXPECT_FALSE(is_journal_stream(fd_, (id_ + ":1").c_str()));
  EXPECT_FALSE(is_journal_stream(fd_, (" " + id_).c_str()));
  EXPECT_FALSE(is_journal_stream(fd_, (id_ + "x").c_str()));
  EXPECT_FALSE(is_journal_stream(fd_, id_.substr(0, id_.find(':')).c_str()));
  EXPECT_FALSE(is_journal_stream(-1, id_.c_str()));  // fstat fails
}

}  // namespace
