#include "daemon/hardware/pci.hpp"

#include <algorithm>
#include <array>

namespace epbrokerd::hardware {
namespace {

bool is_lower_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

bool all_hex(std::string_view s) { return !s.empty() && std::ranges::all_of(s, is_lower_hex); }

// AMD APU iGPU device ids (vendor 0x1002), Raven Ridge through Strix Halo.
constexpr std::array<std::uint16_t, 16> kAmdApuGpus = {
    0x15dd,  // Raven Ridge, Picasso
    0x15d8,  // Picasso, Dali
    0x1636,  // Renoir
    0x1638,  // Cezanne
    0x164c,  // Lucienne
    0x15e7,  // Barcelo
    0x163f,  // Van Gogh
    0x1681,  // Rembrandt
    0x1506,  // Mendocino
    0x164e,  // Raphael, Granite Ridge
    0x13c0,  // Granite Ridge
    0x15bf,  // Phoenix1 (Radeon 780M)
    0x15c8,  // Phoenix2
    0x150e,  // Strix Point (Radeon 890M)
    0x1586,  // Strix Halo (Radeon 8060S)
    0x1114,  // Krackan Point
};

}  // namespace

bool is_pci_bus_id(std::string_view s) {
  // DDDD:BB:DD.F
  const std::size_t colon = s.find(':');
  if (colon == std::string_view::npos || colon < 4 || colon > 8) return false;
  const std::string_view rest = s.substr(colon + 1);
  return all_hex(s.substr(0, colon)) && rest.size() == 7 && all_hex(rest.substr(0, 2)) &&
         rest[2] == ':' && all_hex(rest.substr(3, 2)) && rest[5] == '.' &&
         all_hex(rest.substr(6, 1));
}

bool is_pci_host_bridge(std::string_view s) {
  if (!s.starts_with("pci")) return false;
  s.remove_prefix(3);
  const std::size_t colon = s.find(':');
  if (colon == std::string_view::npos || colon < 4 || colon > 8) return false;
  return all_hex(s.substr(0, colon)) && s.size() - colon - 1 == 2 && all_hex(s.substr(colon + 1));
}

bool is_integrated(std::uint16_t vendor_id, std::uint16_t device_id, std::string_view bus_id,
                   std::string_view parent) {
  if (vendor_id == kVendorIntel) {
    if (is_pci_host_bridge(parent)) return true;
    // Parent unknown: fall back to the bus number of the function itself.
    return parent.empty() && is_pci_bus_id(bus_id) &&
           bus_id.substr(bus_id.find(':') + 1, 2) == "00";
  }
  if (vendor_id == kVendorAti || vendor_id == kVendorAmd) {
    if (is_pci_bus_id(parent)) {
      const std::string_view bridge = parent.substr(parent.find(':') + 1);  // BB:DD.F
      if (bridge.starts_with("00:08.")) return true;
    }
    if (vendor_id == kVendorAti) {
      return std::ranges::find(kAmdApuGpus, device_id) != kAmdApuGpus.end();
    }
  }
  return false;
}

bool is_known_npu(std::uint16_t vendor_id, std::uint16_t device_id) {
  return vendor_id == kVendorAmd && (device_id == 0x1502 || device_id == 0x17f0);
}

}  // namespace epbrokerd::hardware
