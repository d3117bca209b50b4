// The Broker: start-up (hardware, store, catalog cache), its worker threads, removal,
// cancelling jobs. The catalog, installs, sessions and verification have files of
// their own (broker_catalog.cpp, broker_install.cpp, broker_sessions.cpp,
// broker_verify.cpp).
#include "daemon/core/broker.hpp"

#include <algorithm>

#include "daemon/commit/commit.hpp"
#include "daemon/core/broker_internal.hpp"
#include "daemon/log/log.hpp"

namespace epbrokerd::core {

using namespace detail;
using common::ProviderState;
namespace fs = std::filesystem;

Broker::Broker(BrokerOptions options, BrokerListener* listener, store::Store store,
               std::vector<hardware::Device> devices)
    : options_(std::move(options)),
      listener_(listener),
      store_(std::move(store)),
      devices_(std::move(devices)),
      machine_(machine_info(devices_, options_.roots)),
      jobs_([this](const JobSnapshot& s) {
        // An install that ends changes its provider's state (installing -> ready,
        // or back to available).
        if (s.kind == JobKind::install && is_final(s.state)) invalidate_providers();
        if (listener_) listener_->job_changed(s);
      }),
      sessions_(options_.config.daemon.max_sessions_per_client,
                [this](const SessionInfo& s) {
                  std::vector<store::LeaseId> leases;
                  {
                    std::lock_guard lock(mu_);
                    auto it = session_leases_.find(s.id);
                    if (it != session_leases_.end()) {
                      leases = std::move(it->second);
                      session_leases_.erase(it);
                    }
                  }
                  for (auto id : leases) store_.release_lease(id);
                  leases_released();  // what only this session kept can go now
                }),
      history_(options_.config.paths.state_dir) {
  std::optional<catalog::Error> problem;
  lifecycle_ = load_lifecycle(options_.config.paths.state_dir, &problem);
  if (problem) {
    log::error("lifecycle: {} set aside as {}.bad ({}); every package's newest version is current",
               kLifecycleFileName, kLifecycleFileName, problem->message);
  }
}

Result<std::unique_ptr<Broker>> Broker::create(BrokerOptions options, BrokerListener* listener) {
  if (options.authorizer == nullptr || !options.fetcher_factory) {
    return fail(Errc::InvalidArgument, "broker needs an authorizer and a fetcher factory");
  }
  // The store is locked while another instance (one exiting when idle) still has it
  // open: wait for it rather than fail the activation that started us.
  // The store is only read here; the committer changes it (store/committer.hpp).
  if (!options.committer) {
    commit::CommitEnv env;
    env.store_root = options.config.paths.store_root;
    env.remotes = options.config.remotes;
    options.committer = std::make_shared<commit::LocalCommitter>(std::move(env));
  }
  // What a crash interrupted goes first (the committer's Store::open()); a
  // committer out of reach now is reported, and every commit retries it anyway.
  if (auto ok = options.committer->recover(); !ok) {
    log::warn("store: recovery by the committer failed: {}", ok.error().message);
  }
  const fs::path lock_file = options.config.paths.state_dir / "daemon.lock";
  auto open = [&] {
    return store::Store::open_view(options.config.paths.store_root, lock_file, options.committer);
  };
  auto store = open();
  const auto lock_deadline = std::chrono::steady_clock::now() + options.store_lock_wait;
  while (!store && store.error().code == catalog::Errc::busy &&
         std::chrono::steady_clock::now() < lock_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    store = open();
  }
  if (!store) return std::unexpected(store.error());
  // Discovery problems leave the device list short, not the daemon down.
  auto devices = hardware::discover(options.roots);
  std::unique_ptr<Broker> b(
      new Broker(std::move(options), listener, std::move(*store),
                 devices ? std::move(*devices) : std::vector<hardware::Device>{}));
  b->load_catalog_cache();
  return b;
}

Broker::~Broker() {
  // The next instance takes these leases again for the apps still running.
  save_leases();
  jobs_.cancel_all();
  // cancel_all() lets a verification run on (its callers wait for it): not now.
  if (auto verifying = jobs_.find_active(JobKind::verify, "")) verifying->request_cancel();
  std::lock_guard lock(threads_mu_);
  threads_.clear();  // jthread joins each worker
}

void Broker::spawn(std::function<void()> work) {
  auto done = std::make_shared<std::atomic<bool>>(false);
  std::lock_guard lock(threads_mu_);
  // Join the workers whose work has returned (they are at most finishing their
  // lambda, and take no lock of ours): without this every job ever run kept its
  // exited thread, and its stack, until the daemon exited.
  std::erase_if(threads_, [](const Worker& w) { return w.done->load(); });
  threads_.push_back(Worker{done, std::jthread([w = std::move(work), done] {
                              w();
                              done->store(true);
                            })});
}

std::vector<hardware::Device> Broker::devices() const { return devices_; }

Result<void> Broker::cancel_job(const RequestContext& ctx, std::uint64_t id) {
  const auto job = jobs_.find(id);
  if (!job) return fail(Errc::NotFound, "no job " + std::to_string(id));
  // The starter is a bus connection, not a uid: another process of the same user
  // did not start it. Root may stop anything (an admin's epbrokerctl, systemd).
  const auto s = job->snapshot();
  if (ctx.uid != 0 && s.starter.sender != ctx.sender) {
    return fail(Errc::NotAuthorized, "only the job's starter may cancel it");
  }
  job->request_cancel();
  return {};
}

bool Broker::idle() const { return jobs_.active_count() == 0 && sessions_.count() == 0; }

}  // namespace epbrokerd::core
