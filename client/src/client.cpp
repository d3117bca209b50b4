#include <chrono>
#include <cstdlib>
#include <thread>
#include <utility>

#include "client/src/connection.hpp"
#include "client/src/convert.hpp"
#include "client/src/job_wait.hpp"
#include "client/src/store_path.hpp"
#include "common/bus_errors.hpp"
#include "epbroker/client.hpp"

namespace epbroker {

using detail::checked;
using detail::kBrokerInterface;

namespace {

constexpr const char* kJobInterface = "org.epbroker.Job1";
constexpr const char* kSessionInterface = "org.epbroker.Session1";

std::string address_from(const ClientOptions& options) {
  if (!options.bus_address.empty()) return options.bus_address;
  // secure_getenv: in a setuid, setgid or file-capability program (AT_SECURE)
  // the environment is the unprivileged caller's, who could point us at a fake
  // broker; there the system bus is used, as sd-bus does for its own variables.
  const char* env = secure_getenv("EPBROKER_BUS_ADDRESS");
  return env ? std::string(env) : std::string();
}

template <typename T>
T prop(const detail::Dict& d, const char* key, const char* sig) {
  auto it = d.find(key);
  if (it == d.end()) return T{};
  if (it->second.peekValueType() != sig) {
    throw Error(Errc::protocol, std::string("property ") + key + " has an unexpected type");
  }
  return it->second.get<T>();
}

}  // namespace

Client::Client(ClientOptions options)
    : conn_(std::make_shared<detail::Connection>(address_from(options))) {}

Client::~Client() = default;
Client::Client(Client&&) noexcept = default;
Client& Client::operator=(Client&&) noexcept = default;

const std::string& Client::bus_address() const noexcept { return conn_->address; }

std::vector<Device> Client::devices() {
  const auto dicts = checked([&] { return conn_->broker->ListDevices(); });
  std::vector<Device> out;
  out.reserve(dicts.size());
  for (const auto& d : dicts) out.push_back(detail::to_device(d));
  return out;
}

std::vector<Provider> Client::providers() {
  const auto dicts = checked([&] { return conn_->broker->ListProviders(); });
  std::vector<Provider> out;
  out.reserve(dicts.size());
  for (const auto& d : dicts) out.push_back(detail::to_provider(d));
  return out;
}

Status Client::status() {
  Status s;
  const auto props = checked([&] { return conn_->broker->GetAll(kBrokerInterface); });
  s.version = prop<std::string>(props, "Version", "s");
  s.daemon_state = prop<std::string>(props, "DaemonState", "s");
  s.catalog_revision = prop<std::uint64_t>(props, "CatalogRevision", "t");
  s.catalog_expires = prop<std::string>(props, "CatalogExpires", "s");
  // Sessions and jobs are the objects the broker publishes under its root. A
  // session released a moment ago may still be listed: the daemon removes its
  // object just after the Release reply.
  const auto objects = checked([&] { return conn_->broker->GetManagedObjects(); });
  for (const auto& [path, interfaces] : objects) {
    if (interfaces.count(kSessionInterface)) ++s.sessions;
    auto job = interfaces.find(kJobInterface);
    if (job == interfaces.end()) continue;
    const auto& jp = job->second;
    JobInfo info;
    info.progress.job = path;
    info.progress.kind = prop<std::string>(jp, "Kind", "s");
    info.progress.target = prop<std::string>(jp, "Target", "s");
    info.progress.state = detail::parse_job_state(prop<std::string>(jp, "State", "s"));
    info.progress.bytes_done = prop<std::uint64_t>(jp, "BytesDone", "t");
    info.progress.bytes_total = prop<std::uint64_t>(jp, "BytesTotal", "t");
    info.error = prop<std::string>(jp, "Error", "s");
    info.error_message = prop<std::string>(jp, "ErrorMessage", "s");
    s.jobs.push_back(std::move(info));
  }
  return s;
}

Provider Client::ensure_ready(const std::string& name, const ProgressCallback& on_progress,
                              const CancelToken& cancel) {
  if (cancel.cancelled()) throw Error(Errc::cancelled, "cancelled before the install started");
  detail::JobWatch watch(*conn_);  // before the call: the job may move on at once
  const std::string job =
      detail::checked_starting([&] { return conn_->broker->EnsureProvider(name); });
  detail::wait_for_job(watch, job, on_progress, cancel);
  for (auto& p : providers()) {
    if (p.name == name && p.state == ProviderState::ready) return p;
  }
  // Removed again between the job's end and this call, or replaced meanwhile.
  throw Error(Errc::not_found, "'" + name + "' was installed but is no longer listed as ready");
}

std::uint64_t Client::refresh(const ProgressCallback& on_progress, const CancelToken& cancel) {
  if (cancel.cancelled()) throw Error(Errc::cancelled, "cancelled before the refresh started");
  detail::JobWatch watch(*conn_);
  const std::string job = detail::checked_starting([&] { return conn_->broker->RefreshCatalog(); });
  detail::wait_for_job(watch, job, on_progress, cancel);
  return checked([&] { return conn_->broker->CatalogRevision(); });
}

VerifyReport Client::verify(const ProgressCallback& on_progress, const CancelToken& cancel) {
  if (cancel.cancelled()) throw Error(Errc::cancelled, "cancelled before the verification started");
  // A job, not one long call: the daemon hashes on a worker (Broker1.Verify would
  // answer only at the end, past a method call's timeout on a big store).
  detail::JobWatch watch(*conn_);
  const std::string job = detail::checked_starting([&] { return conn_->broker->StartVerify(); });
  detail::wait_for_job(watch, job, on_progress, cancel);
  const auto [finished, dicts] =
      checked([&] { return conn_->broker->VerifyResults(sdbus::ObjectPath(job)); });
  VerifyReport out;
  out.finished = static_cast<std::int64_t>(finished);
  out.results.reserve(dicts.size());
  for (const auto& d : dicts) out.results.push_back(detail::to_verify_result(d));
  return out;
}

std::vector<VerifyResult> Client::verify() { return verify(ProgressCallback{}).results; }

Session Client::request_session(const SessionOptions& options) {
  // Called by hand rather than through the generated proxy, which would decode
  // the providers into sdbus::Variants first (see detail::read_session_grants).
  auto reply = detail::checked_starting([&] {
    auto& proxy = conn_->broker->raw();
    auto call = proxy.createMethodCall(kBrokerInterface, "RequestSession");
    call << detail::to_options(options);
    return proxy.callMethod(call);
  });
  sdbus::ObjectPath path;
  std::vector<Provider> granted;
  try {
    checked([&] { reply >> path; });
    // Models come only when asked for (ensure_model): none is a provider.
    granted = checked([&] { return detail::read_session_grants(reply).providers; });
    // Only files of the store this library trusts are handed to the app
    // (store_path.hpp): a compromised daemon cannot point it elsewhere.
    const std::string store = detail::trusted_store_dir();
    for (const auto& p : granted) {
      if (p.library_path.empty()) continue;
      if (auto why = detail::refuse_library_path(p.library_path, store); !why.empty()) {
        throw Error(Errc::verification_failed,
                    "refused the daemon's library_path for " + p.name + ": " + why);
      }
    }
  } catch (...) {
    if (path.empty()) throw;
    Session(conn_, path, {}).release();  // do not leak the lease
    throw;
  }
  return Session(conn_, path, std::move(granted));
}

}  // namespace epbroker
