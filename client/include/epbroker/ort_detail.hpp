// Internals of <epbroker/ort.hpp> (header-only; include ort.hpp, not this).
#pragma once

#include <onnxruntime_cxx_api.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "epbroker/client.hpp"

namespace epbroker::detail {

// "1.30.0", "1.29", "1.31.0-dev" -> {1, 30, 0}; nullopt unless it starts with
// 1 to 4 dot-separated decimal numbers (more than three are ignored).
inline std::optional<std::array<unsigned long, 3>> parse_version(const std::string& text) {
  std::array<unsigned long, 3> v{0, 0, 0};
  std::size_t i = 0;
  int parts = 0;
  while (parts < 4) {
    if (i >= text.size() || text[i] < '0' || text[i] > '9') return std::nullopt;
    unsigned long n = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      if (n > 100000000UL) return std::nullopt;
      n = n * 10 + static_cast<unsigned long>(text[i] - '0');
      ++i;
    }
    if (parts < 3) v[static_cast<std::size_t>(parts)] = n;
    ++parts;
    if (i >= text.size() || text[i] != '.') break;
    ++i;
  }
  // Whatever follows must be a suffix ("-dev", "+abc"), not more digits or dots.
  if (i < text.size() && text[i] != '-' && text[i] != '+') return std::nullopt;
  return v;
}

inline OrtExecutionProviderDevicePolicy to_ort_policy(Policy policy) {
  switch (policy) {
    case Policy::default_policy:
      return OrtExecutionProviderDevicePolicy_DEFAULT;
    case Policy::prefer_cpu:
      return OrtExecutionProviderDevicePolicy_PREFER_CPU;
    case Policy::prefer_gpu:
      return OrtExecutionProviderDevicePolicy_PREFER_GPU;
    case Policy::prefer_npu:
      return OrtExecutionProviderDevicePolicy_PREFER_NPU;
    case Policy::max_performance:
      return OrtExecutionProviderDevicePolicy_MAX_PERFORMANCE;
    case Policy::max_efficiency:
      return OrtExecutionProviderDevicePolicy_MAX_EFFICIENCY;
    case Policy::min_overall_power:
      return OrtExecutionProviderDevicePolicy_MIN_OVERALL_POWER;
  }
  return OrtExecutionProviderDevicePolicy_DEFAULT;
}

inline const char* device_type_name(OrtHardwareDeviceType type) {
  switch (type) {
    case OrtHardwareDeviceType_CPU:
      return "cpu";
    case OrtHardwareDeviceType_GPU:
      return "gpu";
    case OrtHardwareDeviceType_NPU:
      return "npu";
  }
  return "unknown";
}

// realpath() when the file exists, else the text as given.
inline std::string canonical_path(const std::string& path) {
  if (path.empty()) return path;
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) != nullptr) return buf;
  return path;
}

// The library a plugin EP device comes from (its "library_path" EP metadata, which
// ORT sets for libraries registered with RegisterExecutionProviderLibrary); "" for
// EPs built into ORT.
inline std::string library_path_of(const Ort::ConstEpDevice& d) {
  const char* p = d.EpMetadata().GetValue("library_path");
  return p != nullptr ? canonical_path(p) : std::string();
}

// How many of the env's EP devices come from `library` (canonical path).
inline std::size_t devices_of_library(const Ort::Env& env, const std::string& library) {
  std::size_t n = 0;
  for (const auto& d : env.GetEpDevices()) {
    if (library_path_of(d) == library) ++n;
  }
  return n;
}

// ---- what register_providers() did, per OrtEnv ----------------------------------------

struct Record {
  const OrtEnv* env = nullptr;
  std::string name;          // registration name
  std::string library_path;  // canonical
  std::vector<std::string> ep_names;
  std::string version;
  std::size_t devices = 0;  // EP devices the library offered right after registering
};

struct Registry {
  std::mutex mu;
  std::vector<Record> records;
};

// One per program (inline function: one static across its translation units; a
// shared library built with hidden visibility has its own).
inline Registry& registry() {
  static Registry r;
  return r;
}

inline void forget(const OrtEnv* env) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  r.records.erase(std::remove_if(r.records.begin(), r.records.end(),
                                 [&](const Record& rec) { return rec.env == env; }),
                  r.records.end());
}

inline bool is_registered_library(const OrtEnv* env, const std::string& library) {
  if (library.empty()) return false;
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  for (const auto& rec : r.records) {
    if (rec.env == env && rec.library_path == library) return true;
  }
  return false;
}

// The runtime whose API the C++ wrappers use when built with ORT_API_MANUAL_INIT
// (set by Runtime::init_cxx_api()); null otherwise.
inline const OrtApiBase*& active_api_base() {
  static const OrtApiBase* base = nullptr;
  return base;
}

}  // namespace epbroker::detail
