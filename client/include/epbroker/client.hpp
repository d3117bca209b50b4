// libepbroker: the C++ client of epbrokerd (org.epbroker.Broker1 on the system bus).
//
//   epbroker::Client client;                        // system bus, or $EPBROKER_BUS_ADDRESS
//   for (const auto& p : client.providers()) ...;   // what the catalogs offer, and its state
//   client.ensure_ready("openvino", on_progress);   // install with progress, or throw
//   epbroker::Session s = client.request_session({}); // a lease on the ready providers
//   for (const auto& p : s.providers()) register(p.library_path, p.ep_names);
//   client.update({}, false, on_progress);          // admins: every package to its newest
//   auto model = client.ensure_model("tiny-net", {}); // a model's files, leased
//                                                    // (<epbroker/models.hpp>)
//
// Errors: every failing call throws epbroker::Error (see <epbroker/error.hpp>),
// with the daemon's error kind and message.
//
// Blocking: every call is a synchronous D-Bus round trip on the calling thread.
// A call that the daemon answers from memory (devices, providers, status,
// request_session, remove, hold, unhold, rollback, history, reset_remote, models,
// and update with dry_run) takes well under a second; each is bounded by the D-Bus
// method timeout (25 s); status() may also ask again for up to 1 s while the
// daemon retires a session that has just ended. gc() and remove_model() delete
// files (bounded at 10 min). ensure_ready(), install(), update(), refresh(),
// verify() and ensure_model() block
// until their jobs end: as long as a download (or re-hashing the store) takes,
// with no overall limit; they return early only through the cancel token (or
// when the daemon goes away: Errc::unavailable). The first call on a system where
// epbrokerd is not running starts it (D-Bus activation), which adds the
// daemon's start-up time to that call.
//
// Threads: a Client is not thread-safe; use it from one thread at a time (distinct
// Clients on distinct threads are independent). The library starts no thread:
// progress callbacks run on the thread that called ensure_ready(), install(),
// update(), refresh(), verify() or ensure_model(), inside that call. CancelToken::cancel() may be
// called from any thread and from a signal handler. A Session may be used (and destroyed) on
// another thread than its Client, but not concurrently with calls on that Client, since they share
// one connection. A Client must not be used in a child after fork(). A moved-from Client may only
// be destroyed or assigned to.
//
// Lifetime: a Session keeps its Client's bus connection open, even after the
// Client is destroyed: the daemon ends a session when its owner's connection
// closes, so the lease lives exactly as long as the Session object (or the
// process).
//
// This header is C++17 and exposes no D-Bus types: applications need neither
// sdbus-c++ nor libsystemd headers.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "epbroker/error.hpp"

