// Variant selection (daemon/core/variant_plan.hpp): ORT's policy → device rule
// over the (device, EP) pairs the providers offer, then the variants ranked for the
// chosen target. The table runs hardware discovery on the recorded machines in
// tests/data/sysfs/ under every policy.
#include "daemon/core/variant_plan.hpp"

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "daemon/hardware/discovery.hpp"

namespace epbrokerd::core {
namespace {

namespace fs = std::filesystem;
using catalog::DeviceType;
using common::Policy;
using common::ProviderState;
using hardware::Device;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

catalog::Version V(std::string_view text) {
  auto v = catalog::parse_version(text);
  EXPECT_TRUE(v.has_value()) << text;
  return v ? *v : catalog::Version{};
}

catalog::VersionText VT(std::string_view text) {
  auto v = catalog::parse_version_text(text);
  EXPECT_TRUE(v.has_value()) << text;
  return v ? *v : catalog::VersionText{};
}

fs::path fixtures() {
  if (const char* source = std::getenv("EPBROKER_SOURCE_DIR"); source != nullptr && *source) {
    return fs::path(source) / "tests" / "data" / "sysfs";
  }
  return fs::path(__FILE__).parent_path().parent_path() / "data" / "sysfs";
}

std::vector<Device> machine(const std::string& name) {
  const fs::path root = fixtures() / name;
  const std::string arch = name == "aarch64-board" ? "aarch64" : "x86_64";
  auto devices = hardware::discover({root / "sys", root / "proc", root / "dev", arch});
  EXPECT_TRUE(devices.has_value()) << name;
  return devices ? *devices : std::vector<Device>{};
}

// A provider serving the devices `serves` accepts.
template <typename Pred>
ProviderOffer offer(std::string name, std::string ep, std::string vendor,
                    const std::vector<Device>& devices, Pred serves,
                    ProviderState state = ProviderState::available) {
  ProviderOffer p;
  p.name = std::move(name);
  p.state = state;
  p.ep_names = {std::move(ep)};
  p.ort_min = VT("1.20");
  p.vendor = std::move(vendor);
  for (const auto& d : devices) {
    if (serves(d)) p.devices.push_back(d.id);
  }
  return p;
}

// The stand-ins: "npu-ep" serves Intel NPUs, "gpu-ep" NVIDIA GPUs.
std::vector<ProviderOffer> stand_ins(const std::vector<Device>& devices) {
  return {offer("npu-ep", "NpuEp", "Intel", devices,
                [](const Device& d) { return d.type == DeviceType::npu && d.vendor_id == 0x8086; }),
          offer(
              "gpu-ep", "GpuEp", "NVIDIA", devices,
              [](const Device& d) { return d.type == DeviceType::gpu && d.vendor_id == 0x10de; },
              ProviderState::ready)};
}

catalog::ModelVariant variant(std::string id, std::vector<DeviceType> types,
                              std::vector<std::string> eps, std::string_view ort_min = "1.20") {
  catalog::ModelVariant v;
  v.id = std::move(id);
  v.devices = std::move(types);
  v.eps = std::move(eps);
  v.ort_min = VT(ort_min);
  v.opset = 17;
  v.main = "model.onnx";
  return v;
}

catalog::ModelMetadata model(std::vector<catalog::ModelVariant> variants) {
  catalog::ModelMetadata m;
  m.name = "resnet50";
  m.version = VT("1.0");
  m.variants = std::move(variants);
  return m;
}

catalog::ModelMetadata three_variants() {
  return model({variant("fp32", {}, {}), variant("int8-npu", {DeviceType::npu}, {"NpuEp"}),
                variant("fp16-gpu", {DeviceType::gpu}, {"GpuEp"})});
}

VariantRequest req(Policy policy, std::string explicit_id = "",
                   std::optional<std::string_view> app_ort = std::nullopt) {
  VariantRequest r;
  r.policy = policy;
  r.variant = std::move(explicit_id);
  if (app_ort) r.app_ort = V(*app_ort);
  return r;
}

// --- The table: recorded machines × policies -----------------------------------------

struct Row {
  std::string machine;
  Policy policy;
  std::string variant, device, ep, provider;
  std::vector<std::string> reason_has;
};

constexpr Policy kCpuPolicies[] = {Policy::default_policy, Policy::prefer_cpu};
constexpr Policy kGpuPolicies[] = {Policy::prefer_gpu, Policy::max_performance};
constexpr Policy kNpuPolicies[] = {Policy::prefer_npu, Policy::max_efficiency,
                                   Policy::min_overall_power};
const std::string kCpuEp(kCpuEpName);

std::vector<Row> table() {
  const std::vector<std::string> machines = {"nvidia-workstation", "nvidia-h100-vm",
                                             "intel-laptop",       "amd-apu",
                                             "cpu-server",         "aarch64-board"};
  std::vector<Row> rows;
  for (const auto& m : machines) {
    for (auto p : kCpuPolicies) {
      rows.push_back({m,
                      p,
                      "fp32",
                      "cpu0",
                      kCpuEp,
                      "",
                      {"cpu0 via CPUExecutionProvider (built in)", "fp32 is generic"}});
    }
    for (auto p : kGpuPolicies) {
      if (m == "nvidia-workstation") {
        // gpu0 is the ASPEED BMC display, served by nobody; gpu1 the H100.
        rows.push_back({m,
                        p,
                        "fp16-gpu",
                        "gpu1",
                        "GpuEp",
                        "gpu-ep",
                        {"gpu1 via GpuEp (gpu-ep, ready)", "fp16-gpu is built for gpu/GpuEp"}});
      } else if (m == "nvidia-h100-vm") {
        rows.push_back({m,
                        p,
                        "fp16-gpu",
                        "gpu0",
                        "GpuEp",
                        "gpu-ep",
                        {"gpu0 via GpuEp (gpu-ep, ready)", "fp16-gpu is built for gpu/GpuEp"}});
      } else {
        rows.push_back(
            {m, p, "fp32", "cpu0", kCpuEp, "", {"no gpu served here", "fp32 is generic"}});
      }
    }
    for (auto p : kNpuPolicies) {
      if (m == "intel-laptop") {
        rows.push_back({m,
                        p,
                        "int8-npu",
                        "npu0",
                        "NpuEp",
                        "npu-ep",
                        {"npu0 via NpuEp (npu-ep, available)", "int8-npu is built for npu/NpuEp"}});
      } else {
        // amd-apu's XDNA NPU is not an Intel one: npu-ep does not serve it.
        rows.push_back(
            {m, p, "fp32", "cpu0", kCpuEp, "", {"no npu served here", "fp32 is generic"}});
      }
    }
  }
  return rows;
}

TEST(VariantPlanTable, RecordedMachinesUnderEveryPolicy) {
  const auto m = three_variants();
  const auto rows = table();
  ASSERT_EQ(rows.size(), 6u * std::size(common::kAllPolicies));
  for (const auto& row : rows) {
    const std::string label = row.machine + " " + std::string(common::policy_name(row.policy));
    const auto devices = machine(row.machine);
    const auto providers = stand_ins(devices);
    const auto c = plan_variant(m, devices, providers, req(row.policy));
    ASSERT_TRUE(c.has_value()) << label << ": " << c.error().message;
    EXPECT_EQ(c->variant, row.variant) << label;
    EXPECT_EQ(c->device, row.device) << label;
    EXPECT_EQ(c->ep, row.ep) << label;
    EXPECT_EQ(c->provider, row.provider) << label;
    EXPECT_THAT(c->reason,
                HasSubstr("policy " + std::string(common::policy_name(row.policy)) + " → "))
        << label;
    for (const auto& s : row.reason_has) EXPECT_THAT(c->reason, HasSubstr(s)) << label;
    EXPECT_EQ(c->others.size(), 2u) << label;
  }
}

TEST(VariantPlanTable, NotesSayWhyTheOthersLost) {
  const auto devices = machine("intel-laptop");
  const auto c =
      plan_variant(three_variants(), devices, stand_ins(devices), req(Policy::max_efficiency));
  ASSERT_TRUE(c.has_value()) << c.error().message;
  EXPECT_EQ(c->reason,
            "policy max_efficiency → npu0 via NpuEp (npu-ep, available); int8-npu is built for "
            "npu/NpuEp");
  EXPECT_EQ(c->device_type, DeviceType::npu);
  EXPECT_THAT(c->others,
              ElementsAre(VariantNote{"fp32", "fits npu0/NpuEp less closely than int8-npu"},
                          VariantNote{"fp16-gpu", "built for gpu/GpuEp, not for npu0/NpuEp"}));
}

// --- ort_min -------------------------------------------------------------------------

TEST(VariantPlanOrt, VariantsTheAppsOrtCannotLoadAreSkipped) {
  auto m = three_variants();
  m.variants[1].ort_min = VT("1.24");
  const auto devices = machine("intel-laptop");
  auto c = plan_variant(m, devices, stand_ins(devices), req(Policy::prefer_npu, "", "1.22.1"));
  ASSERT_TRUE(c.has_value()) << c.error().message;
  EXPECT_EQ(c->variant, "fp32");  // still on the NPU target: fp32 fits any
  EXPECT_EQ(c->device, "npu0");
  EXPECT_EQ(c->ep, "NpuEp");
  EXPECT_THAT(c->others,
              ElementsAre(VariantNote{"int8-npu", "needs ONNX Runtime >= 1.24, app has 1.22.1"},
                          VariantNote{"fp16-gpu", "built for gpu/GpuEp, not for npu0/NpuEp"}));
  // Without an app ORT the bound is not checked.
  c = plan_variant(m, devices, stand_ins(devices), req(Policy::prefer_npu));
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->variant, "int8-npu");
  // At the bound it loads.
  c = plan_variant(m, devices, stand_ins(devices), req(Policy::prefer_npu, "", "1.24"));
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->variant, "int8-npu");
}

