// Which variant of a model the real daemon plans on each recorded machine
// (tests/data/sysfs/) under every session policy (issue 21), as ListModels'
// "planned" says it, and for a few of them that RequestSession with download
// installs and then grants that very variant.
//
// The catalog is the TestCatalog's (test-ep and bulk-ep serve any CPU, foreign-ep
// is for the other architecture) plus two EP packages whose EP metadata offers
// them by compatibility matching: npu-ep (Intel NPUs, vendor 0x8086) and gpu-ep
// (NVIDIA GPUs, 0x10de); and model plan-net with three variants: fp32 (generic),
// int8-npu (npu, npu-ep's EP) and fp16-gpu (gpu, gpu-ep's EP).
//
// The expected table follows daemon/core/variant_plan.hpp's rules, not the
// daemon's output:
//  - the policy's device type: default, prefer_cpu → cpu; prefer_gpu,
//    max_performance → gpu; prefer_npu, max_efficiency, min_overall_power → npu;
//  - the target: the first (device, EP) pair of that type in ORT's order, else
//    the first CPU pair. On the CPU, provider EPs come before ORT's own CPU EP,
//    by EP name: bulk-ep's EpbrokerBulkEp before test-ep's EpbrokerTestEp, so
//    every CPU target here is cpu0 via EpbrokerBulkEp (bulk-ep, available), not
//    the built-in CPUExecutionProvider of the unit test's table
//    (core_variant_plan_test.cpp), whose stand-ins serve no CPU;
//  - the variant: the closest fit (device and EP, device, EP, generic).
// A GPU or NPU that no package's "supports" matches (nvidia-workstation's ASPEED
// BMC display, the Intel iGPU, the AMD Radeon and XDNA NPU) offers no pair, so the
// policy falls back to the CPU.
//
// Hardware discovery reads the fixture's sysfs and procfs only: the architecture
// is the host's (x86_64 here), also for aarch64-board, so test-ep and bulk-ep
// (built for the host) serve its CPU too.
#include <gtest/gtest.h>
#include <sys/utsname.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "catalog/crypto/hash.hpp"
#include "catalog/ep_metadata.hpp"
#include "catalog/model_metadata.hpp"
#include "common/wire.hpp"
#include "tests/daemon/integration/fixture.hpp"

