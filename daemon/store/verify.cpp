// Verification: Store::verify() re-hashes every installed tree against its saved
// manifest, without holding the mutex while it hashes, reporting its progress
// after each tree.
#include "daemon/store/store.hpp"

#include <sys/stat.h>

#include <algorithm>
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
  {
    std::lock_guard lock(s.mu);
    struct stat st {};
    if (::stat(s.store.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return sys_error("stat", s.store);
    }
    for (const auto& [key, e] : s.index) entries.push_back(e);
  }
  // 2. Hash every tree without holding the mutex, saying how far it got after each.
  std::uint64_t total = 0;
  for (const Entry& e : entries) total += e.package.size_bytes();
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
  // 3. Only what is still installed as it was when checked.
  std::lock_guard lock(s.mu);
  for (auto& [e, problems] : damaged) {
    auto it = s.index.find(Key{e->package.name(), e->package.version()});
    if (it == s.index.end() || it->second.serial != e->serial) continue;
    out.damaged.push_back({e->package, std::move(problems)});
  }
  return out;
}

}  // namespace epbrokerd::store
