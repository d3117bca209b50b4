#include "client/src/convert.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

#include "common/wire.hpp"

namespace epbroker::detail {
namespace {

namespace key = common::key;

// d[key] as T when its signature is `sig`; `fallback` when absent.
template <typename T>
T field(const Dict& d, const char* key, const char* sig, T fallback = T{}) {
  auto it = d.find(key);
  if (it == d.end()) return fallback;
  const std::string got = it->second.peekValueType();
  if (got != sig) {
    throw Error(Errc::protocol, std::string("epbrokerd sent '") + key + "' of type " + got +
                                    ", expected " + sig + " (client and daemon versions differ?)");
  }
  return it->second.get<T>();
}

std::string str(const Dict& d, const char* key) { return field<std::string>(d, key, "s"); }
std::vector<std::string> strs(const Dict& d, const char* key) {
  return field<std::vector<std::string>>(d, key, "as");
}

}  // namespace

Device to_device(const Dict& d) {
  Device out;
  out.id = str(d, key::id);
  out.type = str(d, key::type);
  out.vendor_id = field<std::uint16_t>(d, key::vendor_id, "q");
  out.device_id = field<std::uint16_t>(d, key::device_id, "q");
  out.vendor = str(d, key::vendor);
  out.name = str(d, key::name);
  out.driver = str(d, key::driver);
  out.driver_version = str(d, key::driver_version);
  out.bus_path = str(d, key::bus_path);
  out.discrete = field<bool>(d, key::discrete, "b");
  out.node = str(d, key::node);
  out.isa = strs(d, key::isa);
  out.cores = field<std::uint32_t>(d, key::cores, "u");
  out.threads = field<std::uint32_t>(d, key::threads, "u");
  out.arch = str(d, key::arch);
  return out;
}

namespace {

// A string the daemon sends as an object path ("o").
struct PathField {
  std::string& value;
};

// A provider's installed versions, sent as aa{sv}.
struct VersionsField {
  std::vector<VersionInfo>& value;
};

void set_versions(VersionsField& field, const std::vector<Dict>& dicts) {
  field.value.clear();
  field.value.reserve(dicts.size());
  for (const auto& d : dicts) field.value.push_back(to_version_info(d));
}

template <typename T>
std::string bus_signature() {
  if constexpr (std::is_same_v<T, PathField>) {
    return "o";
  } else if constexpr (std::is_same_v<T, VersionsField>) {
    return "aa{sv}";
  } else {
    return sdbus::signature_of<T>::str();
  }
}

// The one list of a provider dict's known entries: f(key, field) for each, where
// field is the member to fill (a PathField for an object path).
template <typename F>
void for_each_provider_field(Provider& p, F&& f) {
  f(key::name, p.name);
  f(key::kind, p.kind);
  f(key::ep_names, p.ep_names);
  f(key::version, p.version);
  f(key::vendor, p.vendor);
  f(key::state, p.state_name);
  f(key::devices, p.devices);
  f(key::size, p.size);
  f(key::library_path, p.library_path);
  f(key::reason, p.reason);
  f(key::remote, p.remote);
  f(key::job, PathField{p.job});
  f(key::ort_min, p.ort_min);
  f(key::versions, VersionsField{p.versions});
  f(key::update_available, p.update_available);
  f(key::held, p.held);
  f(key::hold_reason, p.hold_reason);
}

[[noreturn]] void wrong_type(const std::string& key, const std::string& got,
                             const std::string& want) {
  throw Error(Errc::protocol, "epbrokerd sent '" + key + "' of type " + got + ", expected " + want +
                                  " (client and daemon versions differ?)");
}

}  // namespace

Provider to_provider(const Dict& d) {
  Provider out;
  for_each_provider_field(out, [&](const char* key, auto&& member) {
    using T = std::decay_t<decltype(member)>;
    const std::string sig = bus_signature<T>();
    if constexpr (std::is_same_v<T, PathField>) {
      member.value = field<sdbus::ObjectPath>(d, key, "o", sdbus::ObjectPath(member.value));
    } else if constexpr (std::is_same_v<T, VersionsField>) {
      if (d.count(key) != 0) set_versions(member, field<std::vector<Dict>>(d, key, "aa{sv}"));
    } else {
      member = field<T>(d, key, sig.c_str(), member);
    }
  });
  out.state = parse_provider_state(out.state_name);
  return out;
}

namespace {

// A granted model from the provider fields its dict shares with a provider's
// (name, version, state, devices, job, reason) and its own keys, read apart.
GrantedModel granted_model(Provider&& p, const Dict& own) {
  GrantedModel out;
  out.name = std::move(p.name);
  out.version = std::move(p.version);
  out.state = std::move(p.state_name);
  out.devices = std::move(p.devices);
  out.job = std::move(p.job);
  out.reason = std::move(p.reason);
  out.variant = str(own, key::variant);
  out.path = str(own, key::path);
  out.main = str(own, key::main);
  out.files = strs(own, key::files);
  out.eps = strs(own, key::eps);
  return out;
}

}  // namespace

SessionGrants read_session_grants(sdbus::Message& m) {
  SessionGrants out;
  if (!m.enterContainer("a{sv}")) throw Error(Errc::protocol, "epbrokerd sent no provider list");
  while (m.enterContainer("{sv}")) {
    Provider p;
    Dict other;  // keys that are not a provider's: a model's own, or a newer daemon's
    while (m.enterDictEntry("sv")) {
      std::string key;
      m >> key;
      std::string type;
      std::string contents;
      m.peekType(type, contents);
      bool known = false;
      for_each_provider_field(p, [&](const char* name, auto&& member) {
        if (known || key != name) return;
        known = true;
        using T = std::decay_t<decltype(member)>;
        if (contents != bus_signature<T>()) wrong_type(key, contents, bus_signature<T>());
        m.enterVariant(contents);
        if constexpr (std::is_same_v<T, PathField>) {
          sdbus::ObjectPath path;
          m >> path;
          member.value = std::move(path);
        } else if constexpr (std::is_same_v<T, VersionsField>) {
          std::vector<Dict> dicts;  // a few per package: Variants are cheap enough here
          m >> dicts;
          set_versions(member, dicts);
        } else {
          m >> member;
        }
        m.exitVariant();
      });
      if (!known) {
        sdbus::Variant value;  // read past it; kept for a model's dict
        m >> value;
        other.insert_or_assign(std::move(key), std::move(value));
      }
      m.exitDictEntry();
    }
    m.clearFlags();
    m.exitContainer();
    if (p.kind == common::kModelKind) {
      out.models.push_back(granted_model(std::move(p), other));
      continue;
    }
    p.state = parse_provider_state(p.state_name);
    out.providers.push_back(std::move(p));
  }
  m.clearFlags();
  m.exitContainer();
  return out;
}

ModelVariantInfo to_model_variant(const Dict& d) {
  ModelVariantInfo out;
  out.id = str(d, key::id);
  out.devices = strs(d, key::devices);
  out.eps = strs(d, key::eps);
  out.ort_min = str(d, key::ort_min);
  out.opset = field<std::uint32_t>(d, key::opset, "u");
  out.size = field<std::uint64_t>(d, key::size, "t");
  out.installed = field<bool>(d, key::installed, "b");
  return out;
}

ModelInfo to_model_info(const Dict& d) {
  ModelInfo out;
  out.name = str(d, key::name);
  out.version = str(d, key::version);
  out.publisher = str(d, key::publisher);
  out.license = str(d, key::license);
  out.license_url = str(d, key::license_url);
  out.description = str(d, key::description);
  out.task = str(d, key::task);
  out.state = str(d, key::state);
  out.reason = str(d, key::reason);
  out.remote = str(d, key::remote);
  for (const auto& v : field<std::vector<Dict>>(d, key::variants, "aa{sv}")) {
    out.variants.push_back(to_model_variant(v));
  }
  out.planned = str(d, key::planned);
  out.plan_device = str(d, key::plan_device);
  out.plan_ep = str(d, key::plan_ep);
  out.plan_reason = str(d, key::plan_reason);
  return out;
}

RemovedModel to_removed_model(const Dict& d) {
  return RemovedModel{str(d, key::name), str(d, key::version), str(d, key::variant)};
}

VersionInfo to_version_info(const Dict& d) {
  VersionInfo out;
  out.version = str(d, key::version);
  out.role = str(d, key::role);
  out.reason = str(d, key::reason);
  out.leases = field<std::uint32_t>(d, key::leases, "u");
  return out;
}

UpdateChange to_update_change(const Dict& d) {
  UpdateChange out;
  out.name = str(d, key::name);
  out.from = str(d, key::from);
  out.to = str(d, key::to);
  out.reason = str(d, key::reason);
  out.job = field<sdbus::ObjectPath>(d, key::job, "o");
  return out;
}

HistoryEntry to_history_entry(const Dict& d) {
  HistoryEntry out;
  const auto time = field<std::uint64_t>(d, key::time, "t");
  out.time = static_cast<std::int64_t>(
      std::min<std::uint64_t>(time, std::numeric_limits<std::int64_t>::max()));
  out.uid = field<std::uint32_t>(d, key::uid, "u");
  out.action = str(d, key::action);
  out.name = str(d, key::name);
  out.from = str(d, key::from);
  out.to = str(d, key::to);
  out.result = str(d, key::result);
  out.reason = str(d, key::reason);
  return out;
}

RemovedVersion to_removed_version(const Dict& d) {
  return RemovedVersion{str(d, key::name), str(d, key::version)};
}

VerifyResult to_verify_result(const Dict& d) {
  VerifyResult out;
  out.name = str(d, key::name);
  out.version = str(d, key::version);
  out.ok = field<bool>(d, key::ok, "b", true);
  out.problem = str(d, key::problem);
  return out;
}

ProviderState parse_provider_state(const std::string& s) {
  for (auto st : {ProviderState::ready, ProviderState::available, ProviderState::installing,
                  ProviderState::incompatible, ProviderState::revoked, ProviderState::refused}) {
    if (to_string(st) == s) return st;
  }
  return ProviderState::unknown;
}

JobState parse_job_state(const std::string& s) {
  for (auto st : {JobState::queued, JobState::downloading, JobState::verifying,
                  JobState::installing, JobState::done, JobState::failed, JobState::cancelled}) {
    if (to_string(st) == s) return st;
  }
  return JobState::unknown;
}

Dict to_options(const SessionOptions& options) {
  Dict out;
  out.emplace(key::policy, sdbus::Variant(std::string(to_string(options.policy))));
  if (!options.ort_version.empty())
    out.emplace(key::ort_version, sdbus::Variant(options.ort_version));
  if (!options.providers.empty()) out.emplace(key::providers, sdbus::Variant(options.providers));
  out.emplace(key::download, sdbus::Variant(options.download));
  return out;
}

Dict to_install_options(const InstallOptions& options) {
  Dict out;
  if (!options.version.empty()) out.emplace(key::version, sdbus::Variant(options.version));
  if (options.allow_older) out.emplace(key::allow_older, sdbus::Variant(true));
  return out;
}

Dict to_update_options(bool dry_run) {
  Dict out;
  out.emplace(key::dry_run, sdbus::Variant(dry_run));
  return out;
}

Dict to_list_models_options(Policy policy, const std::string& ort_version) {
  Dict out;
  out.emplace(key::policy, sdbus::Variant(std::string(to_string(policy))));
  if (!ort_version.empty()) out.emplace(key::ort_version, sdbus::Variant(ort_version));
  return out;
}

Dict to_ensure_model_options(const ModelOptions& options) {
  Dict out = to_list_models_options(options.policy, options.ort_version);
  if (!options.variant.empty()) out.emplace(key::variant, sdbus::Variant(options.variant));
  if (!options.version.empty()) out.emplace(key::version, sdbus::Variant(options.version));
  return out;
}

Dict to_model_session_options(const std::string& name, const ModelOptions& options) {
  Dict out = to_list_models_options(options.policy, options.ort_version);
  const std::map<std::string, std::string> models{{name, options.variant}};
  out.emplace(key::models, sdbus::Variant(models));
  return out;
}

Dict to_remove_model_options(const std::string& version, const std::string& variant, bool now) {
  Dict out;
  if (!version.empty()) out.emplace(key::version, sdbus::Variant(version));
  if (!variant.empty()) out.emplace(key::variant, sdbus::Variant(variant));
  if (now) out.emplace(key::now, sdbus::Variant(true));
  return out;
}

}  // namespace epbroker::detail