namespace tests::daemon {
namespace {

namespace fs = std::filesystem;
namespace key = common::key;
using common::Policy;

const std::string kModel = "plan-net";
const std::string kNpuPackage = "npu-ep";
const std::string kGpuPackage = "gpu-ep";
const std::string kNpuEp = "EpbrokerNpuEp";
const std::string kGpuEp = "EpbrokerGpuEp";
const std::string kCpuEp = "EpbrokerBulkEp";  // bulk-ep's, first of the CPU pairs
const std::string kFp32 = "fp32 weights of plan-net";
const std::string kInt8 = "int8 weights of plan-net";
const std::string kFp16 = "fp16 weights of plan-net";
const std::string kLabels = "cat\ndog\n";  // in every variant: one blob

std::string sha(const std::string& bytes) { return catalog::crypto::sha256_hex(bytes); }

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string host_arch() {
  utsname u{};
  uname(&u);
  return u.machine;
}

// An EP package serving devices of `type` made by PCI vendor `vendor_id`.
catalog::EpMetadata ep_package(const std::string& name, const std::string& ep,
                               const std::string& vendor, const std::string& type,
                               std::uint16_t vendor_id) {
  const nlohmann::json custom = {{"epbroker",
                                  {{"schema", 1},
                                   {"name", name},
                                   {"version", "1.0.0"},
                                   {"ep_names", {ep}},
                                   {"vendor", vendor},
                                   {"arch", host_arch()},
                                   {"ort_min", "1.20.0"},
                                   {"library", "lib/lib" + name + ".so"},
                                   {"supports", {{{"type", type}, {"vendor_ids", {vendor_id}}}}}}}};
  auto m = catalog::parse_ep_metadata(custom);
  EXPECT_TRUE(m.has_value()) << m.error().message;
  return m.value_or(catalog::EpMetadata{});
}

// plan-net 1.0: fp32 (any device and EP), int8-npu (npu, kNpuEp), fp16-gpu (gpu,
// kGpuEp); each has model.onnx and the shared labels.txt.
catalog::ModelMetadata model_meta() {
  nlohmann::json c = {{"epbroker",
                       {{"schema", 2},
                        {"kind", "model"},
                        {"name", kModel},
                        {"version", "1.0"},
                        {"publisher", "Test"},
                        {"license", "Apache-2.0"},
                        {"license_url", "https://example.com/license"},
                        {"task", "image-classification"},
                        {"inputs", {{{"name", "data"}, {"type", "float"}, {"shape", {"N", 3}}}}},
                        {"outputs", {{{"name", "prob"}, {"type", "float"}, {"shape", {"N", 2}}}}},
                        {"variants", nlohmann::json::array()}}}};
  struct V {
    std::string id, weights, device, ep;
  };
  for (const auto& v : {V{"fp32", kFp32, "", ""}, V{"int8-npu", kInt8, "npu", kNpuEp},
                        V{"fp16-gpu", kFp16, "gpu", kGpuEp}}) {
    nlohmann::json files = nlohmann::json::array();
    for (const auto& [path, bytes] :
         {std::pair{std::string("labels.txt"), kLabels}, {"model.onnx", v.weights}}) {
      files.push_back({{"path", path}, {"size", bytes.size()}, {"sha256", sha(bytes)}});
    }
    nlohmann::json j = {
        {"id", v.id}, {"ort_min", "1.20"}, {"opset", 17}, {"main", "model.onnx"}, {"files", files}};
    if (!v.device.empty()) {
      j["devices"] = {v.device};
      j["eps"] = {v.ep};
    }
    c["epbroker"]["variants"].push_back(j);
  }
  auto m = catalog::parse_model_metadata(c);
  EXPECT_TRUE(m.has_value()) << m.error().message;
  return m.value_or(catalog::ModelMetadata{});
}

// --- The table ------------------------------------------------------------------------

// What a policy gets: variant on (device, EP) of `provider`; `fallback` when the
// policy's device type offers no pair here and ORT's rule takes the CPU.
struct Plan {
  std::string variant, device, ep, provider;
  bool fallback = false;
};

const Plan kCpu{"fp32", "cpu0", kCpuEp, "bulk-ep"};
const Plan kCpuFallback{"fp32", "cpu0", kCpuEp, "bulk-ep", true};

struct Machine {
  std::string name;
  Plan cpu, gpu, npu;  // for the policies asking for a cpu, a gpu, an npu
  std::vector<std::string> npu_ep_serves, gpu_ep_serves;  // by compatibility matching
  std::vector<Policy> sessions;  // policies whose plan a session installs and grants
};

// gtest names a case by its machine.
void PrintTo(const Machine& m, std::ostream* os) { *os << m.name; }

// ORT's policy → device type (the documented rule, written out here).
const std::vector<std::pair<Policy, std::string>> kPolicies = {
    {Policy::default_policy, "cpu"},   {Policy::prefer_cpu, "cpu"}, {Policy::prefer_gpu, "gpu"},
    {Policy::max_performance, "gpu"},  {Policy::prefer_npu, "npu"}, {Policy::max_efficiency, "npu"},
    {Policy::min_overall_power, "npu"}};

const std::vector<Machine> kMachines = {
    // gpu0 is the ASPEED BMC display (vendor 0x1a03): nobody serves it; gpu1 the H100.
    {"nvidia-workstation",
     kCpu,
     {"fp16-gpu", "gpu1", kGpuEp, kGpuPackage},
     kCpuFallback,
     {},
     {"gpu1"},
     {Policy::max_performance}},
    {"nvidia-h100-vm",
     kCpu,
     {"fp16-gpu", "gpu0", kGpuEp, kGpuPackage},
     kCpuFallback,
     {},
     {"gpu0"},
     {}},
    // The Intel iGPU is not an NVIDIA one: gpu-ep does not serve it.
    {"intel-laptop",
     kCpu,
     kCpuFallback,
     {"int8-npu", "npu0", kNpuEp, kNpuPackage},
     {"npu0"},
     {},
     {Policy::min_overall_power, Policy::prefer_gpu}},
    // The XDNA NPU is AMD's (0x1022), the GPU a Radeon: neither package serves them.
    {"amd-apu", kCpu, kCpuFallback, kCpuFallback, {}, {}, {Policy::prefer_npu}},
    {"cpu-server", kCpu, kCpuFallback, kCpuFallback, {}, {}, {}},
    {"aarch64-board", kCpu, kCpuFallback, kCpuFallback, {}, {}, {}},
};

const Plan& plan_for(const Machine& m, const std::string& type) {
  return type == "cpu" ? m.cpu : type == "gpu" ? m.gpu : m.npu;
}

// plan_reason as variant_plan.hpp words it, e.g. "policy max_efficiency → npu0
// via EpbrokerNpuEp (npu-ep, available); int8-npu is built for npu/EpbrokerNpuEp".
std::string reason_for(const Plan& p, const std::string& policy, const std::string& type) {
  std::string r = "policy " + policy + " → ";
  if (p.fallback) r += "no " + type + " served here, ";
  r += p.device + " via " + p.ep + " (" + p.provider + ", available); ";
  if (p.variant == "fp32") return r + "fp32 is generic";
  return r + p.variant + " is built for " + (p.variant == "int8-npu" ? "npu/" : "gpu/") + p.ep;
}

std::string weights_of(const std::string& variant) {
  return variant == "fp32" ? kFp32 : variant == "int8-npu" ? kInt8 : kFp16;
}

Dict model_row(const Dicts& models) {
  if (auto row = find_named(models, kModel)) return *row;
  ADD_FAILURE() << "ListModels has no " << kModel;
  return {};
}

// The kind "model" dict in a RequestSession reply.
Dict granted_model(const Dicts& granted) {
  for (const auto& d : granted) {
    const auto kind = d.find(key::kind);
    if (kind != d.end() && kind->second.get<std::string>() == common::kModelKind) return d;
  }
  ADD_FAILURE() << "no model granted";
  return {};
}

class ModelPlanMachinesTest : public CatalogTest, public ::testing::WithParamInterface<Machine> {
 protected:
  void SetUp() override {
    CatalogTest::SetUp();
    if (IsSkipped()) return;
    catalog_ = std::make_unique<TestCatalog>();
    catalog_->publish_package(ep_package(kNpuPackage, kNpuEp, "Intel", "npu", 0x8086));
    catalog_->publish_package(ep_package(kGpuPackage, kGpuEp, "NVIDIA", "gpu", 0x10de));
    catalog_->publish_model(model_meta(), {kFp32, kInt8, kFp16, kLabels});
  }

