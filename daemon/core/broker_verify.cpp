// Verification of the store as a job (Broker::start_verify): off the bus thread,
// one at a time, with progress; callers who may not manage the store start at
// most one per kVerifyInterval and otherwise get the latest result.
#include <algorithm>

#include "daemon/core/broker.hpp"
#include "daemon/core/broker_internal.hpp"
#include "daemon/log/log.hpp"
#include "daemon/log/message_ids.hpp"

namespace epbrokerd::core {

using namespace detail;

// ---- VerifyRuns --------------------------------------------------------------------

std::shared_ptr<const VerifyRun> VerifyRuns::find(std::uint64_t job) const {
  std::lock_guard lock(mu_);
  auto it = by_job_.find(job);
  return it == by_job_.end() ? nullptr : it->second;
}

std::shared_ptr<const VerifyRun> VerifyRuns::latest() const {
  std::lock_guard lock(mu_);
  return latest_;
}

std::optional<std::int64_t> VerifyRuns::started_at() const {
  std::lock_guard lock(mu_);
  return started_at_;
}

void VerifyRuns::started(std::int64_t at) {
  std::lock_guard lock(mu_);
  started_at_ = at;
}

void VerifyRuns::finished(std::uint64_t job, std::shared_ptr<const VerifyRun> run) {
  std::lock_guard lock(mu_);
  latest_ = run;
  keep_locked(job, std::move(run));
}

void VerifyRuns::answered(std::uint64_t job, std::shared_ptr<const VerifyRun> run) {
  std::lock_guard lock(mu_);
  keep_locked(job, std::move(run));
}

void VerifyRuns::keep_locked(std::uint64_t job, std::shared_ptr<const VerifyRun> run) {
  by_job_.insert_or_assign(job, std::move(run));
  // Job ids grow: the smallest are the oldest.
  while (by_job_.size() > kKept) by_job_.erase(by_job_.begin());
}

// ---- the broker's side -------------------------------------------------------------

Result<std::uint64_t> Broker::start_verify(const RequestContext& ctx, bool may_start) {
  // 1. One verification at a time: a running one is joined, whoever asks. Only the
  //    bus thread creates verify jobs, so none appears between this and create().
  if (auto running = jobs_.find_active(JobKind::verify, "")) return running->id();
  const auto latest = verify_runs_.latest();
  auto answer_latest = [&]() -> std::uint64_t {
    auto job = jobs_.create(JobKind::verify, "", ctx);
    verify_runs_.answered(job->id(), latest);
    job->set_progress(latest->bytes, latest->bytes);
    job->succeed();
    return job->id();
  };
  if (!may_start) {
    if (latest) return answer_latest();
    return fail(Errc::Busy, std::string(common::kExitingMessage));
  }
  // 2. A new run: when none started within the interval (a clock set back counts
  //    as the interval having passed), or for a caller who may manage the store,
  //    asked without user interaction (polkit: the D-Bus layer asks and calls again).
  const std::int64_t t = now();
  const auto started = verify_runs_.started_at();
  const std::int64_t interval = kVerifyInterval.count();
  bool start = !started || t < *started || t - *started >= interval;
  if (!start) {
    auto may = options_.authorizer->check_quietly(ctx, Action::manage);
    if (!may && ctx.authorization && ctx.authorization->wants_asking()) {
      return std::unexpected(may.error());
    }
    start = may.has_value();
  }
  if (start) {
    auto job = jobs_.create(JobKind::verify, "", ctx);
    verify_runs_.started(t);
    spawn([this, job] { run_verify(job); });
    return job->id();
  }
  // 3. Rate-limited: the latest result, or when a run may start again.
  if (latest) return answer_latest();
  const std::int64_t wait = interval - (t - *started);
  return fail(Errc::Busy, "the last verification started " + std::to_string(t - *started) +
                              " s ago and has no result (cancelled or failed); a new one may "
                              "start in " +
                              std::to_string(wait) + " s, or now as root or with " +
                              std::string(action_id(Action::manage)));
}

Result<VerifyRun> Broker::verify_results(std::uint64_t id) const {
  const auto job = jobs_.find(id);
  const auto run = verify_runs_.find(id);
  if (run) return *run;
  if (!job) return fail(Errc::NotFound, "no verification job " + std::to_string(id));
  const auto s = job->snapshot();
  if (s.kind != JobKind::verify) {
    return fail(Errc::InvalidArgument, "job " + std::to_string(id) + " is not a verification");
  }
  if (!is_final(s.state)) {
    return fail(Errc::Busy, "verification job " + std::to_string(id) + " is still running");
  }
  if (s.error) return std::unexpected(*s.error);
  return fail(Errc::NotFound,
              "the result of verification job " + std::to_string(id) + " is no longer kept");
}

void Broker::run_verify(std::shared_ptr<Job> job) {
  job->set_state(JobState::verifying);
  std::uint64_t bytes = 0;
  auto report = store_.verify([&](std::uint64_t done, std::uint64_t total) {
    bytes = total;
    job->set_progress(done, total);
    return !job->cancel_requested();
  });
  if (!report) {
    job->fail(Error(report.error()));
    return;
  }
  // Recorded before the job is done: whoever sees it done can read it.
  auto run = std::make_shared<VerifyRun>();
  run->finished_at = now();
  run->results = results_of(*report);
  run->bytes = bytes;
  std::size_t damaged = 0;
  for (const auto& r : run->results) {
    if (r.ok) continue;
    ++damaged;
    // A model variant: its own MESSAGE_ID (the package one's explanation is about
    // execution providers); EPBROKER_PACKAGE names the model and EPBROKER_VERSION
    // is "VERSION/VARIANT", as in the model's history entries.
    const bool model = r.kind == common::kModelKind;
    const auto fields = log::with(
        job_log_fields(job->snapshot()),
        {{log::kMessageId,
          std::string(model ? log::kMessageModelDamaged : log::kMessageVerificationFailed)},
         {log::kPackage, r.name},
         {log::kVersion, r.version}});
    log::event(log::Level::warn, fields, "verify: {}{} {} is damaged: {}", model ? "model " : "",
               r.name, r.version, r.problem);
  }
  log::info("verify: {} version(s) and {} model variant(s) checked, {} bytes hashed, {} damaged",
            report->packages_checked, report->models_checked, report->bytes_hashed, damaged);
  verify_runs_.finished(job->id(), run);
  job->set_progress(run->bytes, run->bytes);
  job->succeed();
}

std::vector<VerifyResult> Broker::results_of(const store::VerifyReport& report) const {
  std::vector<VerifyResult> out;
  for (const auto& p : store_.list()) {
    VerifyResult r{p.name(), p.version(), true, "", "", ""};
    for (const auto& d : report.damaged) {
      if (d.package.name() == p.name() && d.package.version() == p.version()) {
        r.ok = false;
        for (const auto& problem : d.problems)
          r.problem += (r.problem.empty() ? "" : "; ") + problem;
      }
    }
    out.push_back(std::move(r));
  }
  // Then each installed model variant (a damaged shared blob: every variant listing it).
  for (const auto& m : store_.models()) {
    VerifyResult r{m.name, m.version + "/" + m.variant,     true,
                   "",     std::string(common::kModelKind), m.variant};
    for (const auto& d : report.damaged_models) {
      if (d.model.name == m.name && d.model.version == m.version && d.model.variant == m.variant) {
        r.ok = false;
        for (const auto& problem : d.problems)
          r.problem += (r.problem.empty() ? "" : "; ") + problem;
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<VerifyResult> Broker::verify() const {
  auto report = store_.verify();
  if (!report) return {};
  return results_of(*report);
}

}  // namespace epbrokerd::core
