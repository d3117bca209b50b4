#include "daemon/core/job.hpp"

#include <utility>

#include "daemon/core/public_error.hpp"
#include "daemon/log/log.hpp"

namespace epbrokerd::core {

std::string_view job_kind_name(JobKind k) {
  switch (k) {
    case JobKind::install:
      return "install";
    case JobKind::refresh:
      return "refresh";
    case JobKind::verify:
      return "verify";
    case JobKind::model:
      return "model";
  }
  return "install";  // not a JobKind value (a cast)
}

bool is_final(JobState s) {
  return s == JobState::done || s == JobState::failed || s == JobState::cancelled;
}

Job::Job(std::uint64_t id, JobKind kind, std::string target, RequestContext starter,
         JobListener on_change)
    : id_(id), on_change_(std::move(on_change)) {
  snap_.id = id;
  snap_.kind = kind;
  snap_.target = std::move(target);
  snap_.starter = std::move(starter);
}

log::Fields job_log_fields(const JobSnapshot& job) {
  const uid_t uid = job.starter.uid == static_cast<uid_t>(-1) ? 0 : job.starter.uid;
  return {
      {log::kJob, std::to_string(job.id)}, {log::kJobKind, std::string(job_kind_name(job.kind))},
      {log::kPackage, job.target},         {log::kVersion, job.version},
      {log::kRemote, job.remote},          {log::kCallerUid, std::to_string(uid)}};
}

void Job::describe(std::string version, std::string remote) {
  std::lock_guard lock(mu_);
  snap_.version = std::move(version);
  snap_.remote = std::move(remote);
}

JobSnapshot Job::snapshot() const {
  std::lock_guard lock(mu_);
  return snap_;
}

void Job::notify() {
  if (on_change_) on_change_(snapshot());
}

void Job::set_state(JobState s) {
  {
    std::lock_guard lock(mu_);
    if (is_final(snap_.state) || snap_.state == s) return;
    snap_.state = s;
  }
  notify();
}

void Job::set_progress(std::uint64_t done, std::uint64_t total) {
  {
    std::lock_guard lock(mu_);
    if (is_final(snap_.state)) return;
    if (done < snap_.bytes_done && total == snap_.bytes_total) return;  // keep it monotone
    if (done == snap_.bytes_done && total == snap_.bytes_total) return;
    snap_.bytes_done = done;
    snap_.bytes_total = total;
  }
  notify();
}

void Job::succeed() {
  {
    std::lock_guard lock(mu_);
    if (is_final(snap_.state)) return;
    snap_.state = JobState::done;
  }
  notify();
}

void Job::fail(Error e) {
  // Every bus client can read the job's error: what it may see of it
  // (public_error.hpp); the journal gets the whole message.
  const std::string full = std::exchange(e.message, public_message(e));
  const bool hidden = full != e.message;
  {
    std::lock_guard lock(mu_);
    if (is_final(snap_.state)) return;
    snap_.state = e.code == Errc::Cancelled ? JobState::cancelled : JobState::failed;
    snap_.error = std::move(e);
  }
  if (hidden)
    log::event(log::Level::warn, job_log_fields(snapshot()), "job {} failed; in full: {}", id_,
               full);
  notify();
}

std::shared_ptr<Job> JobTable::create(JobKind kind, std::string target, RequestContext starter) {
  std::lock_guard lock(mu_);
  const std::uint64_t id = next_id_++;
  auto job = std::make_shared<Job>(id, kind, std::move(target), std::move(starter), on_change_);
  jobs_.emplace(id, job);
  return job;
}

std::shared_ptr<Job> JobTable::find(std::uint64_t id) const {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : it->second;
}

std::shared_ptr<Job> JobTable::find_active(JobKind kind, const std::string& target) const {
  std::lock_guard lock(mu_);
  for (const auto& [id, job] : jobs_) {
    const auto s = job->snapshot();
    if (s.kind == kind && s.target == target && !is_final(s.state)) return job;
  }
  return nullptr;
}

std::size_t JobTable::active_count() const {
  std::lock_guard lock(mu_);
  std::size_t n = 0;
  for (const auto& [id, job] : jobs_)
    if (!is_final(job->snapshot().state)) ++n;
  return n;
}

std::size_t JobTable::active_count_for(const std::string& sender) const {
  std::lock_guard lock(mu_);
  std::size_t n = 0;
  for (const auto& [id, job] : jobs_) {
    const auto s = job->snapshot();
    if (!is_final(s.state) && s.starter.sender == sender) ++n;
  }
  return n;
}

void JobTable::cancel_all() {
  std::lock_guard lock(mu_);
  for (const auto& [id, job] : jobs_) {
    if (job->snapshot().kind != JobKind::verify) job->request_cancel();
  }
}

std::vector<std::uint64_t> JobTable::prune(std::size_t keep) {
  std::lock_guard lock(mu_);
  std::vector<std::uint64_t> finished;
  for (const auto& [id, job] : jobs_) {
    if (is_final(job->snapshot().state)) finished.push_back(id);
  }
  std::vector<std::uint64_t> removed;
  if (finished.size() <= keep) return removed;
  for (std::size_t i = 0; i + keep < finished.size(); ++i) {
    jobs_.erase(finished[i]);
    removed.push_back(finished[i]);
  }
  return removed;
}

}  // namespace epbrokerd::core
