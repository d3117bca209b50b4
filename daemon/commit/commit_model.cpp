// commit_install_model(), commit_remove_model(), LocalCommitter's model calls:
// see commit_model.hpp.
#include "daemon/commit/commit_model.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <set>
#include <vector>

#include "catalog/crypto/hash.hpp"
#include "catalog/model_metadata.hpp"
#include "catalog/name_binding.hpp"
#include "catalog/version.hpp"
#include "daemon/commit/commit_steps.hpp"
#include "daemon/store/installed.hpp"
#include "daemon/store/model_store.hpp"

namespace epbrokerd::commit {
namespace {

namespace fs = std::filesystem;
using catalog::Errc;
using catalog::fail;
using catalog::Result;

// The SHA-256 of the file at `path` (not following a symlink), or "" when it
// cannot be read.
std::string hash_stored(const fs::path& path) {
  const catalog::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) return "";
  catalog::crypto::Hasher h(catalog::crypto::HashAlgo::sha256);
  std::vector<std::byte> buf(std::size_t{1} << 20);
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return "";
    if (n == 0) break;
    h.update(std::span(buf.data(), static_cast<std::size_t>(n)));
  }
  return h.finish_hex();
}

// Unlinks the named copies (filesystems without O_TMPFILE) when it goes.
struct Copies {
  std::map<std::string, detail::Copy> by_sha;
  ~Copies() {
    for (auto& [_, c] : by_sha) {
      if (!c.named.empty()) ::unlink(c.named.c_str());
    }
  }
};

// A BlobFeed over a BlobSource: asks it for each needed blob in turn.
class SourceFeed : public BlobFeed {
 public:
  explicit SourceFeed(const store::BlobSource& source) : source_(source) {}
  Result<void> need(const std::vector<std::string>& sha256s) override {
    need_ = sha256s;
    return {};
  }
  Result<std::optional<std::pair<std::string, catalog::UniqueFd>>> next(std::stop_token) override {
    if (next_ >= need_.size()) return std::nullopt;
    const std::string& sha = need_[next_++];
    if (!source_) return fail(Errc::invalid_argument, "no source for blob " + sha);
    auto fd = source_(sha);
    if (!fd) return std::unexpected(fd.error());
    return std::make_optional(std::make_pair(sha, std::move(*fd)));
  }

 private:
  const store::BlobSource& source_;
  std::vector<std::string> need_;
  std::size_t next_ = 0;
};

}  // namespace

bool is_vanished_blob(const catalog::Error& e) {
  return e.code == Errc::busy && e.message.starts_with(kVanishedBlob);
}

bool is_variant_id(std::string_view id) {
  if (id.empty() || id.size() > catalog::kMaxVariantIdLength) return false;
  const auto lower_digit = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!lower_digit(id.front())) return false;
  return std::all_of(id.begin(), id.end(),
                     [&](char c) { return lower_digit(c) || c == '.' || c == '_' || c == '-'; });
}

