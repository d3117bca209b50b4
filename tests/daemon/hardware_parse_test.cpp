// The pure parts of hardware discovery: sysfs/procfs text, /proc/cpuinfo, PCI rules,
// vendor labels and the conversion for compatibility matching.
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "daemon/hardware/cpuinfo.hpp"
#include "daemon/hardware/device.hpp"
#include "daemon/hardware/pci.hpp"
#include "daemon/hardware/text.hpp"

namespace epbrokerd::hardware {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// --- text ----------------------------------------------------------------------------

TEST(HardwareText, SysfsHex) {
  EXPECT_EQ(parse_sysfs_hex("0x10de\n"), 0x10deU);
  EXPECT_EQ(parse_sysfs_hex("0X8086"), 0x8086U);
  EXPECT_EQ(parse_sysfs_hex("  0x1\n"), 0x1U);
  EXPECT_EQ(parse_sysfs_hex("0x030200\n", 0xffffff), 0x030200U);
  EXPECT_EQ(parse_sysfs_hex("0x030200\n"), std::nullopt);  // above the 16-bit default
  for (const char* bad : {"", "0x", "10de", "0x10de0x", "0x10de and more", "0x-1", "0x+1",
                          "0x123456789", "0xg", "x10de", "0x 10de"}) {
    EXPECT_EQ(parse_sysfs_hex(bad, 0xffffffffU), std::nullopt) << bad;
  }
}

TEST(HardwareText, Decimal) {
  EXPECT_EQ(parse_decimal(" 16\n"), 16U);
  EXPECT_EQ(parse_decimal("4294967295"), 4294967295U);
  EXPECT_EQ(parse_decimal("300", 255), std::nullopt);
  for (const char* bad : {"", "-1", "+1", "1.5", "lots", "99999999999", "4294967296", "1 2"}) {
    EXPECT_EQ(parse_decimal(bad), std::nullopt) << bad;
  }
}

TEST(HardwareText, CleanText) {
  EXPECT_EQ(clean_text("  Intel(R)  Xeon(R)\tw3-2423 \n"), "Intel(R) Xeon(R) w3-2423");
  EXPECT_EQ(clean_text(""), "");
  EXPECT_EQ(clean_text("evil\x1b[2J"), "");
  EXPECT_EQ(clean_text(std::string("a\0b", 3)), "");
  EXPECT_EQ(clean_text("caf\xc3\xa9"), "");  // non-ASCII
  EXPECT_EQ(clean_text(std::string(129, 'x')), "");
  EXPECT_EQ(clean_text(std::string(128, 'x')), std::string(128, 'x'));
  EXPECT_EQ(clean_text("abcdef", 3), "");
}

TEST(HardwareText, KeyValue) {
  const std::string info =
      "Model: \t\t NVIDIA H200\nIRQ:   \t\t 41\nBus Location: \t 0000:00:06.0\n"
      "Device Minor: \t 0\nGPU Excluded:\t No\n";
  EXPECT_EQ(find_key_value(info, "Model"), "NVIDIA H200");
  EXPECT_EQ(find_key_value(info, "Device Minor"), "0");
  EXPECT_EQ(find_key_value(info, "Bus Location"), "0000:00:06.0");  // first ':' splits
  EXPECT_EQ(find_key_value(info, "Missing"), std::nullopt);
  EXPECT_EQ(find_key_value("no colon here\n", "no colon here"), std::nullopt);
  EXPECT_EQ(find_key_value("Model:", "Model"), "");
}

TEST(HardwareText, NvidiaDriverVersion) {
  // Open kernel module (as recorded on an H200 host) and the proprietary one.
  EXPECT_EQ(parse_nvidia_driver_version(
                "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release "
                "Build  (nixbld@)  \nGCC version:  gcc version 15.3.0 (GCC) \n"),
            "580.159.04");
  EXPECT_EQ(parse_nvidia_driver_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  "
                                        "550.54.14  Thu Feb 22 01:44:30 UTC 2024\n"),
            "550.54.14");
  EXPECT_EQ(parse_nvidia_driver_version("NVRM version: NVIDIA UNIX aarch64 Kernel Module  "
                                        "535.183.01  Sun May 12 19:30:12 UTC 2024\n"),
            "535.183.01");
  EXPECT_EQ(parse_nvidia_driver_version("GCC version: 13\nNVRM version: NVIDIA UNIX Open "
                                        "Kernel Module for aarch64  575.57.08  Release Build\n"),
            "575.57.08");
  for (const char* bad :
       {"", "NVRM version: NVIDIA UNIX x86_64\n", "NVRM version: Kernel Module  banana\n",
        "NVRM version: Kernel Module  1\n",  // one part
        "NVRM version: Kernel Module  1.2.3.4.5\n", "NVRM version: Kernel Module  1234567890.1\n",
        "Kernel Module 580.65.06\n",  // not on the NVRM line
        "  NVRM version: Kernel Module 580.65.06\n"}) {
    EXPECT_EQ(parse_nvidia_driver_version(bad), std::nullopt) << bad;
  }
}