TEST(VariantPlanOrt, ProvidersTheAppsOrtCannotLoadOfferNothing) {
  const auto devices = machine("intel-laptop");
  auto providers = stand_ins(devices);
  providers[0].ort_min = VT("1.30");
  const auto c =
      plan_variant(three_variants(), devices, providers, req(Policy::prefer_npu, "", "1.24"));
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->variant, "fp32");
  EXPECT_EQ(c->device, "cpu0");
  EXPECT_THAT(c->reason, HasSubstr("no npu served here"));
}

TEST(VariantPlanOrt, NoVariantLoadsIsIncompatible) {
  auto m = three_variants();
  for (auto& v : m.variants) v.ort_min = VT("1.25");
  const auto devices = machine("cpu-server");
  const auto c =
      plan_variant(m, devices, stand_ins(devices), req(Policy::default_policy, "", "1.22"));
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().code, Errc::Incompatible);
  EXPECT_THAT(c.error().message,
              HasSubstr("no variant of resnet50 fits cpu0/CPUExecutionProvider"));
  EXPECT_THAT(c.error().message, HasSubstr("fp32: needs ONNX Runtime >= 1.25, app has 1.22"));
}

// --- When nothing fits the target ----------------------------------------------------

TEST(VariantPlanFallback, NoVariantForTheGpuFallsBackToTheCpuTarget) {
  const auto m = model({variant("int8-npu", {DeviceType::npu}, {"NpuEp"}),
                        variant("fp32-cpu", {DeviceType::cpu}, {})});
  const auto devices = machine("nvidia-h100-vm");
  const auto c = plan_variant(m, devices, stand_ins(devices), req(Policy::max_performance));
  ASSERT_TRUE(c.has_value()) << c.error().message;
  EXPECT_EQ(c->variant, "fp32-cpu");
  EXPECT_EQ(c->device, "cpu0");
  EXPECT_EQ(c->provider, "");
  EXPECT_EQ(c->reason,
            "policy max_performance → gpu0 via GpuEp (gpu-ep, ready), but no variant fits it; "
            "falling back to cpu0 via CPUExecutionProvider (built in); fp32-cpu is built for cpu "
            "(any EP)");
}

