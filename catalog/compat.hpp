// Compatibility matching: which EP packages can serve this machine and this app.
//
// Pure functions over plain data: the daemon supplies what hardware discovery found
// (MachineInfo), the app's ONNX Runtime version and the catalog's EP metadata; the
// answer says, per package, which devices it would serve or why it is excluded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "catalog/device_type.hpp"
#include "catalog/ep_metadata.hpp"
#include "catalog/version.hpp"

namespace catalog {

// One compute device as hardware discovery reports it.
struct Device {
  std::string id;  // stable id within the machine, e.g. "gpu0"
  DeviceType type = DeviceType::cpu;
  std::uint16_t vendor_id = 0;  // PCI vendor id (0 where there is none)
  std::uint16_t device_id = 0;  // PCI device id (0 where there is none)
  std::string driver;           // kernel driver name ("" if none bound)
  std::string driver_version;   // as reported; "" if unknown
};

struct MachineInfo {
  std::string arch;  // as `uname -m`: "x86_64", "aarch64"
  std::vector<Device> devices;
  // Whether the system's dynamic loader would find a shared library of this SONAME
  // (an EP package's "requires", e.g. "libvulkan.so.1"). Empty: not known, and
  // "requires" is not checked.
  std::function<bool(const std::string& soname)> has_library;
};

// Why a package is excluded; checked in this order: arch, ort_too_old, then the
// devices (driver_too_old, driver_mismatch, no_device, most specific first), then
// the shared libraries it requires (missing_library, only when a device matched).
enum class ExclusionReason {
  arch,             // built for another CPU architecture
  no_device,        // no device of a supported type / vendor / device id
  driver_too_old,   // a device matched except for its driver version (or that is unknown)
  driver_mismatch,  // a device matched except for its kernel driver
  ort_too_old,      // the app's ONNX Runtime is older than the package's ort_min
  missing_library,  // a library in "requires" is not on the machine (e.g. libvulkan.so.1)
};

// Stable lower-case name ("driver_too_old"), for logs, --json and bus properties.
std::string_view exclusion_reason_name(ExclusionReason reason);

// The package at `index` can run here, serving these devices (ids, in the order of
// MachineInfo::devices; never empty).
struct Match {
  std::size_t index = 0;
  std::vector<std::string> device_ids;

  friend bool operator==(const Match&, const Match&) = default;
};

// The package at `index` cannot run here; `message` says why for a human, e.g.
// "needs ONNX Runtime >= 1.24.0, app has 1.22.1".
struct Exclusion {
  std::size_t index = 0;
  ExclusionReason reason = ExclusionReason::no_device;
  std::string message;

  friend bool operator==(const Exclusion&, const Exclusion&) = default;
};

using Compatibility = std::variant<Match, Exclusion>;

// Decides for one package. A device is served when, for at least one entry of
// `package.supports`: the type is equal; vendor_ids is empty or holds the device's
// vendor id; device_ids is empty or holds its device id; `driver`, if given, equals
// the device's driver; and `driver_min`, if given, is <= the device's driver
// version (a device driver version that parse_version() rejects, or an empty one,
// counts as too old). When no device is served, the reason is driver_too_old if
// some device failed only on its driver version, else driver_mismatch if some
// device failed only on its driver name, else no_device; the message names the
// first such device. When devices are served but machine.has_library says a
// library of `package.required_sonames` is absent, the answer is missing_library
// naming the first one. `index` is copied into the answer.
Compatibility check_compatibility(const MachineInfo& machine, const Version& ort_version,
                                  const EpMetadata& package, std::size_t index = 0);

// check_compatibility() for each package; answer i is about packages[i].
std::vector<Compatibility> match_packages(const MachineInfo& machine, const Version& ort_version,
                                          std::span<const EpMetadata> packages);

}  // namespace catalog
