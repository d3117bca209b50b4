#include "daemon/hardware/device.hpp"

#include "daemon/hardware/pci.hpp"
#include "daemon/hardware/text.hpp"

namespace epbrokerd::hardware {

std::string vendor_label(std::uint16_t pci_vendor_id) {
  switch (pci_vendor_id) {
    case kVendorIntel:
      return "Intel";
    case kVendorAmd:
    case kVendorAti:
      return "AMD";
    case kVendorNvidia:
      return "NVIDIA";
    case kVendorQualcomm:
    case 0x5143:  // Qualcomm's older PCI vendor id (Adreno)
      return "Qualcomm";
    case kVendorArm:
      return "Arm";
    default:
      break;
  }
  return "0x" + hex_digits(pci_vendor_id, 4);
}

catalog::Device to_catalog(const Device& device) {
  catalog::Device out;
  out.id = device.id;
  out.type = device.type;
  out.vendor_id = device.vendor_id;
  out.device_id = device.device_id;
  out.driver = device.driver;
  out.driver_version = device.driver_version;
  return out;
}

catalog::MachineInfo to_machine_info(std::span<const Device> devices) {
  catalog::MachineInfo machine;
  machine.devices.reserve(devices.size());
  for (const auto& device : devices) {
    if (machine.arch.empty() && device.type == catalog::DeviceType::cpu) {
      machine.arch = device.arch;
    }
    machine.devices.push_back(to_catalog(device));
  }
  return machine;
}

}  // namespace epbrokerd::hardware