TEST(HardwareText, Names) {
  EXPECT_TRUE(is_kernel_name("nvidia"));
  EXPECT_TRUE(is_kernel_name("virtio-pci"));
  EXPECT_TRUE(is_kernel_name("intel_vpu"));
  EXPECT_FALSE(is_kernel_name(""));
  EXPECT_FALSE(is_kernel_name("a/b"));
  EXPECT_FALSE(is_kernel_name("bad$name"));
  EXPECT_FALSE(is_kernel_name(std::string(65, 'a')));
  EXPECT_TRUE(is_version_text("580.65.06"));
  EXPECT_TRUE(is_version_text("1.0.0-k"));
  EXPECT_TRUE(is_version_text("2:1.2~rc1"));
  EXPECT_FALSE(is_version_text("1.0 beta"));
  EXPECT_FALSE(is_version_text(""));
  EXPECT_EQ(hex_digits(0x10de, 4), "10de");
  EXPECT_EQ(hex_digits(0x41, 2), "41");
  EXPECT_EQ(hex_digits(0x5, 4), "0005");
  EXPECT_EQ(hex_digits(0xd0b, 3), "d0b");
}

// --- PCI -----------------------------------------------------------------------------

TEST(HardwarePci, BusIds) {
  EXPECT_TRUE(is_pci_bus_id("0000:65:00.0"));
  EXPECT_TRUE(is_pci_bus_id("0001:01:00.0"));
  EXPECT_TRUE(is_pci_bus_id("10000:e1:00.7"));  // Intel VMD domain
  for (const char* bad : {"", "65:00.0", "0000:65:00", "0000:65:00.00", "0000:65:0.0",
                          "0000:65:00.0 ", "0000:65:00:0", "0000:6G:00.0", "0000:65:00.0/x",
                          "pci0000:00", "000:65:00.0", "0000:AB:00.0", "123456789:00:00.0"}) {
    EXPECT_FALSE(is_pci_bus_id(bad)) << bad;
  }
  EXPECT_TRUE(is_pci_host_bridge("pci0000:00"));
  EXPECT_TRUE(is_pci_host_bridge("pci0001:00"));
  EXPECT_TRUE(is_pci_host_bridge("pci10000:e0"));
  for (const char* bad : {"", "pci", "pci0000", "pci0000:0", "pci0000:000", "0000:00:00.0",
                          "pcix000:00", "platform"}) {
    EXPECT_FALSE(is_pci_host_bridge(bad)) << bad;
  }
}

TEST(HardwarePci, Integrated) {
  // Intel iGPU and NPU on the root bus; Intel Arc below a root port is discrete.
  EXPECT_TRUE(is_integrated(0x8086, 0x7d55, "0000:00:02.0", "pci0000:00"));
  EXPECT_TRUE(is_integrated(0x8086, 0x7d1d, "0000:00:0b.0", "pci0000:00"));
  EXPECT_FALSE(is_integrated(0x8086, 0x56a0, "0000:03:00.0", "0000:02:01.0"));
  EXPECT_TRUE(is_integrated(0x8086, 0x7d55, "0000:00:02.0", ""));  // parent unknown: bus 00
  EXPECT_FALSE(is_integrated(0x8086, 0x56a0, "0000:03:00.0", ""));
  // AMD APU iGPU and XDNA NPU below the internal GPP bridges 00:08.x.
  EXPECT_TRUE(is_integrated(0x1002, 0x15bf, "0000:c4:00.0", "0000:00:08.1"));
  EXPECT_TRUE(is_integrated(0x1022, 0x1502, "0000:c5:00.1", "0000:00:08.2"));
  EXPECT_TRUE(is_integrated(0x1002, 0x9999, "0000:c4:00.0", "0000:00:08.1"));
  // A known APU id wherever its bridge is; a Radeon/Instinct card below a root port or
  // its own switch is discrete.
  EXPECT_TRUE(is_integrated(0x1002, 0x150e, "0000:65:00.0", "0000:64:00.0"));
  EXPECT_FALSE(is_integrated(0x1002, 0x744c, "0000:03:00.0", "0000:02:00.0"));
  EXPECT_FALSE(is_integrated(0x1002, 0x744c, "0000:01:00.0", "0000:00:01.1"));
  EXPECT_FALSE(is_integrated(0x1002, 0x74a1, "0000:00:05.0", "pci0000:00"));
  // NVIDIA is discrete even on a VM's root bus (as recorded on an H200 guest), and so is
  // a BMC's VGA.
  EXPECT_FALSE(is_integrated(0x10de, 0x2335, "0000:00:06.0", "pci0000:00"));
  EXPECT_FALSE(is_integrated(0x1a03, 0x2000, "0000:03:00.0", "0000:02:00.0"));
  EXPECT_FALSE(is_integrated(0x1a03, 0x2000, "0000:00:08.0", "0000:00:08.1"));
}

