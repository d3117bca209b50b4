// Hardware discovery against the recorded machine shapes in tests/data/sysfs/, against
// damaged copies of them (missing, garbage, huge, looping or escaping files), and on
// this machine's live /sys and /proc.
#include "daemon/hardware/discovery.hpp"

#include <sys/stat.h>
#include <sys/utsname.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <ostream>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "catalog/compat.hpp"
#include "catalog/version.hpp"
#include "daemon/hardware/text.hpp"
#include "tests/support/temp_dir.hpp"

namespace epbrokerd::hardware {

// Printed by GoogleTest when a comparison fails.
void PrintTo(const Device& d, std::ostream* os) {
  auto hex = [](std::uint16_t v) { return hex_digits(v, 4); };
  *os << "{" << d.id << " " << catalog::device_type_name(d.type) << " " << hex(d.vendor_id) << ":"
      << hex(d.device_id) << " sub " << hex(d.subsystem_vendor_id) << ":"
      << hex(d.subsystem_device_id) << " vendor=\"" << d.vendor << "\" name=\"" << d.name
      << "\" driver=\"" << d.driver << "\" version=\"" << d.driver_version << "\" bus=\""
      << d.bus_path << "\" discrete=" << d.discrete << " node=\"" << d.node
      << "\" cores=" << d.cores << " threads=" << d.threads << " arch=\"" << d.arch << "\" isa=[";
  for (const auto& flag : d.isa) *os << flag << " ";
  *os << "]}";
}

namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using tests::support::TempDir;
using tests::support::write_file;

fs::path fixtures() {
  if (const char* source = std::getenv("EPBROKER_SOURCE_DIR"); source != nullptr && *source) {
    return fs::path(source) / "tests" / "data" / "sysfs";
  }
  return fs::path(__FILE__).parent_path().parent_path() / "data" / "sysfs";
}

Roots roots_at(const fs::path& machine, std::string arch = "x86_64") {
  return Roots{machine / "sys", machine / "proc", machine / "dev", std::move(arch)};
}

std::vector<Device> discover_ok(const Roots& roots) {
  auto result = discover(roots);
  EXPECT_TRUE(result.has_value()) << (result ? "" : result.error().message);
  return result ? *result : std::vector<Device>{};
}

std::vector<Device> fixture(const std::string& machine, std::string arch = "x86_64") {
  return discover_ok(roots_at(fixtures() / machine, std::move(arch)));
}

// A writable copy of a fixture, symlinks kept as symlinks.
struct Copy {
  TempDir tmp;
  fs::path root;

