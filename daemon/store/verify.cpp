// Verification: Store::verify() re-hashes every installed tree against its saved
// manifest, without holding the mutex while it hashes, reporting its progress
// after each tree.
#include "daemon/store/store.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "catalog/atomic_file.hpp"
#include "daemon/store/fs_ops.hpp"
#include "daemon/store/store_impl.hpp"
#include "daemon/store/tree.hpp"

namespace epbrokerd::store {
namespace {

namespace fs = std::filesystem;
using catalog::Errc;
using catalog::Result;
using detail::Entry;
using detail::inspect;
using detail::Key;
using detail::sys_error;

}  // namespace

namespace detail {

TreeCheck inspect(const Entry& e) {
  TreeCheck check = check_tree(e.package.root, e.package.manifest);
  const fs::path saved_path = e.package.root / kSavedManifestName;
  const std::string name(kSavedManifestName);
  auto text = catalog::read_file(saved_path, kMaxSavedManifestBytes);
  if (!text) {
    if (text.error().code != Errc::not_found) check.problems.push_back(name + ": unreadable");
  } else if (auto saved = parse_saved_manifest(*text); !saved) {
    check.problems.push_back(name + ": " + saved.error().message);
  } else if (saved->manifest != e.package.manifest ||
             saved->installed_at != e.package.installed_at) {
    check.problems.push_back(name + ": differs from what was installed");
  }
  std::sort(check.problems.begin(), check.problems.end());
  return check;
}

}  // namespace detail

Result<VerifyReport> Store::verify(const VerifyProgress& progress) const {
  const Impl& s = *impl_;
  // 1. A snapshot of the index.
  std::vector<Entry> entries;
  std::vector<detail::ModelEntry> model_entries;
  {
    std::lock_guard lock(s.mu);
    struct stat st {};
    if (::stat(s.store.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return sys_error("stat", s.store);
    }
    for (const auto& [key, e] : s.index) entries.push_back(e);
    for (const auto& [key, e] : s.models) model_entries.push_back(e);
  }
  // 2. Hash every tree without holding the mutex, saying how far it got after each.
  std::uint64_t total = 0;
  for (const Entry& e : entries) total += e.package.size_bytes();
  std::map<std::string, std::uint64_t> blob_sizes;  // each model content once
  for (const auto& e : model_entries) {
    for (const auto& f : e.model.files) blob_sizes[f.sha256] = f.size;
  }
  for (const auto& [hex, size] : blob_sizes) total += size;
  std::uint64_t done = 0;
  const auto go_on = [&] { return !progress || progress(std::min(done, total), total); };
  if (!go_on()) return catalog::fail(Errc::cancelled, "verification cancelled");
  VerifyReport out;
  std::vector<std::pair<const Entry*, std::vector<std::string>>> damaged;
  for (const Entry& e : entries) {
    TreeCheck check = inspect(e);
    ++out.packages_checked;
    out.bytes_hashed += check.bytes_hashed;
    if (!check.problems.empty()) damaged.emplace_back(&e, std::move(check.problems));
    done += e.package.size_bytes();
    if (!go_on()) return catalog::fail(Errc::cancelled, "verification cancelled");
  }
  // 3. The models: each blob hashed once, then every tree against them.
  const std::uint64_t packages_done = done;
  auto models = detail::check_models(model_entries, s.blobs_dir(), [&](std::uint64_t d) {
    done = packages_done + d;
    return go_on();
  });
  if (!models) return catalog::fail(Errc::cancelled, "verification cancelled");
  out.models_checked = model_entries.size();
  out.bytes_hashed += models->bytes_hashed;
  if (!model_entries.empty()) {
    done = total;
    if (!go_on()) return catalog::fail(Errc::cancelled, "verification cancelled");
  }
  // 4. Only what is still installed as it was when checked.
  std::lock_guard lock(s.mu);
  for (const auto& e : model_entries) {
    const detail::ModelKey key{e.model.name, e.model.version, e.model.variant};
    auto p = models->problems.find(key);
    if (p == models->problems.end()) continue;
    auto it = s.models.find(key);
    if (it == s.models.end() || it->second.serial != e.serial) continue;
    out.damaged_models.push_back({e.model, std::move(p->second)});
  }
  for (auto& [e, problems] : damaged) {
    auto it = s.index.find(Key{e->package.name(), e->package.version()});
    if (it == s.index.end() || it->second.serial != e->serial) continue;
    out.damaged.push_back({e->package, std::move(problems)});
  }
  return out;
}

}  // namespace epbrokerd::store