TEST(HardwarePci, KnownNpus) {
  EXPECT_TRUE(is_known_npu(0x1022, 0x1502));
  EXPECT_TRUE(is_known_npu(0x1022, 0x17f0));
  EXPECT_FALSE(is_known_npu(0x1002, 0x1502));
  EXPECT_FALSE(is_known_npu(0x8086, 0x7d1d));  // Intel NPUs say class 0x1200 themselves
}

// --- devices -------------------------------------------------------------------------

TEST(HardwareDevice, VendorLabels) {
  EXPECT_EQ(vendor_label(0x8086), "Intel");
  EXPECT_EQ(vendor_label(0x1002), "AMD");
  EXPECT_EQ(vendor_label(0x1022), "AMD");
  EXPECT_EQ(vendor_label(0x10de), "NVIDIA");
  EXPECT_EQ(vendor_label(0x17cb), "Qualcomm");
  EXPECT_EQ(vendor_label(0x5143), "Qualcomm");
  EXPECT_EQ(vendor_label(0x13b5), "Arm");
  EXPECT_EQ(vendor_label(0x1a03), "0x1a03");
  EXPECT_EQ(vendor_label(0x0001), "0x0001");
}

TEST(HardwareDevice, ToCatalog) {
  Device gpu;
  gpu.id = "gpu0";
  gpu.type = catalog::DeviceType::gpu;
  gpu.vendor_id = 0x10de;
  gpu.device_id = 0x2331;
  gpu.subsystem_vendor_id = 0x10de;
  gpu.driver = "nvidia";
  gpu.driver_version = "580.65.06";
  gpu.bus_path = "0000:65:00.0";
  const catalog::Device c = to_catalog(gpu);
  EXPECT_EQ(c.id, "gpu0");
  EXPECT_EQ(c.type, catalog::DeviceType::gpu);
  EXPECT_EQ(c.vendor_id, 0x10de);
  EXPECT_EQ(c.device_id, 0x2331);
  EXPECT_EQ(c.driver, "nvidia");
  EXPECT_EQ(c.driver_version, "580.65.06");

  Device cpu;
  cpu.id = "cpu0";
  cpu.arch = "aarch64";
  const std::vector<Device> devices = {gpu, cpu};
  const auto machine = to_machine_info(devices);
  EXPECT_EQ(machine.arch, "aarch64");  // from the CPU, wherever it is
  ASSERT_EQ(machine.devices.size(), 2U);
  EXPECT_EQ(machine.devices[1].id, "cpu0");
  EXPECT_EQ(to_machine_info({}).arch, "");
}

// --- /proc/cpuinfo -------------------------------------------------------------------

std::string arm_block(int n, const char* implementer, const char* part, const char* features) {
  return "processor\t: " + std::to_string(n) + "\nBogoMIPS\t: 2000.00\nFeatures\t: " + features +
         "\nCPU implementer\t: " + implementer + "\nCPU architecture: 8\nCPU variant\t: 0x0\n" +
         "CPU part\t: " + part + "\nCPU revision\t: 0\n\n";
}

