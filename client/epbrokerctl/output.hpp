// epbrokerctl: how results look, as text for people and as JSON for scripts.
// The JSON shapes are a contract documented in docs/epbrokerctl.md: add keys
// only, never rename or retype one.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "epbroker/client.hpp"

namespace epbrokerctl {

// "0 B", "512 B", "1.5 KiB", "40.5 MiB", "1.2 GiB".
std::string format_bytes(std::uint64_t bytes);
// "0:05", "1:02:03".
std::string format_duration(std::chrono::seconds s);
// Unix seconds as "YYYY-MM-DDTHH:MM:SSZ" (UTC).
std::string format_utc(std::int64_t unix_seconds);

nlohmann::json to_json(const epbroker::Device& d);
nlohmann::json to_json(const epbroker::Provider& p);
nlohmann::json to_json(const epbroker::Progress& p);
nlohmann::json to_json(const epbroker::JobInfo& j);
nlohmann::json to_json(const epbroker::VerifyResult& r);
nlohmann::json to_json(const epbroker::VersionInfo& v);
nlohmann::json to_json(const epbroker::HistoryEntry& h);
nlohmann::json to_json(const epbroker::RemovedVersion& r);
nlohmann::json to_json(const epbroker::ModelInfo& m);
nlohmann::json to_json(const epbroker::ModelVariantInfo& v);
nlohmann::json to_json(const epbroker::InstalledModel& m);
nlohmann::json to_json(const epbroker::RemovedModel& r);
// An update's change; `job` is its job's last progress (null when none ran).
nlohmann::json to_json(const epbroker::UpdateChange& c, const nlohmann::json& job);

// Left-aligned columns separated by two spaces; the last column is not padded.
class Table {
 public:
  explicit Table(std::vector<std::string> header);
  void add(std::vector<std::string> row);
  void print(std::ostream& out) const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

// Shows a job's progress on a stream: on a terminal one line redrawn in place
// (state, bar, bytes, rate, ETA; at most 10 redraws a second); otherwise plain
// lines, one per state change and at most one per second while bytes move; the
// last line of a state that was held back is written before the next state's, so
// a log shows where each state ended.
class ProgressView {
 public:
  ProgressView(std::ostream& out, bool terminal);
  void update(const epbroker::Progress& p);
  // Ends the in-place line (if any) so that later output starts on a new line.
  void finish();

 private:
  std::ostream& out_;
  bool terminal_;
  bool drawn_ = false;
  std::string held_;  // off a terminal: the newest line not yet written
  epbroker::JobState last_state_ = epbroker::JobState::unknown;
  std::chrono::steady_clock::time_point last_line_{};
  // For the rate: where the download stood when it was first seen moving.
  std::chrono::steady_clock::time_point start_{};
  std::uint64_t start_bytes_ = 0;
  bool started_ = false;
};

}  // namespace epbrokerctl