  explicit Copy(const std::string& machine) : root(tmp / "machine") {
    fs::copy(fixtures() / machine, root,
             fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  }
  fs::path sys(const std::string& rel) const { return root / "sys" / rel; }
  fs::path proc(const std::string& rel) const { return root / "proc" / rel; }
  fs::path dev(const std::string& rel) const { return root / "dev" / rel; }
  std::vector<Device> discover(std::string arch = "x86_64") const {
    return discover_ok(roots_at(root, std::move(arch)));
  }
};

void relink(const fs::path& link, const std::string& target) {
  std::error_code ec;
  fs::remove(link, ec);
  fs::create_directories(link.parent_path());
  fs::create_symlink(target, link);
}

Device cpu(std::string id, std::uint16_t vendor_id, std::string vendor, std::string name,
           std::uint32_t cores, std::uint32_t threads, std::vector<std::string> isa,
           std::string arch = "x86_64") {
  Device d;
  d.id = std::move(id);
  d.type = catalog::DeviceType::cpu;
  d.vendor_id = vendor_id;
  d.vendor = std::move(vendor);
  d.name = std::move(name);
  d.cores = cores;
  d.threads = threads;
  d.isa = std::move(isa);
  d.arch = std::move(arch);
  return d;
}

struct PciSpec {
  std::string id;
  catalog::DeviceType type;
  std::uint16_t vendor_id, device_id, subsystem_vendor_id, subsystem_device_id;
  std::string vendor, name, driver, driver_version, bus_path;
  bool discrete;
  std::string node;
};

Device pci(PciSpec s) {
  Device d;
  d.id = std::move(s.id);
  d.type = s.type;
  d.vendor_id = s.vendor_id;
  d.device_id = s.device_id;
  d.subsystem_vendor_id = s.subsystem_vendor_id;
  d.subsystem_device_id = s.subsystem_device_id;
  d.vendor = std::move(s.vendor);
  d.name = std::move(s.name);
  d.driver = std::move(s.driver);
  d.driver_version = std::move(s.driver_version);
  d.bus_path = std::move(s.bus_path);
  d.discrete = s.discrete;
  d.node = std::move(s.node);
  return d;
}

constexpr auto kCpu = catalog::DeviceType::cpu;
constexpr auto kGpu = catalog::DeviceType::gpu;
constexpr auto kNpu = catalog::DeviceType::npu;

const Device kXeon = cpu("cpu0", 0x8086, "Intel", "Intel(R) Xeon(R) w3-2423", 6, 12,
                         {"fma", "f16c", "avx2", "avx_vnni", "avx512f", "avx512_vnni",
                          "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8"});
const Device kAspeed = pci({"gpu0", kGpu, 0x1a03, 0x2000, 0x1043, 0x8770, "0x1a03", "PCI 1a03:2000",
                            "ast", "", "0000:03:00.0", true, "/dev/dri/card0"});
const Device kH100 =
    pci({"gpu1", kGpu, 0x10de, 0x2331, 0x10de, 0x1626, "NVIDIA", "NVIDIA H100 PCIe", "nvidia",
         "580.65.06", "0000:65:00.0", true, "/dev/nvidia0"});

const Device kCoreUltra = cpu("cpu0", 0x8086, "Intel", "Intel(R) Core(TM) Ultra 7 155H", 16, 22,
                              {"fma", "f16c", "avx2", "avx_vnni"});
const Device kIntelIgpu =
    pci({"gpu0", kGpu, 0x8086, 0x7d55, 0x17aa, 0x2234, "Intel", "PCI 8086:7d55", "i915", "",
         "0000:00:02.0", false, "/dev/dri/renderD128"});
const Device kIntelNpu =
    pci({"npu0", kNpu, 0x8086, 0x7d1d, 0x17aa, 0x2234, "Intel", "PCI 8086:7d1d", "intel_vpu", "",
         "0000:00:0b.0", false, "/dev/accel/accel0"});

const Device kRyzen = cpu("cpu0", 0x1022, "AMD", "AMD Ryzen 7 8840U w/ Radeon 780M Graphics", 8, 16,
                          {"fma", "f16c", "avx2", "avx512f", "avx512_vnni", "avx512_bf16"});
const Device kRadeon780m =
    pci({"gpu0", kGpu, 0x1002, 0x15bf, 0xf111, 0x0006, "AMD", "PCI 1002:15bf", "amdgpu", "",
         "0000:c4:00.0", false, "/dev/dri/renderD128"});
const Device kXdna = pci({"npu0", kNpu, 0x1022, 0x1502, 0xf111, 0x0006, "AMD", "PCI 1022:1502",
                          "amdxdna", "", "0000:c5:00.1", false, "/dev/accel/accel0"});

// --- Recorded machines ---------------------------------------------------------------

TEST(HardwareDiscoveryFixture, NvidiaWorkstation) {
  EXPECT_THAT(fixture("nvidia-workstation"), ElementsAre(kXeon, kAspeed, kH100));
}

TEST(HardwareDiscoveryFixture, NvidiaH100VmAsRecordedOnTheGpuMachine) {
  // tests/gpu/capture_fixture.sh on the lent H100 machine (a Firecracker VM): the
  // GPU is a 3D controller (class 0x030200) among virtio functions, with no DRM at
  // all; identity as nvidia-smi and ORT's GetEpDevices reported it there.
  const Device xeon = cpu("cpu0", 0x8086, "Intel", "Intel(R) Xeon(R) Processor", 16, 16,
                          {"fma", "f16c", "avx2", "avx_vnni", "avx512f", "avx512_vnni",
                           "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8"});
  const Device h100 =
      pci({"gpu0", kGpu, 0x10de, 0x2330, 0x10de, 0x16c1, "NVIDIA", "NVIDIA H100 80GB HBM3",
           "nvidia", "580.159.04", "0000:00:06.0", true, "/dev/nvidia0"});
  EXPECT_THAT(fixture("nvidia-h100-vm"), ElementsAre(xeon, h100));
}

TEST(HardwareDiscoveryFixture, IntelLaptop) {
  EXPECT_THAT(fixture("intel-laptop"), ElementsAre(kCoreUltra, kIntelIgpu, kIntelNpu));
}

TEST(HardwareDiscoveryFixture, AmdApu) {
  EXPECT_THAT(fixture("amd-apu"), ElementsAre(kRyzen, kRadeon780m, kXdna));
}

TEST(HardwareDiscoveryFixture, CpuServerTwoSockets) {
  const std::vector<std::string> zen3 = {"fma", "f16c", "avx2"};
  EXPECT_THAT(
      fixture("cpu-server"),
      ElementsAre(cpu("cpu0", 0x1022, "AMD", "AMD EPYC 72F3 8-Core Processor", 8, 16, zen3),
                  cpu("cpu1", 0x1022, "AMD", "AMD EPYC 72F3 8-Core Processor", 8, 16, zen3)));
}

TEST(HardwareDiscoveryFixture, Aarch64BoardHasNoPciGpu) {
  // The board's DRM cards (v3d, vc4) are SoC platform devices, its PCI functions a
  // bridge and an Ethernet south bridge: only the CPU is reported.
  EXPECT_THAT(
      fixture("aarch64-board", "aarch64"),
      ElementsAre(cpu("cpu0", 0x13b5, "Arm", "Cortex-A76", 4, 4, {"asimd", "asimddp"}, "aarch64")));
}

TEST(HardwareDiscoveryFixture, ConvertsForCompatibilityMatching) {
  const auto devices = fixture("nvidia-workstation");
  const catalog::MachineInfo machine = to_machine_info(devices);
  EXPECT_EQ(machine.arch, "x86_64");
  ASSERT_EQ(machine.devices.size(), 3U);
  EXPECT_EQ(machine.devices[2].id, "gpu1");
  EXPECT_EQ(machine.devices[2].vendor_id, 0x10de);
  EXPECT_EQ(machine.devices[2].device_id, 0x2331);
  EXPECT_EQ(machine.devices[2].driver, "nvidia");
  EXPECT_EQ(machine.devices[2].driver_version, "580.65.06");

  catalog::EpMetadata package;
  package.name = "nvidia-ep";
  package.version = {"1.0.0", *catalog::parse_version("1.0.0")};
  package.ep_names = {"NvEp"};
  package.vendor = "NVIDIA";
  package.arch = "x86_64";
  package.ort_min = {"1.23.0", *catalog::parse_version("1.23.0")};
  package.library = "lib/libnv.so";
  catalog::DeviceSupport support;
  support.type = catalog::DeviceType::gpu;
  support.vendor_ids = {0x10de};
  support.driver = "nvidia";
  support.driver_min = catalog::VersionText{"575.0", *catalog::parse_version("575.0")};
  package.supports = {support};
  const auto answer =
      catalog::check_compatibility(machine, *catalog::parse_version("1.23.2"), package);
  ASSERT_TRUE(std::holds_alternative<catalog::Match>(answer));
  EXPECT_THAT(std::get<catalog::Match>(answer).device_ids, ElementsAre("gpu1"));
}

// --- Variations on the recorded machines -----------------------------------------------

TEST(HardwareDiscoveryVariant, GpuWithoutDrmIsFoundOnThePciBus) {
  Copy machine("intel-laptop");
  fs::remove_all(machine.sys("class/drm"));
  // Same device; the node comes from the device's own drm/ directory.
  EXPECT_THAT(machine.discover(), ElementsAre(kCoreUltra, kIntelIgpu, kIntelNpu));
}

TEST(HardwareDiscoveryVariant, NodeOnlyWhenPresentUnderDev) {
  Copy machine("intel-laptop");
  fs::remove(machine.dev("dri/renderD128"));
  fs::remove(machine.dev("accel/accel0"));
  const auto devices = machine.discover();
  ASSERT_EQ(devices.size(), 3U);
  EXPECT_EQ(devices[1].node, "/dev/dri/card1");  // the card when the render node is gone
  EXPECT_EQ(devices[2].node, "");

  fs::remove_all(machine.root / "dev");  // no /dev at all is not an error
  for (const auto& device : machine.discover()) EXPECT_EQ(device.node, "") << device.id;
}

TEST(HardwareDiscoveryVariant, XdnaWithoutAccelIsFoundByItsId) {
  Copy machine("amd-apu");
  fs::remove_all(machine.sys("class/accel"));
  EXPECT_THAT(machine.discover(), ElementsAre(kRyzen, kRadeon780m, kXdna));

  // amdxdna not loaded: no accel directory, no driver, no node; still an NPU.
  fs::remove_all(machine.sys("devices/pci0000:00/0000:00:08.2/0000:c5:00.1/accel"));
  fs::remove(machine.sys("devices/pci0000:00/0000:00:08.2/0000:c5:00.1/driver"));
  Device unbound = kXdna;
  unbound.driver = "";
  unbound.node = "";
  EXPECT_THAT(machine.discover(), ElementsAre(kRyzen, kRadeon780m, unbound));
}

TEST(HardwareDiscoveryVariant, IdenticalGpusAreOrderedByBusId) {
  Copy machine("nvidia-workstation");
  const std::string second = "devices/pci0000:16/0000:16:01.0/0000:17:00.0";
  fs::create_directories(machine.sys(second));
  for (const char* file : {"class", "vendor", "device", "subsystem_vendor", "subsystem_device"}) {
    fs::copy_file(machine.sys("devices/pci0000:64/0000:64:01.0/0000:65:00.0") / file,
                  machine.sys(second) / file);
  }
  relink(machine.sys(second + "/driver"), "../../../../bus/pci/drivers/nvidia");
  relink(machine.sys("bus/pci/devices/0000:17:00.0"), "../../../" + second);
  write_file(machine.proc("driver/nvidia/gpus/0000:17:00.0/information"),
             "Model: \t\t NVIDIA H100 PCIe\nDevice Minor: \t 1\n");
  write_file(machine.dev("nvidia1"), "");

  Device first = kH100;
  first.id = "gpu1";
  first.bus_path = "0000:17:00.0";
  first.node = "/dev/nvidia1";
  Device last = kH100;
  last.id = "gpu2";
  EXPECT_THAT(machine.discover(), ElementsAre(kXeon, kAspeed, first, last));
}

TEST(HardwareDiscoveryVariant, DriverVersionSources) {
  Copy machine("nvidia-workstation");
  // NVIDIA: the NVRM line wins over the module's version.
  write_file(machine.sys("module/nvidia/version"), "999.1.1\n");
  EXPECT_EQ(machine.discover()[2].driver_version, "580.65.06");
  // Without /proc/driver/nvidia/version: the module's.
  fs::remove(machine.proc("driver/nvidia/version"));
  EXPECT_EQ(machine.discover()[2].driver_version, "999.1.1");
  fs::remove_all(machine.sys("module/nvidia"));
  EXPECT_EQ(machine.discover()[2].driver_version, "");

  // Another driver: through driver/module, or module/<name> with '-' as '_'.
  const fs::path vga = machine.sys("devices/pci0000:00/0000:00:1c.5/0000:02:00.0/0000:03:00.0");
  relink(vga / "driver", "../../../../../bus/pci/drivers/ast-drm");
  write_file(machine.sys("module/ast_drm/version"), "2.3.4\n");
  auto devices = machine.discover();
  EXPECT_EQ(devices[1].driver, "ast-drm");
  EXPECT_EQ(devices[1].driver_version, "2.3.4");
  relink(machine.sys("bus/pci/drivers/ast-drm/module"), "../../../../module/astmod");
  write_file(machine.sys("module/astmod/version"), "5.6\n");
  EXPECT_EQ(machine.discover()[1].driver_version, "5.6");
}

TEST(HardwareDiscoveryVariant, PlatformNpuThroughAccel) {
  Copy machine("aarch64-board");
  const std::string npu = "devices/platform/fdab0000.npu";
  relink(machine.sys(npu + "/accel/accel0/device"), "../../../fdab0000.npu");
  relink(machine.sys("class/accel/accel0"), "../../" + npu + "/accel/accel0");
  relink(machine.sys(npu + "/driver"), "../../../bus/platform/drivers/rocket");
  relink(machine.sys(npu + "/of_node"), "../../../firmware/devicetree/base/npu@fdab0000");
  write_file(machine.sys("firmware/devicetree/base/npu@fdab0000/compatible"),
             std::string("rockchip,rk3588-rknn-core\0", 26));
  write_file(machine.dev("accel/accel0"), "");
  const auto devices = machine.discover("aarch64");
  ASSERT_EQ(devices.size(), 2U);
  Device expected;
  expected.id = "npu0";
  expected.type = kNpu;
  expected.name = "rockchip,rk3588-rknn-core";
  expected.driver = "rocket";
  expected.node = "/dev/accel/accel0";
  EXPECT_EQ(devices[1], expected);

  fs::remove(machine.sys(npu + "/of_node"));
  EXPECT_EQ(machine.discover("aarch64")[1].name, "fdab0000.npu");
}

// --- Robustness ------------------------------------------------------------------------

TEST(HardwareDiscoveryRobustness, MissingFilesCostTheFieldNotTheDevice) {
  Copy machine("nvidia-workstation");
  const fs::path h100 = machine.sys("devices/pci0000:64/0000:64:01.0/0000:65:00.0");
  for (const char* file : {"vendor", "device", "subsystem_vendor", "subsystem_device", "driver"}) {
    fs::remove(h100 / file);
  }
  fs::remove_all(machine.proc("driver/nvidia"));
  const auto devices = machine.discover();
  ASSERT_EQ(devices.size(), 3U);
  EXPECT_EQ(devices[2], pci({"gpu1", kGpu, 0, 0, 0, 0, "", "PCI device 0000:65:00.0", "", "",
                             "0000:65:00.0", true, ""}));
}

TEST(HardwareDiscoveryRobustness, MissingCpuinfoStillGivesACpu) {
  Copy machine("cpu-server");
  fs::remove(machine.proc("cpuinfo"));
  EXPECT_THAT(machine.discover(), ElementsAre(cpu("cpu0", 0, "", "", 0, 0, {})));
  write_file(machine.proc("cpuinfo"), "");
  EXPECT_THAT(machine.discover("aarch64"),
              ElementsAre(cpu("cpu0", 0, "", "", 0, 0, {}, "aarch64")));
}

TEST(HardwareDiscoveryRobustness, GarbageValuesAreSkipped) {
  Copy machine("intel-laptop");
  const fs::path gpu = machine.sys("devices/pci0000:00/0000:00:02.0");
  write_file(gpu / "vendor", "0x8086 and more\n");
  write_file(gpu / "device", "banana");
  write_file(gpu / "subsystem_vendor", "0x123456\n");  // wider than 16 bits
  write_file(gpu / "subsystem_device", std::string("\0\0\0\0", 4));
  write_file(machine.sys("module/i915/version"), "1.0 beta\n");  // not a version text
  relink(machine.sys("devices/pci0000:00/0000:00:0b.0/driver"),
         "../../../bus/pci/drivers/bad$name");
  write_file(machine.proc("cpuinfo"),
             "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: \x01\x1b[2Jevil\n"
             "physical id\t: zero\nsiblings\t: -1\ncpu cores\t: lots\ncore id\t: 7\n"
             "flags\t\t: avx2 fma \xff\xfe\n\n"
             "processor\t: 1\nvendor_id\t: GenuineIntel\ncore id\t: 7\nflags\t: avx2\n\n");
  const auto devices = machine.discover();
  ASSERT_EQ(devices.size(), 3U);
  // One package (no valid physical id), 2 threads counted, 1 distinct core id; the ISA
  // is what both processors have.
  EXPECT_EQ(devices[0], cpu("cpu0", 0x8086, "Intel", "", 1, 2, {"avx2"}));
  Device igpu = kIntelIgpu;
  igpu.vendor_id = 0;
  igpu.device_id = 0;
  igpu.subsystem_vendor_id = 0;
  igpu.subsystem_device_id = 0;
  igpu.vendor = "";
  igpu.name = "PCI device 0000:00:02.0";
  igpu.discrete = true;  // the vendor is unknown: nothing says integrated
  EXPECT_EQ(devices[1], igpu);
  Device npu = kIntelNpu;
  npu.driver = "";
  EXPECT_EQ(devices[2], npu);
}

TEST(HardwareDiscoveryRobustness, GarbageClassKeepsAFunctionOutOfThePciScan) {
  Copy machine("nvidia-workstation");
  write_file(machine.sys("devices/pci0000:64/0000:64:01.0/0000:65:00.0/class"), "VGA!\n");
  EXPECT_THAT(machine.discover(), ElementsAre(kXeon, kAspeed));
}

TEST(HardwareDiscoveryRobustness, SymlinksOutsideTheRootAreNotFollowed) {
  Copy machine("nvidia-workstation");
  // A convincing GPU outside the sysfs root (next to the machine's tree).
  const fs::path outside = machine.tmp / "outside";
  const fs::path fake = outside / "0000:99:00.0";
  write_file(fake / "class", "0x030000\n");
  write_file(fake / "vendor", "0x10de\n");
  write_file(fake / "device", "0x2331\n");
  fs::create_directories(fake / "drm" / "card9");
  relink(fake / "drm" / "card9" / "device", "../../../0000:99:00.0");
  write_file(outside / "vendor", "0x10de\n");
  write_file(outside / "information", "Model: Leaked\nDevice Minor: 0\n");

  // Entry points that lead there: relative links climbing out, an absolute link.
  const std::vector<fs::path> links = {
      machine.sys("class/drm/card9"), machine.sys("class/drm/card8"),
      machine.sys("bus/pci/devices/0000:99:00.0"), machine.sys("class/accel/accel0")};
  relink(links[0], "../../../../outside/0000:99:00.0/drm/card9");
  relink(links[1], (fake / "drm" / "card9").string());
  relink(links[2], "../../../../../outside/0000:99:00.0");
  relink(links[3], "../../../../outside/0000:99:00.0/drm/card9");
  // Fields of real devices pointing out of their root.
  const fs::path h100 = machine.sys("devices/pci0000:64/0000:64:01.0/0000:65:00.0");
  const fs::path vga = machine.sys("devices/pci0000:00/0000:00:1c.5/0000:02:00.0/0000:03:00.0");
  relink(h100 / "vendor", "../../../../../../outside/vendor");
  relink(machine.proc("driver/nvidia/gpus/0000:65:00.0/information"),
         "../../../../../../outside/information");
  relink(vga / "driver", "../../../../../../../../../../../../bus/pci/drivers/ast");
  // The links really do reach the outside files when the OS follows them.
  for (const auto& link : {links[0], links[1], links[3]}) {
    ASSERT_TRUE(fs::exists(link / "device" / "vendor")) << link;
  }
  ASSERT_TRUE(fs::exists(links[2] / "vendor"));
  ASSERT_TRUE(fs::exists(h100 / "vendor"));
  ASSERT_TRUE(fs::exists(machine.proc("driver/nvidia/gpus/0000:65:00.0/information")));

  Device aspeed = kAspeed;
  aspeed.driver = "";  // its driver link climbs above the root
  Device h100_seen = kH100;
  h100_seen.vendor_id = 0;  // the vendor attribute leaves the root
  h100_seen.vendor = "";
  h100_seen.name = "PCI device 0000:65:00.0";  // so does the NVIDIA information file,
  h100_seen.node = "";                         // which holds the model and minor number
  EXPECT_THAT(machine.discover(), ElementsAre(kXeon, aspeed, h100_seen));
}

TEST(HardwareDiscoveryRobustness, SymlinkLoopsEnd) {
  Copy machine("nvidia-workstation");
  relink(machine.sys("class/drm/card7"), "card7");
  relink(machine.sys("class/drm/card6"), "card5/x");
  relink(machine.sys("class/drm/card5"), "card6/y");
  relink(machine.sys("bus/pci/devices/0000:77:00.0"), "0000:77:00.0");
  EXPECT_THAT(machine.discover(), ElementsAre(kXeon, kAspeed, kH100));
}

TEST(HardwareDiscoveryRobustness, HugeAndSpecialFilesAreBounded) {
  Copy machine("nvidia-workstation");
  const fs::path h100 = machine.sys("devices/pci0000:64/0000:64:01.0/0000:65:00.0");
  // Sparse files: a 1 GiB vendor attribute, a 64 MiB NVRM version file, /proc/cpuinfo
  // followed by 1 GiB of zeros.
  fs::resize_file(h100 / "vendor", 1ULL << 30);
  fs::remove(machine.sys("module/nvidia/version"));
  write_file(machine.proc("driver/nvidia/version"),
             "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul 27 2025\n");
  fs::resize_file(machine.proc("driver/nvidia/version"), 64ULL << 20);
  fs::resize_file(machine.proc("cpuinfo"), 1ULL << 30);
  // A FIFO where an attribute should be must not block discovery.
  fs::remove(h100 / "device");
  ASSERT_EQ(::mkfifo((h100 / "device").c_str(), 0600), 0);

  const auto start = std::chrono::steady_clock::now();
  const auto devices = machine.discover();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  ASSERT_EQ(devices.size(), 3U);
  EXPECT_EQ(devices[0], kXeon);  // whole blocks before the zeros
  EXPECT_EQ(devices[2].vendor_id, 0);
  EXPECT_EQ(devices[2].device_id, 0);
  EXPECT_EQ(devices[2].driver, "nvidia");
  EXPECT_EQ(devices[2].driver_version, "");  // the version file is over its bound
  EXPECT_EQ(devices[2].name, "NVIDIA H100 PCIe");
}

TEST(HardwareDiscoveryRobustness, RootErrors) {
  TempDir tmp;
  auto r = discover(Roots{tmp / "no-sys", tmp.path(), tmp.path(), "x86_64"});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, catalog::Errc::not_found);