TEST(HardwareCpuinfo, GraceNeoverseV2) {
  const char* features =
      "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt fcma "
      "lrcpc dcpop sha3 sm3 sm4 asimddp sha512 sve asimdfhm dit uscat ilrcpc flagm ssbs sb paca "
      "pacg dcpodp sve2 sveaes svepmull svebitperm svesha3 svesm4 flagm2 frint svei8mm svebf16 "
      "i8mm bf16 dgh bti";
  std::string text;
  for (int i = 0; i < 72; ++i) text += arm_block(i, "0x41", "0xd4f", features);
  const auto cpus = parse_cpuinfo(text, "aarch64");
  ASSERT_EQ(cpus.size(), 1U);
  EXPECT_EQ(cpus[0].id, "cpu0");
  EXPECT_EQ(cpus[0].vendor, "Arm");
  EXPECT_EQ(cpus[0].vendor_id, 0x13b5);
  EXPECT_EQ(cpus[0].device_id, 0);
  EXPECT_EQ(cpus[0].name, "Neoverse-V2");
  EXPECT_EQ(cpus[0].cores, 72U);
  EXPECT_EQ(cpus[0].threads, 72U);
  EXPECT_THAT(cpus[0].isa, ElementsAre("asimd", "asimddp", "sve", "sve2", "i8mm", "bf16"));
  EXPECT_EQ(cpus[0].arch, "aarch64");
}

TEST(HardwareCpuinfo, BigLittleNamesAndCommonFeatures) {
  // RK3588-like: 4 x Cortex-A55 then 4 x Cortex-A76; a feature only some cores list
  // is left out.
  std::string text;
  for (int i = 0; i < 4; ++i) text += arm_block(i, "0x41", "0xd05", "fp asimd asimddp");
  for (int i = 4; i < 8; ++i) text += arm_block(i, "0x41", "0xd0b", "fp asimd asimddp i8mm");
  const auto cpus = parse_cpuinfo(text, "aarch64");
  ASSERT_EQ(cpus.size(), 1U);
  EXPECT_EQ(cpus[0].name, "Cortex-A55 + Cortex-A76");
  EXPECT_THAT(cpus[0].isa, ElementsAre("asimd", "asimddp"));
  EXPECT_EQ(cpus[0].threads, 8U);
}

TEST(HardwareCpuinfo, OtherArmImplementers) {
  auto one = [](const char* implementer, const char* part) {
    const auto cpus = parse_cpuinfo(arm_block(0, implementer, part, "fp asimd"), "aarch64");
    EXPECT_EQ(cpus.size(), 1U);
    return cpus.empty() ? Device{} : cpus[0];
  };
  const Device oryon = one("0x51", "0x001");
  EXPECT_EQ(oryon.vendor, "Qualcomm");
  EXPECT_EQ(oryon.vendor_id, 0x17cb);
  EXPECT_EQ(oryon.name, "Oryon");
  const Device carmel = one("0x4e", "0x004");
  EXPECT_EQ(carmel.vendor, "NVIDIA");
  EXPECT_EQ(carmel.name, "Carmel");
  const Device hisilicon = one("0x48", "0xd01");
  EXPECT_EQ(hisilicon.vendor, "0x48");
  EXPECT_EQ(hisilicon.vendor_id, 0);
  EXPECT_EQ(hisilicon.name, "0x48 part 0xd01");
  EXPECT_EQ(one("0x41", "0xd99").name, "Arm part 0xd99");
  // A kernel that prints "model name" on arm64 wins over the table.
  const auto named = parse_cpuinfo(
      "processor\t: 0\nmodel name\t: ARMv8 Processor rev 1 (v8l)\nCPU implementer\t: 0x41\n"
      "CPU part\t: 0xd0b\n",
      "aarch64");
  ASSERT_EQ(named.size(), 1U);
  EXPECT_EQ(named[0].name, "ARMv8 Processor rev 1 (v8l)");
}

