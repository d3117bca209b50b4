#include "daemon/hardware/discovery.hpp"

#include <sys/stat.h>
#include <sys/utsname.h>

#include <cstdint>
#include <exception>
#include <map>
#include <optional>
#include <string_view>
#include <utility>

#include "catalog/text.hpp"
#include "daemon/hardware/cpuinfo.hpp"
#include "daemon/hardware/pci.hpp"
#include "daemon/hardware/rooted_fs.hpp"
#include "daemon/hardware/text.hpp"

namespace epbrokerd::hardware {
namespace fs = std::filesystem;
using catalog::Errc;
using catalog::fail;
using catalog::Result;

namespace {

// What discovery reads from one PCI function's directory.
struct PciFunction {
  fs::path dir;        // resolved, relative to the sysfs root
  std::string bus_id;  // "0000:65:00.0"
  std::string parent;  // name of the parent directory (bridge bus id or "pci0000:00")
  std::optional<std::uint16_t> vendor;
  std::optional<std::uint16_t> device;
  std::optional<std::uint16_t> subsystem_vendor;
  std::optional<std::uint16_t> subsystem_device;
  std::optional<std::uint32_t> class_code;
};

// A GPU or NPU found, before it becomes a Device.
struct Found {
  fs::path dir;                    // resolved device directory
  std::optional<PciFunction> pci;  // absent for non-PCI NPUs
  std::string drm_card;            // "card1" when found through class/drm
  std::string accel;               // "accel0" when found through class/accel
};

class Discovery {
 public:
  Discovery(const Roots& roots, std::string arch)
      : sys_(roots.sysfs), proc_(roots.procfs), dev_(roots.dev), arch_(std::move(arch)) {}

  std::vector<Device> run() {
    std::vector<Device> devices = cpus();
    find_gpus();
    find_npus();
    std::size_t n = 0;
    for (const auto& [bus, found] : gpus_) {
      devices.push_back(make_device(found, catalog::DeviceType::gpu, "gpu" + std::to_string(n++)));
    }
    n = 0;
    for (const auto& [bus, found] : npus_) {
      devices.push_back(make_device(found, catalog::DeviceType::npu, "npu" + std::to_string(n++)));
    }
    for (const auto& [number, found] : platform_npus_) {
      devices.push_back(make_device(found, catalog::DeviceType::npu, "npu" + std::to_string(n++)));
    }
    return devices;
  }

 private:
  std::vector<Device> cpus() const {
    std::string text =
        proc_.read("cpuinfo", kMaxCpuinfoBytes, RootedFs::Oversize::truncate).value_or("");
    if (text.size() == kMaxCpuinfoBytes) {
      // Cut: keep whole blocks only, so no processor counts with half its flags.
      const std::size_t end = text.rfind("\n\n");
      text.resize(end == std::string::npos ? 0 : end + 1);
    }
    std::vector<Device> devices = parse_cpuinfo(text, arch_);
    if (devices.empty()) {
      Device cpu;
      cpu.id = "cpu0";
      cpu.type = catalog::DeviceType::cpu;
      cpu.arch = arch_;
      devices.push_back(std::move(cpu));
    }
    return devices;
  }

  std::optional<std::string> attribute(const fs::path& rel) const {
    return sys_.read(rel, kMaxAttributeBytes);
  }

  std::optional<std::uint32_t> hex_attribute(const fs::path& rel, std::uint32_t max) const {
    const auto text = attribute(rel);
    return text ? parse_sysfs_hex(*text, max) : std::nullopt;
  }

  std::optional<std::uint16_t> id_attribute(const fs::path& rel) const {
    const auto value = hex_attribute(rel, 0xffff);
    if (!value) return std::nullopt;
    return static_cast<std::uint16_t>(*value);
  }

  // The PCI function at the resolved directory `dir`, if it is one.
  std::optional<PciFunction> read_pci(const fs::path& dir) const {
    PciFunction f;
    f.bus_id = dir.filename().string();
    if (!is_pci_bus_id(f.bus_id)) return std::nullopt;
    f.dir = dir;
    f.parent = dir.parent_path().filename().string();
    f.vendor = id_attribute(dir / "vendor");
    f.device = id_attribute(dir / "device");
    f.subsystem_vendor = id_attribute(dir / "subsystem_vendor");
    f.subsystem_device = id_attribute(dir / "subsystem_device");
    f.class_code = hex_attribute(dir / "class", 0xffffff);
    return f;
  }