namespace epbroker {

// ---- what the daemon reports --------------------------------------------------------

// One device of this machine (Broker1.ListDevices).
struct Device {
  std::string id;    // stable within a boot, e.g. "cpu0", "gpu0"
  std::string type;  // "cpu" | "gpu" | "npu"
  std::uint16_t vendor_id = 0;
  std::uint16_t device_id = 0;
  std::string vendor;
  std::string name;
  std::string driver;
  std::string driver_version;
  std::string bus_path;  // PCI address as ORT's pci_bus_id reports it; "" for CPUs
  bool discrete = false;
  std::string node;  // e.g. "/dev/dri/renderD128"; "" if none
  // CPUs only:
  std::vector<std::string> isa;  // e.g. "avx2", "avx512f", "amx_tile"
  std::uint32_t cores = 0;
  std::uint32_t threads = 0;
  std::string arch;  // e.g. "x86_64"
};

// revoked: installed, but the signed catalogs list none of its installed versions
// any more, so no session is granted it (reason says so). refused: a catalog lists
// that name only from a target path outside "NAME/", signed by a role not trusted
// for the name, so it is never installed (reason says which target); shown only
// when no valid package has the name.
enum class ProviderState { ready, available, installing, incompatible, revoked, refused, unknown };

// "ready", "available", "installing", "incompatible", "revoked", "refused"
// ("unknown" for a state this library does not know).
EPBROKER_API std::string_view to_string(ProviderState state) noexcept;

// One installed version of a package (Provider::versions).
struct VersionInfo {
  std::string version;
  // Why it is kept: "current" (new sessions get it), "rollback" (the previously
  // current one, for rollback()), "older_ort" (apps with an older ONNX Runtime still
  // ask for it), "staged" (newer, downloaded, not switched to), "leased" (kept only
  // while sessions lease it), "revoked" (the catalogs no longer list it; never
  // granted), "removing" (removed; the files go with the last lease), "unused" (goes
  // at the next gc()). A newer daemon may send other words.
  std::string role;
  std::string reason;        // for people: why it has that role; "" if nothing to add
  std::uint32_t leases = 0;  // sessions leasing it now
};

// One execution-provider package (Broker1.ListProviders, or a provider a session
// granted): one per package, whatever number of versions is installed.
struct Provider {
  std::string name;  // package name, e.g. "openvino"
  // "execution_provider" (a plugin EP library to register) or "runtime" (ONNX
  // Runtime itself, libonnxruntime, for epbroker::load_runtime()); a daemon that
  // does not say means "execution_provider".
  std::string kind = "execution_provider";
  std::vector<std::string>
      ep_names;  // registration names for ORT, e.g. "OpenVINOExecutionProvider"
  std::string version;
  std::string vendor;
  ProviderState state = ProviderState::unknown;
  std::string state_name;            // the daemon's word for the state, as received
  std::vector<std::string> devices;  // ids of the devices it serves (see Device::id)
  std::uint64_t size = 0;            // bytes: installed size when ready, else download size
  std::string library_path;          // the EP library to register; ready only
  std::string reason;                // why it is unusable (incompatible, or a failed start)
  std::string remote;                // the catalog it comes from; "" if no catalog lists it
  std::string job;                   // D-Bus path of its install job; installing only
  std::string ort_min;               // minimum ONNX Runtime version, when the daemon says
  // Installed packages (ListProviders) only; empty/false from a daemon that does
  // not say, and in what a session grants:
  std::vector<VersionInfo> versions;  // every installed version, newest first
  std::string update_available;       // a newer compatible version a catalog offers; ""
  bool held = false;                  // updates (manual and automatic) skip it
  std::string hold_reason;            // why it is held (e.g. "rolled back"); "" if not said
};

enum class JobState {
  queued,
  downloading,
  verifying,
  installing,
  done,
  failed,
  cancelled,
  unknown
};

EPBROKER_API std::string_view to_string(JobState state) noexcept;
// done, failed or cancelled.
EPBROKER_API bool is_final(JobState state) noexcept;

// A job's progress as ensure_ready()/refresh() report it. bytes_total is 0 until
// the download starts, then the signed length of the package; bytes_done never
// goes down within one job (stale, out-of-order updates are dropped).
struct Progress {
  std::string job;     // D-Bus path of the job
  std::string kind;    // "install" | "refresh" | "verify" | "model"
  std::string target;  // package name (install), "NAME/VARIANT" (model), "" (refresh, verify)
  JobState state = JobState::unknown;
  std::uint64_t bytes_done = 0;
  std::uint64_t bytes_total = 0;
};

// A job as Status lists it.
struct JobInfo {
  Progress progress;
  std::string error;          // org.epbroker.Error.* name when failed or cancelled
  std::string error_message;  // the daemon's message
};

// The daemon's own state (Broker1 properties and the objects it publishes).
struct Status {
  std::string version;                 // epbrokerd's version
  std::string daemon_state;            // "idle" | "busy" | "stopping"
  std::uint64_t catalog_revision = 0;  // highest trusted snapshot version; 0 before a refresh
  std::string catalog_expires;  // earliest expiry of trusted metadata, "YYYY-MM-DDTHH:MM:SSZ"; ""
  std::size_t sessions = 0;     // live sessions of every client
  std::vector<JobInfo> jobs;    // running jobs and the most recent finished ones
};

// One package Client::update() considered (Broker1.Update).
struct UpdateChange {
  std::string name;
  std::string from;    // the current version before
  std::string to;      // the version it moves to; equal to `from` when left alone
  std::string reason;  // why it is left alone (held, up to date, ...) or what happens
  std::string job;     // D-Bus path of the install job; "" when none was started
};

// One entry of the lifecycle history (Broker1.History).
struct HistoryEntry {
  std::int64_t time = 0;  // unix seconds (UTC)
  std::uint32_t uid = 0;  // the caller's uid; 0 also for the daemon's own work
  // "install", "update", "downgrade", "rollback", "download", "remove", "revoke",
  // "unrevoke", "gc", "hold", "unhold", "remote_reset" (a newer daemon may add more).
  std::string action;
  std::string name;    // package (or remote, for remote_reset)
  std::string from;    // version before; "" if none
  std::string to;      // version after; "" if none
  std::string result;  // "ok", or the error's short name ("Network", ...)
  std::string reason;
};

// One version Client::gc() deleted.
struct RemovedVersion {
  std::string name;
  std::string version;
};

// Client::rollback()'s outcome.
struct RollbackResult {
  std::string from;  // the version that was current
  std::string to;    // the previously current version, current again now
};

// One entry of Broker1.Verify: one installed package version, or (after the
// packages) one installed model variant: then `name` is the model's and
// `version` is "VERSION/VARIANT" (a package version never holds a '/'). A file
// several variants share is one copy on disk, so a damaged one makes every
// variant listing it not ok; install_model() of one of them repairs it.
struct VerifyResult {
  std::string name;
  std::string version;
  bool ok = true;
  std::string problem;  // what is wrong when !ok
};

// One verification of the store (Client::verify with progress).
struct VerifyReport {
  std::vector<VerifyResult> results;
  // When that verification ended (unix seconds, UTC): earlier than the call when
  // the daemon answered with its latest result (see Client::verify).
  std::int64_t finished = 0;
};

// ---- requests -------------------------------------------------------------------

// Device policies for picking providers (the daemon orders what it grants by
// them; ONNX Runtime's OrtExecutionProviderDevicePolicy has the same names).
enum class Policy {
  default_policy,  // "default"
  prefer_cpu,
  prefer_gpu,
  prefer_npu,
  max_performance,
  max_efficiency,
  min_overall_power,
};

// "default", "prefer_cpu", ...
EPBROKER_API std::string_view to_string(Policy policy) noexcept;
// Inverse of to_string(Policy); nullopt for an unknown word.
EPBROKER_API std::optional<Policy> parse_policy(std::string_view text) noexcept;

// What a session grants: one version of each package, the newest installed
// version compatible with this machine and with ort_version (not above the
// package's current version). So an app whose ONNX Runtime is older than the
// current version needs keeps getting an older installed version, and the daemon
// keeps that version installed while such apps keep asking.
struct SessionOptions {
  Policy policy = Policy::default_policy;
  // The application's ONNX Runtime version ("1.22.0"): each package is granted its
  // newest installed version this ORT can load; a package with none comes back
  // "incompatible" with the reason ("needs ONNX Runtime >= ..."). "" = not checked
  // (the current version is granted whatever ORT it needs).
  std::string ort_version;
  // Package names; empty = every provider compatible with this machine.
  std::vector<std::string> providers;
  // Start installs of compatible providers that are not installed yet (they come
  // back "installing" with a job; they are not leased by this session).
  bool download = false;
};

// Client::install()'s choices.
struct InstallOptions {
  std::string version;  // a given version ("1.2.0"); "" = the newest compatible one
  // Allow a version older than the current one (a downgrade); without it such a
  // request is refused with invalid_argument.
  bool allow_older = false;
};

// Reports progress; called on the thread that waits.
using ProgressCallback = std::function<void(const Progress&)>;

// Lets another thread (or a signal handler) stop a wait. Copies share one flag.
class EPBROKER_API CancelToken {
 public:
  CancelToken();
  // Async-signal-safe (one atomic store).
  void cancel() const noexcept;
  bool cancelled() const noexcept;