TEST(VariantPlanFallback, NoVariantFitsIsIncompatible) {
  const auto m = model({variant("int8-npu", {DeviceType::npu}, {"NpuEp"})});
  const auto devices = machine("nvidia-h100-vm");
  const auto c = plan_variant(m, devices, stand_ins(devices), req(Policy::prefer_gpu));
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().code, Errc::Incompatible);
  EXPECT_EQ(c.error().message,
            "no variant of resnet50 fits gpu0/GpuEp (int8-npu: built for npu/NpuEp, not for "
            "gpu0/GpuEp); nor cpu0/CPUExecutionProvider");
}

TEST(VariantPlanFallback, NoDevicesAtAll) {
  const auto c = plan_variant(three_variants(), {}, {}, req(Policy::default_policy));
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().code, Errc::Incompatible);
}

// --- Ranking -------------------------------------------------------------------------

TEST(VariantPlanRanking, DeviceAndEpThenDeviceThenEpThenGenericThenPublishersOrder) {
  const auto devices = machine("intel-laptop");
  const auto providers = stand_ins(devices);
  auto m = model({variant("generic-a", {}, {}), variant("generic-b", {}, {}),
                  variant("ep-only", {}, {"NpuEp"}), variant("npu-any", {DeviceType::npu}, {}),
                  variant("npu-ep", {DeviceType::npu, DeviceType::gpu}, {"OtherEp", "NpuEp"})});
  const std::vector<std::string> expected = {"npu-ep", "npu-any", "ep-only", "generic-a"};
  for (const auto& id : expected) {
    const auto c = plan_variant(m, devices, providers, req(Policy::prefer_npu));
    ASSERT_TRUE(c.has_value());
    EXPECT_EQ(c->variant, id);
    std::erase_if(m.variants, [&](const catalog::ModelVariant& v) { return v.id == id; });
  }
  const auto c = plan_variant(m, devices, providers, req(Policy::prefer_npu));
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->variant, "generic-b");
}