  // Entries of `rel` named prefix + decimal number, by number.
  std::map<std::uint32_t, std::string> numbered(const fs::path& rel,
                                                std::string_view prefix) const {
    std::map<std::uint32_t, std::string> out;
    for (const auto& name : sys_.list(rel, kMaxDirEntries)) {
      if (!name.starts_with(prefix)) continue;
      const std::string_view digits = std::string_view(name).substr(prefix.size());
      if (digits.empty() || digits.size() > 9 || (digits.size() > 1 && digits[0] == '0')) {
        continue;
      }
      if (const auto number = parse_decimal(digits)) out.emplace(*number, name);
    }
    return out;
  }

  bool known(const std::string& bus_id) const {
    return gpus_.contains(bus_id) || npus_.contains(bus_id);
  }

  // PCI functions of bus/pci/devices not yet known for which `wanted` holds.
  template <typename Wanted>
  void scan_pci(Wanted wanted, std::map<std::string, Found>& into) const {
    for (const auto& name : sys_.list("bus/pci/devices", kMaxDirEntries)) {
      if (!is_pci_bus_id(name) || known(name)) continue;
      const auto dir = sys_.resolve(fs::path("bus/pci/devices") / name);
      if (!dir) continue;
      auto f = read_pci(*dir);
      if (!f || known(f->bus_id) || !wanted(*f)) continue;
      const std::string bus_id = f->bus_id;
      into.try_emplace(bus_id, Found{*dir, std::move(f), "", ""});
    }
  }

  static bool has_class(const PciFunction& f, std::uint8_t base) {
    return f.class_code && (*f.class_code >> 16) == base;
  }

  void find_gpus() {
    for (const auto& [number, card] : numbered("class/drm", "card")) {
      const auto dir = sys_.resolve(fs::path("class/drm") / card / "device");
      if (!dir) continue;
      auto f = read_pci(*dir);
      if (!f) continue;  // a SoC display controller or simpledrm: not a GPU we serve
      const std::string bus_id = f->bus_id;
      gpus_.try_emplace(bus_id, Found{*dir, std::move(f), card, ""});
    }
    scan_pci([](const PciFunction& f) { return has_class(f, kClassDisplay); }, gpus_);
  }

  void find_npus() {
    for (const auto& [number, accel] : numbered("class/accel", "accel")) {
      const auto dir = sys_.resolve(fs::path("class/accel") / accel / "device");
      if (!dir) continue;
      if (auto f = read_pci(*dir)) {
        if (known(f->bus_id)) continue;
        const std::string bus_id = f->bus_id;
        npus_.try_emplace(bus_id, Found{*dir, std::move(f), "", accel});
      } else {
        platform_npus_.try_emplace(number, Found{*dir, std::nullopt, "", accel});
      }
    }
    scan_pci(
        [](const PciFunction& f) {
          return has_class(f, kClassAccelerator) ||
                 (f.vendor && f.device && is_known_npu(*f.vendor, *f.device));
        },
        npus_);
  }

  std::string driver_version(const fs::path& dir, const std::string& driver) const {
    if (driver == "nvidia") {
      if (const auto text = proc_.read("driver/nvidia/version", kMaxProcTextBytes)) {
        if (auto version = parse_nvidia_driver_version(*text)) return *std::move(version);
      }
    }
    std::string module = driver;
    for (char& c : module) {
      if (c == '-') c = '_';
    }
    for (const fs::path& rel :
         {dir / "driver" / "module" / "version", fs::path("module") / driver / "version",
          fs::path("module") / module / "version"}) {
      if (const auto text = attribute(rel)) {
        const std::string_view version = trim(*text);
        if (is_version_text(version)) return std::string(version);
      }
    }
    return {};
  }

  // A node name under /dev if it exists there: "/dev/" + rel, else "".
  std::string node_if_present(const std::string& rel) const {
    return dev_.exists(rel) ? "/dev/" + rel : std::string();
  }

  // The NVIDIA proc "information" file of a GPU, "" if absent.
  std::string nvidia_information(const std::string& bus_id) const {
    return proc_.read(fs::path("driver/nvidia/gpus") / bus_id / "information", kMaxProcTextBytes)
        .value_or("");
  }

  std::string gpu_node(const Found& found, const std::string& nvidia_info) const {
    const auto render = numbered(found.dir / "drm", "renderD");
    if (!render.empty()) {
      if (auto node = node_if_present("dri/" + render.begin()->second); !node.empty()) {
        return node;
      }
    }
    std::string card = found.drm_card;
    if (card.empty()) {
      const auto cards = numbered(found.dir / "drm", "card");
      if (!cards.empty()) card = cards.begin()->second;
    }
    if (!card.empty()) {
      if (auto node = node_if_present("dri/" + card); !node.empty()) return node;
    }
    if (const auto minor = find_key_value(nvidia_info, "Device Minor")) {
      if (const auto number = parse_decimal(*minor, 255)) {
        return node_if_present("nvidia" + std::to_string(*number));
      }
    }
    return {};
  }

