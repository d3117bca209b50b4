#include "daemon/dbus/convert.hpp"

#include "catalog/device_type.hpp"
#include "common/wire.hpp"

namespace epbrokerd::dbus {

std::string job_path(std::uint64_t id) {
  return std::string(kObjectPath) + "/job/" + std::to_string(id);
}

std::string session_path(std::uint64_t id) {
  return std::string(kObjectPath) + "/session/" + std::to_string(id);
}

Dict to_dict(const hardware::Device& d) {
  namespace key = common::key;
  Dict out{{key::id, sdbus::Variant(d.id)},
           {key::type, sdbus::Variant(std::string(catalog::device_type_name(d.type)))},
           {key::vendor_id, sdbus::Variant(d.vendor_id)},
           {key::device_id, sdbus::Variant(d.device_id)},
           {key::vendor, sdbus::Variant(d.vendor)},
           {key::name, sdbus::Variant(d.name)},
           {key::driver, sdbus::Variant(d.driver)},
           {key::driver_version, sdbus::Variant(d.driver_version)},
           {key::bus_path, sdbus::Variant(d.bus_path)},
           {key::discrete, sdbus::Variant(d.discrete)},
           {key::node, sdbus::Variant(d.node)}};
  if (d.type == catalog::DeviceType::cpu) {
    out.emplace(key::isa, sdbus::Variant(d.isa));
    out.emplace(key::cores, sdbus::Variant(d.cores));
    out.emplace(key::threads, sdbus::Variant(d.threads));
    out.emplace(key::arch, sdbus::Variant(d.arch));
  }
  return out;
}

namespace {

// The one list of a provider dict's entries: calls f(key, value) for each, in
// order, values of their bus types (the optional ones only when set).
template <typename F>
void for_each_entry(const core::ProviderView& p, F&& f) {
  namespace key = common::key;
  f(key::name, p.name);
  f(key::kind, std::string(common::package_kind_name(p.kind)));
  f(key::ort_min, p.ort_min);
  f(key::ep_names, p.ep_names);
  f(key::version, p.version);
  f(key::vendor, p.vendor);
  f(key::state, std::string(common::provider_state_name(p.state)));
  f(key::devices, p.devices);
  f(key::size, p.size);
  f(key::remote, p.remote);
  if (!p.library_path.empty()) f(key::library_path, p.library_path);
  if (!p.reason.empty()) f(key::reason, p.reason);
  if (p.job != 0) f(key::job, sdbus::ObjectPath(job_path(p.job)));
}

}  // namespace

Dict to_dict(const core::ProviderView& p) {
  Dict out;
  for_each_entry(
      p, [&](const char* key, const auto& value) { out.emplace(key, sdbus::Variant(value)); });
  return out;
}

void append_providers(sdbus::Message& m, const std::vector<core::ProviderView>& providers) {
  m.openContainer("a{sv}");
  for (const auto& p : providers) {
    m.openContainer("{sv}");
    for_each_entry(p, [&](const char* key, const auto& value) {
      using T = std::decay_t<decltype(value)>;
      m.openDictEntry("sv");
      m << key;
      m.openVariant(sdbus::signature_of<T>::str());
      m << value;
      m.closeVariant();
      m.closeDictEntry();
    });
    m.closeContainer();
  }
  m.closeContainer();
}

namespace {

bool same_view(const core::ProviderView& a, const core::ProviderView& b) {
  return a.name == b.name && a.kind == b.kind && a.ep_names == b.ep_names &&
         a.version == b.version && a.ort_min == b.ort_min && a.vendor == b.vendor &&
         a.state == b.state && a.devices == b.devices && a.size == b.size &&
         a.library_path == b.library_path && a.reason == b.reason && a.remote == b.remote &&
         a.job == b.job;
}

}  // namespace

const Dict& to_dict_cached(const core::ProviderView& p) {
  // Per thread (the bus thread in practice), so no lock. Keyed by name; an entry is
  // rebuilt when any field differs, so a stale dict is never returned. Bounded: the
  // catalog's names, cleared wholesale past a limit no real catalog reaches.
  struct Entry {
    core::ProviderView view;
    Dict dict;
  };
  thread_local std::map<std::string, Entry, std::less<>> cache;
  if (auto it = cache.find(p.name); it != cache.end() && same_view(it->second.view, p)) {
    return it->second.dict;
  }
  if (cache.size() >= 1024) cache.clear();
  auto& e = cache[p.name];
  e.view = p;
  e.dict = to_dict(p);
  return e.dict;
}

Dict to_dict(const core::VerifyResult& r) {
  namespace key = common::key;
  return {{key::name, sdbus::Variant(r.name)},
          {key::version, sdbus::Variant(r.version)},
          {key::ok, sdbus::Variant(r.ok)},
          {key::problem, sdbus::Variant(r.problem)}};
}

}  // namespace epbrokerd::dbus