 private:
  std::shared_ptr<std::atomic<bool>> flag_;
};

struct ClientOptions {
  // D-Bus address, e.g. "unix:path=/run/epbroker-test/bus". Empty: the
  // EPBROKER_BUS_ADDRESS environment variable if set, else the system bus. A
  // setuid, setgid or file-capability program ignores the variable (secure_getenv).
  std::string bus_address;
};

namespace detail {
struct Connection;  // the bus connection a Client and its Sessions share
}  // namespace detail

// <epbroker/models.hpp> (included at the end of this header).
struct ModelInfo;
struct ModelOptions;
struct InstalledModel;
struct RemovedModel;
class ModelLease;

// A lease: while it lives, the daemon removes none of the files of the providers
// it granted. Released (Session1.Release) on destruction or release(); the daemon
// also ends it when this process's bus connection closes (exit, crash, kill -9).
// Move-only.
class EPBROKER_API Session {
 public:
  Session() noexcept;  // empty: holds nothing
  ~Session();          // release(), errors ignored
  Session(Session&& other) noexcept;
  Session& operator=(Session&& other) noexcept;  // releases what *this held first
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // D-Bus path of the session object; "" when empty or released.
  const std::string& path() const noexcept { return path_; }
  bool active() const noexcept { return !path_.empty(); }
  // Every provider the daemon considered, in its order (policy first): the ready
  // ones are leased and have library_path; others say why not (reason) or are
  // installing (job).
  const std::vector<Provider>& providers() const noexcept { return providers_; }
  // The ready (leased) ones only.
  std::vector<Provider> ready_providers() const;

  // Ends the lease now. Throws epbroker::Error if the daemon refuses; the
  // Session is empty afterwards either way.
  void release();

