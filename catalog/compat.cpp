#include "catalog/compat.hpp"

#include <algorithm>
#include <cstdio>

#include "catalog/text.hpp"

namespace catalog {

namespace {

// How far a device got against one support entry; larger is closer to a match.
enum class Fit { wrong_device, wrong_driver, old_driver, ok };

struct Verdict {
  Fit fit = Fit::wrong_device;
  std::string message;  // for wrong_driver and old_driver
};

std::string driver_label(const std::string& driver) {
  return driver.empty() ? std::string("(none)") : driver;
}

Verdict evaluate(const Device& device, const DeviceSupport& support) {
  const auto listed = [](const std::vector<std::uint16_t>& ids, std::uint16_t id) {
    return ids.empty() || std::find(ids.begin(), ids.end(), id) != ids.end();
  };
  if (device.type != support.type || !listed(support.vendor_ids, device.vendor_id) ||
      !listed(support.device_ids, device.device_id)) {
    return {};
  }
  if (support.driver && *support.driver != device.driver) {
    return {Fit::wrong_driver, "driver " + driver_label(device.driver) + " instead of required " +
                                   *support.driver + " on device " + device.id};
  }
  if (support.driver_min) {
    const std::string& required = support.driver_min->text;
    if (device.driver_version.empty()) {
      return {Fit::old_driver, "driver " + driver_label(device.driver) +
                                   " version unknown, required >= " + required + " on device " +
                                   device.id};
    }
    const auto have = parse_version(device.driver_version);
    if (!have) {
      return {Fit::old_driver, "driver " + driver_label(device.driver) + " version " +
                                   quote_for_message(device.driver_version) +
                                   " is not a version, required >= " + required + " on device " +
                                   device.id};
    }
    if (*have < support.driver_min->value) {
      return {Fit::old_driver, "driver " + driver_label(device.driver) + " " +
                                   device.driver_version + " < required " + required +
                                   " on device " + device.id};
    }
  }
  return {Fit::ok, {}};
}

std::string hex_id(std::uint16_t id) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%04x", static_cast<unsigned>(id));
  return buf;
}

std::string describe_ids(std::string_view what, const std::vector<std::uint16_t>& ids) {
  constexpr std::size_t kShown = 8;
  std::string out = std::string(what) + " ";
  for (std::size_t i = 0; i < ids.size() && i < kShown; ++i) {
    if (i != 0) out += "|";
    out += hex_id(ids[i]);
  }
  if (ids.size() > kShown) out += "|...";
  return out;
}

// "gpu (vendor 0x10de, driver nvidia >= 550.54.14)"
std::string describe(const DeviceSupport& s) {
  std::vector<std::string> parts;
  if (!s.vendor_ids.empty()) parts.push_back(describe_ids("vendor", s.vendor_ids));
  if (!s.device_ids.empty()) parts.push_back(describe_ids("device", s.device_ids));
  if (s.driver) {
    std::string d = "driver " + *s.driver;
    if (s.driver_min) d += " >= " + s.driver_min->text;
    parts.push_back(std::move(d));
  }
  std::string out(device_type_name(s.type));
  for (std::size_t i = 0; i < parts.size(); ++i) {
    out += (i == 0 ? " (" : ", ") + parts[i];
  }
  if (!parts.empty()) out += ")";
  return out;
}

std::string no_device_message(const MachineInfo& machine, const EpMetadata& package) {
  constexpr std::size_t kShown = 4;
  std::string out = "no matching device";
  if (machine.devices.empty()) out += " (machine reports none)";
  out += "; needs ";
  for (std::size_t i = 0; i < package.supports.size() && i < kShown; ++i) {
    if (i != 0) out += " or ";
    out += describe(package.supports[i]);
  }
  if (package.supports.size() > kShown) out += " or ...";
  return out;
}

}  // namespace

std::string_view exclusion_reason_name(ExclusionReason reason) {
  switch (reason) {
    case ExclusionReason::arch:
      return "arch";
    case ExclusionReason::no_device:
      return "no_device";
    case ExclusionReason::driver_too_old:
      return "driver_too_old";
    case ExclusionReason::driver_mismatch:
      return "driver_mismatch";
    case ExclusionReason::ort_too_old:
      return "ort_too_old";
    case ExclusionReason::missing_library:
      return "missing_library";
  }
  return "unknown";
}

Compatibility check_compatibility(const MachineInfo& machine, const Version& ort_version,
                                  const EpMetadata& package, std::size_t index) {
  if (package.arch != machine.arch) {
    return Exclusion{index, ExclusionReason::arch,
                     "built for " + package.arch + ", machine is " +
                         (machine.arch.empty() ? std::string("unknown") : machine.arch)};
  }
  if (ort_version < package.ort_min.value) {
    return Exclusion{
        index, ExclusionReason::ort_too_old,
        "needs ONNX Runtime >= " + package.ort_min.text + ", app has " + to_string(ort_version)};
  }

  Match match{index, {}};
  Verdict closest;  // the first of the closest misses
  for (const Device& device : machine.devices) {
    for (const DeviceSupport& support : package.supports) {
      Verdict v = evaluate(device, support);
      if (v.fit == Fit::ok) {
        match.device_ids.push_back(device.id);
        break;
      }
      if (v.fit > closest.fit) closest = std::move(v);
    }
  }
  if (!match.device_ids.empty()) {
    if (machine.has_library) {
      for (const std::string& soname : package.required_sonames) {
        if (!machine.has_library(soname)) {
          return Exclusion{index, ExclusionReason::missing_library,
                           "needs " + soname +
                               ", which is not installed (install the distribution package "
                               "that provides it)"};
        }
      }
    }
    return match;
  }
  switch (closest.fit) {
    case Fit::old_driver:
      return Exclusion{index, ExclusionReason::driver_too_old, std::move(closest.message)};
    case Fit::wrong_driver:
      return Exclusion{index, ExclusionReason::driver_mismatch, std::move(closest.message)};
    case Fit::wrong_device:
    case Fit::ok:
      break;
  }
  return Exclusion{index, ExclusionReason::no_device, no_device_message(machine, package)};
}

std::vector<Compatibility> match_packages(const MachineInfo& machine, const Version& ort_version,
                                          std::span<const EpMetadata> packages) {
  std::vector<Compatibility> out;
  out.reserve(packages.size());
  for (std::size_t i = 0; i < packages.size(); ++i) {
    out.push_back(check_compatibility(machine, ort_version, packages[i], i));
  }
  return out;
}

}  // namespace catalog
