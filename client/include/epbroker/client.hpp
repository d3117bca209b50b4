// libepbroker: the C++ client of epbrokerd (org.epbroker.Broker1 on the system bus).
//
//   epbroker::Client client;                        // system bus, or $EPBROKER_BUS_ADDRESS
//   for (const auto& p : client.providers()) ...;   // what the catalogs offer, and its state
//   client.ensure_ready("openvino", on_progress);   // install with progress, or throw
//   epbroker::Session s = client.request_session({}); // a lease on the ready providers
//   for (const auto& p : s.providers()) register(p.library_path, p.ep_names);
//
// Errors: every failing call throws epbroker::Error (see <epbroker/error.hpp>),
// with the daemon's error kind and message.
//
// Blocking: every call is a synchronous D-Bus round trip on the calling thread.
// A call that the daemon answers from memory (devices, providers, status,
// request_session, remove) takes well under a second; each is bounded by the
// D-Bus method timeout (25 s); status() may also ask again for up to 1 s while
// the daemon retires a session that has just ended. verify() re-hashes the
// whole store and may take minutes (bounded at 10 min). ensure_ready() and
// refresh() block until their job ends: as long as a download takes, with no
// overall limit; they return early only through the cancel token (or when the
// daemon goes away: Errc::unavailable). The first call on a system where
// epbrokerd is not running starts it (D-Bus activation), which adds the
// daemon's start-up time to that call.
//
// Threads: a Client is not thread-safe; use it from one thread at a time (distinct
// Clients on distinct threads are independent). The library starts no thread:
// progress callbacks run on the thread that called ensure_ready()/refresh(),
// inside that call. CancelToken::cancel() may be called from any thread and from
// a signal handler. A Session may be used (and destroyed) on another thread than
// its Client, but not concurrently with calls on that Client, since they share
// one connection. A Client must not be used in a child after fork(). A
// moved-from Client may only be destroyed or assigned to.
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

enum class ProviderState { ready, available, installing, incompatible, unknown };

// "ready", "available", "installing", "incompatible" ("unknown" for a state this
// library does not know).
EPBROKER_API std::string_view to_string(ProviderState state) noexcept;

// One execution-provider package (Broker1.ListProviders, or a provider a session
// granted).
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
  std::string kind;    // "install" | "refresh"
  std::string target;  // package name (install) or "" (refresh)
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

// One entry of Broker1.Verify.
struct VerifyResult {
  std::string name;
  std::string version;
  bool ok = true;
  std::string problem;  // what is wrong when !ok
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

struct SessionOptions {
  Policy policy = Policy::default_policy;
  // The application's ONNX Runtime version ("1.22.0"); providers needing a newer
  // one come back "incompatible" with the reason. "" = not checked.
  std::string ort_version;
  // Package names; empty = every provider compatible with this machine.
  std::vector<std::string> providers;
  // Start installs of compatible providers that are not installed yet (they come
  // back "installing" with a job; they are not leased by this session).
  bool download = false;
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
  // EPBROKER_BUS_ADDRESS environment variable if set, else the system bus.
  std::string bus_address;
};

namespace detail {
struct Connection;  // the bus connection a Client and its Sessions share
}  // namespace detail

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

  // Removes every installed version of `name` (Busy while a session leases it,
  // NotFound if none is installed).
  void remove(const std::string& name);

  // Re-hashes the installed store.
  std::vector<VerifyResult> verify();

  // A lease on the providers the options select (Broker1.RequestSession).
  Session request_session(const SessionOptions& options = {});

 private:
  std::shared_ptr<detail::Connection> conn_;
};

}  // namespace epbroker
