#include "catalog/compat.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace catalog {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr std::uint16_t kNvidia = 0x10de;
constexpr std::uint16_t kAmd = 0x1002;
constexpr std::uint16_t kIntel = 0x8086;

Version ver(std::string_view text) {
  auto r = parse_version(text);
  EXPECT_TRUE(r.has_value()) << text;
  return r ? *r : Version{};
}

VersionText vt(std::string_view text) { return VersionText{std::string(text), ver(text)}; }

DeviceSupport support(DeviceType type, std::vector<std::uint16_t> vendors = {},
                      std::vector<std::uint16_t> devices = {},
                      std::optional<std::string> driver = std::nullopt,
                      std::optional<std::string> driver_min = std::nullopt) {
  DeviceSupport s;
  s.type = type;
  s.vendor_ids = std::move(vendors);
  s.device_ids = std::move(devices);
  s.driver = std::move(driver);
  if (driver_min) s.driver_min = vt(*driver_min);
  return s;
}

EpMetadata package(std::vector<DeviceSupport> supports, std::string arch = "x86_64",
                   std::string ort_min = "1.23.0") {
  EpMetadata m;
  m.name = "pkg";
  m.version = vt("1.0.0");
  m.ep_names = {"Ep"};
  m.vendor = "v";
  m.arch = std::move(arch);
  m.ort_min = vt(ort_min);
  m.library = "lib/libep.so";
  m.supports = std::move(supports);
  return m;
}

Device cpu0() { return {"cpu0", DeviceType::cpu, 0, 0, "", ""}; }
Device nvidia_gpu(std::string id, std::uint16_t device_id, std::string driver_version,
                  std::string driver = "nvidia") {
  return {std::move(id), DeviceType::gpu,   kNvidia,
          device_id,     std::move(driver), std::move(driver_version)};
}
Device amd_gpu(std::string id) {
  return {std::move(id), DeviceType::gpu, kAmd, 0x744c, "amdgpu", "6.8.0"};
}
Device intel_npu() { return {"npu0", DeviceType::npu, kIntel, 0x7d1d, "intel_vpu", "1.0.0"}; }

MachineInfo machine(std::vector<Device> devices, std::string arch = "x86_64") {
  MachineInfo m;
  m.arch = std::move(arch);
  m.devices = std::move(devices);
  return m;
}

const Version kOrt = ver("1.23.2");

Match expect_match(const Compatibility& c) {
  EXPECT_TRUE(std::holds_alternative<Match>(c))
      << (std::holds_alternative<Exclusion>(c) ? std::get<Exclusion>(c).message : "");
  return std::holds_alternative<Match>(c) ? std::get<Match>(c) : Match{};
}

Exclusion expect_exclusion(const Compatibility& c) {
  EXPECT_TRUE(std::holds_alternative<Exclusion>(c));
  return std::holds_alternative<Exclusion>(c) ? std::get<Exclusion>(c) : Exclusion{};
}

TEST(CompatTest, CpuPackageMatchesCpu) {
  const auto m = expect_match(
      check_compatibility(machine({cpu0()}), kOrt, package({support(DeviceType::cpu)}), 3));
  EXPECT_EQ(m.index, 3u);
  EXPECT_THAT(m.device_ids, ElementsAre("cpu0"));
}

TEST(CompatTest, MatchesAllQualifyingDevicesInMachineOrder) {
  const MachineInfo mi = machine({cpu0(), nvidia_gpu("gpu0", 0x2330, "550.54.14"), amd_gpu("gpu1"),
                                  nvidia_gpu("gpu2", 0x2684, "555.42.02"), intel_npu()});
  // Any GPU: all three GPUs, whatever the vendor.
  EXPECT_THAT(
      expect_match(check_compatibility(mi, kOrt, package({support(DeviceType::gpu)}))).device_ids,
      ElementsAre("gpu0", "gpu1", "gpu2"));
  // NVIDIA GPUs with a recent driver.
  EXPECT_THAT(
      expect_match(
          check_compatibility(
              mi, kOrt, package({support(DeviceType::gpu, {kNvidia}, {}, "nvidia", "550.54.14")})))
          .device_ids,
      ElementsAre("gpu0", "gpu2"));
  // One device id only.
  EXPECT_THAT(expect_match(check_compatibility(
                               mi, kOrt, package({support(DeviceType::gpu, {kNvidia}, {0x2684})})))
                  .device_ids,
              ElementsAre("gpu2"));
  // Several entries: a device is listed once even if several entries accept it.
  EXPECT_THAT(expect_match(check_compatibility(
                               mi, kOrt,
                               package({support(DeviceType::npu, {kIntel}),
                                        support(DeviceType::gpu, {kAmd, kNvidia}),
                                        support(DeviceType::gpu), support(DeviceType::cpu)})))
                  .device_ids,
              ElementsAre("cpu0", "gpu0", "gpu1", "gpu2", "npu0"));
}

