// Updater's target side: cached targets, and downloads that resume, retry and
// fall through mirrors (the metadata workflow is in updater.cpp).
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <span>
#include <utility>
#include <vector>

#include "catalog/atomic_file.hpp"
#include "catalog/crypto/hash.hpp"
#include "catalog/tuf/updater.hpp"
#include "catalog/unique_fd.hpp"

namespace catalog::tuf {

namespace {

using Hashers = std::vector<std::pair<std::string, crypto::Hasher>>;

// Hashers for every listed algorithm; an unknown one fails like a mismatch.
Result<Hashers> make_hashers(const TargetFile& info) {
  Hashers out;
  for (const auto& [name, _] : info.hashes) {
    auto algo = crypto::hash_algo_from_name(name);
    if (!algo) return fail(Errc::hash_mismatch, info.path + ": " + algo.error().message);
    out.emplace_back(name, crypto::Hasher(*algo));
  }
  return out;
}

// The partial download on disk: its bytes so far, hashed as they were written.
// Owns the descriptor (and the flock on it).
class Partial {
 public:
  Partial(int fd, std::string file, const TargetFile& info, Hashers hashers)
      : fd_(fd), file_(std::move(file)), info_(info), hashers_(std::move(hashers)) {}
  Partial(const Partial&) = delete;
  Partial& operator=(const Partial&) = delete;

  int fd() const { return fd_.get(); }
  std::uint64_t size() const { return size_; }

  // Takes over what a previous download left: hashes it. A prefix longer than the
  // target, or one that cannot be read, is dropped.
  Result<void> load() {
    struct stat st {};
    if (::fstat(fd_.get(), &st) != 0) return io_error("stat");
    const auto on_disk = static_cast<std::uint64_t>(st.st_size);
    if (on_disk == 0 || on_disk > info_.length) return restart();
    std::vector<char> buf(1 << 16);
    while (size_ < on_disk) {
      ssize_t n = ::pread(fd_.get(), buf.data(), buf.size(), static_cast<off_t>(size_));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return restart();
      for (auto& [_, h] : hashers_)
        h.update(std::string_view(buf.data(), static_cast<std::size_t>(n)));
      size_ += static_cast<std::uint64_t>(n);
    }
    return {};
  }

  // Back to zero bytes and fresh hashers.
  Result<void> restart() {
    if (::ftruncate(fd_.get(), 0) != 0) return io_error("truncate");
    size_ = 0;
    auto fresh = make_hashers(info_);
    if (!fresh) return std::unexpected(fresh.error());
    hashers_ = std::move(*fresh);
    return {};
  }

  // Appends one chunk, never past the signed length.
  Result<void> append(std::span<const std::byte> chunk) {
    if (chunk.size() > info_.length - size_) {
      return fail(Errc::length_mismatch,
                  info_.path + ": more than the signed " + std::to_string(info_.length) + " bytes");
    }
    for (auto& [_, h] : hashers_) h.update(chunk);
    const auto* p = reinterpret_cast<const char*>(chunk.data());
    std::size_t left = chunk.size();
    while (left > 0) {
      ssize_t n = ::pwrite(fd_.get(), p, left, static_cast<off_t>(size_));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return io_error("write");
      p += n;
      left -= static_cast<std::size_t>(n);
      size_ += static_cast<std::uint64_t>(n);
    }
    return {};
  }

  // Exactly the signed length and every hash. Either way the hashers are spent:
  // after a failure, restart() before anything else.
  Result<void> check() {
    if (size_ != info_.length) {
      return fail(Errc::length_mismatch, info_.path + ": got " + std::to_string(size_) +
                                             " bytes, signed length " +
                                             std::to_string(info_.length));
    }
    bool all = true;
    std::string which;
    for (auto& [name, h] : hashers_) {
      if (h.finish_hex() != info_.hashes.at(name) && all) {
        all = false;
        which = name;
      }
    }
    if (!all) return fail(Errc::hash_mismatch, info_.path + ": " + which + " does not match");
    return {};
  }

 private:
  std::unexpected<Error> io_error(const char* what) const {
    const int e = errno;
    return fail(errno_code(e), std::string(what) + " " + file_ + ": " + std::strerror(e));
  }