  write_file(tmp / "file", "");
  r = discover(Roots{tmp.path(), tmp / "file", tmp.path(), "x86_64"});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, catalog::Errc::not_found);

  r = discover(Roots{"", tmp.path(), tmp.path(), "x86_64"});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, catalog::Errc::invalid_argument);

  for (const char* arch : {"x86 64", "../x", "aarch64\n", "an-arch-name-that-is-far-too-long-xx"}) {
    r = discover(Roots{tmp.path(), tmp.path(), tmp.path(), arch});
    ASSERT_FALSE(r.has_value()) << arch;
    EXPECT_EQ(r.error().code, catalog::Errc::invalid_argument) << arch;
  }

  // Empty but existing roots: just the CPU, with the arch.
  EXPECT_THAT(discover_ok(Roots{tmp.path(), tmp.path(), tmp / "no-dev", "riscv64"}),
              ElementsAre(cpu("cpu0", 0, "", "", 0, 0, {}, "riscv64")));
}

// --- This machine --------------------------------------------------------------------

TEST(HardwareDiscoveryLive, ThisMachine) {
  const auto devices = discover_ok(Roots{});
  ASSERT_FALSE(devices.empty());
  struct utsname names {};
  ASSERT_EQ(::uname(&names), 0);
  const Device& first = devices[0];
  EXPECT_EQ(first.id, "cpu0");
  EXPECT_EQ(first.type, kCpu);
  EXPECT_EQ(first.arch, names.machine);
#if defined(__x86_64__)
  EXPECT_EQ(first.arch, "x86_64");
#elif defined(__aarch64__)
  EXPECT_EQ(first.arch, "aarch64");
#endif
  EXPECT_GE(first.threads, 1U);
  EXPECT_GE(first.cores, 1U);
  EXPECT_LE(first.cores, first.threads);
  EXPECT_FALSE(first.vendor.empty());
  std::uint32_t threads = 0;
  std::set<std::string> ids;
  for (const auto& device : devices) {
    EXPECT_TRUE(ids.insert(device.id).second) << device.id;
    EXPECT_TRUE(device.id.starts_with(catalog::device_type_name(device.type))) << device.id;
    if (device.type == kCpu) {
      threads += device.threads;
    } else {
      EXPECT_FALSE(device.name.empty()) << device.id;
      if (!device.node.empty()) {
        EXPECT_TRUE(fs::exists(device.node)) << device.node;
      }
    }
  }
  EXPECT_GE(threads, 1U);
  for (const auto& device : devices) std::cout << "  " << ::testing::PrintToString(device) << "\n";
}

}  // namespace
}  // namespace epbrokerd::hardware