  // The package's ListProviders row: available and serving `serves` when it is not
  // empty, else incompatible (no device of its "supports" here).
  void expect_offer(const std::string& package, const std::vector<std::string>& serves) {
    const Dict p = provider(package);
    EXPECT_EQ(str(p, key::state), serves.empty() ? "incompatible" : "available") << package;
    EXPECT_EQ(strs(p, key::devices), serves) << package;
  }
};

TEST_P(ModelPlanMachinesTest, PlansEveryPolicyAndSessionsInstallThePlan) {
  const Machine& m = GetParam();
  const fs::path root = fs::path(EPBROKER_INTEGRATION_SOURCE_DIR) / "tests/data/sysfs" / m.name;
  PrivateBusOptions o;
  o.sysfs_root = root / "sys";
  o.procfs_root = root / "proc";
  start(std::move(o));
  refresh();

  // 1. What compatibility matching offers here.
  expect_offer(kNpuPackage, m.npu_ep_serves);
  expect_offer(kGpuPackage, m.gpu_ep_serves);
  EXPECT_EQ(str(provider(kBulkEp), key::state), "available");
  const auto cpus = strs(provider(kBulkEp), key::devices);  // cpu-server has two
  ASSERT_FALSE(cpus.empty());
  EXPECT_EQ(cpus.front(), "cpu0");

  // 2. ListModels' plan under every policy.
  for (const auto& [policy, type] : kPolicies) {
    const std::string name(common::policy_name(policy));
    SCOPED_TRACE(m.name + " " + name);
    const Plan& want = plan_for(m, type);
    const Dict row = model_row(broker_->ListModels({{key::policy, sdbus::Variant(name)}}));
    EXPECT_EQ(str(row, key::planned), want.variant);
    EXPECT_EQ(str(row, key::plan_device), want.device);
    EXPECT_EQ(str(row, key::plan_ep), want.ep);
    EXPECT_EQ(str(row, key::plan_reason), reason_for(want, name, type));
  }
  // No policy is the default one.
  const Dict row = model_row(broker_->ListModels({}));
  EXPECT_EQ(str(row, key::planned), m.cpu.variant);
  EXPECT_EQ(str(row, key::plan_device), m.cpu.device);

  // 3. A session asking for the model with no variant and download: the install
  //    it starts brings the planned variant, which the next session is granted.
  for (const Policy policy : m.sessions) {
    const std::string name(common::policy_name(policy));
    SCOPED_TRACE(m.name + " session " + name);
    std::string type;
    for (const auto& [p, t] : kPolicies) {
      if (p == policy) type = t;
    }
    const Plan& want = plan_for(m, type);
    const std::map<std::string, std::string> models{{kModel, ""}};
    const auto [first, granted] = broker_->RequestSession({{key::models, sdbus::Variant(models)},
                                                           {key::policy, sdbus::Variant(name)},
                                                           {key::download, sdbus::Variant(true)}});
    const Dict g = granted_model(granted);
    ASSERT_EQ(str(g, key::state), "installing")
        << (g.count(key::reason) ? str(g, key::reason) : "");
    EXPECT_EQ(str(g, key::version), "1.0");
    EXPECT_EQ(str(g, key::variant), want.variant);
    const bool generic = want.variant == "fp32";
    EXPECT_EQ(strs(g, key::devices),
              generic ? std::vector<std::string>{} : std::vector<std::string>{type});
    EXPECT_EQ(strs(g, key::eps), generic ? std::vector<std::string>{} : std::vector{want.ep});
    const std::string job = g.at(key::job).get<sdbus::ObjectPath>();
    ASSERT_EQ(wait_job(*conn_, job), "done")
        << job_property(*conn_, job, "ErrorMessage").get<std::string>();
    sdbus::createProxy(*conn_, kBrokerName, first)
        ->callMethod("Release")
        .onInterface(kSessionInterface);

    const auto [second, now] = broker_->RequestSession(
        {{key::models, sdbus::Variant(models)}, {key::policy, sdbus::Variant(name)}});
    const Dict ready = granted_model(now);
    EXPECT_EQ(str(ready, key::state), "ready");
    EXPECT_EQ(str(ready, key::variant), want.variant);
    const fs::path dir = bus_->store_dir() / "_models" / kModel / "1.0" / want.variant;
    EXPECT_EQ(fs::path(str(ready, key::path)), dir);
    EXPECT_EQ(sha(read(dir / "model.onnx")), sha(weights_of(want.variant)));
    EXPECT_EQ(read(dir / "labels.txt"), kLabels);
    sdbus::createProxy(*conn_, kBrokerName, second)
        ->callMethod("Release")
        .onInterface(kSessionInterface);
  }
  // Only what the sessions planned was installed.
  std::set<std::string> installed, planned;
  for (const Policy policy : m.sessions) {
    for (const auto& [p, t] : kPolicies) {
      if (p == policy) planned.insert(plan_for(m, t).variant);
    }
  }
  if (fs::exists(bus_->store_dir() / "_models" / kModel / "1.0")) {
    for (const auto& e : fs::directory_iterator(bus_->store_dir() / "_models" / kModel / "1.0")) {
      installed.insert(e.path().filename().string());
    }
  }
  EXPECT_EQ(installed, planned);
}

std::string machine_name(const ::testing::TestParamInfo<Machine>& info) {
  std::string n = info.param.name;
  std::replace(n.begin(), n.end(), '-', '_');
  return n;
}

INSTANTIATE_TEST_SUITE_P(Recorded, ModelPlanMachinesTest, ::testing::ValuesIn(kMachines),
                         machine_name);

}  // namespace
}  // namespace tests::daemon
