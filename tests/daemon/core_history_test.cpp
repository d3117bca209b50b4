// The lifecycle's history (daemon/core/history.hpp): one JSON object per line,
// read oldest first, a torn line skipped, and the file bounded.
#include "daemon/core/history.hpp"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/support/temp_dir.hpp"

namespace epbrokerd::core {
namespace {

namespace fs = std::filesystem;
using catalog::Errc;
using common::HistoryAction;
using ::testing::HasSubstr;
using tests::support::read_file;
using tests::support::TempDir;
using tests::support::write_file;

HistoryEntry entry(std::int64_t time, std::string name = "test-ep",
                   HistoryAction action = HistoryAction::update) {
  HistoryEntry e;
  e.time = time;
  e.uid = 1000;
  e.action = action;
  e.name = std::move(name);
  e.from = "1.2.0";
  e.to = "1.3.0";
  e.result = "ok";
  e.reason = "entry " + std::to_string(time);
  return e;
}

std::vector<std::int64_t> times(const std::vector<HistoryEntry>& entries) {
  std::vector<std::int64_t> out;
  for (const auto& e : entries) out.push_back(e.time);
  return out;
}

// Appends raw bytes to the file, as a crash in the middle of a write leaves them.
void append_raw(const fs::path& path, const std::string& bytes) {
  std::string text = fs::exists(path) ? read_file(path) : "";
  write_file(path, text + bytes);
}

// ---- lines -----------------------------------------------------------------

TEST(HistoryLineTest, RoundTrip) {
  HistoryEntry e = entry(1'700'000'123);
  e.uid = 4'000'000'000u;
  e.result = "NotFound";
  e.reason = "quotes \" and\nnewlines\tand unicode \xc3\xa9 survive";
  const auto line = to_line(e);
  EXPECT_EQ(line.find('\n'), std::string::npos) << "one line";
  auto parsed = parse_history_line(line);
  ASSERT_TRUE(parsed.has_value()) << parsed.error().message << "\n" << line;
  EXPECT_EQ(*parsed, e);
}

TEST(HistoryLineTest, EveryActionRoundTrips) {
  for (const auto action : common::kAllHistoryActions) {
    HistoryEntry e = entry(5, "", action);
    e.from = "";
    e.to = "";
    auto parsed = parse_history_line(to_line(e));
    ASSERT_TRUE(parsed.has_value()) << common::history_action_name(action);
    EXPECT_EQ(*parsed, e) << common::history_action_name(action);
  }
}

TEST(HistoryLineTest, LineHasTheDocumentedKeys) {
  const auto line = to_line(entry(42));
  for (const char* key :
       {"\"time\":42", "\"uid\":1000", "\"action\":\"update\"", "\"name\":\"test-ep\"",
        "\"from\":\"1.2.0\"", "\"to\":\"1.3.0\"", "\"result\":\"ok\"", "\"reason\":"}) {
    EXPECT_THAT(line, HasSubstr(key));
  }
}

TEST(HistoryLineTest, UnknownActionIsRefused) {
  auto line = to_line(entry(1));
  const auto at = line.find("\"update\"");
  ASSERT_NE(at, std::string::npos);
  line.replace(at, 8, "\"upgrade\"");
  auto parsed = parse_history_line(line);
  ASSERT_FALSE(parsed.has_value());
  EXPECT_EQ(parsed.error().code, Errc::bad_field);
  EXPECT_THAT(parsed.error().message, HasSubstr("upgrade"));
}

TEST(HistoryLineTest, NotAnEntryIsRefused) {
  for (const char* line : {"", "garbage", "{\"time\": 1", "[1, 2]", "{}",
                           R"({"time": "1", "uid": 0, "action": "gc", "name": "", "from": "",
                               "to": "", "result": "ok", "reason": ""})",
                           R"({"time": 1, "uid": 0, "action": "gc", "name": "", "from": "",
                               "to": "", "result": "ok"})"}) {
    auto parsed = parse_history_line(line);
    ASSERT_FALSE(parsed.has_value()) << line;
    EXPECT_TRUE(parsed.error().code == Errc::bad_field || parsed.error().code == Errc::malformed)
        << line << ": " << parsed.error().message;
  }
}

// ---- the file --------------------------------------------------------------

TEST(HistoryFileTest, NothingAppendedReadsEmpty) {
  TempDir dir;
  const History h(dir.path());
  EXPECT_TRUE(h.read().empty());
  EXPECT_TRUE(h.read("test-ep").empty());
}

TEST(HistoryFileTest, AppendThenReadOldestFirst) {
  TempDir dir;
  History h(dir.path());
  const std::vector<HistoryEntry> written{entry(30, "a"), entry(10, "b"), entry(20, "a")};
  for (const auto& e : written) ASSERT_TRUE(h.append(e).has_value());
  // Oldest appended first (not sorted by time).
  EXPECT_EQ(h.read(), written);
  EXPECT_TRUE(fs::exists(dir / kHistoryFileName));

  // A new History on the same directory reads the same (it is on disk).
  EXPECT_EQ(History(dir.path()).read(), written);
}