TEST(CompatTest, VendorListIsHonoured) {
  const MachineInfo mi = machine({amd_gpu("gpu0")});
  const auto e = expect_exclusion(
      check_compatibility(mi, kOrt, package({support(DeviceType::gpu, {kNvidia, kIntel})})));
  EXPECT_EQ(e.reason, ExclusionReason::no_device);
  EXPECT_THAT(e.message, HasSubstr("no matching device"));
  EXPECT_THAT(e.message, HasSubstr("gpu (vendor 0x10de|0x8086)"));
}

TEST(CompatTest, ArchMismatch) {
  const auto e = expect_exclusion(check_compatibility(
      machine({cpu0()}, "x86_64"), kOrt, package({support(DeviceType::cpu)}, "aarch64"), 7));
  EXPECT_EQ(e.index, 7u);
  EXPECT_EQ(e.reason, ExclusionReason::arch);
  EXPECT_EQ(e.message, "built for aarch64, machine is x86_64");
}

TEST(CompatTest, OrtTooOld) {
  const auto e = expect_exclusion(check_compatibility(
      machine({cpu0()}), ver("1.22.1"), package({support(DeviceType::cpu)}, "x86_64", "1.24.0")));
  EXPECT_EQ(e.reason, ExclusionReason::ort_too_old);
  EXPECT_EQ(e.message, "needs ONNX Runtime >= 1.24.0, app has 1.22.1");
}

TEST(CompatTest, OrtBoundaries) {
  const EpMetadata p = package({support(DeviceType::cpu)}, "x86_64", "1.24");
  const MachineInfo mi = machine({cpu0()});
  expect_match(check_compatibility(mi, ver("1.24.0"), p));
  expect_match(check_compatibility(mi, ver("1.24"), p));
  expect_match(check_compatibility(mi, ver("2.0"), p));
  // A pre-release of the minimum is older than the minimum.
  EXPECT_EQ(expect_exclusion(check_compatibility(mi, ver("1.24.0-rc1"), p)).reason,
            ExclusionReason::ort_too_old);
}

TEST(CompatTest, DriverTooOld) {
  const MachineInfo mi = machine({cpu0(), nvidia_gpu("gpu0", 0x2330, "535.1")});
  const auto e = expect_exclusion(check_compatibility(
      mi, kOrt, package({support(DeviceType::gpu, {kNvidia}, {}, "nvidia", "550.54.14")})));
  EXPECT_EQ(e.reason, ExclusionReason::driver_too_old);
  EXPECT_EQ(e.message, "driver nvidia 535.1 < required 550.54.14 on device gpu0");
}

TEST(CompatTest, DriverVersionEqualToMinimumMatches) {
  const MachineInfo mi = machine({nvidia_gpu("gpu0", 0x2330, "550.54.14")});
  expect_match(check_compatibility(
      mi, kOrt, package({support(DeviceType::gpu, {kNvidia}, {}, "nvidia", "550.54.14")})));
}

TEST(CompatTest, UnparsableDriverVersionCountsAsTooOld) {
  const EpMetadata p = package({support(DeviceType::gpu, {}, {}, "nvidia", "550")});
  auto e = expect_exclusion(
      check_compatibility(machine({nvidia_gpu("gpu0", 1, "550.x-custom")}), kOrt, p));
  EXPECT_EQ(e.reason, ExclusionReason::driver_too_old);
  EXPECT_EQ(e.message,
            "driver nvidia version \"550.x-custom\" is not a version, required >= 550 on device "
            "gpu0");
  e = expect_exclusion(check_compatibility(machine({nvidia_gpu("gpu0", 1, "")}), kOrt, p));
  EXPECT_EQ(e.reason, ExclusionReason::driver_too_old);
  EXPECT_EQ(e.message, "driver nvidia version unknown, required >= 550 on device gpu0");
}

TEST(CompatTest, DriverMismatch) {
  const MachineInfo mi = machine({nvidia_gpu("gpu0", 0x2330, "1.0", "nouveau")});
  const auto e = expect_exclusion(check_compatibility(
      mi, kOrt, package({support(DeviceType::gpu, {kNvidia}, {}, "nvidia", "550.54.14")})));
  EXPECT_EQ(e.reason, ExclusionReason::driver_mismatch);
  EXPECT_EQ(e.message, "driver nouveau instead of required nvidia on device gpu0");
}

