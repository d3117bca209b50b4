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

// One installed version's dict (a provider's "versions"): f(key, value) per entry.
template <typename F>
void for_each_entry(const core::VersionView& v, F&& f) {
  namespace key = common::key;
  f(key::version, v.version);
  f(key::role, std::string(common::version_role_name(v.role)));
  f(key::reason, v.reason);
  f(key::leases, static_cast<std::uint32_t>(v.leases));
}

// The one list of a provider dict's entries: calls f(key, value) for each, in
// order, values of their bus types (the optional ones only when set), except
// "versions", given as the std::vector<core::VersionView> (aa{sv}).
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
  // The lifecycle: installed packages only (they have versions).
  if (!p.versions.empty()) {
    f(key::versions, p.versions);
    f(key::update_available, p.update_available);
    f(key::held, p.held);
    f(key::hold_reason, p.hold_reason);
  }
}

// A granted model's dict (RequestSession, kind "model").
template <typename F>
void for_each_entry(const core::ModelGrant& g, F&& f) {
  namespace key = common::key;
  f(key::kind, std::string(common::kModelKind));
  f(key::name, g.name);
  f(key::version, g.version);
  f(key::variant, g.variant);
  f(key::state, std::string(common::provider_state_name(g.state)));
  if (g.state == common::ProviderState::ready) {
    f(key::path, g.path.string());
    f(key::main, g.main.string());
    f(key::files, g.files);
  }
  f(key::devices, g.devices);
  f(key::eps, g.eps);
  if (g.job != 0) f(key::job, sdbus::ObjectPath(job_path(g.job)));
  if (!g.reason.empty()) f(key::reason, g.reason);
}

using Versions = std::vector<core::VersionView>;

template <typename T>
sdbus::Variant variant_of(const T& value) {
  return sdbus::Variant(value);
}

template <>
sdbus::Variant variant_of(const Versions& versions) {
  std::vector<Dict> dicts;
  dicts.reserve(versions.size());
  for (const auto& v : versions) {
    Dict d;
    for_each_entry(
        v, [&](const char* key, const auto& value) { d.emplace(key, sdbus::Variant(value)); });
    dicts.push_back(std::move(d));
  }
  return sdbus::Variant(dicts);
}

// Writes one a{sv} (the entries for_each_entry(item) gives) into `m`.
template <typename Item>
void append_dict(sdbus::Message& m, const Item& item);

template <typename T>
void append_value(sdbus::Message& m, const T& value) {
  m.openVariant(sdbus::signature_of<T>::str());
  m << value;
  m.closeVariant();
}

template <>
void append_value(sdbus::Message& m, const Versions& versions) {
  m.openVariant("aa{sv}");
  m.openContainer("a{sv}");
  for (const auto& v : versions) append_dict(m, v);
  m.closeContainer();
  m.closeVariant();
}

template <typename Item>
void append_dict(sdbus::Message& m, const Item& item) {
  m.openContainer("{sv}");
  for_each_entry(item, [&](const char* key, const auto& value) {
    m.openDictEntry("sv");
    m << key;
    append_value(m, value);
    m.closeDictEntry();
  });
  m.closeContainer();
}

}  // namespace

Dict to_dict(const core::ProviderView& p) {
  Dict out;
  for_each_entry(p,
                 [&](const char* key, const auto& value) { out.emplace(key, variant_of(value)); });
  return out;
}

void append_providers(sdbus::Message& m, const std::vector<core::ProviderView>& providers,
                      const std::vector<core::ModelGrant>& models) {
  m.openContainer("a{sv}");
  for (const auto& p : providers) append_dict(m, p);
  for (const auto& g : models) append_dict(m, g);
  m.closeContainer();
}

Dict to_dict(const core::ModelGrant& g) {
  Dict out;
  for_each_entry(g,
                 [&](const char* key, const auto& value) { out.emplace(key, variant_of(value)); });
  return out;
}

namespace {

bool same_versions(const Versions& a, const Versions& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].version != b[i].version || a[i].role != b[i].role || a[i].reason != b[i].reason ||
        a[i].leases != b[i].leases) {
      return false;
    }
  }
  return true;
}

