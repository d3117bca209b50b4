// commit_install(), commit_remove(): see commit.hpp.
#include "daemon/commit/commit.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include "catalog/atomic_file.hpp"
#include "catalog/crypto/hash.hpp"
#include "catalog/ep_metadata.hpp"
#include "catalog/name_binding.hpp"
#include "catalog/tuf/updater.hpp"
#include "catalog/unique_fd.hpp"
#include "catalog/version.hpp"
#include "daemon/commit/commit_steps.hpp"
#include "daemon/commit/handoff_fetcher.hpp"
#include "daemon/store/installed.hpp"

namespace epbrokerd::commit {
namespace {

namespace fs = std::filesystem;
using catalog::Errc;
using catalog::fail;
using catalog::Result;

constexpr std::uint64_t kMaxAnchorBytes = 512'000;

const config::Remote* find_remote(const CommitEnv& env, std::string_view name) {
  for (const auto& r : env.remotes) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

Result<void> make_private_dir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return fail(catalog::errno_code(ec.value()), "create " + dir.string() + ": " + ec.message());
  if (::chmod(dir.c_str(), 0700) != 0) {
    return fail(catalog::errno_code(errno), "chmod " + dir.string());
  }
  return {};
}

// Step 1: trust/<remote>/metadata holds this side's trusted metadata, grown from
// the configured anchor. A different anchor than the one recorded (the admin
// replaced the root file, or `remote reset`) starts it over from that anchor.
Result<fs::path> trusted_metadata_dir(const CommitEnv& env, const config::Remote& remote) {
  auto anchor = catalog::read_file(remote.trusted_root, kMaxAnchorBytes);
  if (!anchor) {
    return fail(anchor.error().code, "remote " + remote.name + ": trust anchor " +
                                         remote.trusted_root.string() + ": " +
                                         anchor.error().message);
  }
  const fs::path base = env.store_root / "trust" / remote.name;
  const fs::path metadata = base / "metadata";
  const std::string digest = catalog::crypto::sha256_hex(*anchor) + "\n";
  auto recorded = catalog::read_file(base / "anchor.sha256", 1024);
  if (recorded && *recorded == digest && fs::exists(metadata / "root.json")) return metadata;
  std::error_code ec;
  fs::remove_all(metadata, ec);
  for (const fs::path& dir : {base.parent_path(), base, metadata}) {
    if (auto ok = make_private_dir(dir); !ok) return std::unexpected(ok.error());
  }
  if (auto ok = catalog::atomic_write_file(metadata / "root.json", *anchor); !ok) {
    return std::unexpected(ok.error());
  }
  if (auto ok = catalog::atomic_write_file(base / "anchor.sha256", digest); !ok) {
    return std::unexpected(ok.error());
  }
  return metadata;
}

// Holds an exclusive flock on `path` (created) while it lives.
class FileLock {
 public:
  static Result<FileLock> take(const fs::path& path) {
    FileLock l;
    l.fd_ =
        catalog::UniqueFd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!l.fd_.valid()) return fail(catalog::errno_code(errno), "open " + path.string());
    while (::flock(l.fd_.get(), LOCK_EX) != 0) {
      if (errno != EINTR) return fail(Errc::io, "lock " + path.string());
    }
    return l;
  }

 private:
  catalog::UniqueFd fd_;
};

}  // namespace

