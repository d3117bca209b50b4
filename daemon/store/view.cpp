// A Store that only reads store/ (Store::open_view()): the daemon's, when the
// commit helper owns store/. Its changes go through the Committer; after each,
// the index is read again from the disk.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <cerrno>
#include <memory>
#include <utility>

#include "daemon/store/committer.hpp"
#include "daemon/store/fs_ops.hpp"
#include "daemon/store/store.hpp"
#include "daemon/store/store_impl.hpp"

namespace epbrokerd::store {
namespace {

namespace fs = std::filesystem;
using catalog::Errc;
using catalog::fail;
using catalog::Result;
using detail::sys_error;

}  // namespace

Result<Store> Store::open_view(const fs::path& store_root, const fs::path& lock_file,
                               std::shared_ptr<Committer> committer) {
  if (!committer) return fail(Errc::invalid_argument, "a store view needs a committer");
  auto impl = std::make_unique<Impl>();
  if (auto ok = impl->set_layout(store_root, "store root"); !ok) {
    return std::unexpected(std::move(ok.error()));
  }
  impl->committer = std::move(committer);
  std::error_code ec;
  // 1. One view per lock file (one daemon holds the leases), as open() locks store/.
  fs::create_directories(lock_file.parent_path(), ec);
  impl->lock_fd =
      catalog::UniqueFd(::open(lock_file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!impl->lock_fd.valid()) return sys_error("open", lock_file);
  if (::flock(impl->lock_fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) {
      return fail(Errc::busy, lock_file.string() + " is in use by another Store");
    }
    return sys_error("lock", lock_file);
  }
  // 2. The index, from the disk alone, writing nothing.
  if (auto ok = impl->rebuild_index(/*repair=*/false); !ok) {
    return std::unexpected(std::move(ok.error()));
  }
  return Store(std::move(impl));
}

Result<void> Store::reload() {
  Impl& s = *impl_;
  if (!s.committer) return fail(Errc::invalid_argument, "reload: not a store view");
  std::lock_guard lock(s.mu);
  return s.reload_locked();
}

Result<void> Store::Impl::reload_locked() {
  auto before = std::move(index);
  auto models_before = std::move(models);
  index.clear();
  models.clear();
  if (auto ok = rebuild_index(/*repair=*/false); !ok) {
    index = std::move(before);
    models = std::move(models_before);
    return ok;
  }
  return {};
}

Result<InstalledPackage> Store::commit(const CommitInstall& request,
                                       const InstallProgress& progress, std::stop_token stop) {
  Impl& s = *impl_;
  if (!s.committer) return fail(Errc::invalid_argument, "commit: not a store view");
  auto installed = s.committer->install(request, progress, stop);
  // Whatever the answer, the disk is the truth now.
  if (auto ok = reload(); !ok) return std::unexpected(std::move(ok.error()));
  if (!installed) return std::unexpected(std::move(installed.error()));
  auto found = find(installed->name(), installed->version());
  if (!found) {
    return fail(Errc::io, "the committer reported " + installed->name() + " " +
                              installed->version() + " installed, but the store does not hold it");
  }
  return std::move(*found);
}

}  // namespace epbrokerd::store
