#include "daemon/hardware/cpuinfo.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "daemon/hardware/pci.hpp"
#include "daemon/hardware/text.hpp"

namespace epbrokerd::hardware {
namespace {

constexpr std::array<std::string_view, 12> kX86Isa = {
    "fma",         "f16c",        "avx2",     "avx_vnni", "avx512f",  "avx512_vnni",
    "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8", "amx_fp16"};
constexpr std::array<std::string_view, 6> kArmIsa = {"asimd", "asimddp", "sve",
                                                     "sve2",  "i8mm",    "bf16"};

struct ArmPart {
  std::uint32_t implementer;
  std::uint32_t part;
  std::string_view name;
};

// Core names as lscpu prints them.
constexpr std::array<ArmPart, 30> kArmParts = {{
    {0x41, 0xd03, "Cortex-A53"},  {0x41, 0xd04, "Cortex-A35"},  {0x41, 0xd05, "Cortex-A55"},
    {0x41, 0xd07, "Cortex-A57"},  {0x41, 0xd08, "Cortex-A72"},  {0x41, 0xd09, "Cortex-A73"},
    {0x41, 0xd0a, "Cortex-A75"},  {0x41, 0xd0b, "Cortex-A76"},  {0x41, 0xd0c, "Neoverse-N1"},
    {0x41, 0xd0d, "Cortex-A77"},  {0x41, 0xd40, "Neoverse-V1"}, {0x41, 0xd41, "Cortex-A78"},
    {0x41, 0xd44, "Cortex-X1"},   {0x41, 0xd46, "Cortex-A510"}, {0x41, 0xd47, "Cortex-A710"},
    {0x41, 0xd48, "Cortex-X2"},   {0x41, 0xd49, "Neoverse-N2"}, {0x41, 0xd4b, "Cortex-A78C"},
    {0x41, 0xd4d, "Cortex-A715"}, {0x41, 0xd4e, "Cortex-X3"},   {0x41, 0xd4f, "Neoverse-V2"},
    {0x41, 0xd80, "Cortex-A520"}, {0x41, 0xd81, "Cortex-A720"}, {0x41, 0xd82, "Cortex-X4"},
    {0x41, 0xd84, "Neoverse-V3"}, {0x41, 0xd85, "Cortex-X925"}, {0x41, 0xd87, "Cortex-A725"},
    {0x41, 0xd8e, "Neoverse-N3"}, {0x4e, 0x004, "Carmel"},      {0x51, 0x001, "Oryon"},
}};

struct CpuVendor {
  std::string name;
  std::uint16_t id = 0;
};

CpuVendor x86_vendor(std::string_view raw) {
  if (raw == "GenuineIntel") return {"Intel", kVendorIntel};
  if (raw == "AuthenticAMD") return {"AMD", kVendorAmd};
  return {clean_text(raw, 32), 0};
}

std::string hex_label(std::uint32_t value, int digits) { return "0x" + hex_digits(value, digits); }

CpuVendor arm_vendor(std::uint32_t implementer) {
  switch (implementer) {
    case 0x41:
      return {"Arm", kVendorArm};
    case 0x51:
      return {"Qualcomm", kVendorQualcomm};
    case 0x4e:
      return {"NVIDIA", kVendorNvidia};
    default:
      return {hex_label(implementer, 2), 0};
  }
}

bool is_x86(std::string_view arch) {
  return arch == "x86_64" || arch == "i386" || arch == "i486" || arch == "i586" || arch == "i686";
}

bool is_arm(std::string_view arch) {
  return arch == "aarch64" || arch == "aarch64_be" || arch == "arm64" || arch.starts_with("armv");
}

// Bit i set when the ISA table's entry i is among the whitespace-separated `flags`.
template <std::size_t N>
std::uint32_t isa_mask(std::string_view flags, const std::array<std::string_view, N>& table) {
  std::uint32_t mask = 0;
  while (!flags.empty()) {
    flags = trim(flags);
    std::size_t end = 0;
    while (end < flags.size() && flags[end] != ' ' && flags[end] != '\t') ++end;
    const std::string_view flag = flags.substr(0, end);
    for (std::size_t i = 0; i < N; ++i) {
      if (table[i] == flag) mask |= 1U << i;
    }
    flags.remove_prefix(end);
  }
  return mask;
}

// What one processor block says.
struct Block {
  bool has_processor = false;
  std::optional<std::uint32_t> physical_id;
  std::optional<std::uint32_t> core_id;
  std::optional<std::uint32_t> cpu_cores;
  std::optional<std::uint32_t> siblings;
  std::optional<std::uint32_t> implementer;
  std::optional<std::uint32_t> part;
  std::string vendor_id;
  std::string model_name;
  std::optional<std::string> flags;
};

struct Package {
  std::size_t blocks = 0;
  const Block* first = nullptr;
  std::optional<std::uint32_t> cpu_cores;
  std::optional<std::uint32_t> siblings;
  std::set<std::uint32_t> core_ids;
  std::optional<std::uint32_t> isa;                            // AND over blocks with a flags line
  std::vector<std::pair<std::uint32_t, std::uint32_t>> parts;  // (implementer, part)
};

void apply(Block& block, std::string_view key, std::string_view value) {
  constexpr std::uint32_t kCount = 65535;
  if (key == "processor") {
    block.has_processor = true;
  } else if (key == "physical id") {
    block.physical_id = parse_decimal(value);
  } else if (key == "core id") {
    block.core_id = parse_decimal(value);
  } else if (key == "cpu cores") {
    block.cpu_cores = parse_decimal(value, kCount);
  } else if (key == "siblings") {
    block.siblings = parse_decimal(value, kCount);
  } else if (key == "vendor_id") {
    block.vendor_id = std::string(value.substr(0, 64));
  } else if (key == "model name") {
    block.model_name = std::string(value.substr(0, 512));
  } else if (key == "flags" || key == "Features") {
    block.flags = std::string(value.substr(0, 16384));
  } else if (key == "CPU implementer") {
    block.implementer = parse_sysfs_hex(value, 0xff);
  } else if (key == "CPU part") {
    block.part = parse_sysfs_hex(value, 0xfff);
  }
}

std::string arm_name(const Package& package, const CpuVendor& vendor) {
  std::vector<std::string> names;
  for (const auto& [implementer, part] : package.parts) {
    std::string name;
    for (const auto& known : kArmParts) {
      if (known.implementer == implementer && known.part == part) name = known.name;
    }
    if (name.empty()) name = vendor.name + " part " + hex_label(part, 3);
    if (std::ranges::find(names, name) == names.end()) names.push_back(std::move(name));
  }
  std::string out;
  for (const auto& name : names) {
    if (!out.empty()) out += " + ";
    out += name;
  }
  return out;
}

}  // namespace

std::vector<Device> parse_cpuinfo(std::string_view text, std::string_view arch) {
  std::vector<Block> blocks;
  Block current;
  auto finish = [&] {
    if (current.has_processor && blocks.size() < kMaxCpuProcessors) {
      blocks.push_back(std::move(current));
    }
    current = Block{};
  };
  while (!text.empty()) {
    const std::size_t eol = text.find('\n');
    const std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
    if (trim(line).empty()) {
      finish();
      continue;
    }
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view key = trim(line.substr(0, colon));
    if (key == "processor" && current.has_processor) finish();  // no blank line between
    apply(current, key, trim(line.substr(colon + 1)));
  }
  finish();

  const bool x86 = is_x86(arch);
  const bool arm = is_arm(arch);
  std::map<std::uint32_t, Package> packages;
  for (const auto& block : blocks) {
    const std::uint32_t number = block.physical_id.value_or(0);
    if (!packages.contains(number) && packages.size() >= kMaxCpuPackages) continue;
    Package& package = packages[number];
    if (package.first == nullptr) package.first = &block;
    ++package.blocks;
    if (!package.cpu_cores && block.cpu_cores && *block.cpu_cores > 0) {
      package.cpu_cores = block.cpu_cores;
    }
    if (!package.siblings && block.siblings && *block.siblings > 0) {
      package.siblings = block.siblings;
    }
    if (block.core_id) package.core_ids.insert(*block.core_id);
    if (block.flags) {
      const std::uint32_t mask = x86   ? isa_mask(*block.flags, kX86Isa)
                                 : arm ? isa_mask(*block.flags, kArmIsa)
                                       : 0;
      package.isa = package.isa ? (*package.isa & mask) : mask;
    }
    if (block.implementer && block.part) {
      const auto key = std::make_pair(*block.implementer, *block.part);
      if (std::ranges::find(package.parts, key) == package.parts.end()) {
        package.parts.push_back(key);
      }
    }
  }

  std::vector<Device> devices;
  for (const auto& [number, package] : packages) {
    const Block& first = *package.first;
    Device device;
    device.id = "cpu" + std::to_string(devices.size());
    device.type = catalog::DeviceType::cpu;
    device.arch = std::string(arch);

    const auto counted = static_cast<std::uint32_t>(package.blocks);
    device.threads = std::max(package.siblings.value_or(0), counted);
    if (package.cpu_cores) {
      device.cores = *package.cpu_cores;
    } else if (!package.core_ids.empty()) {
      device.cores = static_cast<std::uint32_t>(package.core_ids.size());
    } else {
      device.cores = device.threads;
    }
    device.cores = std::min(device.cores, device.threads);

    CpuVendor vendor;
    if (first.implementer) {
      vendor = arm_vendor(*first.implementer);
    } else if (!first.vendor_id.empty()) {
      vendor = x86_vendor(first.vendor_id);
    }
    device.vendor = vendor.name;
    device.vendor_id = vendor.id;

    device.name = clean_text(first.model_name);
    if (device.name.empty() && !package.parts.empty()) device.name = arm_name(package, vendor);

    const std::uint32_t mask = package.isa.value_or(0);
    if (x86) {
      for (std::size_t i = 0; i < kX86Isa.size(); ++i) {
        if ((mask & (1U << i)) != 0) device.isa.emplace_back(kX86Isa[i]);
      }
    } else if (arm) {
      for (std::size_t i = 0; i < kArmIsa.size(); ++i) {
        if ((mask & (1U << i)) != 0) device.isa.emplace_back(kArmIsa[i]);
      }
    }
    devices.push_back(std::move(device));
  }
  return devices;
}

}  // namespace epbrokerd::hardware