namespace detail {

// Step 4: the store, waiting while another commit holds it.
Result<store::Store> open_store(const CommitEnv& env) {
  store::StoreOptions options;
  options.limits = env.limits;
  const auto deadline = std::chrono::steady_clock::now() + env.lock_wait;
  for (;;) {
    auto s = store::Store::open(env.store_root, options);
    if (s || s.error().code != Errc::busy || std::chrono::steady_clock::now() >= deadline) {
      return s;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// Step 3: copies `from` (the daemon's descriptor: a pipe the download streams
// into, or its file; either can change at will) into an anonymous file of our
// own, at most `info.length` bytes, hashing what it writes; the copy must have
// exactly the signed length and hashes. Nothing here parses a byte. A stream
// that brings nothing for `idle` ends the copy (Errc::network). Returns the
// descriptor of the copy, which only this process can reach.
Result<Copy> copy_verified(int from, const fs::path& dir, const catalog::tuf::TargetFile& info,
                           std::chrono::milliseconds idle, std::stop_token stop) {
  struct stat st {};
  if (::fstat(from, &st) != 0 || !(S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode))) {
    return fail(Errc::invalid_argument,
                info.path + ": the package handed over is neither a file nor a pipe");
  }
  if (info.hashes.empty()) return fail(Errc::bad_field, info.path + ": no hashes");
  std::vector<std::pair<std::string, catalog::crypto::Hasher>> hashers;
  for (const auto& [name, _] : info.hashes) {
    auto algo = catalog::crypto::hash_algo_from_name(name);
    if (!algo) return fail(Errc::hash_mismatch, info.path + ": " + algo.error().message);
    hashers.emplace_back(name, catalog::crypto::Hasher(*algo));
  }
  Copy result;
  result.fd = catalog::UniqueFd(::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
  if (!result.fd.valid()) {
    // No O_TMPFILE on this filesystem (overlayfs before Linux 6.6): a named one.
    std::string tmpl = (dir / ".commit-XXXXXX").string();
    result.fd = catalog::UniqueFd(::mkostemp(tmpl.data(), O_CLOEXEC));
    if (!result.fd.valid()) {
      return fail(catalog::errno_code(errno), "create a file in " + dir.string());
    }
    result.named = tmpl;
  }
  auto discard = [&](catalog::Error e) {
    if (!result.named.empty()) ::unlink(result.named.c_str());
    return std::unexpected(std::move(e));
  };
  const int out = result.fd.get();
  const bool file = S_ISREG(st.st_mode);
  std::vector<std::byte> buf(std::size_t{1} << 20);
  std::uint64_t total = 0;
  auto last_byte = std::chrono::steady_clock::now();
  for (;;) {
    if (stop.stop_requested()) return discard({Errc::cancelled, "cancelled"});
    ssize_t n = 0;
    if (file) {
      // pread from our own offset: the daemon may move the shared file offset.
      n = ::pread(from, buf.data(), buf.size(), static_cast<off_t>(total));
    } else {
      pollfd p{from, POLLIN, 0};
      if (::poll(&p, 1, 200) == 0) {
        if (std::chrono::steady_clock::now() - last_byte > idle) {
          return discard({Errc::network, info.path + ": the package stream stalled"});
        }
        continue;
      }
      n = ::read(from, buf.data(), buf.size());
      if (n < 0 && errno == EAGAIN) continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return discard({Errc::io, info.path + ": read of the handed-over package failed"});
    if (n == 0) break;
    last_byte = std::chrono::steady_clock::now();
    const auto chunk = std::span(buf.data(), static_cast<std::size_t>(n));
    if (total + chunk.size() > info.length) {
      return discard({Errc::length_mismatch, info.path + ": more than the signed " +
                                                 std::to_string(info.length) + " bytes"});
    }
    for (auto& [_, h] : hashers) h.update(chunk);
    for (std::size_t done = 0; done < chunk.size();) {
      const ssize_t w = ::write(out, chunk.data() + done, chunk.size() - done);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) {
        const int err = errno;
        return discard({catalog::errno_code(err), "write a copy of " + info.path + " in " +
                                                      dir.string() + ": " + std::strerror(err)});
      }
      done += static_cast<std::size_t>(w);
    }
    total += chunk.size();
  }
  if (total != info.length) {
    return discard({Errc::length_mismatch, info.path + ": " + std::to_string(total) +
                                               " bytes, not the signed " +
                                               std::to_string(info.length)});
  }
  for (auto& [name, h] : hashers) {
    if (h.finish_hex() != info.hashes.at(name)) {
      return discard(
          {Errc::hash_mismatch, info.path + ": " + name + " differs from the signed one"});
    }
  }
  return result;
}

Result<void> with_trusted_updater(const CommitEnv& env, std::string_view remote_name,
                                  int metadata_dir_fd, std::stop_token stop,
                                  const std::function<Result<void>(catalog::tuf::Updater&)>& use) {
  const config::Remote* remote = find_remote(env, remote_name);
  if (remote == nullptr) return fail(Errc::not_found, "no remote " + std::string(remote_name));
  if (auto ok = make_private_dir(env.store_root / "trust"); !ok) return std::unexpected(ok.error());
  auto lock = FileLock::take(env.store_root / "trust" / ".lock");
  if (!lock) return std::unexpected(lock.error());
  auto metadata_dir = trusted_metadata_dir(env, *remote);
  if (!metadata_dir) return std::unexpected(metadata_dir.error());
  // The TUF workflow over what the daemon handed over.
  HandoffFetcher fetcher(metadata_dir_fd);
  catalog::tuf::UpdaterConfig ucfg;
  ucfg.metadata_dir = *metadata_dir;
  ucfg.metadata_base_url = std::string(kHandoffBaseUrl);
  ucfg.target_base_url = std::string(kHandoffBaseUrl);
  ucfg.retry.attempts = 1;
  ucfg.cancel = [&stop] { return stop.stop_requested(); };
  if (env.now) ucfg.now = std::chrono::time_point_cast<std::chrono::seconds>(*env.now);
  catalog::tuf::Updater updater(ucfg, fetcher);
  if (auto ok = updater.refresh(); !ok) {
    auto e = ok.error();
    e.message = "remote " + remote->name + ": " + e.message;
    return std::unexpected(std::move(e));
  }
  return use(updater);
}

}  // namespace detail

using detail::copy_verified;
using detail::open_store;

Result<store::InstalledPackage> commit_install(const CommitEnv& env,
                                               const store::CommitInstall& request,
                                               const store::InstallProgress& progress,
                                               std::stop_token stop) {
  // 1. The remote and this side's trust in it (detail::with_trusted_updater()).
  catalog::tuf::TargetFile info;
  catalog::EpMetadata meta;
  auto verified = detail::with_trusted_updater(
      env, request.remote, request.metadata_dir_fd, stop,
      [&](catalog::tuf::Updater& updater) -> Result<void> {
        // 2. The target, what it claims, and whether its signer may claim that name.
        auto found = updater.get_targetinfo(request.target_path);
        if (!found) return std::unexpected(found.error());
        auto parsed = catalog::parse_ep_metadata(found->custom);
        if (!parsed) return std::unexpected(parsed.error());
        if (auto ok = catalog::check_name_binding(parsed->name, found->path); !ok) {
          return std::unexpected(ok.error());
        }
        info = std::move(*found);
        meta = std::move(*parsed);
        return {};
      });
  if (!verified) return std::unexpected(verified.error());
  // 3. Our own verified copy, taken as the bytes arrive (a streamed download:
  //    no lock held, so another commit waiting never stalls this download).
  auto copy = copy_verified(request.package_fd, env.store_root, info, env.stream_idle, stop);
  if (!copy) return std::unexpected(copy.error());
  // 4. The store (its lock waited for, its recovery run); 5. installed from the
  //    copy, named in staging/ for the install (and for recovery, should we die).
  auto s = open_store(env);
  if (!s) return std::unexpected(s.error());
  const auto slash = info.path.rfind('/');
  const fs::path named = s->staging_dir() / ("package-" + info.path.substr(slash + 1));
  const std::string self = "/proc/self/fd/" + std::to_string(copy->fd.get());
  const int linked = copy->named.empty() ? ::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, named.c_str(),
                                                    AT_SYMLINK_FOLLOW)
                                         : ::rename(copy->named.c_str(), named.c_str());
  if (linked != 0) {
    const int err = errno;
    if (!copy->named.empty()) ::unlink(copy->named.c_str());
    return fail(catalog::errno_code(err),
                "put the copy at " + named.string() + ": " + std::strerror(err));
  }
  auto installed = s->install(named, meta, progress, stop);
  std::error_code ec;
  fs::remove(named, ec);
  return installed;
}

Result<void> commit_remove(const CommitEnv& env, std::string_view name,
                           std::optional<std::string_view> version) {
  if (!store::is_storable_name(name) ||
      (version &&
       (!catalog::parse_version(*version) || version->find('/') != std::string_view::npos))) {
    return fail(Errc::invalid_argument, "remove: not a package name and version");
  }
  auto s = open_store(env);
  if (!s) return std::unexpected(s.error());
  auto gone = s->remove(name, version, /*even_if_leased=*/true);
  if (!gone) return std::unexpected(gone.error());
  return {};
}

Result<void> commit_recover(const CommitEnv& env) {
  // Busy: a commit holds the store, and recovered it when it opened it.
  store::StoreOptions options;
  options.limits = env.limits;
  auto s = store::Store::open(env.store_root, options);
  if (!s && s.error().code != Errc::busy) return std::unexpected(s.error());
  return {};
}

}  // namespace epbrokerd::commit