bool same_view(const core::ProviderView& a, const core::ProviderView& b) {
  return a.name == b.name && a.kind == b.kind && a.ep_names == b.ep_names &&
         a.version == b.version && a.ort_min == b.ort_min && a.vendor == b.vendor &&
         a.state == b.state && a.devices == b.devices && a.size == b.size &&
         a.library_path == b.library_path && a.reason == b.reason && a.remote == b.remote &&
         a.job == b.job && same_versions(a.versions, b.versions) &&
         a.update_available == b.update_available && a.held == b.held &&
         a.hold_reason == b.hold_reason;
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
  Dict out{{key::name, sdbus::Variant(r.name)},
           {key::version, sdbus::Variant(r.version)},
           {key::ok, sdbus::Variant(r.ok)},
           {key::problem, sdbus::Variant(r.problem)}};
  if (!r.kind.empty()) {  // a model variant
    out.emplace(key::kind, sdbus::Variant(r.kind));
    out.emplace(key::variant, sdbus::Variant(r.variant));
  }
  return out;
}

Dict to_dict(const core::HistoryEntry& e) {
  namespace key = common::key;
  return {{key::time, sdbus::Variant(static_cast<std::uint64_t>(e.time < 0 ? 0 : e.time))},
          {key::uid, sdbus::Variant(e.uid)},
          {key::action, sdbus::Variant(std::string(common::history_action_name(e.action)))},
          {key::name, sdbus::Variant(e.name)},
          {key::from, sdbus::Variant(e.from)},
          {key::to, sdbus::Variant(e.to)},
          {key::result, sdbus::Variant(e.result)},
          {key::reason, sdbus::Variant(e.reason)}};
}

Dict to_dict(const core::UpdateChange& c) {
  namespace key = common::key;
  Dict out{{key::name, sdbus::Variant(c.name)},
           {key::from, sdbus::Variant(c.from)},
           {key::to, sdbus::Variant(c.to)},
           {key::reason, sdbus::Variant(c.reason)}};
  if (c.job != 0) out.emplace(key::job, sdbus::Variant(sdbus::ObjectPath(job_path(c.job))));
  return out;
}

Dict to_dict(const core::VersionRef& r) {
  namespace key = common::key;
  Dict out{{key::name, sdbus::Variant(r.name)}, {key::version, sdbus::Variant(r.version)}};
  if (!r.variant.empty()) {
    out.emplace(key::kind, sdbus::Variant(std::string(common::kModelKind)));
    out.emplace(key::variant, sdbus::Variant(r.variant));
  }
  return out;
}

Dict to_removed_model_dict(const core::VersionRef& r) {
  namespace key = common::key;
  return {{key::name, sdbus::Variant(r.name)},
          {key::version, sdbus::Variant(r.version)},
          {key::variant, sdbus::Variant(r.variant)}};
}

Dict to_dict(const core::ModelListing& listing) {
  namespace key = common::key;
  const core::ModelEntry& m = listing.entry;
  const auto state =
      m.refused.empty() ? common::ProviderState::available : common::ProviderState::refused;
  std::vector<Dict> variants;
  for (const auto& v : m.meta.variants) {
    std::vector<std::string> devices;
    for (const auto d : v.devices) devices.emplace_back(catalog::device_type_name(d));
    std::uint64_t size = 0;
    for (const auto& f : v.files) size += f.size;
    variants.push_back({{key::id, sdbus::Variant(v.id)},
                        {key::devices, sdbus::Variant(devices)},
                        {key::eps, sdbus::Variant(v.eps)},
                        {key::ort_min, sdbus::Variant(v.ort_min.text)},
                        {key::opset, sdbus::Variant(v.opset)},
                        {key::size, sdbus::Variant(size)},
                        {key::installed, sdbus::Variant(listing.installed.contains(v.id))}});
  }
  return {{key::name, sdbus::Variant(m.meta.name)},
          {key::version, sdbus::Variant(m.meta.version.text)},
          {key::publisher, sdbus::Variant(m.meta.publisher)},
          {key::license, sdbus::Variant(m.meta.license)},
          {key::license_url, sdbus::Variant(m.meta.license_url)},
          {key::description, sdbus::Variant(m.meta.description)},
          {key::task, sdbus::Variant(m.meta.task)},
          {key::state, sdbus::Variant(std::string(common::provider_state_name(state)))},
          {key::reason, sdbus::Variant(m.refused)},
          {key::remote, sdbus::Variant(m.remote)},
          {key::variants, sdbus::Variant(variants)},
          {key::planned, sdbus::Variant(listing.plan.variant)},
          {key::plan_device, sdbus::Variant(listing.plan.device)},
          {key::plan_ep, sdbus::Variant(listing.plan.ep)},
          {key::plan_reason, sdbus::Variant(listing.plan.reason)}};
}

}  // namespace epbrokerd::dbus
