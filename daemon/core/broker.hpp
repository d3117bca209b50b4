// The broker core: what the bus API does, as plain C++ (no sdbus). The D-Bus
// layer converts arguments, calls these methods with a RequestContext, and
// forwards BrokerListener events as signals and PropertiesChanged.
//
// Threading: every public method may be called from the bus thread; installs
// and refreshes run on worker threads owned by the broker; listener callbacks
// come from either.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "catalog/compat.hpp"
#include "catalog/ep_metadata.hpp"
#include "catalog/error.hpp"
#include "catalog/tuf/fetcher.hpp"
#include "common/wire.hpp"
#include "daemon/config/config.hpp"
#include "daemon/core/authorizer.hpp"
#include "daemon/core/error.hpp"
#include "daemon/core/job.hpp"
#include "daemon/core/request_context.hpp"
#include "daemon/core/session_registry.hpp"
#include "daemon/hardware/device.hpp"
#include "daemon/hardware/discovery.hpp"
#include "daemon/store/store.hpp"

namespace epbrokerd::core {

// One package a trusted catalog lists.
struct CatalogEntry {
  std::string remote;
  std::string target_path;
  std::uint64_t length = 0;
  catalog::EpMetadata meta;
};

struct ProviderView {
  std::string name;
  common::PackageKind kind = common::PackageKind::execution_provider;
  std::vector<std::string> ep_names;
  std::string version;
  std::string ort_min;  // the package's minimum ONNX Runtime
  std::string vendor;
  common::ProviderState state = common::ProviderState::available;
  std::vector<std::string> devices;
  std::uint64_t size = 0;
  std::string library_path;  // ready only
  std::string reason;        // incompatible only
  std::string remote;
  std::uint64_t job = 0;  // installing only
};

struct SessionRequest {
  std::string policy = "default";
  std::string ort_version;             // the app's ORT, e.g. "1.30.0"; "" = not checked
  std::vector<std::string> providers;  // empty: every compatible one
  bool download = false;
};

struct SessionGrant {
  std::uint64_t session = 0;
  std::vector<ProviderView> providers;
};

struct VerifyResult {
  std::string name;
  std::string version;
  bool ok = true;
  std::string problem;
};

class BrokerListener {
 public:
  virtual ~BrokerListener() = default;
  virtual void job_changed(const JobSnapshot& job) = 0;
  virtual void providers_changed() = 0;
  virtual void catalog_changed(std::uint64_t revision) = 0;
};

using FetcherFactory =
    std::function<std::unique_ptr<catalog::tuf::Fetcher>(const config::Remote& remote)>;

struct BrokerOptions {
  config::Config config;
  hardware::Roots roots;
  FetcherFactory fetcher_factory;
  Authorizer* authorizer = nullptr;  // required; outlives the broker
  // How long create() waits for the store lock held by another Store: an instance
  // exiting when idle releases the bus name before it closes the store, so the
  // instance activated by the next call may start while the old one still holds it.
  std::chrono::milliseconds store_lock_wait{10'000};
};

class Broker {
 public:
  static Result<std::unique_ptr<Broker>> create(BrokerOptions options, BrokerListener* listener);
  ~Broker();  // cancels jobs and joins their threads

  std::vector<hardware::Device> devices() const;
  // Every provider the store or a trusted catalog knows, installed ones first.
  // Computed once and shared until the catalog, the store or an install job's
  // state changes (provider_views()), so reading it costs a copy, not a
  // recomputation.
  std::vector<ProviderView> providers() const;

