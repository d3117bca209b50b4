// The kinds of compute device an EP can serve.
#pragma once

#include <optional>
#include <string_view>

namespace catalog {

enum class DeviceType { cpu, gpu, npu };

// "cpu", "gpu" or "npu" (the spelling used in EP metadata and on the bus).
constexpr std::string_view device_type_name(DeviceType type) {
  switch (type) {
    case DeviceType::cpu:
      return "cpu";
    case DeviceType::gpu:
      return "gpu";
    case DeviceType::npu:
      return "npu";
  }
  return "unknown";
}

// Inverse of device_type_name(); std::nullopt for any other spelling (case-sensitive).
constexpr std::optional<DeviceType> parse_device_type(std::string_view name) {
  if (name == "cpu") return DeviceType::cpu;
  if (name == "gpu") return DeviceType::gpu;
  if (name == "npu") return DeviceType::npu;
  return std::nullopt;
}

}  // namespace catalog
