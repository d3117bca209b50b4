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
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "catalog/compat.hpp"
#include "catalog/ep_metadata.hpp"
#include "catalog/error.hpp"
#include "catalog/model_metadata.hpp"
#include "catalog/tuf/fetcher.hpp"
#include "common/wire.hpp"
#include "daemon/config/config.hpp"
#include "daemon/core/authorizer.hpp"
#include "daemon/core/error.hpp"
#include "daemon/core/history.hpp"
#include "daemon/core/job.hpp"
#include "daemon/core/lifecycle_state.hpp"
#include "daemon/core/request_context.hpp"
#include "daemon/core/session_registry.hpp"
#include "daemon/core/variant_plan.hpp"
#include "daemon/core/verify_runs.hpp"
#include "daemon/core/version_plan.hpp"
#include "daemon/hardware/device.hpp"
#include "daemon/hardware/discovery.hpp"
#include "daemon/store/committer.hpp"
#include "daemon/store/store.hpp"

namespace epbrokerd::core {

// One package a trusted catalog lists.
struct CatalogEntry {
  std::string remote;
  std::string target_path;
  std::uint64_t length = 0;
  catalog::EpMetadata meta;
};

// A target whose claimed package name its path does not bind
// (catalog/name_binding.hpp): never installable; ListProviders shows it as
// "refused" only when nothing valid (a catalog entry, an installed package) has
// that name, so it never hides or replaces the genuine package.
struct RefusedEntry {
  CatalogEntry entry;
  std::string reason;
};

// One version of a model a trusted catalog lists (catalog/model_metadata.hpp):
// its signed card target "NAME/...", whose custom["epbroker"] is `meta`.
// `refused` is "" for a model that may be installed, else why it never may be:
// its path does not bind its name (catalog/name_binding.hpp), or a file of a
// variant is not signed as the card says (catalog::check_model_targets()).
struct ModelEntry {
  std::string remote;
  std::string target_path;   // the card's target
  std::uint64_t length = 0;  // the card target's signed length
  catalog::ModelMetadata meta;
  std::string refused;

  const std::string& name() const { return meta.name; }
  const std::string& version() const { return meta.version.text; }
};

// One installed version of a package, and what it is kept for.
struct VersionView {
  std::string version;
  common::VersionRole role = common::VersionRole::current;
  std::string reason;
  std::size_t leases = 0;
};

// One package (one row per name): its current version when installed, else the
// newest version the catalogs offer.
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
  // The lifecycle (installed packages): every installed version, newest first,
  // with its role; the newest compatible catalog version above the current one;
  // the hold.
  std::vector<VersionView> versions;
  std::string update_available;
  bool held = false;
  std::string hold_reason;
};

// install NAME@VERSION: a given version (newest compatible when empty); an
// older one than current only with allow_older.
struct InstallOptions {
  std::string version;
  bool allow_older = false;
};

// Broker::ensure_model(): which variant of which version, and for which app.
struct ModelInstallOptions {
  std::string version;  // "" = the newest valid version
  std::string variant;  // "" = plan_variant() chooses for `policy` and `ort_version`;
                        // an explicit id is installed whatever the machine has
  common::Policy policy = common::Policy::default_policy;
  std::string ort_version;  // the app's ORT, e.g. "1.30.0"; "" = not checked
};

// Broker::list_models(): the session the plan is made for.
struct ModelListOptions {
  common::Policy policy = common::Policy::default_policy;
  std::string ort_version;  // the app's ORT; "" = not checked
};

// The variant a session gets of one model version on this machine
// (plan_variant() over the devices and the providers).
struct ModelPlan {
  std::string variant;  // "" when none fits (or the version is refused)
  std::string device;   // a device id, e.g. "npu0"
  std::string ep;       // the EP it runs on
  std::string reason;   // why that variant, or why none fits
};

// One model version as ListModels shows it.
struct ModelListing {
  ModelEntry entry;
  std::set<std::string> installed;  // ids of its variants the store holds
  ModelPlan plan;
};

// Broker::remove_model(): which installed variants, and whether leased ones too.
struct ModelRemoveOptions {
  std::string version;  // "" = every installed version
  std::string variant;  // "" = every installed variant
  bool now = false;     // also leased ones (else Busy, nothing removed)
};

// One package an update (or rollback) moves, or would move (dry run).
struct UpdateChange {
  std::string name;
  std::string from;
  std::string to;
  std::uint64_t job = 0;  // the install job; 0 when no download is needed or a dry run
  std::string reason;     // e.g. "held", "newest already", for packages left as they are
};

