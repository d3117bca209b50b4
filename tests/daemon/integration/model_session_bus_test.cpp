// Models in sessions and their lifecycle on the private bus (issue 21): ListModels'
// planned variant, RequestSession's option "models" (a ready variant with its
// files, an install on request, what a model nobody installed says), the lease
// it holds against RemoveModel (Busy, unless now), shared files staying with the
// model that still references them, CollectGarbage of superseded versions, and a
// lease ending when its owner leaves the bus.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "catalog/crypto/hash.hpp"
#include "catalog/model_metadata.hpp"
#include "common/wire.hpp"
#include "tests/daemon/integration/fixture.hpp"

namespace tests::daemon {
namespace {

namespace fs = std::filesystem;
namespace key = common::key;
using namespace std::chrono_literals;

const std::string kModel = "tiny-net";
const std::string kOther = "other-net";
const std::string kFp32 = "fp32 weights of tiny-net";
const std::string kFp32v2 = "fp32 weights of tiny-net, version 1.1";
const std::string kInt8 = "int8 weights";
const std::string kOtherWeights = "weights of other-net";
const std::string kLabels = "cat\ndog\n";  // in every variant of both models
const std::string kBusy = "org.epbroker.Error.Busy";
const std::string kInvalid = "org.epbroker.Error.InvalidArgument";

std::string sha(const std::string& bytes) { return catalog::crypto::sha256_hex(bytes); }

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A model card: variant fp32 (any device; `weights`) and, unless `only_fp32`,
// int8 (NPUs, TestNpuExecutionProvider); every variant also has labels.txt.
catalog::ModelMetadata model_meta(const std::string& name, const std::string& version,
                                  const std::string& weights, bool only_fp32 = false) {
  nlohmann::json c = {{"epbroker",
                       {{"schema", 2},
                        {"kind", "model"},
                        {"name", name},
                        {"version", version},
                        {"publisher", "Test"},
                        {"license", "Apache-2.0"},
                        {"license_url", "https://example.com/license"},
                        {"task", "image-classification"},
                        {"inputs", {{{"name", "data"}, {"type", "float"}, {"shape", {"N", 3}}}}},
                        {"outputs", {{{"name", "prob"}, {"type", "float"}, {"shape", {"N", 2}}}}},
                        {"variants", nlohmann::json::array()}}}};
  std::vector<std::pair<std::string, std::string>> variants{{"fp32", weights}};
  if (!only_fp32) variants.emplace_back("int8", kInt8);
  for (const auto& [id, bytes_of_weights] : variants) {
    nlohmann::json files = nlohmann::json::array();
    for (const auto& [path, bytes] :
         {std::pair{std::string("labels.txt"), kLabels}, {"model.onnx", bytes_of_weights}}) {
      files.push_back({{"path", path}, {"size", bytes.size()}, {"sha256", sha(bytes)}});
    }
    nlohmann::json v = {
        {"id", id}, {"ort_min", "1.20"}, {"opset", 17}, {"main", "model.onnx"}, {"files", files}};
    if (id == "int8") {
      v["devices"] = {"npu"};
      v["eps"] = {"TestNpuExecutionProvider"};
    }
    c["epbroker"]["variants"].push_back(v);
  }
  auto m = catalog::parse_model_metadata(c);
  EXPECT_TRUE(m.has_value()) << m.error().message;
  return m.value_or(catalog::ModelMetadata{});
}

using Options = std::map<std::string, sdbus::Variant>;

Options models_option(const std::map<std::string, std::string>& models) {
  return {{key::models, sdbus::Variant(models)}};
}

// The kind "model" dict of `name` in a RequestSession reply (fails the test if none).
Dict model_of(const Dicts& granted, const std::string& name) {
  for (const auto& d : granted) {
    const auto kind = d.find(key::kind);
    if (kind != d.end() && kind->second.get<std::string>() == common::kModelKind &&
        str(d, key::name) == name) {
      return d;
    }
  }
  ADD_FAILURE() << "no model " << name << " granted";
  return {};
}

void release(sdbus::IConnection& conn, const std::string& session) {
  auto proxy = sdbus::createProxy(conn, kBrokerName, session);
  proxy->callMethod("Release").onInterface(kSessionInterface);
}

class ModelSessionBusTest : public CatalogTest {
 protected:
  void SetUp() override {
    CatalogTest::SetUp();
    if (IsSkipped()) return;
    catalog_ = std::make_unique<TestCatalog>();
    catalog_->publish_model(model_meta(kModel, "1.0", kFp32), {kFp32, kInt8, kLabels});
  }