TEST(CompatTest, NoDriverBoundIsAMismatch) {
  const MachineInfo mi = machine({nvidia_gpu("gpu0", 0x2330, "", "")});
  const auto e = expect_exclusion(
      check_compatibility(mi, kOrt, package({support(DeviceType::gpu, {}, {}, "nvidia")})));
  EXPECT_EQ(e.reason, ExclusionReason::driver_mismatch);
  EXPECT_EQ(e.message, "driver (none) instead of required nvidia on device gpu0");
}

TEST(CompatTest, NoDevice) {
  const auto e = expect_exclusion(check_compatibility(
      machine({cpu0(), amd_gpu("gpu0")}), kOrt,
      package({support(DeviceType::npu, {kIntel}, {0x7d1d, 0x643e}),
               support(DeviceType::gpu, {kNvidia}, {}, "nvidia", "550.54.14")})));
  EXPECT_EQ(e.reason, ExclusionReason::no_device);
  EXPECT_EQ(e.message,
            "no matching device; needs npu (vendor 0x8086, device 0x7d1d|0x643e) or gpu "
            "(vendor 0x10de, driver nvidia >= 550.54.14)");
}

TEST(CompatTest, NoDevicesAtAll) {
  const auto e =
      expect_exclusion(check_compatibility(machine({}), kOrt, package({support(DeviceType::cpu)})));
  EXPECT_EQ(e.reason, ExclusionReason::no_device);
  EXPECT_EQ(e.message, "no matching device (machine reports none); needs cpu");
}

TEST(CompatTest, NoDeviceMessageIsBounded) {
  std::vector<std::uint16_t> many_ids(64);
  for (std::size_t i = 0; i < many_ids.size(); ++i) many_ids[i] = static_cast<std::uint16_t>(i);
  const auto e = expect_exclusion(check_compatibility(
      machine({cpu0()}), kOrt,
      package(std::vector<DeviceSupport>(64, support(DeviceType::gpu, many_ids, many_ids)))));
  EXPECT_EQ(e.reason, ExclusionReason::no_device);
  EXPECT_LT(e.message.size(), 1000u);
  EXPECT_THAT(e.message, HasSubstr("|...)"));
  EXPECT_THAT(e.message, HasSubstr(" or ..."));
}

TEST(CompatTest, MostSpecificReasonWins) {
  // gpu0: wrong driver; gpu1: right driver, too old; gpu2: another vendor.
  const MachineInfo mi = machine(
      {nvidia_gpu("gpu0", 1, "1.0", "nouveau"), nvidia_gpu("gpu1", 2, "535.1"), amd_gpu("gpu2")});
  const EpMetadata p = package({support(DeviceType::gpu, {kNvidia}, {}, "nvidia", "550")});
  auto e = expect_exclusion(check_compatibility(mi, kOrt, p));
  EXPECT_EQ(e.reason, ExclusionReason::driver_too_old);
  EXPECT_THAT(e.message, HasSubstr("on device gpu1"));

  // Without gpu1 the driver name is the closest miss.
  e = expect_exclusion(check_compatibility(
      machine({amd_gpu("gpu2"), nvidia_gpu("gpu0", 1, "1.0", "nouveau")}), kOrt, p));
  EXPECT_EQ(e.reason, ExclusionReason::driver_mismatch);
  EXPECT_THAT(e.message, HasSubstr("on device gpu0"));

  // The closest miss counts across support entries too.
  e = expect_exclusion(
      check_compatibility(machine({nvidia_gpu("gpu0", 1, "500")}), kOrt,
                          package({support(DeviceType::gpu, {}, {}, "amdgpu"),
                                   support(DeviceType::gpu, {}, {}, "nvidia", "550")})));
  EXPECT_EQ(e.reason, ExclusionReason::driver_too_old);
}

TEST(CompatTest, OneMatchingDeviceIsEnough) {
  // gpu0's driver is too old but gpu1 qualifies: a match on gpu1 only.
  const MachineInfo mi = machine({nvidia_gpu("gpu0", 1, "535.1"), nvidia_gpu("gpu1", 2, "560.1")});
  const auto m = expect_match(check_compatibility(
      mi, kOrt, package({support(DeviceType::gpu, {kNvidia}, {}, "nvidia", "550")})));
  EXPECT_THAT(m.device_ids, ElementsAre("gpu1"));
}

TEST(CompatTest, ChecksRunInOrderArchOrtDevices) {
  const MachineInfo mi = machine({amd_gpu("gpu0")}, "aarch64");
  const EpMetadata p = package({support(DeviceType::npu)}, "x86_64", "9.0");
  EXPECT_EQ(expect_exclusion(check_compatibility(mi, kOrt, p)).reason, ExclusionReason::arch);
  const MachineInfo mi64 = machine({amd_gpu("gpu0")}, "x86_64");
  EXPECT_EQ(expect_exclusion(check_compatibility(mi64, kOrt, p)).reason,
            ExclusionReason::ort_too_old);
}