TEST(VariantPlanRanking, VariantFit) {
  const auto both = variant("a", {DeviceType::npu}, {"NpuEp"});
  EXPECT_EQ(variant_fit(both, DeviceType::npu, "NpuEp"), VariantFit::device_and_ep);
  EXPECT_EQ(variant_fit(both, DeviceType::npu, "OtherEp"), std::nullopt);
  EXPECT_EQ(variant_fit(both, DeviceType::gpu, "NpuEp"), std::nullopt);
  EXPECT_EQ(variant_fit(variant("b", {DeviceType::npu}, {}), DeviceType::npu, "X"),
            VariantFit::device);
  EXPECT_EQ(variant_fit(variant("c", {}, {"X"}), DeviceType::cpu, "X"), VariantFit::ep);
  EXPECT_EQ(variant_fit(variant("d", {}, {}), DeviceType::gpu, "X"), VariantFit::generic);
}

// --- An explicit variant --------------------------------------------------------------

TEST(VariantPlanExplicit, RunsWhereItFitsEvenAgainstThePolicy) {
  const auto devices = machine("intel-laptop");
  const auto c = plan_variant(three_variants(), devices, stand_ins(devices),
                              req(Policy::default_policy, "int8-npu"));
  ASSERT_TRUE(c.has_value()) << c.error().message;
  EXPECT_EQ(c->variant, "int8-npu");
  EXPECT_EQ(c->device, "npu0");
  EXPECT_EQ(c->provider, "npu-ep");
  EXPECT_EQ(c->reason,
            "variant int8-npu asked for; policy default → cpu0/CPUExecutionProvider does not fit "
            "it; npu0 via NpuEp (npu-ep, available) does; int8-npu is built for npu/NpuEp");
}

TEST(VariantPlanExplicit, OnThePolicysTargetWhenItFits) {
  const auto devices = machine("intel-laptop");
  const auto c =
      plan_variant(three_variants(), devices, stand_ins(devices), req(Policy::prefer_npu, "fp32"));
  ASSERT_TRUE(c.has_value()) << c.error().message;
  EXPECT_EQ(c->device, "npu0");
  EXPECT_EQ(c->ep, "NpuEp");
  EXPECT_THAT(c->reason, HasSubstr("variant fp32 asked for; policy prefer_npu → npu0 via NpuEp"));
}