  UniqueFd fd_;
  std::string file_;
  const TargetFile& info_;
  Hashers hashers_;
  std::uint64_t size_ = 0;
};

bool is_data_mismatch(Errc code) {
  return code == Errc::length_mismatch || code == Errc::hash_mismatch;
}

}  // namespace

std::filesystem::path Updater::default_path(const TargetFile& info) const {
  return config_.target_dir / url_quote(info.path, false);
}

std::filesystem::path Updater::partial_path(const TargetFile& info,
                                            std::optional<std::filesystem::path> path) const {
  const auto dest = path ? *path : default_path(info);
  std::string id = url_quote(info.path, false);
  if (auto it = info.hashes.find("sha256"); it != info.hashes.end()) {
    id = it->second;
  } else if (!info.hashes.empty()) {
    id = info.hashes.begin()->second;
  }
  // Quoted: a signed hash value is still never a path.
  return dest.parent_path() / (url_quote(id, false) + ".part");
}

std::optional<std::filesystem::path> Updater::find_cached_target(
    const TargetFile& info, std::optional<std::filesystem::path> path) const {
  const auto p = path ? *path : default_path(info);
  auto bytes = read_file(p, info.length);
  if (!bytes) return std::nullopt;
  if (!verify_length_and_hashes(info.path, *bytes, info.length, info.hashes)) return std::nullopt;
  return p;
}

Result<std::filesystem::path> Updater::download_target(const TargetFile& info,
                                                       std::optional<std::filesystem::path> path) {
  const auto dest = path ? *path : default_path(info);
  if (info.hashes.empty()) return fail(Errc::bad_field, info.path + ": no hashes");
  auto hashers = make_hashers(info);
  if (!hashers) return std::unexpected(hashers.error());
  // 1. Path below each mirror's base: with consistent snapshots <hash>.<name>.
  std::string rel = info.path;
  if (trusted_ && trusted_->root().signed_.consistent_snapshot) {
    auto slash = rel.rfind('/');
    std::string dir = slash == std::string::npos ? "" : rel.substr(0, slash + 1);
    std::string base = slash == std::string::npos ? rel : rel.substr(slash + 1);
    rel = dir + info.hashes.begin()->second + "." + base;
  }
  rel = url_quote(rel, true);

  // 2. The partial file, locked for this download, its prefix hashed.
  std::error_code ec;
  std::filesystem::create_directories(dest.parent_path(), ec);
  const std::string part = partial_path(info, path).string();
  int fd = ::open(part.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) {
    const int e = errno;
    return fail(errno_code(e), "open " + part + ": " + std::strerror(e));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK) {
      return fail(Errc::busy, info.path + ": another download of it is in progress");
    }
    return fail(Errc::io, "lock " + part + ": " + std::strerror(err));
  }
  Partial partial(fd, part, info, std::move(*hashers));
  auto finish_failed = [&](Error e) -> Result<std::filesystem::path> {
    // Only an interrupted download keeps its bytes for the next call.
    const bool interrupted = e.code == Errc::network || e.code == Errc::cancelled;
    if (!interrupted || partial.size() == 0) ::unlink(part.c_str());
    return std::unexpected(std::move(e));
  };
  if (auto ok = partial.load(); !ok) return finish_failed(ok.error());

  // 3. Each mirror in turn, with retries; each try resumes from the partial file.
  bool restarted = false;  // the one restart from zero after a resumed mismatch
  auto try_mirror = [&](std::size_t i) -> Result<void> {
    // Complete already (a crash before the rename, or a transfer cut after its
    // last byte): verify instead of asking for nothing.
    if (partial.size() == info.length && partial.size() > 0) {
      if (partial.check()) return {};
      if (auto ok = partial.restart(); !ok) return ok;
    }
    const std::string url = mirrors_[i].target_base_url + rel;
    bool resumed = false;
    auto on_start = [&](std::uint64_t start) -> Result<void> {
      resumed = start > 0;
      return start == partial.size() ? Result<void>() : partial.restart();
    };
    auto sink = [&](std::span<const std::byte> chunk) -> Result<void> {
      if (config_.cancel && config_.cancel()) return fail(Errc::cancelled, "cancelled");
      return partial.append(chunk);
    };
    auto fetch = [&]() -> Result<void> {
      if (auto ok = fetcher_.fetch_from(url, partial.size(), info.length, on_start, sink); !ok) {
        return ok;
      }
      return partial.check();
    };
    auto r = fetch();
    if (!r && resumed && !restarted && is_data_mismatch(r.error().code)) {
      // The prefix we resumed from (a crash may have left junk in it) could be
      // what is wrong rather than this mirror: once more from zero.
      restarted = true;
      if (auto ok = partial.restart(); !ok) return ok;
      r = fetch();
    }
    if (!r && mirror_verdict(r.error().code) == MirrorVerdict::next) {
      // This mirror's bytes are refused: none of them is resumed from.
      if (auto ok = partial.restart(); !ok) return ok;
    }
    return r;
  };
  if (auto ok = try_mirrors(mirrors_.size(), config_.retry, config_.cancel, try_mirror); !ok) {
    return finish_failed(ok.error());
  }

  // 4. Durable, then visible under its final name.
  if (::fsync(partial.fd()) != 0) {
    const int e = errno;
    return finish_failed({errno_code(e), "fsync " + part + ": " + std::strerror(e)});
  }
  ::fchmod(partial.fd(), 0644);
  if (::rename(part.c_str(), dest.c_str()) != 0) {
    return finish_failed({Errc::io, "rename to " + dest.string() + ": " + std::strerror(errno)});
  }
  (void)fsync_dir(dest.parent_path());
  return dest;
}

}  // namespace catalog::tuf