TEST(HistoryFileTest, ReadByNameFilters) {
  TempDir dir;
  History h(dir.path());
  for (const auto& e : {entry(1, "a"), entry(2, "b"), entry(3, "a"), entry(4, "")}) {
    ASSERT_TRUE(h.append(e).has_value());
  }
  EXPECT_EQ(times(h.read("a")), (std::vector<std::int64_t>{1, 3}));
  EXPECT_EQ(times(h.read("b")), (std::vector<std::int64_t>{2}));
  EXPECT_TRUE(h.read("c").empty());
  EXPECT_EQ(times(h.read("")), (std::vector<std::int64_t>{1, 2, 3, 4}));
}

TEST(HistoryFileTest, FileIsOneLinePerEntry) {
  TempDir dir;
  History h(dir.path());
  ASSERT_TRUE(h.append(entry(1)).has_value());
  ASSERT_TRUE(h.append(entry(2)).has_value());
  EXPECT_EQ(read_file(dir / kHistoryFileName), to_line(entry(1)) + "\n" + to_line(entry(2)) + "\n");
}

TEST(HistoryFileTest, UnparsableLinesInTheMiddleAreSkipped) {
  TempDir dir;
  write_file(dir / kHistoryFileName,
             to_line(entry(1)) + "\nnot json\n\n" + to_line(entry(2)) + "\n");
  EXPECT_EQ(times(History(dir.path()).read()), (std::vector<std::int64_t>{1, 2}));
}

TEST(HistoryFileTest, TornLastLineIsSkipped) {
  TempDir dir;
  History h(dir.path());
  ASSERT_TRUE(h.append(entry(1)).has_value());
  // A crash in the middle of the second write: no newline.
  append_raw(dir / kHistoryFileName, to_line(entry(2)).substr(0, 25));
  EXPECT_EQ(times(h.read()), (std::vector<std::int64_t>{1}));
}

TEST(HistoryFileTest, AppendsAfterATornLastLineAreStillRead) {
  TempDir dir;
  History h(dir.path());
  ASSERT_TRUE(h.append(entry(1)).has_value());
  append_raw(dir / kHistoryFileName, "{\"time\": 17000");  // torn, no newline
  ASSERT_TRUE(h.append(entry(2)).has_value());
  ASSERT_TRUE(h.append(entry(3)).has_value());
  EXPECT_EQ(times(h.read()), (std::vector<std::int64_t>{1, 2, 3}))
      << "file:\n"
      << read_file(dir / kHistoryFileName);
}

TEST(HistoryFileTest, FileStaysBoundedKeepingTheNewest) {
  TempDir dir;
  constexpr std::uint64_t kMax = 2000;
  History h(dir.path(), kMax);
  const fs::path file = dir / kHistoryFileName;
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(h.append(entry(i)).has_value()) << i;
    ASSERT_LE(fs::file_size(file), kMax) << "after entry " << i;
  }
  const auto entries = h.read();
  ASSERT_FALSE(entries.empty());
  EXPECT_EQ(entries.back(), entry(199)) << "the newest is kept";
  EXPECT_GT(entries.front().time, 0) << "the oldest is gone";
  EXPECT_LT(entries.size(), 200u);
  // What is kept is the newest run, in order, with nothing torn.
  for (std::size_t i = 0; i < entries.size(); ++i) {
    EXPECT_EQ(entries[i], entry(199 - static_cast<std::int64_t>(entries.size() - 1 - i)));
  }
  // Trimming keeps more than one entry (it keeps about the newest half).
  EXPECT_GE(entries.size(), 3u);
  // Every line of the file is a whole entry.
  const auto text = read_file(file);
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  EXPECT_EQ(static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')), entries.size());
}

TEST(HistoryFileTest, ConcurrentAppendsAreAllRead) {
  TempDir dir;
  History h(dir.path());
  constexpr int kThreads = 4;
  constexpr int kEach = 25;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&h, t] {
      for (int i = 0; i < kEach; ++i) {
        EXPECT_TRUE(h.append(entry(t * 1000 + i, "t" + std::to_string(t))).has_value());
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(h.read().size(), static_cast<std::size_t>(kThreads * kEach));
  for (int t = 0; t < kThreads; ++t) {
    // Each thread's own entries in the order it appended them.
    std::vector<std::int64_t> want;
    for (int i = 0; i < kEach; ++i) want.push_back(t * 1000 + i);
    EXPECT_EQ(times(h.read("t" + std::to_string(t))), want);
  }
}

}  // namespace
}  // namespace epbrokerd::core