  // Install NAME's newest compatible version (org.epbroker.install). Returns
  // the job id; an install already running for NAME is returned, not repeated.
  Result<std::uint64_t> ensure_provider(const RequestContext& ctx, const std::string& name);
  // Remove every installed version of NAME (org.epbroker.manage); Errc::Busy
  // while a session leases one.
  Result<void> remove_provider(const RequestContext& ctx, const std::string& name);
  // TUF refresh of every remote, as a job (org.epbroker.manage).
  Result<std::uint64_t> refresh(const RequestContext& ctx);
  std::vector<VerifyResult> verify() const;
  // When every enabled remote was last refreshed successfully (wall clock; the
  // oldest of them, read from the state dir at start); nullopt if one never was.
  std::optional<std::chrono::system_clock::time_point> last_refresh() const;
  // A refresh on the daemon's own behalf (daemon.refresh_interval): no caller, no
  // authorization. Returns the running refresh's id when one runs already.
  std::uint64_t auto_refresh();

  // Ask job ID to stop (Job1.Cancel): root, or the bus connection that started it,
  // may; anyone else gets Errc::NotAuthorized and the job goes on. Errc::NotFound
  // for an unknown id. A job that already ended stays as it ended.
  Result<void> cancel_job(const RequestContext& ctx, std::uint64_t id);

  Result<SessionGrant> request_session(const RequestContext& ctx, const SessionRequest& request);
  Result<void> release_session(const RequestContext& ctx, std::uint64_t id);
  // The client left the bus: its sessions end.
  std::vector<std::uint64_t> client_vanished(const std::string& sender);

  bool idle() const;  // no active job and no session
  std::uint64_t catalog_revision() const;
  std::string catalog_expires() const;
  JobTable& jobs() { return jobs_; }
  const SessionRegistry& sessions() const { return sessions_; }
  const config::Config& config() const { return options_.config; }

 private:
  Broker(BrokerOptions options, BrokerListener* listener, store::Store store,
         std::vector<hardware::Device> devices);
  void run_install(std::shared_ptr<Job> job, CatalogEntry entry);
  void run_refresh(std::shared_ptr<Job> job);
  catalog::Result<std::vector<CatalogEntry>> refresh_remote(const config::Remote& remote, Job& job);
  std::optional<CatalogEntry> best_entry(const std::string& name, std::string* reason) const;
  // The cached views (see providers()): recomputed by the first reader after
  // invalidate_providers(), which every change of catalog_, of the store or of
  // an install job's activity calls once that change is visible.
  std::shared_ptr<const std::vector<ProviderView>> provider_views() const;
  std::vector<ProviderView> compute_providers() const;
  void invalidate_providers() { providers_gen_.fetch_add(1); }
  ProviderView view_of(const CatalogEntry* entry,
                       const std::optional<store::InstalledPackage>& installed) const;
  void load_catalog_cache();
  // Runs `work` on a new worker thread (joined by ~Broker, or by a later spawn()
  // once it has returned).
  void spawn(std::function<void()> work);

  BrokerOptions options_;
  BrokerListener* listener_;
  mutable std::mutex mu_;  // guards catalog_, revision_, expires_, last_refresh_, session_leases_
  store::Store store_;
  std::vector<hardware::Device> devices_;
  catalog::MachineInfo machine_;  // devices_ as compatibility matching sees them (fixed)
  std::vector<CatalogEntry> catalog_;
  std::uint64_t revision_ = 0;
  std::string expires_;
  std::optional<std::chrono::system_clock::time_point> last_refresh_;
  std::map<std::uint64_t, std::vector<store::LeaseId>> session_leases_;
  // The provider cache: views_ is valid while views_gen_ == providers_gen_.
  std::atomic<std::uint64_t> providers_gen_{1};
  mutable std::mutex views_mu_;  // guards views_, views_gen_; taken before mu_
  mutable std::shared_ptr<const std::vector<ProviderView>> views_;
  mutable std::uint64_t views_gen_ = 0;
  JobTable jobs_;
  SessionRegistry sessions_;
  // A job's worker thread, and whether its work has returned (so joining it is
  // immediate). spawn() joins and drops the finished ones: an exited thread that
  // is never joined keeps its stack (8 MiB of address space) mapped.
  struct Worker {
    std::shared_ptr<std::atomic<bool>> done;
    std::jthread thread;
  };
  std::mutex threads_mu_;
  std::vector<Worker> threads_;
};

}  // namespace epbrokerd::core
