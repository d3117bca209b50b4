#include "daemon/core/broker.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <condition_variable>
#include <regex>

#include "catalog/atomic_file.hpp"
#include "catalog/canonical_json.hpp"
#include "catalog/tuf/updater.hpp"
#include "daemon/hardware/libraries.hpp"

namespace epbrokerd::core {
namespace {

namespace fs = std::filesystem;

// Package names as the catalog allows them; checked before any lookup.
bool valid_name(const std::string& name) {
  static const std::regex re("[a-z0-9][a-z0-9._-]{0,63}");
  return std::regex_match(name, re);
}

const std::vector<std::string> kPolicies = {"default",          "prefer_cpu",      "prefer_gpu",
                                            "prefer_npu",       "max_performance", "max_efficiency",
                                            "min_overall_power"};

catalog::Version any_ort() { return catalog::parse_version("9999.0.0").value(); }

// Compatibility matching's view of the machine: the devices, and where packages'
// "requires" are looked up.
catalog::MachineInfo machine_info(const std::vector<hardware::Device>& devices,
                                  const hardware::Roots& roots) {
  catalog::MachineInfo m = hardware::to_machine_info(devices);
  m.has_library = [locator = hardware::LibraryLocator(roots.system, m.arch)](
                      const std::string& soname) { return locator.has(soname); };
  return m;
}

// Keeps, for each package name, only the entries of the first remote (in
// `entries`' order: remote priority) that lists it: a name belongs to the
// highest-priority remote offering it, so a lower one cannot take it over with
// a higher version or shadow it with an incompatible one.
std::vector<CatalogEntry> drop_shadowed(std::vector<CatalogEntry> entries) {
  std::map<std::string, std::string> owner;  // name -> remote
  std::vector<CatalogEntry> out;
  for (auto& e : entries) {
    const auto [it, first] = owner.emplace(e.meta.name, e.remote);
    if (first || it->second == e.remote) out.push_back(std::move(e));
  }
  return out;
}

nlohmann::json entry_json(const CatalogEntry& e) {
  return {{"remote", e.remote},
          {"target_path", e.target_path},
          {"length", e.length},
          {"custom", catalog::to_json(e.meta)}};
}

}  // namespace

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
      sessions_(options_.config.daemon.max_sessions_per_client, [this](const SessionInfo& s) {
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
      }) {}

Result<std::unique_ptr<Broker>> Broker::create(BrokerOptions options, BrokerListener* listener) {
  if (options.authorizer == nullptr || !options.fetcher_factory) {
    return fail(Errc::InvalidArgument, "broker needs an authorizer and a fetcher factory");
  }
  // The store is locked while another instance (one exiting when idle) still has it
  // open: wait for it rather than fail the activation that started us.
  auto store = store::Store::open(options.config.paths.state_dir);
  const auto lock_deadline = std::chrono::steady_clock::now() + options.store_lock_wait;
  while (!store && store.error().code == catalog::Errc::busy &&
         std::chrono::steady_clock::now() < lock_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    store = store::Store::open(options.config.paths.state_dir);
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
  jobs_.cancel_all();
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

// ---- catalog ------------------------------------------------------------------

void Broker::load_catalog_cache() {
  // The trusted TUF metadata under state/remotes/<name>/metadata is the truth;
  // catalog.json is what the last successful refresh derived from it.
  std::vector<CatalogEntry> entries;
  for (const auto& remote : options_.config.remotes) {
    const fs::path cache =
        options_.config.paths.state_dir / "remotes" / remote.name / "catalog.json";
    auto text = catalog::read_file(cache, 16 << 20);
    if (!text) continue;
    auto doc = catalog::parse_json(*text);
    if (!doc || !doc->is_object() || !(*doc)["entries"].is_array()) continue;
    for (const auto& e : (*doc)["entries"]) {
      auto meta = catalog::parse_ep_metadata(e.value("custom", nlohmann::json()));
      if (!meta) continue;
      entries.push_back(
          {remote.name, e.value("target_path", ""), e.value("length", 0ULL), std::move(*meta)});
    }
    revision_ = std::max<std::uint64_t>(revision_, (*doc).value("revision", 0ULL));
    expires_ = (*doc).value("expires", "");
  }
  catalog_ = drop_shadowed(std::move(entries));
  // The last refresh is when the oldest enabled remote's catalog.json was written
  // (every remote is refreshed together); none yet, or a remote never refreshed:
  // no time, so an automatic refresh is due at once.
  std::optional<fs::file_time_type> oldest;
  bool all = true;
  for (const auto& remote : options_.config.remotes) {
    if (!remote.enabled) continue;
    std::error_code ec;
    const auto t = fs::last_write_time(
        options_.config.paths.state_dir / "remotes" / remote.name / "catalog.json", ec);
    if (ec) {
      all = false;
      break;
    }
    if (!oldest || t < *oldest) oldest = t;
  }
  if (all && oldest) {
    last_refresh_ = std::chrono::time_point_cast<std::chrono::system_clock::duration>(
        std::chrono::file_clock::to_sys(*oldest));
  }
}

std::optional<std::chrono::system_clock::time_point> Broker::last_refresh() const {
  std::lock_guard lock(mu_);
  return last_refresh_;
}

std::uint64_t Broker::auto_refresh() {
  if (auto running = jobs_.find_active(JobKind::refresh, "")) return running->id();
  // The daemon's own job: no caller to authorize (uid 0, no bus name).
  auto job = jobs_.create(JobKind::refresh, "", RequestContext{0, ""});
  spawn([this, job] { run_refresh(job); });
  return job->id();
}

std::optional<CatalogEntry> Broker::best_entry(const std::string& name, std::string* reason) const {
  std::optional<CatalogEntry> best;
  std::lock_guard lock(mu_);
  for (const auto& e : catalog_) {
    if (e.meta.name != name) continue;
    auto c = catalog::check_compatibility(machine_, any_ort(), e.meta);
    if (auto* ex = std::get_if<catalog::Exclusion>(&c)) {
      if (reason && !best) *reason = ex->message;
      continue;
    }
    if (!best || best->meta.version.value < e.meta.version.value) best = e;
  }
  return best;
}

ProviderView Broker::view_of(const CatalogEntry* entry,
                             const std::optional<store::InstalledPackage>& installed) const {
  ProviderView v;
  const catalog::EpMetadata& m = installed ? installed->manifest.ep : entry->meta;
  v.name = m.name;
  v.kind = std::string(catalog::package_kind_name(m.kind));
  v.ep_names = m.ep_names;
  v.version = m.version.text;
  v.ort_min = m.ort_min.text;
  v.vendor = m.vendor;
  v.remote = entry ? entry->remote : "";
  auto c = catalog::check_compatibility(machine_, any_ort(), m);
  if (auto* match = std::get_if<catalog::Match>(&c)) v.devices = match->device_ids;
  if (installed) {
    v.state = "ready";
    v.size = installed->size_bytes();
    v.library_path = installed->library_path().string();
  } else if (auto* ex = std::get_if<catalog::Exclusion>(&c)) {
    v.state = "incompatible";
    v.reason = ex->message;
    v.size = entry->length;
  } else {
    v.state = "available";
    v.size = entry->length;
  }
  if (auto job = jobs_.find_active(JobKind::install, v.name); job && !installed) {
    v.state = "installing";
    v.job = job->id();
  }
  return v;
}

std::vector<ProviderView> Broker::providers() const { return *provider_views(); }

std::shared_ptr<const std::vector<ProviderView>> Broker::provider_views() const {
  std::lock_guard lock(views_mu_);
  // The generation is read before computing: a change made meanwhile bumps it
  // again, so the views computed here are never taken for newer than they are.
  const std::uint64_t gen = providers_gen_.load();
  if (views_ && views_gen_ == gen) return views_;
  views_ = std::make_shared<const std::vector<ProviderView>>(compute_providers());
  views_gen_ = gen;
  return views_;
}

std::vector<ProviderView> Broker::compute_providers() const {
  std::vector<CatalogEntry> entries;
  {
    std::lock_guard lock(mu_);
    entries = catalog_;
  }
  std::vector<ProviderView> out;
  std::vector<std::string> seen;
  // 1. Installed packages (newest version of each name).
  for (const auto& p : store_.list()) {
    const auto* entry = [&]() -> const CatalogEntry* {
      for (const auto& e : entries) {
        if (e.meta.name == p.name() && e.meta.version.text == p.version()) return &e;
      }
      return nullptr;
    }();
    out.push_back(view_of(entry, p));
    seen.push_back(p.name() + "/" + p.version());
  }
  // 2. Catalog entries not installed.
  for (const auto& e : entries) {
    const std::string key = e.meta.name + "/" + e.meta.version.text;
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    seen.push_back(key);
    out.push_back(view_of(&e, std::nullopt));
  }
  return out;
}

std::uint64_t Broker::catalog_revision() const {
  std::lock_guard lock(mu_);
  return revision_;
}

std::string Broker::catalog_expires() const {
  std::lock_guard lock(mu_);
  return expires_;
}

// ---- jobs ---------------------------------------------------------------------

Result<std::uint64_t> Broker::ensure_provider(const RequestContext& ctx, const std::string& name) {
  // 1. Arguments, then authority, then the catalog.
  if (!valid_name(name)) return fail(Errc::InvalidArgument, "invalid package name");
  if (auto ok = options_.authorizer->check(ctx, Action::install); !ok) {
    return std::unexpected(ok.error());
  }
  std::string reason;
  auto entry = best_entry(name, &reason);
  if (!entry) {
    if (!reason.empty()) return fail(Errc::Incompatible, name + ": " + reason);
    return fail(Errc::NotFound, "no trusted catalog lists a package named '" + name + "'");
  }
  // 2. One install per package however many callers ask.
  if (auto running = jobs_.find_active(JobKind::install, name)) return running->id();
  if (jobs_.active_count_for(ctx.sender) >= options_.config.daemon.max_jobs_per_client) {
    return fail(Errc::Busy, ctx.sender + " already runs the per-client maximum of jobs");
  }
  auto job = jobs_.create(JobKind::install, name, ctx);
  invalidate_providers();  // NAME is installing now
  // 3. Already installed: a job that is done at once, so callers wait the same way.
  if (store_.find(entry->meta.name, entry->meta.version.text)) {
    job->succeed();
    return job->id();
  }
  spawn([this, job, e = std::move(*entry)] { run_install(job, e); });
  return job->id();
}

namespace {

// Counts bytes for a job's progress and stops the transfer on cancel. Progress
// goes out in steps of 1/256 of the total, at the end, and at least every 250
// ms while bytes arrive (a slow download still moves): each report is a
// PropertiesChanged signal on the bus, and one per network chunk (16 KiB) costs
// more than the download itself.
class ProgressFetcher : public catalog::tuf::Fetcher {
 public:
  ProgressFetcher(catalog::tuf::Fetcher& inner, Job& job, std::uint64_t total)
      : inner_(inner), job_(job), total_(total), step_(std::max<std::uint64_t>(total / 256, 1)) {}
  catalog::Result<void> fetch(const std::string& url, std::uint64_t max_bytes,
                              const catalog::tuf::ChunkSink& sink) override {
    if (tee_ != Tee::off) tee_ = Tee::broken;  // not the target's one transfer
    return inner_.fetch(url, max_bytes, counted(sink));
  }
  catalog::Result<void> fetch_from(const std::string& url, std::uint64_t offset,
                                   std::uint64_t max_bytes, const catalog::tuf::StartSink& on_start,
                                   const catalog::tuf::ChunkSink& sink) override {
    if (tee_ == Tee::streaming) tee_ = Tee::broken;  // a second transfer: retry, mirror
    // A resumed download has its prefix done already (progress never goes back).
    auto start = [&](std::uint64_t from) {
      done_ = std::max(done_, from);
      report();
      if (tee_ == Tee::armed) tee_ = from == 0 ? Tee::streaming : Tee::broken;
      return on_start(from);
    };
    return inner_.fetch_from(url, offset, max_bytes, start, counted(sink));
  }

  // The length progress is measured against (before the first transfer).
  void set_total(std::uint64_t total) {
    total_ = total;
    step_ = std::max<std::uint64_t>(total / 256, 1);
  }

  // From now on, the bytes of the next transfer also go to `fd` (a pipe the
  // store extracts from), if it starts at the first byte; any other transfer
  // breaks the stream (stream_intact() says false).
  void tee_to(int fd) {
    tee_fd_ = fd;
    tee_ = Tee::armed;
  }
  // Whether exactly one transfer delivered all `length` bytes to the tee.
  bool stream_intact(std::uint64_t length) const {
    return tee_ == Tee::streaming && teed_ == length;
  }

 private:
  catalog::tuf::ChunkSink counted(const catalog::tuf::ChunkSink& sink) {
    return [this, &sink](std::span<const std::byte> chunk) -> catalog::Result<void> {
      if (job_.cancel_requested()) return catalog::fail(catalog::Errc::cancelled, "cancelled");
      done_ += chunk.size();
      report();
      if (tee_ == Tee::streaming) tee(chunk);
      return sink(chunk);
    };
  }

  void tee(std::span<const std::byte> chunk) {
    for (std::size_t done = 0; done < chunk.size();) {
      const ssize_t n = ::write(tee_fd_, chunk.data() + done, chunk.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        tee_ = Tee::broken;
        return;
      }
      done += static_cast<std::size_t>(n);
    }
    teed_ += chunk.size();
  }

  void report() {
    if (total_ == 0) return;
    const std::uint64_t done = std::min(done_, total_);
    const auto now = std::chrono::steady_clock::now();
    if (done < total_ && done < reported_ + step_ &&
        (done == reported_ || now - reported_at_ < std::chrono::milliseconds(250))) {
      return;
    }
    reported_ = done;
    reported_at_ = now;
    job_.set_progress(done, total_);
  }

  catalog::tuf::Fetcher& inner_;
  Job& job_;
  std::uint64_t total_;
  std::uint64_t step_;
  std::uint64_t done_ = 0;
  std::uint64_t reported_ = 0;
  std::chrono::steady_clock::time_point reported_at_ = std::chrono::steady_clock::now();
  enum class Tee { off, armed, streaming, broken } tee_ = Tee::off;
  int tee_fd_ = -1;
  std::uint64_t teed_ = 0;
};

// Reads `fd` to its end, discarding: the writer never blocks on a full pipe.
void drain(int fd) {
  std::array<char, 65536> buf;
  while (true) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
  }
}

// A pipe from the download to the store (see Broker::run_install): both ends,
// closed when it dies; `drain` is a second read end kept by the broker.
struct StreamPipe {
  int read = -1;
  int write = -1;
  int drain = -1;
  StreamPipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return;
    read = fds[0];
    write = fds[1];
    drain = ::fcntl(read, F_DUPFD_CLOEXEC, 0);
    // Bigger than the default 64 KiB: fewer wake-ups (best effort).
    (void)::fcntl(write, F_SETPIPE_SZ, 1 << 20);
  }
  ~StreamPipe() {
    for (int fd : {read, write, drain}) {
      if (fd >= 0) ::close(fd);
    }
  }
  StreamPipe(const StreamPipe&) = delete;
  StreamPipe& operator=(const StreamPipe&) = delete;
  bool ok() const { return read >= 0 && write >= 0 && drain >= 0; }
  void close_write() {
    if (write >= 0) ::close(std::exchange(write, -1));
  }
};

const config::Remote* find_remote(const config::Config& c, const std::string& name) {
  for (const auto& r : c.remotes) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

// `job` must outlive the Updater: cancelling it stops fetches and backoff waits.
catalog::tuf::UpdaterConfig updater_config(const config::Config& c, const config::Remote& r,
                                           const Job& job) {
  catalog::tuf::UpdaterConfig u;
  u.metadata_dir = c.paths.state_dir / "remotes" / r.name / "metadata";
  // The primary, then the configured mirrors in order (catalog/tuf/mirrors.hpp
  // says which failures fall through to the next).
  u.metadata_base_url = r.primary.metadata_url;
  u.target_base_url = r.primary.targets_url;
  for (const auto& m : r.mirrors) u.mirrors.push_back({m.metadata_url, m.targets_url});
  // Transient failures: fetch_attempts rounds over the mirrors (default 4), 200 ms
  // doubling to 5 s between them, or what a 503's Retry-After asks (capped); an
  // interrupted target resumes from its partial file.
  u.retry = {.attempts = c.daemon.fetch.attempts,
             .initial_backoff = std::chrono::milliseconds(200),
             .max_backoff = std::chrono::seconds(5),
             .max_retry_after = c.daemon.fetch.max_retry_after};
  u.cancel = [&job] { return job.cancel_requested(); };
  u.target_dir = c.paths.cache_dir / "downloads" / r.name;
  return u;
}

// First use of a remote: trust its configured root.
catalog::Result<void> ensure_trusted_root(const config::Remote& r, const fs::path& metadata_dir) {
  if (fs::exists(metadata_dir / "root.json")) return {};
  auto root = catalog::read_file(r.trusted_root, 512'000);
  if (!root) return std::unexpected(root.error());
  std::error_code ec;
  fs::create_directories(metadata_dir, ec);
  if (ec)
    return catalog::fail(catalog::errno_code(ec.value()),
                         "create " + metadata_dir.string() + ": " + ec.message());
  return catalog::atomic_write_file(metadata_dir / "root.json", *root);
}

}  // namespace

void Broker::run_install(std::shared_ptr<Job> job, CatalogEntry entry) {
  const config::Remote* remote = find_remote(options_.config, entry.remote);
  if (remote == nullptr) {
    job->fail({Errc::NotFound, "remote " + entry.remote + " is no longer configured"});
    return;
  }
  // 1. Download: refresh (metadata older than its timestamp gets updated), then
  //    stream the signed target to the cache, capped and hashed.
  job->set_state(JobState::downloading);
  job->set_progress(0, entry.length);
  auto fetcher = options_.fetcher_factory(*remote);
  ProgressFetcher progress(*fetcher, *job, entry.length);
  auto ucfg = updater_config(options_.config, *remote, *job);
  if (auto ok = ensure_trusted_root(*remote, ucfg.metadata_dir); !ok) {
    job->fail(ok.error());
    return;
  }
  catalog::tuf::Updater updater(ucfg, progress);
  auto info = updater.get_targetinfo(entry.target_path);
  if (!info) {
    job->fail(info.error());
    return;
  }
  // The catalog this install was chosen from may be older than the metadata just
  // refreshed (the package re-published since): the signed length now is what
  // the download, its progress and the stream into the store go by.
  if (info->length != entry.length) {
    entry.length = info->length;
    progress.set_total(entry.length);
    job->set_progress(0, entry.length);
  }
  // The signed metadata at download time is what the package must match.
  auto meta = catalog::parse_ep_metadata(info->custom);
  if (!meta) {
    job->fail(meta.error());
    return;
  }
  // 2. The package streams into the store while it downloads: the store
  //    extracts from a pipe the download also feeds, and commits only once the
  //    whole download has verified against the signed length and hashes. When
  //    the bytes did not come in one transfer from the first (a resumed partial
  //    file, a retry, another mirror), the downloaded file is installed instead.
  StreamPipe pipe;
  std::mutex verdict_mu;
  std::condition_variable verdict_cv;
  std::optional<catalog::Result<void>> verdict;  // the download's, for the streamed tree
  std::optional<catalog::Result<store::InstalledPackage>> streamed;
  std::jthread extractor;
  if (pipe.ok()) {
    progress.tee_to(pipe.write);
    extractor = std::jthread([&, read_fd = std::exchange(pipe.read, -1)] {
      streamed = store_.install_stream(
          read_fd, entry.length, *meta,
          [&](store::InstallPhase phase, std::uint64_t, std::uint64_t) {
            if (phase == store::InstallPhase::verifying) job->set_state(JobState::verifying);
            if (phase == store::InstallPhase::committing) job->set_state(JobState::installing);
          },
          [&]() -> catalog::Result<void> {
            drain(pipe.drain);  // to its end: the download is over
            std::unique_lock lock(verdict_mu);
            verdict_cv.wait(lock, [&] { return verdict.has_value(); });
            return *verdict;
          });
      drain(pipe.drain);  // what a failed extraction left unread
    });
  }
  auto file = updater.download_target(*info);
  if (file) job->set_state(JobState::verifying);
  const bool intact = file && progress.stream_intact(entry.length);
  {
    std::lock_guard lock(verdict_mu);
    if (intact) {
      verdict = catalog::Result<void>();
    } else {
      verdict = catalog::fail(catalog::Errc::cancelled, "download not streamed whole");
    }
  }
  verdict_cv.notify_all();
  pipe.close_write();
  if (extractor.joinable()) extractor.join();
  if (!file) {
    job->fail(file.error());
    return;
  }
  // 3. Not streamed whole: verify + extract + commit the downloaded file.
  auto installed =
      intact && streamed
          ? std::move(*streamed)
          : store_.install(*file, *meta,
                           [&](store::InstallPhase phase, std::uint64_t, std::uint64_t) {
                             if (phase != store::InstallPhase::extracting) {
                               job->set_state(JobState::installing);
                             }
                           });
  invalidate_providers();  // the store changed (or, on failure, stayed as it was)
  std::error_code ec;
  fs::remove(*file, ec);
  if (!installed) {
    job->fail(installed.error());
    return;
  }
  job->set_progress(entry.length, entry.length);
  job->succeed();
  if (listener_) listener_->providers_changed();
}

Result<void> Broker::remove_provider(const RequestContext& ctx, const std::string& name) {
  if (!valid_name(name)) return fail(Errc::InvalidArgument, "invalid package name");
  if (auto ok = options_.authorizer->check(ctx, Action::manage); !ok) {
    return std::unexpected(ok.error());
  }
  if (store_.versions(name).empty()) return fail(Errc::NotFound, name + " is not installed");
  auto removed = store_.remove(name);
  invalidate_providers();  // even a failed removal may have changed the store
  if (!removed) return std::unexpected(removed.error());
  if (listener_) listener_->providers_changed();
  return {};
}

Result<std::uint64_t> Broker::refresh(const RequestContext& ctx) {
  if (auto ok = options_.authorizer->check(ctx, Action::manage); !ok) {
    return std::unexpected(ok.error());
  }
  if (auto running = jobs_.find_active(JobKind::refresh, "")) return running->id();
  auto job = jobs_.create(JobKind::refresh, "", ctx);
  spawn([this, job] { run_refresh(job); });
  return job->id();
}

catalog::Result<std::vector<CatalogEntry>> Broker::refresh_remote(const config::Remote& remote,
                                                                  Job& job) {
  auto fetcher = options_.fetcher_factory(remote);
  auto ucfg = updater_config(options_.config, remote, job);
  if (auto ok = ensure_trusted_root(remote, ucfg.metadata_dir); !ok) {
    return std::unexpected(ok.error());
  }
  catalog::tuf::Updater updater(ucfg, *fetcher);
  if (job.cancel_requested()) return catalog::fail(catalog::Errc::cancelled, "cancelled");
  auto targets = updater.all_targets();
  if (!targets) return std::unexpected(targets.error());
  std::vector<CatalogEntry> out;
  for (const auto& t : *targets) {
    // Targets without (valid) EP metadata are not providers; skipped.
    if (t.custom.is_null() || !t.custom.contains("epbroker")) continue;
    auto meta = catalog::parse_ep_metadata(t.custom);
    if (!meta) continue;
    out.push_back({remote.name, t.path, t.length, std::move(*meta)});
  }
  // Derived cache for the next start (see load_catalog_cache()).
  const auto* ts = updater.trusted()->timestamp() ? &*updater.trusted()->timestamp() : nullptr;
  nlohmann::json doc = {{"revision", updater.trusted()->snapshot()->signed_.version},
                        {"expires", ts ? catalog::tuf::format_expires(ts->signed_.expires) : ""},
                        {"entries", nlohmann::json::array()}};
  for (const auto& e : out) doc["entries"].push_back(entry_json(e));
  (void)catalog::atomic_write_file(
      options_.config.paths.state_dir / "remotes" / remote.name / "catalog.json", doc.dump(1));
  {
    std::lock_guard lock(mu_);
    revision_ = std::max(revision_, updater.trusted()->snapshot()->signed_.version);
    if (ts) expires_ = catalog::tuf::format_expires(ts->signed_.expires);
  }
  return out;
}

void Broker::run_refresh(std::shared_ptr<Job> job) {
  job->set_state(JobState::downloading);
  // Remotes in priority order. A remote whose refresh fails (unreachable, or
  // serving something its trusted metadata refuses) keeps what it listed
  // before: one bad remote neither empties nor freezes the others' catalogs.
  std::vector<std::vector<CatalogEntry>> fresh;
  std::optional<catalog::Error> first_error;
  bool any_ok = false;
  for (const auto& remote : options_.config.remotes) {
    if (!remote.enabled) continue;
    auto entries = refresh_remote(remote, *job);
    if (entries) {
      any_ok = true;
      fresh.push_back(std::move(*entries));
      continue;
    }
    if (!first_error) {
      first_error = entries.error();
      first_error->message = "remote " + remote.name + ": " + first_error->message;
    }
    std::vector<CatalogEntry> kept;
    std::lock_guard lock(mu_);
    for (const auto& e : catalog_) {
      if (e.remote == remote.name) kept.push_back(e);
    }
    fresh.push_back(std::move(kept));
  }
  std::uint64_t rev = 0;
  if (any_ok || !first_error) {
    std::vector<CatalogEntry> all;
    for (auto& list : fresh) std::move(list.begin(), list.end(), std::back_inserter(all));
    std::lock_guard lock(mu_);
    catalog_ = drop_shadowed(std::move(all));
    rev = revision_;
    if (!first_error) last_refresh_ = std::chrono::system_clock::now();
  }
  if (any_ok || !first_error) invalidate_providers();
  if (first_error) {
    job->fail(*first_error);
  } else {
    job->succeed();
  }
  if (listener_ && (any_ok || !first_error)) {
    listener_->catalog_changed(rev);
    listener_->providers_changed();
  }
}

std::vector<VerifyResult> Broker::verify() const {
  std::vector<VerifyResult> out;
  auto report = store_.verify();
  if (!report) return out;
  for (const auto& p : store_.list()) {
    VerifyResult r{p.name(), p.version(), true, ""};
    for (const auto& d : report->damaged) {
      if (d.package.name() == p.name() && d.package.version() == p.version()) {
        r.ok = false;
        for (const auto& problem : d.problems)
          r.problem += (r.problem.empty() ? "" : "; ") + problem;
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

// ---- sessions -------------------------------------------------------------------

Result<SessionGrant> Broker::request_session(const RequestContext& ctx,
                                             const SessionRequest& request) {
  // 1. Validate everything before touching anything.
  if (std::find(kPolicies.begin(), kPolicies.end(), request.policy) == kPolicies.end()) {
    return fail(Errc::InvalidArgument, "unknown policy '" + request.policy + "'");
  }
  std::optional<catalog::Version> app_ort;
  if (!request.ort_version.empty()) {
    auto v = catalog::parse_version(request.ort_version);
    if (!v) return fail(Errc::InvalidArgument, "ort_version: " + v.error().message);
    app_ort = *v;
  }
  if (request.providers.size() > 64) return fail(Errc::InvalidArgument, "too many providers");
  for (const auto& n : request.providers) {
    if (!valid_name(n)) return fail(Errc::InvalidArgument, "invalid provider name");
  }
  if (sessions_.count_for(ctx.sender) >= options_.config.daemon.max_sessions_per_client) {
    return fail(Errc::Busy, ctx.sender + " holds the per-client maximum of sessions");
  }
  // 2. Which providers: asked-for ones, or every one the catalog or store knows
  //    (the cached views; only the granted ones are copied).
  const auto views = provider_views();
  SessionGrant grant;
  std::vector<store::LeaseId> leases;
  std::vector<std::string> lease_names;
  for (const auto& cached : *views) {
    if (!request.providers.empty() && std::find(request.providers.begin(), request.providers.end(),
                                                cached.name) == request.providers.end()) {
      continue;
    }
    ProviderView v = cached;
    if (app_ort && v.state == "ready") {
      // The app's ORT against the installed package's minimum (a ready view's
      // ort_min comes from the installed manifest).
      auto ort_min = catalog::parse_version(v.ort_min);
      if (ort_min && *ort_min > *app_ort) {
        v.state = "incompatible";
        v.reason = "needs ONNX Runtime >= " + v.ort_min + ", app has " + request.ort_version;
        v.library_path.clear();
      }
    }
    if (v.state == "ready") {
      auto lease = store_.acquire_lease(v.name, v.version, ctx.sender);
      if (!lease) continue;
      leases.push_back(*lease);
      lease_names.push_back(v.name + "/" + v.version);
    } else if (v.state == "available" && request.download) {
      auto job = ensure_provider(ctx, v.name);
      if (job) {
        v.state = "installing";
        v.job = *job;
      } else {
        v.reason = job.error().message;
      }
    }
    grant.providers.push_back(std::move(v));
  }
  // 3. The lease itself.
  auto id = sessions_.open(ctx, lease_names);
  if (!id) {
    for (auto l : leases) store_.release_lease(l);
    return std::unexpected(id.error());
  }
  {
    std::lock_guard lock(mu_);
    session_leases_[*id] = std::move(leases);
  }
  grant.session = *id;
  return grant;
}

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

Result<void> Broker::release_session(const RequestContext& ctx, std::uint64_t id) {
  return sessions_.release(ctx, id);
}

std::vector<std::uint64_t> Broker::client_vanished(const std::string& sender) {
  return sessions_.owner_vanished(sender);
}

bool Broker::idle() const { return jobs_.active_count() == 0 && sessions_.count() == 0; }

}  // namespace epbrokerd::core