// An installed package version, or (variant set) an installed model variant.
struct VersionRef {
  std::string name;
  std::string version;
  std::string variant;  // a model's variant id; "" for a package
};

enum class RemoveMode {
  deferred,  // new sessions never get it; files go when the last lease ends
  now,       // files deleted at once, leases or not
};

struct SessionRequest {
  std::string policy = "default";
  std::string ort_version;             // the app's ORT, e.g. "1.30.0"; "" = not checked
  std::vector<std::string> providers;  // empty: every compatible one (none with models)
  bool download = false;
  // Model name -> variant id ("" = the planned one); nullopt when not given. At
  // most kMaxSessionModels.
  std::optional<std::map<std::string, std::string>> models;
};

inline constexpr std::size_t kMaxSessionModels = 16;

// One model a session asked for (RequestSession's kind "model" dicts).
struct ModelGrant {
  std::string name;
  std::string version;  // granted (ready), else the one that would be installed; "" if none
  std::string variant;  // the variant asked for or planned; "" when none could be planned
  common::ProviderState state = common::ProviderState::available;
  std::filesystem::path path;        // the variant's directory (ready only)
  std::filesystem::path main;        // its main file, absolute (ready only)
  std::vector<std::string> files;    // relative to path (ready only)
  std::vector<std::string> devices;  // device types the variant is built for
  std::vector<std::string> eps;      // EPs it is built for
  std::uint64_t job = 0;             // installing only
  std::string reason;                // not ready only
};

struct SessionGrant {
  std::uint64_t session = 0;
  std::vector<ProviderView> providers;
  std::vector<ModelGrant> models;
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
  // Whether the network connection is metered (NetworkManager's Metered):
  // automatic downloads wait while it is. Unset: never metered.
  std::function<bool()> metered;
  // The clock of the lifecycle (older-ORT keeping, history times); tests set it.
  std::function<std::int64_t()> now;
  // What changes the store under config.paths.store_root (store/committer.hpp):
  // epbrokerd's main passes the commit helper (daemon/commit/helper_committer);
  // unset, the commit runs in this process (commit::LocalCommitter: unit tests).
  std::shared_ptr<store::Committer> committer;
};

class Broker {
 public:
  static Result<std::unique_ptr<Broker>> create(BrokerOptions options, BrokerListener* listener);
  ~Broker();  // cancels jobs and joins their threads

  std::vector<hardware::Device> devices() const;
  // Every provider the store or a trusted catalog knows, installed ones first.
  // Computed once and shared until the catalog, the store, the lifecycle or an
  // install job's state changes (provider_views()), so reading it costs a copy,
  // not a recomputation; only the versions' lease counts are read live.
  std::vector<ProviderView> providers() const;