TEST(HardwareCpuinfo, X86PackagesAndTopology) {
  // Two packages listed interleaved, no blank lines between blocks.
  std::string text;
  for (int i = 0; i < 8; ++i) {
    text += "processor\t: " + std::to_string(i) + "\nvendor_id\t: GenuineIntel\n" +
            "model name\t: Intel(R) Xeon(R) Gold 6430\nphysical id\t: " + std::to_string(i % 2) +
            "\nsiblings\t: 4\ncore id\t\t: " + std::to_string(i / 4) + "\ncpu cores\t: 2\n" +
            "flags\t\t: fpu avx2 fma f16c avx512f amx_tile amx_bf16 amx_int8 amx_fp16\n";
  }
  const auto cpus = parse_cpuinfo(text, "x86_64");
  ASSERT_EQ(cpus.size(), 2U);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(cpus[i].id, "cpu" + std::to_string(i));
    EXPECT_EQ(cpus[i].vendor, "Intel");
    EXPECT_EQ(cpus[i].vendor_id, 0x8086);
    EXPECT_EQ(cpus[i].name, "Intel(R) Xeon(R) Gold 6430");
    EXPECT_EQ(cpus[i].cores, 2U);
    EXPECT_EQ(cpus[i].threads, 4U);
    EXPECT_THAT(cpus[i].isa, ElementsAre("fma", "f16c", "avx2", "avx512f", "amx_tile", "amx_bf16",
                                         "amx_int8", "amx_fp16"));
  }
}

TEST(HardwareCpuinfo, X86Fallbacks) {
  // No physical id, siblings or cpu cores (some hypervisors): one package, cores from
  // the distinct core ids, threads counted.
  const auto cpus = parse_cpuinfo(
      "processor : 0\nvendor_id : AuthenticAMD\ncore id : 0\nflags : avx2\n\n"
      "processor : 1\nvendor_id : AuthenticAMD\ncore id : 0\nflags : avx2\n\n"
      "processor : 2\nvendor_id : AuthenticAMD\ncore id : 1\nflags : avx2\n\n",
      "x86_64");
  ASSERT_EQ(cpus.size(), 1U);
  EXPECT_EQ(cpus[0].vendor, "AMD");
  EXPECT_EQ(cpus[0].vendor_id, 0x1022);
  EXPECT_EQ(cpus[0].cores, 2U);
  EXPECT_EQ(cpus[0].threads, 3U);
  EXPECT_THAT(cpus[0].isa, ElementsAre("avx2"));

  // Another vendor keeps its own string; cores never exceed threads.
  const auto hygon = parse_cpuinfo(
      "processor : 0\nvendor_id : HygonGenuine\ncpu cores : 64\nsiblings : 1\n", "x86_64");
  ASSERT_EQ(hygon.size(), 1U);
  EXPECT_EQ(hygon[0].vendor, "HygonGenuine");
  EXPECT_EQ(hygon[0].vendor_id, 0);
  EXPECT_EQ(hygon[0].cores, 1U);
  EXPECT_EQ(hygon[0].threads, 1U);
  EXPECT_THAT(hygon[0].isa, IsEmpty());  // no flags line: nothing claimed
}

TEST(HardwareCpuinfo, IsaTableFollowsArch) {
  const std::string text = "processor : 0\nflags : avx2 asimd sve fma\n";
  EXPECT_THAT(parse_cpuinfo(text, "x86_64")[0].isa, ElementsAre("fma", "avx2"));
  EXPECT_THAT(parse_cpuinfo(text, "aarch64")[0].isa, ElementsAre("asimd", "sve"));
  EXPECT_THAT(parse_cpuinfo(text, "riscv64")[0].isa, IsEmpty());
}

TEST(HardwareCpuinfo, NoProcessorNoDevice) {
  EXPECT_THAT(parse_cpuinfo("", "x86_64"), IsEmpty());
  EXPECT_THAT(parse_cpuinfo("Hardware : BCM2835\nRevision : d04170\n", "aarch64"), IsEmpty());
  EXPECT_THAT(parse_cpuinfo(std::string(4096, '\0'), "x86_64"), IsEmpty());
}

TEST(HardwareCpuinfo, Bounds) {
  // Thousands of packages named by garbage physical ids: at most kMaxCpuPackages.
  std::string text;
  for (int i = 0; i < 200; ++i) {
    text +=
        "processor : " + std::to_string(i) + "\nphysical id : " + std::to_string(i * 7) + "\n\n";
  }
  EXPECT_EQ(parse_cpuinfo(text, "x86_64").size(), kMaxCpuPackages);
  text.clear();
  for (std::size_t i = 0; i < kMaxCpuProcessors + 10; ++i) text += "processor : 0\n";
  const auto cpus = parse_cpuinfo(text, "x86_64");
  ASSERT_EQ(cpus.size(), 1U);
  EXPECT_EQ(cpus[0].threads, kMaxCpuProcessors);
}

}  // namespace
}  // namespace epbrokerd::hardware