TEST(CompatTest, RequiredLibrariesAreCheckedWhenTheMachineKnowsThem) {
  EpMetadata p = package({support(DeviceType::gpu)});
  p.required_sonames = {"libvulkan.so.1", "libdrm.so.2"};
  MachineInfo mi = machine({cpu0(), nvidia_gpu("gpu0", 0x2330, "580.159.04")});
  // Unknown (no lookup): not checked.
  EXPECT_THAT(expect_match(check_compatibility(mi, kOrt, p)).device_ids, ElementsAre("gpu0"));

  std::vector<std::string> asked;
  std::vector<std::string> present = {"libdrm.so.2"};
  mi.has_library = [&](const std::string& soname) {
    asked.push_back(soname);
    return std::find(present.begin(), present.end(), soname) != present.end();
  };
  const Exclusion ex = expect_exclusion(check_compatibility(mi, kOrt, p, 3));
  EXPECT_EQ(ex.index, 3U);
  EXPECT_EQ(ex.reason, ExclusionReason::missing_library);
  EXPECT_THAT(ex.message, HasSubstr("needs libvulkan.so.1"));
  EXPECT_THAT(asked, ElementsAre("libvulkan.so.1"));  // the first missing one ends it

  present.push_back("libvulkan.so.1");
  EXPECT_THAT(expect_match(check_compatibility(mi, kOrt, p)).device_ids, ElementsAre("gpu0"));

  // No device served: the device reason wins, the libraries are not looked up.
  asked.clear();
  present.clear();
  EXPECT_EQ(
      expect_exclusion(check_compatibility(mi, kOrt, package({support(DeviceType::npu)}))).reason,
      ExclusionReason::no_device);
  p.supports = {support(DeviceType::npu)};
  EXPECT_EQ(expect_exclusion(check_compatibility(mi, kOrt, p)).reason, ExclusionReason::no_device);
  EXPECT_TRUE(asked.empty());
}

TEST(CompatTest, MatchPackagesAnswersEachInOrder) {
  const MachineInfo mi = machine({cpu0(), nvidia_gpu("gpu0", 0x2330, "550.54.14")});
  const std::vector<EpMetadata> packages = {
      package({support(DeviceType::cpu)}),
      package({support(DeviceType::gpu)}, "aarch64"),
      package({support(DeviceType::gpu, {kNvidia})}, "x86_64", "1.99"),
      package({support(DeviceType::npu)}),
      package({support(DeviceType::gpu, {kNvidia}, {}, "nvidia", "560")}),
      package({support(DeviceType::gpu, {kNvidia}, {}, "nvidia_drm")}),
      package({support(DeviceType::gpu), support(DeviceType::cpu)}),
  };
  const auto answers = match_packages(mi, kOrt, packages);
  ASSERT_EQ(answers.size(), packages.size());
  for (std::size_t i = 0; i < answers.size(); ++i) {
    std::visit([i](const auto& a) { EXPECT_EQ(a.index, i); }, answers[i]);
  }
  EXPECT_THAT(expect_match(answers[0]).device_ids, ElementsAre("cpu0"));
  EXPECT_EQ(expect_exclusion(answers[1]).reason, ExclusionReason::arch);
  EXPECT_EQ(expect_exclusion(answers[2]).reason, ExclusionReason::ort_too_old);
  EXPECT_EQ(expect_exclusion(answers[3]).reason, ExclusionReason::no_device);
  EXPECT_EQ(expect_exclusion(answers[4]).reason, ExclusionReason::driver_too_old);
  EXPECT_EQ(expect_exclusion(answers[5]).reason, ExclusionReason::driver_mismatch);
  EXPECT_THAT(expect_match(answers[6]).device_ids, ElementsAre("cpu0", "gpu0"));
  EXPECT_TRUE(match_packages(mi, kOrt, {}).empty());
}

TEST(CompatTest, ReasonNames) {
  EXPECT_EQ(exclusion_reason_name(ExclusionReason::arch), "arch");
  EXPECT_EQ(exclusion_reason_name(ExclusionReason::no_device), "no_device");
  EXPECT_EQ(exclusion_reason_name(ExclusionReason::driver_too_old), "driver_too_old");
  EXPECT_EQ(exclusion_reason_name(ExclusionReason::driver_mismatch), "driver_mismatch");
  EXPECT_EQ(exclusion_reason_name(ExclusionReason::ort_too_old), "ort_too_old");
  EXPECT_EQ(exclusion_reason_name(ExclusionReason::missing_library), "missing_library");
}

}  // namespace
}  // namespace catalog
