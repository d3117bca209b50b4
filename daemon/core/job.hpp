// Long-running operations (install, refresh) as observable jobs. Thread-safe:
// workers update a job; the D-Bus layer reads snapshots and forwards changes
// as PropertiesChanged / Finished.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "common/wire.hpp"
#include "daemon/core/error.hpp"
#include "daemon/core/request_context.hpp"
#include "daemon/log/log.hpp"

namespace epbrokerd::core {

// install: a package (Target its name); refresh: the catalogs of every remote;
// verify: re-hashing the store (Broker::start_verify; BytesDone/BytesTotal over the
// installed bytes to hash); model: one variant of an ML model (Target "NAME/VARIANT";
// Broker::ensure_model(); BytesTotal over the blobs it downloads).
enum class JobKind { install, refresh, verify, model };
// The states a job goes through, as Job1.State reports them (common/wire.hpp).
using common::job_state_name;
using common::JobState;

std::string_view job_kind_name(JobKind k);
bool is_final(JobState s);

struct JobSnapshot {
  std::uint64_t id = 0;
  JobKind kind = JobKind::install;
  std::string target;  // package name for installs, "" for refresh and verify
  // An install's version and remote (Job::describe()); "" until known, and for others.
  std::string version;
  std::string remote;
  JobState state = JobState::queued;
  std::uint64_t bytes_done = 0;
  std::uint64_t bytes_total = 0;
  std::optional<Error> error;  // set when failed or cancelled
  RequestContext starter;
};

// The journal fields of `job`'s log lines (log/log.hpp): EPBROKER_JOB, _JOB_KIND,
// _PACKAGE, _VERSION, _REMOTE (those known) and _CALLER_UID (0 for the daemon's own work).
log::Fields job_log_fields(const JobSnapshot& job);

class Job;
// Called from whichever thread changed the job, outside the job's lock.
using JobListener = std::function<void(const JobSnapshot&)>;

class Job {
 public:
  Job(std::uint64_t id, JobKind kind, std::string target, RequestContext starter,
      JobListener on_change);

  JobSnapshot snapshot() const;
  std::uint64_t id() const { return id_; }
  // An install's version and the remote it comes from (for its log lines).
  void describe(std::string version, std::string remote);

  // Worker side. Progress is monotone: bytes_done never goes down within a
  // state, and a final state is never left.
  void set_state(JobState s);
  void set_progress(std::uint64_t done, std::uint64_t total);
  void succeed();
  void fail(Error e);

  // Any thread: asks the worker to stop; it checks cancel_requested().
  void request_cancel() {
    cancel_.store(true);
    stop_.request_stop();
  }
  bool cancel_requested() const { return cancel_.load(); }
  // The same request, for work that takes a std::stop_token.
  std::stop_token stop_token() const { return stop_.get_token(); }

 private:
  void notify();

  const std::uint64_t id_;
  mutable std::mutex mu_;
  JobSnapshot snap_;
  std::atomic<bool> cancel_{false};
  std::stop_source stop_;
  JobListener on_change_;
};

// Owns jobs by id; finds the running install of a package (one download per
// target however many callers wait).
class JobTable {
 public:
  explicit JobTable(JobListener on_change) : on_change_(std::move(on_change)) {}

  std::shared_ptr<Job> create(JobKind kind, std::string target, RequestContext starter);
  std::shared_ptr<Job> find(std::uint64_t id) const;
  std::shared_ptr<Job> find_active(JobKind kind, const std::string& target) const;
  std::size_t active_count() const;
  std::size_t active_count_for(const std::string& sender) const;
  // Asks every unfinished job to stop (shutdown), except a verification: it only
  // reads, ends by itself, and its callers wait for its result (Broker1.Verify).
  void cancel_all();
  // Forgets finished jobs beyond the newest `keep` (their bus objects go too).
  std::vector<std::uint64_t> prune(std::size_t keep);

 private:
  mutable std::mutex mu_;
  std::uint64_t next_id_ = 1;
  std::map<std::uint64_t, std::shared_ptr<Job>> jobs_;
  JobListener on_change_;
};

}  // namespace epbrokerd::core