  void start_and_refresh(PrivateBusOptions o = {}) {
    start(std::move(o));
    refresh();
  }

  // EnsureModel(name, variant[, version]), waited for.
  void install_model(const std::string& name, const std::string& variant,
                     const std::string& version = "") {
    Options o{{key::variant, sdbus::Variant(variant)}};
    if (!version.empty()) o.emplace(key::version, sdbus::Variant(version));
    const std::string job = broker_->EnsureModel(name, o);
    ASSERT_EQ(wait_job(*conn_, job), "done")
        << job_property(*conn_, job, "ErrorMessage").get<std::string>();
  }

  fs::path variant_dir(const std::string& name, const std::string& version,
                       const std::string& variant) const {
    return bus_->store_dir() / "_models" / name / version / variant;
  }
  fs::path blob(const std::string& bytes) const {
    return bus_->store_dir() / "_blobs" / "sha256" / sha(bytes);
  }
};

TEST_F(ModelSessionBusTest, ListModelsPlansAVariantForThisMachine) {
  // A recorded machine (two CPU sockets, nothing else), so the plan is known.
  PrivateBusOptions o;
  const fs::path machine =
      fs::path(EPBROKER_INTEGRATION_SOURCE_DIR) / "tests/data/sysfs/cpu-server";
  o.sysfs_root = machine / "sys";
  o.procfs_root = machine / "proc";
  start_and_refresh(std::move(o));

  // Default policy: the CPU; the first CPU pair in ORT's order is a test
  // provider's EP (provider EPs before ORT's own CPU EP), which the generic
  // fp32 variant fits.
  Dicts models = broker_->ListModels({});
  ASSERT_EQ(models.size(), 1U);
  EXPECT_EQ(str(models[0], key::planned), "fp32");
  EXPECT_EQ(str(models[0], key::plan_device), "cpu0");
  EXPECT_EQ(str(models[0], key::plan_ep), "EpbrokerBulkEp");
  EXPECT_FALSE(str(models[0], key::plan_reason).empty());

  // prefer_npu on a machine without an NPU: ORT falls back to the CPU.
  models = broker_->ListModels({{key::policy, sdbus::Variant(std::string("prefer_npu"))}});
  ASSERT_EQ(models.size(), 1U);
  EXPECT_EQ(str(models[0], key::planned), "fp32");
  EXPECT_EQ(str(models[0], key::plan_device), "cpu0");

  // An ORT older than every variant's ort_min: none fits, and the reason says so.
  models = broker_->ListModels({{key::ort_version, sdbus::Variant(std::string("1.10.0"))}});
  ASSERT_EQ(models.size(), 1U);
  EXPECT_EQ(str(models[0], key::planned), "");
  EXPECT_EQ(str(models[0], key::plan_device), "");
  EXPECT_EQ(str(models[0], key::plan_ep), "");
  const std::string why = str(models[0], key::plan_reason);
  EXPECT_NE(why.find("fp32"), std::string::npos) << why;
  EXPECT_NE(why.find("int8"), std::string::npos) << why;

  EXPECT_EQ(error_name_of([&] {
              broker_->ListModels({{key::policy, sdbus::Variant(std::string("fastest"))}});
            }),
            kInvalid);
  EXPECT_EQ(error_name_of([&] {
              broker_->ListModels({{key::ort_version, sdbus::Variant(std::string("1.x"))}});
            }),
            kInvalid);
}

TEST_F(ModelSessionBusTest, SessionGrantsTheInstalledVariantWithItsFiles) {
  start_and_refresh();
  install_model(kModel, "fp32");

  const auto [session, granted] = broker_->RequestSession(models_option({{kModel, ""}}));
  // With models, only providers named in "providers": none here.
  ASSERT_EQ(granted.size(), 1U);
  const Dict m = model_of(granted, kModel);
  EXPECT_EQ(str(m, key::state), "ready");
  EXPECT_EQ(str(m, key::version), "1.0");
  EXPECT_EQ(str(m, key::variant), "fp32");
  EXPECT_TRUE(strs(m, key::devices).empty());
  EXPECT_TRUE(strs(m, key::eps).empty());
  EXPECT_EQ(m.count(key::reason), 0U);
  EXPECT_EQ(m.count(key::job), 0U);
  const fs::path path = str(m, key::path);
  EXPECT_EQ(path, variant_dir(kModel, "1.0", "fp32"));
  EXPECT_TRUE(fs::is_directory(path)) << path;
  const fs::path main = str(m, key::main);
  EXPECT_EQ(main, path / "model.onnx");
  EXPECT_EQ(sha(read(main)), sha(kFp32)) << "the main file is not the card's";
  EXPECT_EQ(strs(m, key::files), (std::vector<std::string>{"labels.txt", "model.onnx"}));
  EXPECT_EQ(sha(read(path / "labels.txt")), sha(kLabels));
  // A session holding only a model lease is a session: the daemon is busy.
  EXPECT_EQ(broker_->DaemonState(), "busy");

  // Providers named beside the models come first, then the models.
  const auto [second, both] = broker_->RequestSession(
      {{key::models, sdbus::Variant(std::map<std::string, std::string>{{kModel, "fp32"}})},
       {key::providers, sdbus::Variant(std::vector<std::string>{kBulkEp})}});
  ASSERT_EQ(both.size(), 2U);
  EXPECT_EQ(str(both[0], key::name), kBulkEp);
  EXPECT_EQ(str(both[1], key::kind), "model");
  EXPECT_EQ(str(both[1], key::state), "ready");
  release(*conn_, second);
  release(*conn_, session);
  EXPECT_TRUE(wait_until([&] { return broker_->DaemonState() == "idle"; }, 5s));
}

TEST_F(ModelSessionBusTest, ALeaseKeepsRemoveModelOffUnlessNow) {
  start_and_refresh();
  install_model(kModel, "fp32");
  const fs::path dir = variant_dir(kModel, "1.0", "fp32");
  const auto [session, granted] = broker_->RequestSession(models_option({{kModel, "fp32"}}));
  ASSERT_EQ(str(model_of(granted, kModel), key::state), "ready");

  EXPECT_EQ(error_name_of([&] { broker_->RemoveModel(kModel, {}); }), kBusy);
  EXPECT_EQ(error_name_of([&] {
              broker_->RemoveModel(kModel, {{key::variant, sdbus::Variant(std::string("fp32"))}});
            }),
            kBusy);
  EXPECT_TRUE(fs::is_regular_file(dir / "model.onnx")) << "removed under a lease";

  const int changed = broker_->providers_changed;
  const Dicts removed = broker_->RemoveModel(kModel, {{key::now, sdbus::Variant(true)}});
  ASSERT_EQ(removed.size(), 1U);
  EXPECT_EQ(str(removed[0], key::name), kModel);
  EXPECT_EQ(str(removed[0], key::version), "1.0");
  EXPECT_EQ(str(removed[0], key::variant), "fp32");
  EXPECT_FALSE(fs::exists(dir));
  EXPECT_FALSE(fs::exists(blob(kFp32)));
  EXPECT_TRUE(wait_until([&] { return broker_->providers_changed > changed; }, 5s));
  release(*conn_, session);
}

TEST_F(ModelSessionBusTest, RemovalAfterReleaseKeepsFilesAnotherModelShares) {
  // other-net ships the very labels.txt of tiny-net: one blob for both.
  catalog_->publish_model(model_meta(kOther, "2.0", kOtherWeights, /*only_fp32=*/true),
                          {kOtherWeights, kLabels});
  start_and_refresh();
  install_model(kModel, "fp32");
  install_model(kOther, "fp32");
  ASSERT_TRUE(fs::exists(blob(kLabels)));

  const auto [session, granted] = broker_->RequestSession(models_option({{kModel, ""}}));
  ASSERT_EQ(str(model_of(granted, kModel), key::state), "ready");
  EXPECT_EQ(error_name_of([&] { broker_->RemoveModel(kModel, {}); }), kBusy);
  release(*conn_, session);

  const Dicts removed = broker_->RemoveModel(kModel, {});
  ASSERT_EQ(removed.size(), 1U);
  EXPECT_EQ(str(removed[0], key::variant), "fp32");
  EXPECT_FALSE(fs::exists(variant_dir(kModel, "1.0", "fp32")));
  EXPECT_FALSE(fs::exists(blob(kFp32))) << "a blob nothing references stayed";
  // The shared file stays, for other-net.
  EXPECT_TRUE(fs::exists(blob(kLabels)));
  EXPECT_EQ(read(variant_dir(kOther, "2.0", "fp32") / "labels.txt"), kLabels);
  const auto [other, kept] = broker_->RequestSession(models_option({{kOther, ""}}));
  EXPECT_EQ(str(model_of(kept, kOther), key::state), "ready");
  release(*conn_, other);

  // Nothing left to remove; the history has the removal.
  EXPECT_EQ(error_name_of([&] { broker_->RemoveModel(kModel, {}); }),
            "org.epbroker.Error.NotFound");
  bool recorded = false;
  for (const auto& e : broker_->History(kModel)) {
    recorded |= str(e, key::action) == "remove" && str(e, key::from) == "1.0/fp32" &&
                str(e, key::result) == "ok";
  }
  EXPECT_TRUE(recorded);
}

TEST_F(ModelSessionBusTest, DownloadInstallsAModelNotInstalled) {
  start_and_refresh();
  const auto [session, granted] = broker_->RequestSession(
      {{key::models, sdbus::Variant(std::map<std::string, std::string>{{kModel, "int8"}})},
       {key::download, sdbus::Variant(true)}});
  const Dict m = model_of(granted, kModel);
  ASSERT_EQ(str(m, key::state), "installing") << str(m, key::reason);
  EXPECT_EQ(str(m, key::version), "1.0");
  EXPECT_EQ(str(m, key::variant), "int8");
  EXPECT_EQ(strs(m, key::devices), std::vector<std::string>{"npu"});
  EXPECT_EQ(strs(m, key::eps), std::vector<std::string>{"TestNpuExecutionProvider"});
  EXPECT_EQ(m.count(key::path), 0U);
  const std::string job = m.at(key::job).get<sdbus::ObjectPath>();
  ASSERT_EQ(wait_job(*conn_, job), "done")
      << job_property(*conn_, job, "ErrorMessage").get<std::string>();
  EXPECT_EQ(job_property(*conn_, job, "Kind").get<std::string>(), "model");
  EXPECT_TRUE(fs::is_regular_file(variant_dir(kModel, "1.0", "int8") / "model.onnx"));
  release(*conn_, session);

  // Now it is there: granted, ready.
  const auto [again, now_ready] = broker_->RequestSession(models_option({{kModel, "int8"}}));
  EXPECT_EQ(str(model_of(now_ready, kModel), key::state), "ready");
  release(*conn_, again);
}

TEST_F(ModelSessionBusTest, WhatAModelNobodyInstalledSays) {
  start_and_refresh();
  const auto [session, granted] =
      broker_->RequestSession(models_option({{kModel, ""}, {"no-such-model", ""}}));
  ASSERT_EQ(granted.size(), 2U);
  const Dict m = model_of(granted, kModel);
  EXPECT_EQ(str(m, key::state), "available");
  EXPECT_EQ(str(m, key::version), "1.0");
  EXPECT_EQ(str(m, key::variant), "fp32");
  EXPECT_FALSE(str(m, key::reason).empty());
  EXPECT_EQ(m.count(key::path), 0U);
  EXPECT_EQ(m.count(key::job), 0U);
  const Dict unknown = model_of(granted, "no-such-model");
  EXPECT_EQ(str(unknown, key::state), "incompatible");
  EXPECT_NE(str(unknown, key::reason).find("no-such-model"), std::string::npos);
  EXPECT_FALSE(fs::exists(bus_->store_dir() / "_models" / kModel)) << "installed without download";
  release(*conn_, session);

  // Checked before anything is leased.
  std::map<std::string, std::string> many;
  for (int i = 0; i < 17; ++i) many.emplace("model-" + std::to_string(i), "");
  EXPECT_EQ(error_name_of([&] { broker_->RequestSession(models_option(many)); }), kInvalid);
  EXPECT_EQ(error_name_of([&] {
              broker_->RequestSession(models_option({{"Bad Name", ""}}));
            }),
            kInvalid);
  EXPECT_EQ(error_name_of([&] {
              broker_->RequestSession(models_option({{kModel, "Bad!"}}));
            }),
            kInvalid);
  EXPECT_EQ(error_name_of([&] {
              broker_->RequestSession({{key::models, sdbus::Variant(std::vector<std::string>{})}});
            }),
            kInvalid);
  EXPECT_EQ(error_name_of([&] {
              broker_->RequestSession(
                  {{key::models, sdbus::Variant(std::map<std::string, std::string>{{kModel, ""}})},
                   {key::policy, sdbus::Variant(std::string("fastest"))}});
            }),
            kInvalid);
}

TEST_F(ModelSessionBusTest, CollectGarbageTakesSupersededVersionsNoSessionLeases) {
  start_and_refresh();
  install_model(kModel, "fp32");
  // A session holds 1.0 while 1.1 comes.
  const auto [session, granted] = broker_->RequestSession(models_option({{kModel, "fp32"}}));
  ASSERT_EQ(str(model_of(granted, kModel), key::version), "1.0");
  catalog_->publish_model(model_meta(kModel, "1.1", kFp32v2), {kFp32v2, kInt8, kLabels});
  refresh();
  install_model(kModel, "fp32");
  const fs::path old_dir = variant_dir(kModel, "1.0", "fp32");
  const fs::path new_dir = variant_dir(kModel, "1.1", "fp32");
  ASSERT_TRUE(fs::is_directory(new_dir));

  // Leased: kept.
  for (const auto& r : broker_->CollectGarbage()) {
    EXPECT_NE(str(r, key::name), kModel) << "collected a leased variant";
  }
  EXPECT_TRUE(fs::is_regular_file(old_dir / "model.onnx"));
  // A new session gets the newest.
  const auto [newer, granted_newer] = broker_->RequestSession(models_option({{kModel, "fp32"}}));
  EXPECT_EQ(str(model_of(granted_newer, kModel), key::version), "1.1");

  release(*conn_, session);
  const Dicts removed = broker_->CollectGarbage();
  std::vector<Dict> models;
  for (const auto& r : removed) {
    if (r.count(key::kind) != 0U) models.push_back(r);
  }
  ASSERT_EQ(models.size(), 1U);
  EXPECT_EQ(str(models[0], key::kind), "model");
  EXPECT_EQ(str(models[0], key::name), kModel);
  EXPECT_EQ(str(models[0], key::version), "1.0");
  EXPECT_EQ(str(models[0], key::variant), "fp32");
  EXPECT_FALSE(fs::exists(old_dir));
  EXPECT_TRUE(fs::is_regular_file(new_dir / "model.onnx"));
  EXPECT_TRUE(fs::exists(blob(kLabels)));  // 1.1 still has it
  // The newest of a variant is never collected.
  for (const auto& r : broker_->CollectGarbage()) EXPECT_NE(str(r, key::name), kModel);
  release(*conn_, newer);
}

TEST_F(ModelSessionBusTest, OwnerLeavingTheBusEndsItsModelLease) {
  start_and_refresh();
  install_model(kModel, "fp32");
  auto app = bus_->connect();
  auto app_broker = std::make_unique<BrokerProxy>(*app);
  const auto [session, granted] = app_broker->RequestSession(models_option({{kModel, ""}}));
  ASSERT_EQ(str(model_of(granted, kModel), key::state), "ready");
  EXPECT_EQ(error_name_of([&] { broker_->RemoveModel(kModel, {}); }), kBusy);

  app_broker.reset();
  app.reset();
  // The daemon learns it from the bus, asynchronously.
  std::string last;
  EXPECT_TRUE(wait_until(
      [&] {
        last = error_name_of([&] { broker_->RemoveModel(kModel, {}); });
        return last != kBusy;
      },
      10s));
  EXPECT_EQ(last, "");
  EXPECT_FALSE(fs::exists(variant_dir(kModel, "1.0", "fp32")));
}

}  // namespace
}  // namespace tests::daemon
