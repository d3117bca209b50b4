// Client's package lifecycle calls: install a given version, update, hold,
// rollback, history, gc, remove, reset a remote (Broker1, see
// dbus/org.epbroker.Broker1.xml).
#include <algorithm>
#include <optional>
#include <utility>

#include "client/src/connection.hpp"
#include "client/src/convert.hpp"
#include "client/src/job_wait.hpp"
#include "epbroker/client.hpp"

namespace epbroker {

using detail::checked;

namespace {

template <typename T, typename F>
std::vector<T> converted(const std::vector<detail::Dict>& dicts, F convert) {
  std::vector<T> out;
  out.reserve(dicts.size());
  for (const auto& d : dicts) out.push_back(convert(d));
  return out;
}

}  // namespace

Provider Client::install(const std::string& name, const InstallOptions& options,
                         const ProgressCallback& on_progress, const CancelToken& cancel) {
  if (cancel.cancelled()) throw Error(Errc::cancelled, "cancelled before the install started");
  detail::JobWatch watch(*conn_);  // before the call: the job may move on at once
  const auto opts = detail::to_install_options(options);
  const std::string job =
      detail::checked_starting([&] { return conn_->broker->InstallProvider(name, opts); });
  detail::wait_for_job(watch, job, on_progress, cancel);
  for (auto& p : providers()) {
    if (p.name == name && p.state == ProviderState::ready) return p;
  }
  // Removed again between the job's end and this call, or replaced meanwhile.
  throw Error(Errc::not_found, "'" + name + "' was installed but is no longer listed as ready");
}

std::vector<UpdateChange> Client::update(const std::vector<std::string>& names, bool dry_run,
                                         const ProgressCallback& on_progress,
                                         const CancelToken& cancel) {
  if (!dry_run && cancel.cancelled()) {
    throw Error(Errc::cancelled, "cancelled before the update started");
  }
  // Before the call, as for one job; the jobs are only known from its reply.
  std::optional<detail::JobWatch> watch;
  if (!dry_run) watch.emplace(*conn_);
  const auto opts = detail::to_update_options(dry_run);
  const auto changes = converted<UpdateChange>(
      detail::checked_starting([&] { return conn_->broker->Update(names, opts); }),
      detail::to_update_change);
  if (dry_run) return changes;

  std::vector<std::string> jobs;
  for (const auto& c : changes) {
    if (!c.job.empty() && std::find(jobs.begin(), jobs.end(), c.job) == jobs.end()) {
      jobs.push_back(c.job);
    }
  }
  watch->keep(jobs);
  // Every job to its end, one after the other; the first failure is thrown after
  // the last job ended, so that none is left unobserved (or, once cancelled,
  // uncancelled).
  std::optional<Error> first;
  for (const auto& job : jobs) {
    try {
      detail::wait_for_job(*watch, job, on_progress, cancel);
    } catch (const Error& e) {
      if (!first) first = e;
    }
  }
  if (first) throw *first;
  return changes;
}

void Client::hold(const std::string& name) {
  checked([&] { conn_->broker->Hold(name); });
}

void Client::unhold(const std::string& name) {
  checked([&] { conn_->broker->Unhold(name); });
}

RollbackResult Client::rollback(const std::string& name) {
  auto [from, to] = checked([&] { return conn_->broker->Rollback(name); });
  return RollbackResult{std::move(from), std::move(to)};
}

std::vector<HistoryEntry> Client::history(const std::string& name) {
  return converted<HistoryEntry>(checked([&] { return conn_->broker->History(name); }),
                                 detail::to_history_entry);
}

std::vector<RemovedVersion> Client::gc() {
  const auto dicts = checked([&] {
    return detail::with_method_timeout(*conn_, detail::kDeletingCallTimeoutUsec,
                                       [&] { return conn_->broker->CollectGarbage(); });
  });
  return converted<RemovedVersion>(dicts, detail::to_removed_version);
}

void Client::remove(const std::string& name) { remove(name, false); }

void Client::remove(const std::string& name, bool now) {
  if (now) {
    checked([&] { conn_->broker->RemoveProviderNow(name); });
  } else {
    checked([&] { conn_->broker->RemoveProvider(name); });
  }
}

void Client::reset_remote(const std::string& remote) {
  checked([&] { conn_->broker->ResetRemote(remote); });
}

}  // namespace epbroker
