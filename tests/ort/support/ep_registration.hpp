// Plugin execution providers in ORT tests: register a library, find its devices, add
// it to session options, and prove where ORT placed (and ran) each node.
#pragma once

#include <onnxruntime_cxx_api.h>

#include <expected>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "tests/ort/support/node_test.hpp"

namespace tests::ort {

// The CPU EP's name in assignment info and profiles.
inline constexpr const char* kCpuEp = "CPUExecutionProvider";

// Env::RegisterExecutionProviderLibrary. Throws Ort::Exception (unloadable library,
// missing CreateEpFactories, name already registered ...).
void register_plugin(Ort::Env& env, const std::string& registration_name,
                     const std::filesystem::path& library);
// Env::UnregisterExecutionProviderLibrary. Throws Ort::Exception.
void unregister_plugin(Ort::Env& env, const std::string& registration_name);

// Registers on construction, unregisters on destruction (errors there are ignored).
// Sessions using the plugin must be destroyed first.
class ScopedPlugin {
 public:
  ScopedPlugin(Ort::Env& env, std::string registration_name, const std::filesystem::path& library);
  ~ScopedPlugin();
  ScopedPlugin(const ScopedPlugin&) = delete;
  ScopedPlugin& operator=(const ScopedPlugin&) = delete;

  const std::string& registration_name() const { return name_; }

 private:
  Ort::Env& env_;
  std::string name_;
};

// The env's EP devices whose EpName() is `ep_name` (Env::GetEpDevices, filtered).
std::vector<Ort::ConstEpDevice> ep_devices_for(Ort::Env& env, const std::string& ep_name);

// Every (EP name, device type) pair the env offers, e.g. "CPUExecutionProvider/CPU", for
// failure messages.
std::vector<std::string> describe_ep_devices(Ort::Env& env);

// SessionOptions::AppendExecutionProvider_V2 with these devices and EP options. Throws
// Ort::Exception (also when `devices` is empty).
void append_ep(Ort::SessionOptions& options, Ort::Env& env,
               const std::vector<Ort::ConstEpDevice>& devices,
               const std::unordered_map<std::string, std::string>& ep_options = {});

// Session config "session.disable_cpu_ep_fallback" = "1": creating the session fails
// unless the appended EPs take every node (no node may fall back to the CPU EP).
void disable_cpu_fallback(Ort::SessionOptions& options);

// Session config "session.record_ep_graph_assignment_info" = "1", needed by
// ep_assignment().
void record_ep_assignment(Ort::SessionOptions& options);

// A Configure for run_case(): the devices of `ep_name` appended with `ep_options`, and
// CPU fallback disabled unless `allow_cpu_fallback`. Throws from inside run_case (a
// failed result naming the devices there are) when the env has no device for the EP.
struct EpConfig {
  std::unordered_map<std::string, std::string> ep_options;
  bool allow_cpu_fallback = false;
};
Configure use_ep(Ort::Env& env, std::string ep_name, EpConfig config = {});

// --- Where nodes went.

// One node as ORT partitioned the graph (after basic optimizations, so fused nodes
// appear under their fused op type, e.g. MatMul+Add as Gemm).
struct AssignedNode {
  std::string ep;  // "CPUExecutionProvider", "EpbrokerTestEp", ...
  std::string name;
  std::string op_type;
  std::string domain;
};

// Session::GetEpGraphAssignmentInfo flattened; the session must have been created with
// record_ep_assignment(). Throws Ort::Exception otherwise.
std::vector<AssignedNode> ep_assignment(const Ort::Session& session);

// EP name -> op types assigned to it (sorted, repeated per node).
std::map<std::string, std::multiset<std::string>> ops_by_ep(const std::vector<AssignedNode>& nodes);

// "EpbrokerTestEp: Gemm, Mul, Relu; CPUExecutionProvider: Softmax", for messages.
std::string describe_assignment(const std::vector<AssignedNode>& nodes);

// --- What actually ran (ORT profiling: one "Node" event per kernel run, with its
// provider).

// Enables profiling into files named <prefix>_<timestamp>.json (use a temp dir).
void enable_profiling(Ort::SessionOptions& options, const std::filesystem::path& prefix);

struct ProfiledNode {
  std::string node_name;
  std::string op_name;
  std::string provider;
};

// The kernel-run events of an ORT profile file (JSON array of trace events, or an object
// with "traceEvents").
std::expected<std::vector<ProfiledNode>, std::string> parse_profile(
    const std::filesystem::path& file);

// Session::EndProfilingAllocated, then parse_profile of the file it wrote.
std::expected<std::vector<ProfiledNode>, std::string> end_profiling(Ort::Session& session);

// The distinct providers of profiled nodes.
std::set<std::string> providers_of(const std::vector<ProfiledNode>& nodes);

}  // namespace tests::ort