 private:
  friend class Client;
  Session(std::shared_ptr<detail::Connection> conn, std::string path,
          std::vector<Provider> providers);

  std::shared_ptr<detail::Connection> conn_;
  std::string path_;
  std::vector<Provider> providers_;
};

class EPBROKER_API Client {
 public:
  // Connects to the bus (options.bus_address, else $EPBROKER_BUS_ADDRESS, else the
  // system bus). Throws Error(unavailable) if the bus cannot be reached. Does not
  // contact the daemon yet.
  explicit Client(ClientOptions options = {});
  ~Client();
  Client(Client&&) noexcept;
  Client& operator=(Client&&) noexcept;
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // The address connected to ("" for the system bus).
  const std::string& bus_address() const noexcept;

  std::vector<Device> devices();
  std::vector<Provider> providers();
  Status status();

  // Installs package `name` unless ready (Broker1.EnsureProvider) and waits for
  // its job: `on_progress` is called with the job's state first, then at every
  // change, last with the final state (done: bytes_done == bytes_total). Returns
  // the provider as listed once ready. Throws the job's error (e.g. Network,
  // VerificationFailed), the call's (NotFound, InvalidArgument, NotAuthorized,
  // Incompatible), or Cancelled.
  // Cancelling (token.cancel()) calls Job1.Cancel and waits (at most 30 s) for the
  // job to end, then throws Cancelled; if the job belongs to another caller
  // (several callers share one install job, and only its starter or root may
  // cancel it) the job goes on for them and this call throws Cancelled at once.
  // If the job ends done before the cancel takes effect, the provider is returned.
  Provider ensure_ready(const std::string& name, const ProgressCallback& on_progress = {},
                        const CancelToken& cancel = CancelToken());

  // Refreshes every catalog (Broker1.RefreshCatalog) and waits like ensure_ready();
  // returns the catalog revision afterwards.
  std::uint64_t refresh(const ProgressCallback& on_progress = {},
                        const CancelToken& cancel = CancelToken());

  // Installs a version of package `name` and makes it current
  // (Broker1.InstallProvider), then waits for its job like ensure_ready() (same
  // progress, cancellation and errors). Unlike ensure_ready(), a given
  // options.version is installed even when another version is ready. Returns the
  // provider as listed afterwards. Throws NotFound (no such package or version:
  // the message lists the versions offered), InvalidArgument (an older version
  // without allow_older, a malformed version), NotAuthorized (polkit
  // org.epbroker.install, and org.epbroker.downgrade for an older version).
  Provider install(const std::string& name, const InstallOptions& options = {},
                   const ProgressCallback& on_progress = {},
                   const CancelToken& cancel = CancelToken());

  // Moves every installed package (`names` empty) or the named ones to its newest
  // compatible version (Broker1.Update); held packages are left alone. Returns one
  // UpdateChange per package considered. With dry_run, only lists what would
  // change and starts nothing. Otherwise waits for every job it started, one after
  // the other, reporting each one's progress as ensure_ready() does (Progress::job
  // and target tell them apart); a cancel cancels each remaining job in turn.
  // Throws the call's error (NotFound for a name not installed, NotAuthorized:
  // polkit org.epbroker.update), or, after waiting for every job, the first job's
  // error: the other jobs ran to their own end either way.
  std::vector<UpdateChange> update(const std::vector<std::string>& names = {}, bool dry_run = false,
                                   const ProgressCallback& on_progress = {},
                                   const CancelToken& cancel = CancelToken());

  // Holds package `name`: updates, manual and automatic, skip it until unhold()
  // (Broker1.Hold/Unhold). NotFound unless installed; NotAuthorized: polkit
  // org.epbroker.hold.
  void hold(const std::string& name);
  void unhold(const std::string& name);

  // Makes the previously current version of `name` current again, and holds the
  // package (Broker1.Rollback). NotFound when no previous version is kept;
  // NotAuthorized: polkit org.epbroker.downgrade.
  RollbackResult rollback(const std::string& name);

  // The persisted lifecycle history, oldest first; only package `name`'s when not
  // empty (Broker1.History). Open to everyone.
  std::vector<HistoryEntry> history(const std::string& name = {});

  // Deletes every installed version that is neither current nor kept and that no
  // session leases (Broker1.CollectGarbage); returns what it deleted.
  // NotAuthorized: polkit org.epbroker.manage. The daemon also deletes model
  // variants that a newer installed version supersedes: those come back as a
  // RemovedVersion of the model's name and version too (RemovedVersion cannot
  // grow a variant field without changing libepbroker.so.0's ABI).
  std::vector<RemovedVersion> gc();