Result<store::InstalledModel> commit_install_model(const CommitEnv& env,
                                                   const store::CommitModelInstall& request,
                                                   BlobFeed& feed,
                                                   const store::InstallProgress& progress,
                                                   std::stop_token stop) {
  // 1-2. The signed card, its name, its files, the variant.
  catalog::tuf::TargetFile card;
  catalog::ModelMetadata meta;
  std::map<std::string, catalog::tuf::TargetFile> blob_targets;  // sha256 -> its signed target
  auto verified = detail::with_trusted_updater(
      env, request.remote, request.metadata_dir_fd, stop,
      [&](catalog::tuf::Updater& updater) -> Result<void> {
        auto found = updater.get_targetinfo(request.target_path);
        if (!found) return std::unexpected(found.error());
        auto parsed = catalog::parse_model_metadata(found->custom);
        if (!parsed) return std::unexpected(parsed.error());
        if (auto ok = catalog::check_name_binding(parsed->name, found->path); !ok) {
          return std::unexpected(ok.error());
        }
        const catalog::ModelVariant* variant = store::find_variant(*parsed, request.variant);
        if (variant == nullptr) {
          return fail(Errc::not_found, "model " + parsed->name + " " + parsed->version.text + " (" +
                                           found->path + ") has no variant \"" + request.variant +
                                           "\"");
        }
        std::set<std::string> wanted;
        for (const auto& f : variant->files) wanted.insert(f.sha256);
        auto lookup = [&](std::string_view path) -> std::optional<catalog::ModelTargetInfo> {
          auto t = updater.get_targetinfo(std::string(path));
          if (!t) return std::nullopt;
          catalog::ModelTargetInfo out{t->length, ""};
          if (auto h = t->hashes.find("sha256"); h != t->hashes.end()) out.sha256 = h->second;
          const auto slash = path.rfind('/');
          const std::string sha(path.substr(slash + 1));
          if (wanted.contains(sha)) blob_targets[sha] = std::move(*t);
          return out;
        };
        if (auto ok = catalog::check_model_targets(*parsed, lookup); !ok) {
          return std::unexpected(ok.error());
        }
        card = std::move(*found);
        meta = std::move(*parsed);
        return {};
      });
  if (!verified) return std::unexpected(verified.error());
  const catalog::ModelVariant& variant = *store::find_variant(meta, request.variant);

  // 3. What the store lacks (read without its lock: a blob that goes meanwhile
  //    makes the commit busy, and the daemon asks again).
  const fs::path blobs_dir = env.store_root / "store" / std::string(store::kBlobsDirName) /
                             std::string(store::kBlobHashDirName);
  //    In a repair each stored one is hashed, and one whose bytes are not its
  //    name's is needed too: the store replaces it (step 5).
  std::vector<std::string> need;
  for (const auto& [sha, target] : blob_targets) {
    struct stat st {};
    const fs::path blob = blobs_dir / sha;
    if (::lstat(blob.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        static_cast<std::uint64_t>(st.st_size) == target.length &&
        (!request.repair || hash_stored(blob) == sha)) {
      continue;
    }
    need.push_back(sha);  // sorted: blob_targets is
  }
  if (auto ok = feed.need(need); !ok) return std::unexpected(ok.error());

  // 4. The blobs, as the daemon sends them: only those asked for, each once,
  //    each copied and checked before anything else sees it.
  Copies copies;
  for (;;) {
    auto next = feed.next(stop);
    if (!next) return std::unexpected(next.error());
    if (!*next) break;
    auto& [sha, fd] = **next;
    if (!std::binary_search(need.begin(), need.end(), sha)) {
      return fail(Errc::invalid_argument, "blob " + sha.substr(0, 80) + " was not asked for");
    }
    if (copies.by_sha.contains(sha)) {
      return fail(Errc::invalid_argument, "blob " + sha + " was sent twice");
    }
    auto copy = detail::copy_verified(fd.get(), env.store_root, blob_targets.at(sha),
                                      env.stream_idle, stop);
    if (!copy) return std::unexpected(copy.error());
    copies.by_sha.emplace(sha, std::move(*copy));
  }
  std::map<std::string, int> given;
  for (const auto& sha : need) {
    const auto it = copies.by_sha.find(sha);
    if (it == copies.by_sha.end()) {
      return fail(Errc::invalid_argument, "commit asked before blob " + sha + " was sent");
    }
    given.emplace(sha, it->second.fd.get());
  }

  // 5. The store; the copies of contents installed markers list (damaged or
  //    missing blobs) replace them everywhere, never written into; then the
  //    install from our copies (which rebuilds the variant's tree if it is
  //    still damaged, or returns it intact).
  auto s = detail::open_store(env);
  if (!s) return std::unexpected(s.error());
  if (auto replaced = s->replace_model_blobs(given); !replaced) {
    return std::unexpected(replaced.error());
  }
  const store::SignedModel model{meta, variant.id, request.remote, card.path};
  auto installed = s->install_model(model, given, progress, stop);
  if (!installed && installed.error().code == Errc::not_found) {
    return fail(Errc::busy, std::string(kVanishedBlob) + installed.error().message);
  }
  return installed;
}

Result<void> commit_remove_model(const CommitEnv& env, std::string_view name,
                                 std::optional<std::string_view> version,
                                 std::optional<std::string_view> variant, bool even_if_leased) {
  if (!store::is_storable_name(name) ||
      (version &&
       (!catalog::parse_version(*version) || version->find('/') != std::string_view::npos)) ||
      (variant && !is_variant_id(*variant))) {
    return fail(Errc::invalid_argument, "remove model: not a model name, version and variant");
  }
  auto s = detail::open_store(env);
  if (!s) return std::unexpected(s.error());
  auto gone = s->remove_model(name, version, variant, even_if_leased);
  if (!gone) return std::unexpected(gone.error());
  return {};
}

Result<store::InstalledModel> LocalCommitter::install_model(
    const store::CommitModelInstall& request, const store::BlobSource& blobs,
    const store::InstallProgress& progress, std::stop_token stop) {
  for (int attempt = 0;; ++attempt) {
    SourceFeed feed(blobs);
    auto installed = commit_install_model(env_, request, feed, progress, stop);
    if (installed || attempt > 0 || !is_vanished_blob(installed.error())) return installed;
  }
}

Result<void> LocalCommitter::remove_model(std::string_view name,
                                          std::optional<std::string_view> version,
                                          std::optional<std::string_view> variant,
                                          bool even_if_leased) {
  return commit_remove_model(env_, name, version, variant, even_if_leased);
}

}  // namespace epbrokerd::commit