  // Makes NAME ready (org.epbroker.install): when a usable version is current,
  // a job that is done at once; else installs the newest compatible version and
  // makes it current. Returns the job id; an install already running for NAME
  // is returned, not repeated.
  Result<std::uint64_t> ensure_provider(const RequestContext& ctx, const std::string& name);
  // install NAME[@VERSION] (org.epbroker.install; with an older version than
  // current, org.epbroker.downgrade and options.allow_older): installs it unless
  // installed and makes it current. A held package may be installed at an
  // explicit version (the hold stays). Errors: NotFound listing the versions
  // the catalogs offer; InvalidArgument for an older version without
  // allow_older (saying so); Incompatible.
  Result<std::uint64_t> install_provider(const RequestContext& ctx, const std::string& name,
                                         const InstallOptions& options);
  // update [NAME...] (org.epbroker.update): every installed package, or the
  // named ones, to its newest compatible version, skipping held ones. One
  // change per package considered (from == to for those left alone, with the
  // reason); with dry_run nothing starts. NotFound for a named package that is
  // not installed.
  Result<std::vector<UpdateChange>> update(const RequestContext& ctx,
                                           const std::vector<std::string>& names, bool dry_run);
  // hold / unhold NAME (org.epbroker.hold): updates, manual and automatic, skip
  // a held package. NotFound unless installed.
  Result<void> hold(const RequestContext& ctx, const std::string& name);
  Result<void> unhold(const RequestContext& ctx, const std::string& name);
  // rollback NAME (org.epbroker.downgrade): the previously current version,
  // still installed and not revoked, becomes current again, and the package is
  // held (so an automatic update does not undo it; unhold to allow updates).
  // NotFound when none is kept.
  Result<UpdateChange> rollback(const RequestContext& ctx, const std::string& name);
  // The persisted history, oldest first; one package's when `name` is not "".
  std::vector<HistoryEntry> history(const std::string& name) const;
  // gc (org.epbroker.manage): deletes every installed version that is neither
  // current nor kept (version_plan.hpp) and no session leases, and every
  // installed model variant no session leases that a newer installed version
  // of the same model holds under the same variant id (those with `variant`
  // set). Returns them.
  Result<std::vector<VersionRef>> collect_garbage(const RequestContext& ctx);
  // remove NAME (org.epbroker.manage): deferred: new sessions never get it from
  // now on, unleased versions go at once, leased ones with their last lease;
  // now: every version's files go at once (apps that mapped the library keep
  // running). NotFound unless installed.
  Result<void> remove_provider(const RequestContext& ctx, const std::string& name,
                               RemoveMode mode = RemoveMode::deferred);
  // remote reset NAME (org.epbroker.manage): drops the remote's trusted
  // metadata and derived catalog; the next refresh starts again from its
  // configured trusted_root. NotFound for an unknown remote.
  Result<void> reset_remote(const RequestContext& ctx, const std::string& remote);
  // Leases that sessions held when the previous instance stopped
  // (<state>/leases.json) are taken again for owners `alive` says are still on
  // the bus; they end when that owner leaves (client_vanished()). Call once,
  // after the bus watches owners leaving.
  void adopt_leases(const std::function<bool(const std::string& owner)>& alive);
  // TUF refresh of every remote, as a job (org.epbroker.manage).
  Result<std::uint64_t> refresh(const RequestContext& ctx);
  // Re-hashes the store as a job (JobKind::verify: BytesDone/BytesTotal over the
  // installed payload bytes) on a worker thread, one at a time (broker_verify.cpp).
  // Returns, in this order:
  //   1. the running verification, whoever asks (joined);
  //   2. with `may_start` (false while the daemon stops): a new run when none
  //      started in the last kVerifyInterval, or when the caller may
  //      org.epbroker.manage (root; polkit is asked without user interaction);
  //   3. the latest completed run's outcome, as a job that is done at once;
  //   4. else Busy, saying when a new run may start (kExitingMessage without
  //      `may_start`).
  Result<std::uint64_t> start_verify(const RequestContext& ctx, bool may_start = true);
  // What verify job `job` found. NotFound for an unknown job or one no longer
  // kept (VerifyRuns::kKept); Busy while it runs; its error when it failed or was
  // cancelled.
  Result<VerifyRun> verify_results(std::uint64_t job) const;
  // The same verification, on the calling thread (tests of the core).
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

  // RequestSession: leases, for ctx.sender, the newest usable installed version
  // of each wanted provider and of each asked-for model (the newest installed
  // version holding the variant asked for or planned that the app's ORT can
  // load); with download, installs what is missing (one authorization for all).
  // An unknown or unusable model is a grant that says why (state incompatible,
  // refused or available), not an error. Errors: InvalidArgument (policy,
  // ort_version, names, variant ids, more than 64 providers or
  // kMaxSessionModels models), Busy (per-client sessions), NotAuthorized only
  // while the authorization must be asked.
  Result<SessionGrant> request_session(const RequestContext& ctx, const SessionRequest& request);
  Result<void> release_session(const RequestContext& ctx, std::uint64_t id);
  // The client left the bus: its sessions end.
  std::vector<std::uint64_t> client_vanished(const std::string& sender);

  // Every model version the trusted catalogs list (as the last refresh, or the
  // catalog cache read at start, found them), refused ones included with their
  // reason: by name, then newest version first. A name belongs to the
  // highest-priority remote listing a valid version of it (as for packages);
  // other remotes' valid versions of that name are not listed. What is installed
  // is not looked at (store::Store::models()).
  std::vector<ModelEntry> catalog_models() const;
  // Whether the store holds variant VARIANT of model NAME at VERSION.
  bool has_model(const std::string& name, const std::string& version,
                 const std::string& variant) const;
  // Installs one variant of model NAME (org.epbroker.install) as a job of kind
  // model, Target "NAME/VARIANT": the given version (else the newest valid one),
  // the given variant (else plan_variant() over the machine's devices and the
  // providers). When that variant is installed the job checks it as Verify does
  // (each of its files' size and SHA-256, read from the disk: the variant's
  // bytes are hashed on every such call), and is done when it is intact; a
  // damaged one is repaired (the committer is asked with repair: the damaged
  // blobs are downloaded again and replaced in every variant sharing them,
  // never written in place). The job asks the committer which blobs the store
  // lacks, downloads each signed target NAME/blobs/<sha256> (BytesTotal: their
  // sizes) and commits (broker_install.cpp).
  // How an install or repair ended goes into the history before the job is done
  // or failed (action install, name NAME, to "VERSION/VARIANT"; a repair also
  // from "VERSION/VARIANT", reason "repaired: ...").
  // A model job already running for that target is returned. Errors:
  // InvalidArgument (name, ort_version), NotFound (no such model, version or
  // variant), VerificationFailed (the version is refused: ModelEntry::refused),
  // Incompatible (no variant fits), NotAuthorized, Busy (per-client job limit).
  Result<std::uint64_t> ensure_model(const RequestContext& ctx, const std::string& name,
                                     const ModelInstallOptions& options);

