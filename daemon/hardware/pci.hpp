// PCI facts hardware discovery needs: bus ids, class codes, and whether a GPU or NPU
// is integrated into the CPU package.
#pragma once

#include <cstdint>
#include <string_view>

namespace epbrokerd::hardware {

// PCI vendor ids discovery names (see vendor_label() in device.hpp).
inline constexpr std::uint16_t kVendorIntel = 0x8086;
inline constexpr std::uint16_t kVendorAmd = 0x1022;  // AMD CPUs, XDNA NPUs, chipset
inline constexpr std::uint16_t kVendorAti = 0x1002;  // AMD (ATI) GPUs
inline constexpr std::uint16_t kVendorNvidia = 0x10de;
inline constexpr std::uint16_t kVendorQualcomm = 0x17cb;
inline constexpr std::uint16_t kVendorArm = 0x13b5;

// PCI base classes (the top byte of the 24-bit `class` attribute).
inline constexpr std::uint8_t kClassDisplay = 0x03;      // VGA, XGA, 3D, other display
inline constexpr std::uint8_t kClassAccelerator = 0x12;  // processing accelerators

// `s` is a sysfs PCI function name "DDDD:BB:DD.F" in lower-case hex: a domain of 4 to
// 8 digits (Intel VMD domains are "10000"), bus and device of 2, function of 1. This
// is the same text ORT puts in OrtHardwareDevice metadata "pci_bus_id".
bool is_pci_bus_id(std::string_view s);

// `s` is a PCI host bridge directory under /sys/devices, "pciDDDD:BB": a function
// whose parent directory is one sits on its domain's root bus.
bool is_pci_host_bridge(std::string_view s);

// Whether a PCI GPU or NPU is part of the CPU package or SoC ("integrated") rather
// than a separate chip ("discrete"). `bus_id` is the function's name, `parent` the
// name of its parent directory in /sys/devices (a bridge's bus id, or "pciDDDD:BB").
// Integrated when:
//  - Intel (0x8086) and on the root bus: Intel iGPUs are root-complex integrated
//    endpoints at 00:02.0 and Intel NPUs at 00:0b.0, while Intel discrete GPUs (Arc)
//    sit below a root port;
//  - AMD (0x1002 or 0x1022) below an internal GPP bridge at DDDD:00:08.x, where
//    Raven Ridge through Strix APUs attach their iGPU (e.g. c4:00.0) and XDNA NPU
//    (c5:00.1); discrete Radeon and Instinct cards sit below 00:01.x / 00:03.x root
//    ports, mostly behind their own switch;
//  - AMD GPU (0x1002) whose device id is a known APU iGPU (Raven..Strix Halo),
//    in case the bridge is not visible.
// Everything else is discrete: NVIDIA and other vendors' PCI GPUs are separate chips
// (a BMC's VGA, e.g. ASPEED, is discrete too). The root bus is not used for other
// vendors because virtual machines place passed-through discrete GPUs on bus 0, and
// boot_vga is not used at all: it is 1 for a laptop's iGPU but equally for a server's
// BMC VGA and a desktop's only dGPU.
bool is_integrated(std::uint16_t vendor_id, std::uint16_t device_id, std::string_view bus_id,
                   std::string_view parent);

// An NPU whose PCI class does not say so: AMD XDNA NPUs (1022:1502 Phoenix and Hawk
// Point, 1022:17f0 Strix, Krackan and Strix Halo) report class 0x1180 (signal
// processing controller). They are found through /sys/class/accel when amdxdna is
// bound, and through this list when it is not.
bool is_known_npu(std::uint16_t vendor_id, std::uint16_t device_id);

}  // namespace epbrokerd::hardware