  // Removes package `name` (Broker1.RemoveProvider): new sessions never get it
  // from now on; versions no session leases are deleted at once, leased ones when
  // their last lease ends. With `now` (Broker1.RemoveProviderNow) every version is
  // deleted at once, leased or not: apps that already loaded the library keep
  // running. NotFound if none is installed; NotAuthorized: polkit
  // org.epbroker.manage.
  void remove(const std::string& name);
  void remove(const std::string& name, bool now);

  // Drops remote `remote`'s trusted metadata (Broker1.ResetRemote): the next
  // refresh() starts again from its configured trusted_root (after that root was
  // replaced). NotFound for an unknown remote; NotAuthorized: polkit
  // org.epbroker.manage.
  void reset_remote(const std::string& remote);

  // Verifies the store: re-hashes every installed version against its saved
  // manifest, and every installed model variant against its card (VerifyResult),
  // as a daemon job (Broker1.StartVerify, then VerifyResults), reporting its
  // progress as ensure_ready() does (kind "verify", state "verifying", bytes over
  // the installed payload). The daemon runs one at a time, and a call joins a
  // running one. Without root or polkit's org.epbroker.manage a new one starts at
  // most every 10 minutes; in between the latest result is returned
  // (VerifyReport::finished says when it was found), or Errc::busy when there is
  // none. `cancel` stops the wait, and the verification when this client started
  // it. A damaged version is repaired by install().
  VerifyReport verify(const ProgressCallback& on_progress,
                      const CancelToken& cancel = CancelToken());
  // The same without progress: the results.
  std::vector<VerifyResult> verify();

  // A lease on the providers the options select (Broker1.RequestSession).
  Session request_session(const SessionOptions& options = {});

  // ---- models (<epbroker/models.hpp>; since libepbroker 0.2) ----

  // Every model version the trusted catalogs list, newest first per name, with
  // the variant a session with `policy` and `ort_version` ("" = not checked) gets
  // on this machine (Broker1.ListModels). InvalidArgument for a malformed
  // ort_version. Open to everyone.
  std::vector<ModelInfo> models(Policy policy = Policy::default_policy,
                                const std::string& ort_version = {});

  // Installs a variant of model `name` unless installed (Broker1.EnsureModel: an
  // installed one is checked, its files hashed, and repaired when damaged) and
  // waits for its job as ensure_ready() does (progress with kind "model", target
  // "NAME/VARIANT"; cancellation; the job's errors). The variant is
  // options.variant (installed whatever this machine has), or the one planned for
  // this machine under options.policy and options.ort_version; the version
  // options.version, or the newest valid one. Leases nothing (options.download is
  // not read). Throws NotFound (no such model, version or variant),
  // VerificationFailed (a refused version), Incompatible (no variant fits),
  // NotAuthorized (polkit org.epbroker.install).
  InstalledModel install_model(const std::string& name, const ModelOptions& options,
                               const ProgressCallback& on_progress = {},
                               const CancelToken& cancel = CancelToken());

  // Installs a variant of model `name` as install_model() does (skipped without
  // options.download), then leases it (Broker1.RequestSession with the models option
  // only: the lease grants no provider). The variant is options.variant, or the
  // one planned for this machine under options.policy and options.ort_version;
  // the lease gets the newest installed version holding it. Throws NotFound (no
  // such model, version or variant; or, without download, not installed),
  // VerificationFailed (a refused version, or files outside the store),
  // Incompatible (no variant fits this machine or ort_version), Busy (installing
  // for another caller), NotAuthorized (polkit org.epbroker.install), and
  // NotFound too when options.version is given and the newest installed version
  // of the variant is another one.
  ModelLease ensure_model(const std::string& name, const ModelOptions& options,
                          const ProgressCallback& on_progress = {},
                          const CancelToken& cancel = CancelToken());

  // Removes installed variants of model `name` (Broker1.RemoveModel): of
  // `version` and `variant`, each "" = every installed one. A variant a session
  // leases is refused with Busy and nothing is removed, unless `now` (then apps
  // that opened the files keep them open). Files shared with a variant that
  // stays are kept. Returns each variant removed. NotFound unless something
  // matches; NotAuthorized: polkit org.epbroker.manage.
  std::vector<RemovedModel> remove_model(const std::string& name, const std::string& version = {},
                                         const std::string& variant = {}, bool now = false);

 private:
  std::shared_ptr<detail::Connection> conn_;
};

}  // namespace epbroker

#include "epbroker/models.hpp"  // IWYU pragma: export