  std::string npu_node(const Found& found) const {
    std::string accel = found.accel;
    if (accel.empty()) {
      const auto nodes = numbered(found.dir / "accel", "accel");
      if (!nodes.empty()) accel = nodes.begin()->second;
    }
    return accel.empty() ? std::string() : node_if_present("accel/" + accel);
  }

  Device make_device(const Found& found, catalog::DeviceType type, std::string id) const {
    Device device;
    device.id = std::move(id);
    device.type = type;
    if (auto driver = sys_.link_name(found.dir / "driver"); driver && is_kernel_name(*driver)) {
      device.driver = *std::move(driver);
      device.driver_version = driver_version(found.dir, device.driver);
    }

    if (!found.pci) {  // a non-PCI NPU (SoC): part of the chip
      device.discrete = false;
      if (const auto compatible = attribute(found.dir / "of_node" / "compatible")) {
        // A list of NUL-terminated strings; the first is the most specific.
        device.name = clean_text(std::string_view(*compatible).substr(0, compatible->find('\0')));
      }
      if (device.name.empty()) device.name = clean_text(found.dir.filename().string());
      device.node = npu_node(found);
      return device;
    }

    const PciFunction& f = *found.pci;
    device.vendor_id = f.vendor.value_or(0);
    device.device_id = f.device.value_or(0);
    device.subsystem_vendor_id = f.subsystem_vendor.value_or(0);
    device.subsystem_device_id = f.subsystem_device.value_or(0);
    if (f.vendor) device.vendor = vendor_label(*f.vendor);
    device.bus_path = f.bus_id;
    device.discrete = !(f.vendor && is_integrated(*f.vendor, device.device_id, f.bus_id, f.parent));

    const std::string nvidia_info =
        device.driver == "nvidia" ? nvidia_information(f.bus_id) : std::string();
    if (const auto model = find_key_value(nvidia_info, "Model")) {
      device.name = clean_text(*model);
    }
    if (device.name.empty()) {
      if (const auto product = attribute(f.dir / "product_name")) {
        device.name = clean_text(*product);
      }
    }
    if (device.name.empty()) {
      if (f.vendor && f.device) {
        device.name = "PCI " + hex_digits(*f.vendor, 4) + ":" + hex_digits(*f.device, 4);
      } else {
        device.name = "PCI device " + f.bus_id;
      }
    }
    device.node = type == catalog::DeviceType::gpu ? gpu_node(found, nvidia_info) : npu_node(found);
    return device;
  }

  RootedFs sys_;
  RootedFs proc_;
  RootedFs dev_;
  std::string arch_;
  std::map<std::string, Found> gpus_;             // by bus id
  std::map<std::string, Found> npus_;             // PCI NPUs by bus id
  std::map<std::uint32_t, Found> platform_npus_;  // non-PCI NPUs by accel number
};

bool is_plain_name(std::string_view s) {
  if (s.empty() || s.size() > 32) return false;
  for (char c : s) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

bool is_directory_root(const fs::path& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

Result<std::vector<Device>> discover(const Roots& roots) {
  try {
    if (roots.sysfs.empty() || roots.procfs.empty() || roots.dev.empty()) {
      return fail(Errc::invalid_argument, "hardware discovery: a root path is empty");
    }
    std::string arch = roots.arch;
    if (arch.empty()) {
      struct utsname names {};
      if (::uname(&names) != 0) {
        return fail(Errc::io, "hardware discovery: uname() failed");
      }
      arch = names.machine;
    }
    if (!is_plain_name(arch)) {
      return fail(Errc::invalid_argument,
                  "hardware discovery: bad architecture " + catalog::quote_for_message(arch));
    }
    for (const fs::path* root : {&roots.sysfs, &roots.procfs}) {
      if (!is_directory_root(*root)) {
        return fail(Errc::not_found, "hardware discovery: root " +
                                         catalog::quote_for_message(root->native(), 256) +
                                         " is not a directory");
      }
    }
    return Discovery(roots, std::move(arch)).run();
  } catch (const std::exception& e) {  // memory exhaustion at most
    return fail(Errc::io, std::string("hardware discovery: ") + e.what());
  }
}

}  // namespace epbrokerd::hardware
