// Verifications of the store (Broker::start_verify, broker_verify.cpp): what one
// found, and the few the broker keeps so that callers can read them after their
// job ended. Thread-safe: the bus thread starts runs and reads them, a worker
// records what a run found.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace epbrokerd::core {

// One installed version as a verification found it: a package version, or an
// installed model variant (kind "model": version "VERSION/VARIANT", variant its
// id; the bus adds keys kind and variant for those).
struct VerifyResult {
  std::string name;
  std::string version;
  bool ok = true;
  std::string problem;
  std::string kind;     // "" for a package, "model" (common::kModelKind) for a model variant
  std::string variant;  // a model variant's id; "" for a package
};

// What one verification of the store found.
struct VerifyRun {
  std::int64_t finished_at = 0;  // unix seconds (the broker's clock)
  std::uint64_t bytes = 0;       // payload bytes of the versions checked
  std::vector<VerifyResult> results;
};

// Callers who may not start a verification whenever they like (not root, not
// allowed org.epbroker.manage) start at most one per this interval; in between
// they get the latest result, or join the running verification.
inline constexpr std::chrono::seconds kVerifyInterval{600};

// The outcomes kept, by the job that gave them (a joined run and a "latest
// result" answer each have a job of their own), the newest kKept of them.
class VerifyRuns {
 public:
  static constexpr std::size_t kKept = 64;

  // The outcome of job `job`, if it finished and is still kept.
  std::shared_ptr<const VerifyRun> find(std::uint64_t job) const;
  // The newest outcome of a verification that ran to its end.
  std::shared_ptr<const VerifyRun> latest() const;
  // When the newest verification started, if one ever did in this daemon.
  std::optional<std::int64_t> started_at() const;

  void started(std::int64_t at);
  // Job `job` ran a verification to its end and found `run`: kept, and the latest.
  void finished(std::uint64_t job, std::shared_ptr<const VerifyRun> run);
  // Job `job` answers with `run` (an earlier outcome): kept, not the latest.
  void answered(std::uint64_t job, std::shared_ptr<const VerifyRun> run);

 private:
  void keep_locked(std::uint64_t job, std::shared_ptr<const VerifyRun> run);

  mutable std::mutex mu_;
  std::map<std::uint64_t, std::shared_ptr<const VerifyRun>> by_job_;
  std::shared_ptr<const VerifyRun> latest_;
  std::optional<std::int64_t> started_at_;
};

}  // namespace epbrokerd::core
