// The Store object: its layout, the queries of the in-memory index and
// index.json; the helpers the other files of the store share (store_impl.hpp).
#include "daemon/store/store.hpp"

#include <algorithm>
#include <compare>
#include <string>
#include <utility>

#include "catalog/atomic_file.hpp"
#include "catalog/version.hpp"
#include "daemon/store/store_impl.hpp"

namespace epbrokerd::store {
namespace {

namespace fs = std::filesystem;
using catalog::Errc;
using catalog::fail;
using catalog::Result;
using detail::Entry;
using detail::Key;
using detail::newer;

}  // namespace

namespace detail {

std::unexpected<catalog::Error> injected(std::string_view step) {
  return fail(Errc::io, "injected fault at " + std::string(step));
}

Result<void> check_storable(const catalog::package::Manifest& m) {
  if (!is_storable_name(m.ep.name)) {
    return fail(Errc::invalid_argument,
                "package name '" + m.ep.name + "' cannot be stored (reserved)");
  }
  for (const auto& f : m.files) {
    if (f.path == kSavedManifestName) {
      return fail(Errc::invalid_argument,
                  "package ships " + f.path + ", a name the store reserves for itself");
    }
  }
  return {};
}

bool newer(const InstalledPackage& a, const InstalledPackage& b) {
  const auto c = a.manifest.ep.version.value <=> b.manifest.ep.version.value;
  if (c != 0) return c > 0;
  return a.version() > b.version();
}

}  // namespace detail

std::string_view install_phase_name(InstallPhase phase) {
  switch (phase) {
    case InstallPhase::extracting:
      return "extracting";
    case InstallPhase::verifying:
      return "verifying";
    case InstallPhase::committing:
      return "committing";
  }
  return "unknown";
}

Result<void> Store::Impl::write_index(const std::map<Key, Entry>& entries) const {
  return write_index(entries, models);
}

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Store::~Store() = default;
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;

const OpenReport& Store::open_report() const { return impl_->report; }
const fs::path& Store::state_dir() const { return impl_->state; }
fs::path Store::store_dir() const { return impl_->store; }
fs::path Store::staging_dir() const { return impl_->staging; }
fs::path Store::index_path() const { return impl_->store / kIndexFileName; }

std::vector<InstalledPackage> Store::list() const {
  std::lock_guard lock(impl_->mu);
  std::vector<InstalledPackage> out;
  out.reserve(impl_->index.size());
  for (const auto& [key, e] : impl_->index) out.push_back(e.package);
  return out;
}

std::vector<InstalledPackage> Store::versions(std::string_view name) const {
  std::vector<InstalledPackage> out;
  {
    std::lock_guard lock(impl_->mu);
    for (auto it = impl_->index.lower_bound(Key{std::string(name), ""});
         it != impl_->index.end() && it->first.first == name; ++it) {
      out.push_back(it->second.package);
    }
  }
  std::sort(out.begin(), out.end(), newer);
  return out;
}

std::optional<InstalledPackage> Store::find(std::string_view name, std::string_view version) const {
  std::lock_guard lock(impl_->mu);
  auto it = impl_->index.find(Key{std::string(name), std::string(version)});
  if (it == impl_->index.end()) return std::nullopt;
  return it->second.package;
}

Result<fs::path> Store::library_path(std::string_view name, std::string_view version) const {
  auto p = find(name, version);
  if (!p) {
    return fail(Errc::not_found,
                std::string(name) + " " + std::string(version) + " is not installed");
  }
  return p->library_path();
}

}  // namespace epbrokerd::store
