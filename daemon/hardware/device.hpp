// A compute device as hardware discovery reports it (ListDevices on the bus), and
// its conversion to the catalog's view for compatibility matching.
//
// Joining with ONNX Runtime's OrtHardwareDevice (what an app sees through
// OrtApi::GetEpDevices / Ort::Env::GetEpDevices) — a client pairs our devices with
// ORT's on these fields, which discovery takes from the same sysfs files ORT reads:
//  - type:      cpu/gpu/npu = OrtHardwareDeviceType_CPU/_GPU/_NPU.
//  - vendor_id: for a GPU or NPU the PCI vendor id from sysfs `vendor`, as ORT.
//               For a CPU the ids ORT's cpuinfo mapping uses: Intel 0x8086,
//               AMD 0x1022, Arm 0x13b5, NVIDIA 0x10de; for Qualcomm CPUs ORT uses
//               the 32-bit value 'QCOM' (0x4d4f4351), which does not fit here, so we
//               report Qualcomm's PCI vendor id 0x17cb: join CPUs on type alone
//               (both sides list one CPU per package, ORT only one in all).
//  - device_id: PCI device id from sysfs `device`, as ORT; 0 for a CPU, as ORT.
//  - bus_path:  equals ORT's metadata "pci_bus_id" (GPUs and NPUs ORT finds through
//               /sys/class/drm, /sys/class/accel or /sys/bus/pci): the sysfs PCI
//               function name "0000:65:00.0", domain included, lower case. With
//               several identical cards, (type, vendor_id, device_id) alone is
//               ambiguous; bus_path is the join key. Where an ORT build lacks
//               "pci_bus_id", join in bus_path order.
//  - discrete:  ORT's metadata "Discrete" ("1") where ORT sets it.
// Checked on an H200 host: ORT 1.30 GetHardwareDevices() listed {GPU, 0x10de, 0x2335,
// Discrete=1, pci_bus_id=0000:00:06.0} and {CPU, 0x8086, 0}, as discover() did.
// Our ids ("gpu0") are ours alone: ORT's "card_idx" metadata is the DRM card number,
// which may differ from our order and between boots.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/compat.hpp"
#include "catalog/device_type.hpp"

namespace epbrokerd::hardware {

struct Device {
  // "cpu0", "gpu0", "npu0": numbered per type, in a stable order (CPUs by package
  // number, GPUs and NPUs by bus_path, then non-PCI NPUs by accel number).
  std::string id;
  catalog::DeviceType type = catalog::DeviceType::cpu;
  std::uint16_t vendor_id = 0;            // PCI vendor id (CPUs: see the header comment); 0 unknown
  std::uint16_t device_id = 0;            // PCI device id; 0 for CPUs and unknown
  std::uint16_t subsystem_vendor_id = 0;  // PCI subsystem ids (board maker); 0 unknown
  std::uint16_t subsystem_device_id = 0;
  // "Intel", "AMD", "NVIDIA", "Qualcomm", "Arm"; another PCI vendor as "0x1a03"; an
  // x86 CPU of another vendor as its cpuinfo vendor_id; "" when unknown.
  std::string vendor;
  // CPU: cpuinfo "model name" (aarch64: the core names, "Cortex-A76"). PCI device: a
  // name the driver exposes (NVIDIA /proc/driver/nvidia/gpus/*/information "Model",
  // amdgpu `product_name`), else "PCI 10de:2331".
  std::string name;
  std::string driver;          // bound kernel driver ("nvidia", "i915"); "" none
  std::string driver_version;  // /sys/module/<driver>/version, NVIDIA's NVRM; "" unknown
  std::string bus_path;        // PCI function "0000:65:00.0"; "" for CPUs, non-PCI devices
  bool discrete = false;       // GPU/NPU is a separate chip (see is_integrated()); CPU false
  // Device node an app opens: "/dev/dri/renderD128" (else "/dev/dri/card1"),
  // "/dev/accel/accel0", "/dev/nvidia0"; only when it exists; "" otherwise.
  std::string node;

  // CPU only (0 / empty for other types).
  std::uint32_t cores = 0;       // physical cores in this package
  std::uint32_t threads = 0;     // logical processors in this package
  std::vector<std::string> isa;  // ISA extensions that matter to EPs, in a fixed order
  std::string arch;              // "x86_64", "aarch64" (as uname -m)

  friend bool operator==(const Device&, const Device&) = default;
};

// "Intel", "AMD", "NVIDIA", "Qualcomm", "Arm" for their PCI vendor ids (0x8086,
// 0x1002 and 0x1022, 0x10de, 0x17cb and 0x5143, 0x13b5); otherwise "0x" and four
// lower-case hex digits ("0x1a03").
std::string vendor_label(std::uint16_t pci_vendor_id);

// The fields compatibility matching needs (id, type, vendor_id, device_id, driver,
// driver_version).
catalog::Device to_catalog(const Device& device);

// All of `devices` for check_compatibility(); arch is the first CPU's ("" if none).
catalog::MachineInfo to_machine_info(std::span<const Device> devices);

}  // namespace epbrokerd::hardware
