// Leases: what keeps an installed version from being removed, or replaced with
// other contents, while an application uses it.
#include "daemon/store/store.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "daemon/store/store_impl.hpp"

namespace epbrokerd::store {
namespace {

using catalog::Errc;
using catalog::fail;
using catalog::Result;
using detail::Key;
using detail::Lease;

std::string describe(const Key& k) { return k.first + " " + k.second; }

}  // namespace

std::size_t Store::Impl::leases_on(const Key& key) const {
  return static_cast<std::size_t>(std::count_if(
      leases.begin(), leases.end(), [&](const auto& l) { return l.second.key == key; }));
}

std::unexpected<catalog::Error> Store::Impl::busy_replacing(const Key& key) const {
  return fail(Errc::busy, describe(key) + " is installed with other contents and held by " +
                              std::to_string(leases_on(key)) + " lease(s)");
}

Result<LeaseId> Store::acquire_lease(std::string_view name, std::string_view version,
                                     std::string_view owner) {
  std::lock_guard lock(impl_->mu);
  Key key{std::string(name), std::string(version)};
  if (!impl_->index.contains(key)) {
    return fail(Errc::not_found, describe(key) + " is not installed");
  }
  const LeaseId id = impl_->next_lease++;
  impl_->leases.emplace(id, Lease{std::move(key), std::string(owner)});
  return id;
}

void Store::release_lease(LeaseId id) {
  std::lock_guard lock(impl_->mu);
  impl_->leases.erase(id);
  impl_->model_leases.erase(id);
}

std::size_t Store::release_owner(std::string_view owner) {
  std::lock_guard lock(impl_->mu);
  const auto owned = [&](const auto& l) { return l.second.owner == owner; };
  return static_cast<std::size_t>(std::erase_if(impl_->leases, owned) +
                                  std::erase_if(impl_->model_leases, owned));
}

std::size_t Store::lease_count(std::string_view name, std::string_view version) const {
  std::lock_guard lock(impl_->mu);
  return impl_->leases_on(Key{std::string(name), std::string(version)});
}

}  // namespace epbrokerd::store