TEST(VariantPlanExplicit, UnknownIsNotFound) {
  const auto devices = machine("intel-laptop");
  const auto c = plan_variant(three_variants(), devices, stand_ins(devices),
                              req(Policy::default_policy, "int4"));
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().code, Errc::NotFound);
  EXPECT_EQ(c.error().message,
            "model resnet50 has no variant 'int4' (it has fp32, int8-npu, fp16-gpu)");
}

TEST(VariantPlanExplicit, ThatCannotRunHereIsIncompatible) {
  const auto devices = machine("intel-laptop");
  auto c = plan_variant(three_variants(), devices, stand_ins(devices),
                        req(Policy::prefer_gpu, "fp16-gpu"));
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().code, Errc::Incompatible);
  EXPECT_EQ(c.error().message,
            "variant fp16-gpu of resnet50 is built for gpu/GpuEp: no provider here serves that");

  auto m = three_variants();
  m.variants[0].ort_min = VT("1.26");
  c = plan_variant(m, devices, stand_ins(devices), req(Policy::default_policy, "fp32", "1.25"));
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().code, Errc::Incompatible);
  EXPECT_EQ(c.error().message, "variant fp32 of resnet50 needs ONNX Runtime >= 1.26, app has 1.25");
}

// --- ORT's device order and policy rule ----------------------------------------------

Device dev(std::string id, DeviceType type, std::string vendor, bool discrete = false) {
  Device d;
  d.id = std::move(id);
  d.type = type;
  d.vendor = std::move(vendor);
  d.discrete = discrete;
  return d;
}

ProviderOffer plugin(std::string name, std::vector<std::string> eps,
                     std::vector<std::string> serves, std::string vendor = "",
                     ProviderState state = ProviderState::ready) {
  ProviderOffer p;
  p.name = std::move(name);
  p.ep_names = std::move(eps);
  p.devices = std::move(serves);
  p.vendor = std::move(vendor);
  p.state = state;
  p.ort_min = VT("1.20");
  return p;
}

std::vector<std::string> order(const std::vector<Device>& devices,
                               const std::vector<ProviderOffer>& providers) {
  std::vector<std::string> out;
  for (const auto& p : order_ep_devices(devices, providers, std::nullopt)) {
    out.push_back(p.device + "/" + p.ep);
  }
  return out;
}

TEST(VariantPlanOrtRule, PolicyDeviceTypes) {
  EXPECT_EQ(policy_device_type(Policy::default_policy), DeviceType::cpu);
  EXPECT_EQ(policy_device_type(Policy::prefer_cpu), DeviceType::cpu);
  EXPECT_EQ(policy_device_type(Policy::prefer_gpu), DeviceType::gpu);
  EXPECT_EQ(policy_device_type(Policy::max_performance), DeviceType::gpu);
  EXPECT_EQ(policy_device_type(Policy::prefer_npu), DeviceType::npu);
  EXPECT_EQ(policy_device_type(Policy::max_efficiency), DeviceType::npu);
  EXPECT_EQ(policy_device_type(Policy::min_overall_power), DeviceType::npu);
}

TEST(VariantPlanOrtRule, NpuThenGpuThenCpuDiscreteGpuBeforeIntegrated) {
  const std::vector<Device> devices = {
      dev("cpu0", DeviceType::cpu, "Intel"), dev("gpu0", DeviceType::gpu, "Intel", false),
      dev("gpu1", DeviceType::gpu, "NVIDIA", true), dev("npu0", DeviceType::npu, "Intel")};
  const std::vector<ProviderOffer> providers = {
      plugin("any", {"AnyEp"}, {"cpu0", "gpu0", "gpu1", "npu0"})};
  EXPECT_THAT(order(devices, providers), ElementsAre("npu0/AnyEp", "gpu1/AnyEp", "gpu0/AnyEp",
                                                     "cpu0/AnyEp", "cpu0/CPUExecutionProvider"));
  const auto ordered = order_ep_devices(devices, providers, std::nullopt);
  EXPECT_EQ(select_target(ordered, DeviceType::gpu)->device, "gpu1");
  EXPECT_EQ(select_target(ordered, DeviceType::npu)->device, "npu0");
  EXPECT_EQ(select_target(ordered, DeviceType::cpu)->ep, "AnyEp");
}

