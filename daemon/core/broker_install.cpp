// The install job: the download with progress and cancel (ProgressFetcher), the
// pipe that streams it to the commit helper as it arrives (StreamPipe), and the
// job's steps (run_install), and a model variant's job (run_model_install).
#include "daemon/core/broker.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <set>

#include "catalog/model_metadata.hpp"
#include "catalog/name_binding.hpp"
#include "catalog/tuf/updater.hpp"
#include "catalog/unique_fd.hpp"

#include "daemon/core/broker_internal.hpp"
#include "daemon/core/public_error.hpp"
#include "daemon/log/log.hpp"
#include "daemon/store/model_store.hpp"

namespace epbrokerd::core {

using namespace detail;
using common::HistoryAction;
using common::ProviderState;
namespace fs = std::filesystem;

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

  // From now on, the bytes of the next transfer also go to `fd` (a pipe to the
  // commit helper, which copies them, unparsed, into its own file), if it starts
  // at the first byte; any other transfer breaks the stream (stream_intact()
  // says false).
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

// A pipe from the download to the commit helper (see Broker::run_install): both ends,
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

}  // namespace

void Broker::run_install(std::shared_ptr<Job> job, CatalogEntry entry, InstallIntent intent) {
  // Every way out says how it ended to the lifecycle (finish_install: the
  // version becomes current, or the failure goes into the history) before the
  // job's final state is visible.
  auto end = [&](const catalog::Result<store::InstalledPackage>& installed) {
    finish_install(*job, entry, intent, installed);
    if (installed) {
      job->set_progress(entry.length, entry.length);
      job->succeed();
    } else {
      job->fail(installed.error());
    }
  };
  const config::Remote* remote = find_remote(options_.config, entry.remote);
  if (remote == nullptr) {
    end(catalog::fail(catalog::Errc::not_found,
                      "remote " + entry.remote + " is no longer configured"));
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
    end(std::unexpected(ok.error()));
    return;
  }
  catalog::tuf::Updater updater(ucfg, progress);
  auto info = updater.get_targetinfo(entry.target_path);
  if (!info) {
    end(std::unexpected(info.error()));
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
    end(std::unexpected(meta.error()));
    return;
  }
  // The name is trusted only from its own path namespace (issue 17): checked
  // again on the metadata that now signs the target, whatever the catalog said.
  if (auto bound = catalog::check_name_binding(meta->name, info->path); !bound) {
    end(std::unexpected(bound.error()));
    return;
  }
  // 2. The download, hashed as it arrives, and refused unless its length and
  //    hashes are the signed ones; its bytes also stream, as they arrive, to the
  //    commit helper, which only copies them into a file of its own meanwhile.
  // 3. The helper checks it all again on its own copy (the TUF chain from its
  //    own anchor over the metadata we persisted, the length and hashes, the
  //    name's binding, the manifest), and only then extracts and commits it.
  //    Nothing on either side parses a byte before its hash matched. When the
  //    bytes did not come in one transfer from the first (a resumed partial
  //    file, a retry, another mirror), the downloaded file is handed over instead.
  catalog::UniqueFd metadata_fd(
      ::open(ucfg.metadata_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  auto commit = [&](int package_fd) -> catalog::Result<store::InstalledPackage> {
    if (!metadata_fd.valid()) {
      return catalog::fail(catalog::Errc::io, "open the trusted metadata for the commit");
    }
    return store_.commit(
        {entry.remote, entry.target_path, metadata_fd.get(), package_fd},
        [&](store::InstallPhase phase, std::uint64_t, std::uint64_t) {
          if (phase != store::InstallPhase::extracting) job->set_state(JobState::installing);
        },
        job->stop_token());
  };
  StreamPipe pipe;
  std::optional<catalog::Result<store::InstalledPackage>> streamed;
  std::jthread streamer;
  if (pipe.ok()) {
    progress.tee_to(pipe.write);
    streamer = std::jthread([&, read_fd = pipe.read] {
      streamed = commit(read_fd);
      drain(pipe.drain);  // to its end: the download writes until it is over
    });
  }
  auto file = updater.download_target(*info);
  if (file) job->set_state(JobState::verifying);
  const bool intact = file && progress.stream_intact(entry.length);
  pipe.close_write();
  if (streamer.joinable()) streamer.join();
  if (!file) {
    end(std::unexpected(file.error()));
    return;
  }
  catalog::Result<store::InstalledPackage> installed =
      catalog::fail(catalog::Errc::io, "open the download for the commit");
  // A helper that ended without an answer (killed, out of memory) is asked
  // once more, from the file: each helper starts from scratch.
  const auto helper_lost = [](const catalog::Result<store::InstalledPackage>& r) {
    return !r && r.error().code == catalog::Errc::unavailable;
  };
  if (intact && streamed && !helper_lost(*streamed)) {
    installed = std::move(*streamed);
  } else {
    for (int attempt = 0; attempt < 2; ++attempt) {
      catalog::UniqueFd package_fd(::open(file->c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
      if (package_fd.valid()) installed = commit(package_fd.get());
      if (!helper_lost(installed)) break;
      log::warn("install {}: {}; asking a new commit helper", entry.meta.name,
                installed.error().message);
    }
  }
  invalidate_providers();  // the store changed (or, on failure, stayed as it was)
  std::error_code ec;
  fs::remove(*file, ec);
  end(installed);
  invalidate_providers();  // current changed
  if (installed && listener_) listener_->providers_changed();
}

void Broker::run_model_install(std::shared_ptr<Job> job, ModelEntry entry, std::string variant,
                               std::vector<std::string> damage) {
  // Every way out goes into the history (action install, to "VERSION/VARIANT",
  // as RemoveModel's and gc's entries name a variant; a repair from the same)
  // before the job's final state is visible: whoever sees it done can read how
  // it ended.
  const bool repair = !damage.empty();
  const std::string to = entry.version() + "/" + variant;
  const std::string from = repair ? to : std::string();
  std::string damaged;  // the first few problems, for the history
  for (std::size_t i = 0; i < damage.size() && i < 3; ++i) {
    damaged += (i == 0 ? "" : "; ") + damage[i];
  }
  if (damage.size() > 3) damaged += "; and " + std::to_string(damage.size() - 3) + " more";
  auto end = [&](const catalog::Result<void>& done) {
    const auto snap = job->snapshot();
    const auto fields = job_log_fields(snap);
    if (done) {
      record(
          snap.starter, HistoryAction::install, entry.name(), from, to, "ok",
          repair ? "repaired: " + damaged : "model variant installed from remote " + entry.remote,
          fields);
      job->succeed();
      if (listener_) listener_->providers_changed();  // what is installed changed
    } else {
      log::warn("model {} {} ({}): {}", entry.name(), entry.version(), variant,
                done.error().message);
      const Error err(done.error());
      record(snap.starter, HistoryAction::install, entry.name(), from, to, result_name(err),
             (repair ? "repair failed: " : "") + public_message(err), fields);
      job->fail(done.error());
    }
  };
  const config::Remote* remote = find_remote(options_.config, entry.remote);
  if (remote == nullptr) {
    end(catalog::fail(catalog::Errc::not_found,
                      "remote " + entry.remote + " is no longer configured"));
    return;
  }
  // 1. Refresh (metadata older than its timestamp gets updated) by asking for
  //    the card: the committer verifies the chain the daemon persisted.
  job->set_state(JobState::downloading);
  auto fetcher = options_.fetcher_factory(*remote);
  ProgressFetcher progress(*fetcher, *job, 0);
  auto ucfg = updater_config(options_.config, *remote, *job);
  if (auto ok = ensure_trusted_root(*remote, ucfg.metadata_dir); !ok) {
    end(std::unexpected(ok.error()));
    return;
  }
  catalog::tuf::Updater updater(ucfg, progress);
  auto card = updater.get_targetinfo(entry.target_path);
  if (!card) {
    end(std::unexpected(card.error()));
    return;
  }
  auto meta = catalog::parse_model_metadata(card->custom);
  if (!meta) {
    end(std::unexpected(meta.error()));
    return;
  }
  const auto v = std::ranges::find(meta->variants, variant, &catalog::ModelVariant::id);
  if (v == meta->variants.end()) {
    end(catalog::fail(catalog::Errc::not_found,
                      "the signed card no longer lists variant " + variant));
    return;
  }
  // 2. Progress over the contents store/_blobs lacks now (what the committer will
  //    ask for, unless the store changes meanwhile: a blob it asks for beyond
  //    these, e.g. a damaged one in a repair, adds its length).
  std::set<std::string> expected;
  std::uint64_t total = 0;
  const fs::path blobs_dir = store_.store_dir() / store::kBlobsDirName / "sha256";
  for (const auto& f : v->files) {
    std::error_code ec;
    if (fs::is_regular_file(blobs_dir / f.sha256, ec)) continue;
    if (expected.insert(f.sha256).second) total += f.size;
  }
  progress.set_total(total);
  job->set_progress(0, total);
  // 3. The committer asks for each blob it lacks: downloaded (capped and hashed
  //    against its signed target NAME/blobs/<sha256>), handed over as an open
  //    descriptor of the unlinked file; it copies and checks the bytes again.
  store::BlobSource blobs = [&](const std::string& sha256) -> catalog::Result<catalog::UniqueFd> {
    auto info = updater.get_targetinfo(catalog::model_blob_path(entry.name(), sha256));
    if (!info) return std::unexpected(info.error());
    if (!expected.contains(sha256)) {
      total += info->length;
      progress.set_total(total);
    }
    auto file = updater.download_target(*info);
    if (!file) return std::unexpected(file.error());
    catalog::UniqueFd fd(::open(file->c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    std::error_code ec;
    fs::remove(*file, ec);
    if (!fd.valid()) return catalog::fail(catalog::Errc::io, "open the downloaded blob " + sha256);
    return fd;
  };
  catalog::UniqueFd metadata_fd(
      ::open(ucfg.metadata_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!metadata_fd.valid()) {
    end(catalog::fail(catalog::Errc::io, "open the trusted metadata for the commit"));
    return;
  }
  auto installed = options_.committer->install_model(
      {entry.remote, entry.target_path, variant, repair, metadata_fd.get()}, blobs,
      [&](store::InstallPhase, std::uint64_t, std::uint64_t) {
        job->set_state(JobState::installing);
      },
      job->stop_token());
  if (!installed) {
    // A download the cancel stopped says cancelled, whatever the committer made of it.
    if (job->cancel_requested()) {
      end(catalog::fail(catalog::Errc::cancelled, "cancelled"));
    } else {
      end(std::unexpected(installed.error()));
    }
    return;
  }
  // 4. The store as the disk now says.
  if (auto ok = store_.reload(); !ok) {
    end(std::unexpected(ok.error()));
    return;
  }
  if (!store_.find_model(entry.name(), entry.version(), variant)) {
    end(catalog::fail(catalog::Errc::io, "the committed variant is not in the store"));
    return;
  }
  job->set_progress(total, total);
  end({});
}

}  // namespace epbrokerd::core
