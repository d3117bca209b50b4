// libepbroker internals: waiting for a Job1 object to finish, on the caller's
// thread, with progress and cancellation.
#pragma once

#include <cstddef>
#include <deque>
#include <string>
#include <vector>

#include "client/src/connection.hpp"
#include "client/src/convert.hpp"
#include "epbroker/client.hpp"

namespace epbroker::detail {

// A job's signal, as received: a Job1 PropertiesChanged or Finished.
struct JobEvent {
  std::string path;
  Dict changed;           // PropertiesChanged of org.epbroker.Job1
  bool finished = false;  // Finished(state, error, message)
  std::string state, error, message;
  std::string bad;  // why the signal could not be read (a protocol error)
};

// Subscribes to the signals of every job under /org/epbroker/Broker1/job, from
// construction (the AddMatch is synchronous) to destruction. Create it *before*
// the call that starts a job: a job can move on, or end, before its path is
// known, and its signals are then already queued on the connection in order, so
// every step can still be reported. Events of other jobs are kept only until
// wait_for_job names the job, and at most kMaxPending of them. A call that starts
// several jobs (Broker1.Update) names them all with keep() first, then waits for
// each in turn: the events of the ones not yet waited for stay queued.
class JobWatch {
 public:
  explicit JobWatch(Connection& conn);
  ~JobWatch();
  JobWatch(const JobWatch&) = delete;
  JobWatch& operator=(const JobWatch&) = delete;

  Connection& connection() { return conn_; }
  // From now on, keeps only the events of `path` (and of the jobs keep() named),
  // and drops those of others.
  void follow(const std::string& path);
  // From now on, keeps only the events of these jobs (before follow()ing each).
  void keep(std::vector<std::string> paths);
  // The next event of the followed job; false when none is queued here. Events
  // reach the queue only while the connection is processed.
  bool next(JobEvent& out);

  static constexpr std::size_t kMaxPending = 4096;

 private:
  void on_signal(sdbus::Message& msg);

  Connection& conn_;
  bool wanted(const std::string& path) const;

  std::string path_;
  std::vector<std::string> kept_;
  std::deque<JobEvent> events_;
  sdbus::Slot slot_;  // the match; released first
};

// Follows the job at `path` through `watch` (created before the job was started),
// then reads its properties and drives the connection until the job is final.
// Progress goes to `on_progress` on this thread: once at the start, at every
// change of state or bytes, in the order the daemon made them, and once with the
// final state. Returns on "done"; throws the job's error on "failed",
// Error(cancelled) on "cancelled" or when `cancel` fires (see Client::ensure_ready
// for the rules), Error(unavailable) if the job object vanishes (the daemon went
// away).
Progress wait_for_job(JobWatch& watch, const std::string& path, const ProgressCallback& on_progress,
                      const CancelToken& cancel);

}  // namespace epbroker::detail
