// Hardware discovery: the machine's CPUs, GPUs and NPUs, read from sysfs and procfs
// under injectable roots (the live system, or a fixture tree in tests).
//
// What is read (paths relative to the roots; nothing else is opened):
//  CPUs  procfs cpuinfo (see parse_cpuinfo()); one Device per package. A missing or
//        unreadable cpuinfo still yields "cpu0" with only `arch` set.
//  GPUs  sysfs class/drm/card<N>/device for every DRM card whose device is a PCI
//        function, plus every PCI function of display class 0x03xxxx in
//        bus/pci/devices/* not found that way (no DRM driver bound, e.g. NVIDIA without
//        nvidia-drm, or a tree without class/drm). Non-PCI DRM cards (SoC display
//        controllers, simpledrm) are not GPUs we can serve and are skipped.
//  NPUs  sysfs class/accel/accel<N>/device (PCI or not), plus every PCI function in
//        bus/pci/devices/* of class 0x12xxxx (processing accelerator) or with a known
//        NPU id (is_known_npu(): AMD XDNA reports class 0x1180) not already found as a
//        GPU or NPU. A non-PCI NPU's name is its devicetree `of_node/compatible`
//        (first string), else its device directory's name; it has no vendor.
//  Per PCI function (the resolved device directory, named by its bus id): `vendor`,
//  `device`, `subsystem_vendor`, `subsystem_device`, `class` (hex "0x10de"), the
//  `driver` symlink's last component, `product_name` (amdgpu), the `drm/` and
//  `accel/` subdirectories (node names). Driver versions: for "nvidia" procfs
//  driver/nvidia/version (parse_nvidia_driver_version()), then sysfs
//  <device>/driver/module/version, module/<driver>/version (also with '-' as '_').
//  NVIDIA names and /dev/nvidia<N>: procfs driver/nvidia/gpus/<bus id>/information.
//  Nodes are reported as "/dev/..." only when they exist under Roots::dev.
// Every symlink is resolved inside its root (RootedFs); every read is bounded; a
// missing, oversized or malformed file costs that field only (an unreadable `class`
// keeps a PCI function out of the bus/pci/devices scan, which needs it), never the
// device nor the whole discovery.
//
// Order and ids: CPUs by package ("cpu0"...), then GPUs by bus id ("gpu0"...), then
// NPUs by bus id followed by non-PCI NPUs by accel number ("npu0"...). Bus ids sort
// the same way every boot, unlike DRM card and accel numbers.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "catalog/error.hpp"
#include "daemon/hardware/device.hpp"

namespace epbrokerd::hardware {

// Where discovery looks. Each root is used as the system's "/sys", "/proc", "/dev".
struct Roots {
  std::filesystem::path sysfs = "/sys";
  std::filesystem::path procfs = "/proc";
  std::filesystem::path dev = "/dev";
  std::string arch;  // "x86_64", "aarch64"; "" = this machine's (uname -m)
  // Not read by discover(): the root of the loader's configuration and library
  // directories, for the packages' "requires" (LibraryLocator).
  std::filesystem::path system = "/";
};

// Bounds on the bytes read per file.
inline constexpr std::size_t kMaxAttributeBytes = 4096;           // a sysfs attribute (a page)
inline constexpr std::size_t kMaxProcTextBytes = 64 * 1024;       // NVIDIA's proc files
inline constexpr std::size_t kMaxCpuinfoBytes = 8 * 1024 * 1024;  // longer: cut at a block
inline constexpr std::size_t kMaxDirEntries = 4096;               // per directory listed

// The devices of the machine described by `roots`, in the order above; never empty
// (there is always a CPU). Errors: Errc::invalid_argument when a root is empty or
// `arch` is not a plain name ([A-Za-z0-9_]{1,32}); Errc::not_found when the sysfs or
// procfs root is not a directory; Errc::io when uname() fails or memory runs out.
// Missing /dev is not an error (no nodes are reported).
catalog::Result<std::vector<Device>> discover(const Roots& roots);

}  // namespace epbrokerd::hardware