TEST(VariantPlanOrtRule, PluginEpBeforeTheCpuEp) {
  // "ZCpuEp" sorts after "CPUExecutionProvider" by name, yet comes first.
  const std::vector<Device> devices = {dev("cpu0", DeviceType::cpu, "Intel")};
  const std::vector<ProviderOffer> providers = {plugin("zcpu", {"ZCpuEp"}, {"cpu0"})};
  EXPECT_THAT(order(devices, providers), ElementsAre("cpu0/ZCpuEp", "cpu0/CPUExecutionProvider"));
  const auto m = model({variant("fp32", {}, {})});
  const auto c = plan_variant(m, devices, providers, req(Policy::prefer_cpu));
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->ep, "ZCpuEp");
  EXPECT_EQ(c->provider, "zcpu");
  // A variant built for ORT's CPU EP does not fit the plugin's pair: ORT's CPU EP,
  // which ORT adds after it, runs it.
  const auto cpu_ep_only = model({variant("fp32", {DeviceType::cpu}, {kCpuEp})});
  const auto d = plan_variant(cpu_ep_only, devices, providers, req(Policy::prefer_cpu));
  ASSERT_TRUE(d.has_value()) << d.error().message;
  EXPECT_EQ(d->ep, kCpuEp);
  EXPECT_EQ(d->provider, "");
  EXPECT_EQ(d->reason,
            "policy prefer_cpu → cpu0 via ZCpuEp (zcpu, ready), but no variant fits it; falling "
            "back to cpu0 via CPUExecutionProvider (built in); fp32 is built for "
            "cpu/CPUExecutionProvider");
}

TEST(VariantPlanOrtRule, VendorsOwnEpThenEpNameThenDeviceOrder) {
  const std::vector<Device> devices = {dev("gpu0", DeviceType::gpu, "NVIDIA", true),
                                       dev("gpu1", DeviceType::gpu, "NVIDIA", true)};
  const std::vector<ProviderOffer> providers = {plugin("b", {"BEp"}, {"gpu0", "gpu1"}),
                                                plugin("a", {"AEp"}, {"gpu0", "gpu1"}),
                                                plugin("z", {"ZEp"}, {"gpu1"}, "NVIDIA")};
  EXPECT_THAT(order(devices, providers),
              ElementsAre("gpu1/ZEp", "gpu0/AEp", "gpu1/AEp", "gpu0/BEp", "gpu1/BEp"));
}

TEST(VariantPlanOrtRule, OnlyUsableExecutionProvidersOffer) {
  const std::vector<Device> devices = {dev("cpu0", DeviceType::cpu, "Intel"),
                                       dev("gpu0", DeviceType::gpu, "NVIDIA", true)};
  std::vector<ProviderOffer> providers = {
      plugin("ready", {"ReadyEp"}, {"gpu0"}, "", ProviderState::ready),
      plugin("avail", {"AvailEp"}, {"gpu0"}, "", ProviderState::available),
      plugin("inst", {"InstEp"}, {"gpu0"}, "", ProviderState::installing),
      plugin("incompat", {"IncompatEp"}, {"gpu0"}, "", ProviderState::incompatible),
      plugin("revoked", {"RevokedEp"}, {"gpu0"}, "", ProviderState::revoked),
      plugin("refused", {"RefusedEp"}, {"gpu0"}, "", ProviderState::refused),
      plugin("runtime", {"RuntimeEp"}, {"gpu0"}),
      plugin("new", {"NewEp"}, {"gpu0"}),
      plugin("elsewhere", {"ElsewhereEp"}, {"gpu7"})};
  providers[6].kind = common::PackageKind::runtime;
  providers[7].ort_min = VT("1.23");
  std::vector<std::string> eps;
  for (const auto& p : order_ep_devices(devices, providers, V("1.22"))) eps.push_back(p.ep);
  EXPECT_THAT(eps, ElementsAre("AvailEp", "InstEp", "ReadyEp", "CPUExecutionProvider"));
  EXPECT_FALSE(offer_usable(providers[7], V("1.22")));
  EXPECT_TRUE(offer_usable(providers[7], V("1.23")));
  EXPECT_TRUE(offer_usable(providers[7], std::nullopt));
}

}  // namespace
}  // namespace epbrokerd::core
