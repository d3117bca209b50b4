#include "tests/ort/support/ep_registration.hpp"

#include <onnxruntime_session_options_config_keys.h>

#include <exception>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <utility>

#include <nlohmann/json.hpp>

namespace tests::ort {

namespace {

const char* device_type_name(OrtHardwareDeviceType type) {
  switch (type) {
    case OrtHardwareDeviceType_CPU:
      return "CPU";
    case OrtHardwareDeviceType_GPU:
      return "GPU";
    case OrtHardwareDeviceType_NPU:
      return "NPU";
  }
  return "?";
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out.empty() ? "(none)" : out;
}

}  // namespace

void register_plugin(Ort::Env& env, const std::string& registration_name,
                     const std::filesystem::path& library) {
  env.RegisterExecutionProviderLibrary(registration_name.c_str(), library.native());
}

void unregister_plugin(Ort::Env& env, const std::string& registration_name) {
  env.UnregisterExecutionProviderLibrary(registration_name.c_str());
}

ScopedPlugin::ScopedPlugin(Ort::Env& env, std::string registration_name,
                           const std::filesystem::path& library)
    : env_(env), name_(std::move(registration_name)) {
  register_plugin(env_, name_, library);
}

ScopedPlugin::~ScopedPlugin() {
  try {
    unregister_plugin(env_, name_);
  } catch (const std::exception&) {  // NOLINT(bugprone-empty-catch): best effort
  }
}

std::vector<Ort::ConstEpDevice> ep_devices_for(Ort::Env& env, const std::string& ep_name) {
  std::vector<Ort::ConstEpDevice> out;
  for (const Ort::ConstEpDevice& d : env.GetEpDevices()) {
    if (ep_name == d.EpName()) out.push_back(d);
  }
  return out;
}

std::vector<std::string> describe_ep_devices(Ort::Env& env) {
  std::vector<std::string> out;
  for (const Ort::ConstEpDevice& d : env.GetEpDevices()) {
    out.push_back(std::string(d.EpName()) + "/" + device_type_name(d.Device().Type()));
  }
  return out;
}

void append_ep(Ort::SessionOptions& options, Ort::Env& env,
               const std::vector<Ort::ConstEpDevice>& devices,
               const std::unordered_map<std::string, std::string>& ep_options) {
  options.AppendExecutionProvider_V2(env, devices, ep_options);
}

void disable_cpu_fallback(Ort::SessionOptions& options) {
  options.AddConfigEntry(kOrtSessionOptionsDisableCPUEPFallback, "1");
}

void record_ep_assignment(Ort::SessionOptions& options) {
  options.AddConfigEntry(kOrtSessionOptionsRecordEpGraphAssignmentInfo, "1");
}

Configure use_ep(Ort::Env& env, std::string ep_name, EpConfig config) {
  return [&env, ep_name = std::move(ep_name),
          config = std::move(config)](Ort::SessionOptions& options) {
    const auto devices = ep_devices_for(env, ep_name);
    if (devices.empty()) {
      throw std::runtime_error("no EP device for " + ep_name +
                               "; the env has: " + joined(describe_ep_devices(env)));
    }
    append_ep(options, env, devices, config.ep_options);
    if (!config.allow_cpu_fallback) disable_cpu_fallback(options);
  };
}

std::vector<AssignedNode> ep_assignment(const Ort::Session& session) {
  std::vector<AssignedNode> out;
  for (const Ort::ConstEpAssignedSubgraph& sub : session.GetEpGraphAssignmentInfo()) {
    const std::string ep = sub.GetEpName();
    for (const Ort::ConstEpAssignedNode& node : sub.GetNodes()) {
      out.push_back(AssignedNode{ep, node.GetName(), node.GetOperatorType(), node.GetDomain()});
    }
  }
  return out;
}

std::map<std::string, std::multiset<std::string>> ops_by_ep(
    const std::vector<AssignedNode>& nodes) {
  std::map<std::string, std::multiset<std::string>> out;
  for (const auto& n : nodes) out[n.ep].insert(n.op_type);
  return out;
}

std::string describe_assignment(const std::vector<AssignedNode>& nodes) {
  std::string out;
  for (const auto& [ep, ops] : ops_by_ep(nodes)) {
    if (!out.empty()) out += "; ";
    out += ep + ":";
    bool first = true;
    for (const auto& op : ops) {
      out += (first ? " " : ", ") + op;
      first = false;
    }
  }
  return out.empty() ? "(nothing assigned)" : out;
}

void enable_profiling(Ort::SessionOptions& options, const std::filesystem::path& prefix) {
  options.EnableProfiling(prefix.c_str());
}

std::expected<std::vector<ProfiledNode>, std::string> parse_profile(
    const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::unexpected(file.string() + ": cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  nlohmann::json doc = nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return std::unexpected(file.string() + ": not JSON");
  if (doc.is_object() && doc.contains("traceEvents")) doc = doc["traceEvents"];
  if (!doc.is_array()) return std::unexpected(file.string() + ": not an array of trace events");

  std::vector<ProfiledNode> out;
  constexpr std::string_view kSuffix = "_kernel_time";
  for (const auto& ev : doc) {
    if (!ev.is_object()) continue;
    const auto cat = ev.find("cat");
    const auto name = ev.find("name");
    const auto args = ev.find("args");
    if (cat == ev.end() || name == ev.end() || args == ev.end() || !cat->is_string() ||
        !name->is_string() || !args->is_object() || cat->get<std::string>() != "Node") {
      continue;
    }
    std::string node = name->get<std::string>();
    if (!node.ends_with(kSuffix)) continue;  // fence_before / fence_after events
    node.resize(node.size() - kSuffix.size());
    const auto provider = args->find("provider");
    const auto op = args->find("op_name");
    if (provider == args->end() || !provider->is_string()) continue;
    out.push_back(ProfiledNode{std::move(node),
                               op != args->end() && op->is_string() ? op->get<std::string>() : "",
                               provider->get<std::string>()});
  }
  return out;
}

std::expected<std::vector<ProfiledNode>, std::string> end_profiling(Ort::Session& session) {
  std::string file;
  try {
    Ort::AllocatorWithDefaultOptions allocator;
    file = session.EndProfilingAllocated(allocator).get();
  } catch (const Ort::Exception& e) {
    return std::unexpected(std::string("EndProfiling: ") + e.what());
  }
  return parse_profile(file);
}

std::set<std::string> providers_of(const std::vector<ProfiledNode>& nodes) {
  std::set<std::string> out;
  for (const auto& n : nodes) out.insert(n.provider);
  return out;
}

}  // namespace tests::ort
