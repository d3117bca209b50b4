// The lifecycle's history: what happened to which package, when, for whom, and
// how it ended (epbrokerctl history; Broker1.History).
//
// Persisted as <state>/history.jsonl, one JSON object per line, appended with
// O_APPEND and fdatasync()ed before append() returns:
//   {"time": <unix seconds>, "uid": 0, "action": "update", "name": "test-ep",
//    "from": "1.2.0", "to": "1.3.0", "result": "ok" | "<bus error name>",
//    "reason": "what happened, for people"}
// A line that does not parse (the torn last line of a crash) is skipped when
// reading. The file is bounded: past kMaxHistoryBytes it is rewritten
// atomically with its newest half, so it never grows without end.
//
// Thread safety: every member may be called from any thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "catalog/error.hpp"
#include "common/wire.hpp"

namespace epbrokerd::core {

struct HistoryEntry {
  std::int64_t time = 0;  // unix seconds
  std::uint32_t uid = 0;  // the caller's; 0 for the daemon's own work
  common::HistoryAction action = common::HistoryAction::install;
  std::string name;    // package ("" for a remote reset: then the remote's name is in reason)
  std::string from;    // version before ("" none)
  std::string to;      // version after ("" none)
  std::string result;  // "ok", or the bus error's short name ("NotFound", "Network", ...)
  std::string reason;

  friend bool operator==(const HistoryEntry&, const HistoryEntry&) = default;
};

inline constexpr const char* kHistoryFileName = "history.jsonl";
inline constexpr std::uint64_t kMaxHistoryBytes = 4 << 20;

std::string to_line(const HistoryEntry& e);  // one line, no newline
// Errc::bad_field / malformed for a line that is not an entry.
catalog::Result<HistoryEntry> parse_history_line(std::string_view line);

class History {
 public:
  explicit History(std::filesystem::path state_dir, std::uint64_t max_bytes = kMaxHistoryBytes);
  // Appends `e` (durably). Errors: Errc::io / no_space; the caller logs them and
  // goes on (a full disk must not stop a removal).
  catalog::Result<void> append(const HistoryEntry& e);
  // Every entry, oldest first; only those of `name` unless it is "".
  std::vector<HistoryEntry> read(const std::string& name = "") const;

 private:
  std::filesystem::path path_;
  std::uint64_t max_bytes_;
  mutable std::mutex mu_;
};

}  // namespace epbrokerd::core
