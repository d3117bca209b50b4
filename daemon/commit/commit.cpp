// commit_install(), commit_remove(): see commit.hpp.
#include "daemon/commit/commit.hpp"

#include <fcntl.h>
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

// Step 5: copies `from` (the daemon's descriptor: any kind of file, changing at
// will) into a fresh file in `dir`, at most `info.length` + 1 bytes, hashing what
// it writes; the copy must have exactly the signed length and hashes. Returns
// the path of the copy, which only this side can reach.
Result<fs::path> copy_verified(int from, const fs::path& dir, const catalog::tuf::TargetFile& info,
                               std::stop_token stop) {
  struct stat st {};
  if (::fstat(from, &st) != 0 || !S_ISREG(st.st_mode)) {
    return fail(Errc::invalid_argument,
                info.path + ": the package handed over is not a regular file");
  }
  if (info.hashes.empty()) return fail(Errc::bad_field, info.path + ": no hashes");
  std::vector<std::pair<std::string, catalog::crypto::Hasher>> hashers;
  for (const auto& [name, _] : info.hashes) {
    auto algo = catalog::crypto::hash_algo_from_name(name);
    if (!algo) return fail(Errc::hash_mismatch, info.path + ": " + algo.error().message);
    hashers.emplace_back(name, catalog::crypto::Hasher(*algo));
  }
  std::string tmpl = (dir / "commit-XXXXXX").string();
  catalog::UniqueFd out(::mkostemp(tmpl.data(), O_CLOEXEC));
  if (!out.valid()) return fail(catalog::errno_code(errno), "create " + tmpl);
  const fs::path copy = tmpl;
  auto discard = [&](catalog::Error e) {
    ::unlink(copy.c_str());
    return std::unexpected(std::move(e));
  };
  std::vector<std::byte> buf(std::size_t{1} << 20);
  std::uint64_t total = 0;
  for (;;) {
    if (stop.stop_requested()) return discard({Errc::cancelled, "cancelled"});
    // pread from our own offset: the daemon may move the shared file offset.
    const ssize_t n = ::pread(from, buf.data(), buf.size(), static_cast<off_t>(total));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return discard({Errc::io, info.path + ": read of the handed-over package failed"});
    if (n == 0) break;
    const auto chunk = std::span(buf.data(), static_cast<std::size_t>(n));
    if (total + chunk.size() > info.length) {
      return discard({Errc::length_mismatch, info.path + ": more than the signed " +
                                                 std::to_string(info.length) + " bytes"});
    }
    for (auto& [_, h] : hashers) h.update(chunk);
    for (std::size_t done = 0; done < chunk.size();) {
      const ssize_t w = ::write(out.get(), chunk.data() + done, chunk.size() - done);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) {
        const int err = errno;
        return discard(
            {catalog::errno_code(err), "write " + copy.string() + ": " + std::strerror(err)});
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
  return copy;
}

}  // namespace

Result<store::InstalledPackage> commit_install(const CommitEnv& env,
                                               const store::CommitInstall& request,
                                               const store::InstallProgress& progress,
                                               std::stop_token stop) {
  // 1. The remote and this side's trust in it. The store's lock (step 4) is
  //    taken first: it serializes commits, and with them every change of trust/.
  const config::Remote* remote = find_remote(env, request.remote);
  if (remote == nullptr) return fail(Errc::not_found, "no remote " + request.remote);
  auto s = open_store(env);
  if (!s) return std::unexpected(s.error());
  auto metadata_dir = trusted_metadata_dir(env, *remote);
  if (!metadata_dir) return std::unexpected(metadata_dir.error());
  // 2. The TUF workflow over what the daemon handed over.
  HandoffFetcher fetcher(request.metadata_dir_fd);
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
  // 3. The target, what it claims, and whether its signer may claim that name.
  auto info = updater.get_targetinfo(request.target_path);
  if (!info) return std::unexpected(info.error());
  auto meta = catalog::parse_ep_metadata(info->custom);
  if (!meta) return std::unexpected(meta.error());
  if (auto ok = catalog::check_name_binding(meta->name, info->path); !ok) {
    return std::unexpected(ok.error());
  }
  // 5. Our own verified copy; 6. installed from it.
  auto copy = copy_verified(request.package_fd, s->staging_dir(), *info, stop);
  if (!copy) return std::unexpected(copy.error());
  auto installed = s->install(*copy, *meta, progress, stop);
  std::error_code ec;
  fs::remove(*copy, ec);
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
