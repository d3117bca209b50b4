#include "client/src/convert.hpp"

#include <array>
#include <utility>

namespace epbroker::detail {
namespace {

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
  out.id = str(d, "id");
  out.type = str(d, "type");
  out.vendor_id = field<std::uint16_t>(d, "vendor_id", "q");
  out.device_id = field<std::uint16_t>(d, "device_id", "q");
  out.vendor = str(d, "vendor");
  out.name = str(d, "name");
  out.driver = str(d, "driver");
  out.driver_version = str(d, "driver_version");
  out.bus_path = str(d, "bus_path");
  out.discrete = field<bool>(d, "discrete", "b");
  out.node = str(d, "node");
  out.isa = strs(d, "isa");
  out.cores = field<std::uint32_t>(d, "cores", "u");
  out.threads = field<std::uint32_t>(d, "threads", "u");
  out.arch = str(d, "arch");
  return out;
}

Provider to_provider(const Dict& d) {
  Provider out;
  out.name = str(d, "name");
  out.kind = field<std::string>(d, "kind", "s", "execution_provider");
  out.ep_names = strs(d, "ep_names");
  out.version = str(d, "version");
  out.vendor = str(d, "vendor");
  out.state_name = str(d, "state");
  out.state = parse_provider_state(out.state_name);
  out.devices = strs(d, "devices");
  out.size = field<std::uint64_t>(d, "size", "t");
  out.library_path = str(d, "library_path");
  out.reason = str(d, "reason");
  out.remote = str(d, "remote");
  out.job = field<sdbus::ObjectPath>(d, "job", "o");
  out.ort_min = str(d, "ort_min");
  return out;
}

VerifyResult to_verify_result(const Dict& d) {
  VerifyResult out;
  out.name = str(d, "name");
  out.version = str(d, "version");
  out.ok = field<bool>(d, "ok", "b", true);
  out.problem = str(d, "problem");
  return out;
}

ProviderState parse_provider_state(const std::string& s) {
  for (auto st : {ProviderState::ready, ProviderState::available, ProviderState::installing,
                  ProviderState::incompatible}) {
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
  out.emplace("policy", sdbus::Variant(std::string(to_string(options.policy))));
  if (!options.ort_version.empty()) out.emplace("ort_version", sdbus::Variant(options.ort_version));
  if (!options.providers.empty()) out.emplace("providers", sdbus::Variant(options.providers));
  out.emplace("download", sdbus::Variant(options.download));
  return out;
}

}  // namespace epbroker::detail