  // Every model version catalog_models() lists, with the variants the store
  // holds and the variant plan_variant() picks for `options` on this machine
  // (none for a refused version: its reason). InvalidArgument for an
  // ort_version that does not parse.
  Result<std::vector<ModelListing>> list_models(const ModelListOptions& options) const;
  // Removes installed variants of model NAME (org.epbroker.manage): the given
  // version and variant, else every one installed; all or nothing. Busy when
  // one is leased, unless options.now; NotFound when nothing installed
  // matches; InvalidArgument for a bad name, version or variant. Files a
  // remaining variant shares stay. Returns the variants removed (by name,
  // version, variant); each is recorded in the history (action remove, from
  // "VERSION/VARIANT").
  Result<std::vector<VersionRef>> remove_model(const RequestContext& ctx, const std::string& name,
                                               const ModelRemoveOptions& options);

  bool idle() const;  // no active job and no session
  std::uint64_t catalog_revision() const;
  std::string catalog_expires() const;
  JobTable& jobs() { return jobs_; }
  Authorizer& authorizer() const { return *options_.authorizer; }
  const SessionRegistry& sessions() const { return sessions_; }
  const config::Config& config() const { return options_.config; }

 private:
  Broker(BrokerOptions options, BrokerListener* listener, store::Store store,
         std::vector<hardware::Device> devices);
  // What an install job does once its version is in the store.
  struct InstallIntent {
    common::HistoryAction action = common::HistoryAction::install;
    std::string from;          // the current version when it started
    bool make_current = true;  // false: auto_update = download (staged)
    bool hold = false;         // a downgrade holds the package
    RequestContext ctx;        // who asked (history's uid)
  };
  void run_install(std::shared_ptr<Job> job, CatalogEntry entry, InstallIntent intent);
  // ---- models in sessions and their lifecycle (broker_model_sessions.cpp) ----
  // What RequestSession will do with one asked-for model, decided before the
  // authorization and before anything is leased.
  struct ModelAsk {
    std::string name;
    std::string variant;              // asked for or planned; "" when none
    bool installed = false;           // a version the app can load holds it
    std::optional<ModelEntry> entry;  // the catalog version to install, if any
    ModelGrant grant;                 // what it says when nothing installed is granted
  };
  std::vector<ModelAsk> plan_session_models(const SessionRequest& request,
                                            const std::optional<catalog::Version>& app_ort,
                                            const std::vector<ProviderOffer>& offers) const;
  // Grants each of `asks`: the newest installed version holding its variant
  // that `app_ort` can load, leased (under life_mu_) for ctx.sender; else an
  // install when `may_install` says so. Appends the store's lease ids and the
  // session's lease names.
  std::vector<ModelGrant> grant_models(const RequestContext& ctx, const SessionRequest& request,
                                       std::vector<ModelAsk> asks,
                                       const std::optional<catalog::Version>& app_ort,
                                       const std::optional<Result<void>>& may_install,
                                       std::vector<store::LeaseId>& leases,
                                       std::vector<std::string>& lease_names);
  // The installed model variants no session leases that a newer installed
  // version of the same model and variant id supersedes: deleted, recorded.
  // Caller holds life_mu_.
  std::vector<VersionRef> collect_models_locked(const RequestContext& ctx);
  // A model job's work (broker_install.cpp): an install, or with `damage` (what
  // the store's check found wrong with the installed variant) a repair.
  void run_model_install(std::shared_ptr<Job> job, ModelEntry entry, std::string variant,
                         std::vector<std::string> damage = {});
  // A model job for an installed variant (broker_models.cpp): its files checked
  // (Store::model_problems(); State verifying), done when intact, else
  // run_model_install() repairs it.
  void run_model_check(std::shared_ptr<Job> job, ModelEntry entry, std::string variant);
  // Starts an install job of `entry` (one per package name: a running one is
  // returned). Pins the version so no collection takes it before it is current.
  Result<std::uint64_t> start_install(const RequestContext& ctx, CatalogEntry entry,
                                      InstallIntent intent);
  void finish_install(const Job& job, const CatalogEntry& entry, const InstallIntent& intent,
                      const catalog::Result<store::InstalledPackage>& installed);

  // ---- lifecycle (broker_lifecycle.cpp) ----
  std::int64_t now() const;
  PlanSettings plan_settings() const;
  // The installed versions of `name` as the plan sees them. Caller holds life_mu_.
  std::vector<InstalledVersion> installed_versions_locked(const std::string& name) const;
  PackagePlan plan_locked(const std::string& name) const;
  // Deletes what the plans say can go (every package, or `name`'s), forgets it,
  // records it in the history, saves the lifecycle. Caller holds life_mu_.
  std::vector<VersionRef> collect_locked(const RequestContext& ctx, const std::string& name = "");
  // Makes `version` current (and records it, with the `job` fields of the install
  // that brought it, if any). Caller holds life_mu_.
  void switch_current_locked(const RequestContext& ctx, const std::string& name,
                             const std::string& from, const std::string& version,
                             common::HistoryAction action, const std::string& reason,
                             const log::Fields& job = {});
  void save_lifecycle_locked();
  Result<void> set_hold(const RequestContext& ctx, const std::string& name, bool held);
  // Appends to the history and logs it: its journal fields (the package, the
  // versions, the caller's uid, the error, and `job`'s job_log_fields() when a job
  // did it) and, for an install, update or removal that succeeded, its MESSAGE_ID
  // (log/message_ids.hpp).
  void record(const RequestContext& ctx, common::HistoryAction action, const std::string& name,
              const std::string& from, const std::string& to, const std::string& result,
              const std::string& reason, const log::Fields& job = {});
  // After a refresh that changed the catalog: revocations, then automatic updates.
  void after_refresh();
  // A session ended: what only it kept can go now.
  void leases_released();
  // <state>/leases.json: the leases of the live sessions (written when the broker stops).
  void save_leases() const;
  std::vector<CatalogEntry> entries_of(const std::string& name) const;
  // The newest entry of `name` compatible with this machine; `reason` says why none.
  std::optional<CatalogEntry> newest_entry(const std::string& name, std::string* reason) const;
  void run_refresh(std::shared_ptr<Job> job);
  // A verify job's work (broker_verify.cpp); results_of() the rows of a report.
  void run_verify(std::shared_ptr<Job> job);
  std::vector<VerifyResult> results_of(const store::VerifyReport& report) const;
  // What refresh_remote() lists for one remote.
  struct RemoteCatalog {
    // Valid entries: fresh ones, and the previous ones whose paths a failed
    // delegated role withholds (catalog::tuf::Updater::list_targets()).
    std::vector<CatalogEntry> entries;
    std::vector<RefusedEntry> refused;
    // Model cards, valid and refused (ModelEntry::refused), as entries: fresh
    // ones, and the previous ones a failed delegated role withholds.
    std::vector<ModelEntry> models;
    // Set when delegated roles failed: names them (the refresh job's error).
    std::optional<catalog::Error> failed_roles;
  };
  catalog::Result<RemoteCatalog> refresh_remote(const config::Remote& remote, Job& job);
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
  std::vector<RefusedEntry> refused_;  // guarded by mu_, changed with catalog_
  // Model name -> its versions (catalog_models()' order); guarded by mu_,
  // changed with catalog_.
  std::map<std::string, std::vector<ModelEntry>> models_;
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
  VerifyRuns verify_runs_;
  // A job's worker thread, and whether its work has returned (so joining it is
  // immediate). spawn() joins and drops the finished ones: an exited thread that
  // is never joined keeps its stack (8 MiB of address space) mapped.
  struct Worker {
    std::shared_ptr<std::atomic<bool>> done;
    std::jthread thread;
  };
  std::mutex threads_mu_;
  std::vector<Worker> threads_;
  // The lifecycle: one mutex serializes every change of it (install commits
  // becoming current, update, rollback, remove, gc, revocation, leases taken by
  // sessions), so concurrent operations on one package happen one after another.
  // Lock order: views_mu_, then life_mu_, then mu_.
  mutable std::mutex life_mu_;
  LifecycleState lifecycle_;
  std::set<std::pair<std::string, std::string>> pinned_;  // versions being installed
  mutable std::map<std::string, bool> compatible_;  // "name/version" installed -> with machine_
  History history_;
};

}  // namespace epbrokerd::core
