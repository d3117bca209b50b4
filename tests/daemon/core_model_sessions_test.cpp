// Models in the core's sessions and lifecycle (issue 21, step 7b): list_models()'
// plan, request_session() with models (the newest installed version holding the
// variant, leased; what a model not installed, unknown or too new for the app's
// ORT says; a refused download), remove_model() (Busy under a lease, now, NotFound,
// arguments), the models' part of collect_garbage(), and model leases kept across
// a restart (leases.json) and ended by client_vanished().
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "catalog/crypto/hash.hpp"
#include "catalog/model_metadata.hpp"
#include "catalog/tuf/dir_fetcher.hpp"
#include "catalog/tuf/repository.hpp"
#include "daemon/core/broker.hpp"
#include "daemon/core/broker_internal.hpp"
#include "tests/support/temp_dir.hpp"

namespace epbrokerd::core {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using common::ProviderState;

constexpr const char* kUrl = "http://main.test/";
const std::string kLabels = "cat\ndog\n";
const std::string kInt8 = "int8 weights";

fs::path source_dir() {
  if (const char* dir = std::getenv("EPBROKER_SOURCE_DIR"); dir != nullptr && *dir != '\0') {
    return dir;
  }
  return fs::path(__FILE__).parent_path().parent_path().parent_path();
}

catalog::tuf::TimePoint now() {
  return std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
}

std::string sha(const std::string& bytes) { return catalog::crypto::sha256_hex(bytes); }
std::string fp32_of(const std::string& version) { return "fp32 weights " + version; }

// resnet VERSION: fp32 (any device) and int8 (NPUs), sharing labels.txt.
catalog::ModelMetadata model_meta(const std::string& version) {
  nlohmann::json c = {{"epbroker",
                       {{"schema", 2},
                        {"kind", "model"},
                        {"name", "resnet"},
                        {"version", version},
                        {"publisher", "Test"},
                        {"license", "Apache-2.0"},
                        {"license_url", "https://example.com/license"},
                        {"task", "image-classification"},
                        {"inputs", {{{"name", "data"}, {"type", "float"}, {"shape", {"N", 3}}}}},
                        {"outputs", {{{"name", "prob"}, {"type", "float"}, {"shape", {"N", 2}}}}},
                        {"variants", nlohmann::json::array()}}}};
  for (const auto& [id, weights] :
       {std::pair{"fp32", fp32_of(version)}, std::pair{"int8", kInt8}}) {
    nlohmann::json files = nlohmann::json::array();
    for (const auto& [path, bytes] : {std::pair{"labels.txt", kLabels}, {"model.onnx", weights}}) {
      files.push_back({{"path", path}, {"size", bytes.size()}, {"sha256", sha(bytes)}});
    }
    nlohmann::json v = {
        {"id", id}, {"ort_min", "1.20"}, {"opset", 17}, {"main", "model.onnx"}, {"files", files}};
    if (std::string(id) == "int8") v["devices"] = {"npu"};
    c["epbroker"]["variants"].push_back(v);
  }
  auto m = catalog::parse_model_metadata(c);
  EXPECT_TRUE(m.has_value()) << m.error().message;
  return m.value_or(catalog::ModelMetadata{});
}

class ModelSessionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto r = catalog::tuf::Repository::create(now());
    ASSERT_TRUE(r) << r.error().message;
    repo_ = std::move(*r);
    publish("1.0");
  }

  void publish(const std::string& version) {
    for (const auto& bytes : {fp32_of(version), kInt8, kLabels}) {
      auto added = repo_.add_target(catalog::model_blob_path("resnet", sha(bytes)), bytes, nullptr);
      ASSERT_TRUE(added) << added.error().message;
    }
    const auto meta = model_meta(version);
    auto added = repo_.add_target("resnet/resnet-" + version + ".model.json",
                                  catalog::to_json(meta).dump(), catalog::to_json(meta));
    ASSERT_TRUE(added) << added.error().message;
    auto ok = repo_.publish(catalog::tuf::directory_writer(tmp_ / "repo"), now());
    ASSERT_TRUE(ok) << ok.error().message;
  }

  void start() {
    BrokerOptions o;
    o.config.paths.state_dir = tmp_ / "state";
    o.config.paths.store_root = o.config.paths.state_dir;
    o.config.paths.cache_dir = tmp_ / "cache";
    config::Remote c;
    c.name = "main";
    c.primary = {std::string(kUrl) + "metadata/", std::string(kUrl) + "targets/"};
    c.trusted_root = tmp_ / "root.json";
    c.allow_http = true;
    fs::copy_file(tmp_ / "repo/metadata/1.root.json", c.trusted_root,
                  fs::copy_options::skip_existing);
    o.config.remotes.push_back(c);
    const fs::path machine = source_dir() / "tests/data/sysfs/cpu-server";
    o.roots = {machine / "sys", machine / "proc", machine / "dev", "x86_64"};
    o.fetcher_factory = [this](const config::Remote&) {
      return std::make_unique<catalog::tuf::DirFetcher>(kUrl, tmp_ / "repo");
    };
    o.authorizer = &authorizer_;
    auto b = Broker::create(std::move(o), nullptr);
    ASSERT_TRUE(b) << b.error().message;
    broker_ = std::move(*b);
    refresh();
  }

  void refresh() { ASSERT_EQ(wait(broker_->refresh(root_).value()).state, JobState::done); }

  JobSnapshot wait(std::uint64_t id) {
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (std::chrono::steady_clock::now() < deadline) {
      if (const auto s = broker_->jobs().find(id)->snapshot(); is_final(s.state)) return s;
      std::this_thread::sleep_for(5ms);
    }
    ADD_FAILURE() << "job " << id << " did not end";
    return {};
  }

  void install(const std::string& variant, const std::string& version = "") {
    ModelInstallOptions o;
    o.variant = variant;
    o.version = version;
    auto id = broker_->ensure_model(root_, "resnet", o);
    ASSERT_TRUE(id) << id.error().message;
    const auto s = wait(*id);
    ASSERT_EQ(s.state, JobState::done) << (s.error ? s.error->message : "");
  }

  SessionGrant session(std::map<std::string, std::string> models, bool download = false,
                       const RequestContext* ctx = nullptr, const std::string& ort = "") {
    SessionRequest r;
    r.models = std::move(models);
    r.download = download;
    r.ort_version = ort;
    auto g = broker_->request_session(ctx ? *ctx : root_, r);
    EXPECT_TRUE(g) << g.error().message;
    return g.value_or(SessionGrant{});
  }

  fs::path variant_dir(const std::string& version, const std::string& variant) const {
    return tmp_ / "state/store/_models/resnet" / version / variant;
  }

  tests::support::TempDir tmp_;
  catalog::tuf::Repository repo_;
  UidAuthorizer authorizer_;
  const RequestContext root_{0, ":1.1"};
  std::unique_ptr<Broker> broker_;
};

TEST_F(ModelSessionsTest, ListModelsPlansEachVersionForTheOptions) {
  start();
  install("int8");
  auto rows = broker_->list_models({});
  ASSERT_TRUE(rows) << rows.error().message;
  ASSERT_EQ(rows->size(), 1U);
  const auto& row = rows->front();
  EXPECT_EQ(row.entry.version(), "1.0");
  EXPECT_EQ(row.installed, std::set<std::string>{"int8"});
  EXPECT_EQ(row.plan.variant, "fp32");  // no NPU here
  EXPECT_EQ(row.plan.device, "cpu0");
  EXPECT_EQ(row.plan.ep, "CPUExecutionProvider");
  EXPECT_FALSE(row.plan.reason.empty());

  ModelListOptions old;
  old.ort_version = "1.10.0";
  rows = broker_->list_models(old);
  ASSERT_TRUE(rows);
  EXPECT_EQ(rows->front().plan.variant, "");
  EXPECT_EQ(rows->front().plan.device, "");
  EXPECT_NE(rows->front().plan.reason.find("1.20"), std::string::npos) << rows->front().plan.reason;

  ModelListOptions bad;
  bad.ort_version = "one";
  rows = broker_->list_models(bad);
  ASSERT_FALSE(rows);
  EXPECT_EQ(rows.error().code, Errc::InvalidArgument);
}

TEST_F(ModelSessionsTest, ASessionLeasesTheNewestInstalledVersionOfTheVariant) {
  publish("1.1");
  start();
  install("fp32", "1.0");
  install("fp32", "1.1");
  install("int8", "1.0");

  auto g = session({{"resnet", ""}, {"absent", "int8"}});
  EXPECT_TRUE(g.providers.empty()) << "with models, providers only when named";
  ASSERT_EQ(g.models.size(), 2U);
  const auto& absent = g.models[0];  // the option's order: by name
  EXPECT_EQ(absent.name, "absent");
  EXPECT_EQ(absent.state, ProviderState::incompatible);
  EXPECT_FALSE(absent.reason.empty());
  const auto& m = g.models[1];
  EXPECT_EQ(m.state, ProviderState::ready) << m.reason;
  EXPECT_EQ(m.version, "1.1");
  EXPECT_EQ(m.variant, "fp32");
  EXPECT_EQ(m.path, variant_dir("1.1", "fp32"));
  EXPECT_EQ(m.main, variant_dir("1.1", "fp32") / "model.onnx");
  EXPECT_EQ(m.files, (std::vector<std::string>{"labels.txt", "model.onnx"}));
  EXPECT_TRUE(m.reason.empty());
  const auto info = broker_->sessions().find(g.session);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->leases, std::vector<std::string>{"model:resnet/1.1/fp32"});

  // int8 exists in 1.0 only: that one.
  auto older = session({{"resnet", "int8"}});
  ASSERT_EQ(older.models.size(), 1U);
  EXPECT_EQ(older.models[0].state, ProviderState::ready);
  EXPECT_EQ(older.models[0].version, "1.0");
  EXPECT_EQ(older.models[0].devices, std::vector<std::string>{"npu"});

  // An app whose ORT no variant supports gets none, and why.
  auto too_old = session({{"resnet", "fp32"}}, false, nullptr, "1.10.0");
  ASSERT_EQ(too_old.models.size(), 1U);
  EXPECT_EQ(too_old.models[0].state, ProviderState::incompatible);
  EXPECT_NE(too_old.models[0].reason.find("1.20"), std::string::npos) << too_old.models[0].reason;

  EXPECT_TRUE(broker_->release_session(root_, g.session));
  EXPECT_TRUE(broker_->release_session(root_, older.session));
  EXPECT_TRUE(broker_->release_session(root_, too_old.session));
  EXPECT_TRUE(broker_->idle());
}

TEST_F(ModelSessionsTest, ArgumentsAreCheckedBeforeAnythingIsLeased) {
  start();
  install("fp32");
  auto refused = [&](SessionRequest r) {
    auto g = broker_->request_session(root_, r);
    return !g && g.error().code == Errc::InvalidArgument;
  };
  SessionRequest r;
  r.models = std::map<std::string, std::string>{};
  for (int i = 0; i < 17; ++i) (*r.models)["m" + std::to_string(i)] = "";
  EXPECT_TRUE(refused(r));
  r.models = std::map<std::string, std::string>{{"resnet", ""}, {"Bad/Name", ""}};
  EXPECT_TRUE(refused(r));
  r.models = std::map<std::string, std::string>{{"resnet", "../fp32"}};
  EXPECT_TRUE(refused(r));
  r.models = std::map<std::string, std::string>{{"resnet", ""}};
  r.policy = "fastest";
  EXPECT_TRUE(refused(r));
  EXPECT_EQ(broker_->sessions().count(), 0U);
  // Nothing was leased: removable at once.
  EXPECT_TRUE(broker_->remove_model(root_, "resnet", {}));
}

TEST_F(ModelSessionsTest, ADownloadTheCallerMayNotMakeSaysSoAndTheSessionStands) {
  start();
  const RequestContext user{1000, ":1.7"};
  auto g = session({{"resnet", ""}}, /*download=*/true, &user);
  ASSERT_EQ(g.models.size(), 1U);
  EXPECT_EQ(g.models[0].state, ProviderState::available);
  EXPECT_EQ(g.models[0].version, "1.0");
  EXPECT_EQ(g.models[0].job, 0U);
  EXPECT_FALSE(g.models[0].reason.empty());
  EXPECT_FALSE(fs::exists(variant_dir("1.0", "fp32")));
  EXPECT_TRUE(broker_->release_session(user, g.session));

  // Root may: installing, as a model job.
  auto allowed = session({{"resnet", ""}}, /*download=*/true);
  ASSERT_EQ(allowed.models.size(), 1U);
  ASSERT_EQ(allowed.models[0].state, ProviderState::installing) << allowed.models[0].reason;
  EXPECT_EQ(wait(allowed.models[0].job).state, JobState::done);
  EXPECT_TRUE(fs::is_regular_file(variant_dir("1.0", "fp32") / "model.onnx"));
}

TEST_F(ModelSessionsTest, RemoveModelRespectsLeasesUnlessNow) {
  start();
  install("fp32");
  install("int8");
  auto g = session({{"resnet", "fp32"}});
  ASSERT_EQ(g.models.at(0).state, ProviderState::ready);

  auto busy = broker_->remove_model(root_, "resnet", {});
  ASSERT_FALSE(busy);
  EXPECT_EQ(busy.error().code, Errc::Busy);
  EXPECT_TRUE(fs::exists(variant_dir("1.0", "int8"))) << "all or nothing";

  ModelRemoveOptions int8;
  int8.variant = "int8";
  auto gone = broker_->remove_model(root_, "resnet", int8);
  ASSERT_TRUE(gone) << gone.error().message;
  ASSERT_EQ(gone->size(), 1U);
  EXPECT_EQ(gone->at(0).variant, "int8");
  EXPECT_FALSE(fs::exists(variant_dir("1.0", "int8")));
  EXPECT_TRUE(fs::exists(variant_dir("1.0", "fp32") / "labels.txt")) << "shared file kept";

  ModelRemoveOptions now;
  now.now = true;
  gone = broker_->remove_model(root_, "resnet", now);
  ASSERT_TRUE(gone) << gone.error().message;
  EXPECT_EQ(gone->size(), 1U);
  EXPECT_FALSE(fs::exists(variant_dir("1.0", "fp32")));

  auto none = broker_->remove_model(root_, "resnet", {});
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, Errc::NotFound);
  ModelRemoveOptions bad;
  bad.version = "1.0/../x";
  EXPECT_EQ(broker_->remove_model(root_, "resnet", bad).error().code, Errc::InvalidArgument);
  EXPECT_EQ(broker_->remove_model(root_, "Bad Name", {}).error().code, Errc::InvalidArgument);
  EXPECT_EQ(broker_->remove_model({1000, ":1.7"}, "resnet", {}).error().code, Errc::NotAuthorized);

  const auto history = broker_->history("resnet");
  std::vector<std::string> removed;
  for (const auto& e : history) {
    if (e.action == common::HistoryAction::remove && e.result == "ok") removed.push_back(e.from);
  }
  EXPECT_EQ(removed, (std::vector<std::string>{"1.0/int8", "1.0/fp32"}));
  EXPECT_TRUE(broker_->release_session(root_, g.session));
}

TEST_F(ModelSessionsTest, CollectGarbageTakesSupersededUnleasedVariants) {
  publish("1.1");
  start();
  install("fp32", "1.0");
  install("int8", "1.0");
  install("fp32", "1.1");
  auto g = session({{"resnet", "fp32"}}, false, nullptr);
  ASSERT_EQ(g.models.at(0).version, "1.1");
  // 1.0/fp32 is superseded and unleased; 1.0/int8 is the newest int8.
  auto removed = broker_->collect_garbage(root_);
  ASSERT_TRUE(removed) << removed.error().message;
  ASSERT_EQ(removed->size(), 1U);
  EXPECT_EQ(removed->at(0).name, "resnet");
  EXPECT_EQ(removed->at(0).version, "1.0");
  EXPECT_EQ(removed->at(0).variant, "fp32");
  EXPECT_FALSE(fs::exists(variant_dir("1.0", "fp32")));
  EXPECT_TRUE(fs::exists(variant_dir("1.0", "int8")));
  EXPECT_TRUE(fs::exists(variant_dir("1.1", "fp32")));
  EXPECT_TRUE(broker_->collect_garbage(root_)->empty());
  EXPECT_TRUE(broker_->release_session(root_, g.session));
}

TEST_F(ModelSessionsTest, AnOlderVersionALeaseHoldsIsNotCollected) {
  start();
  install("fp32", "1.0");
  auto g = session({{"resnet", "fp32"}});
  ASSERT_EQ(g.models.at(0).version, "1.0");
  publish("1.1");
  refresh();
  install("fp32", "1.1");
  EXPECT_TRUE(broker_->collect_garbage(root_)->empty());
  EXPECT_TRUE(fs::exists(variant_dir("1.0", "fp32")));
  EXPECT_TRUE(broker_->release_session(root_, g.session));
  auto removed = broker_->collect_garbage(root_);
  ASSERT_TRUE(removed);
  EXPECT_EQ(removed->size(), 1U);
  EXPECT_FALSE(fs::exists(variant_dir("1.0", "fp32")));
}

TEST_F(ModelSessionsTest, ModelLeasesOfALiveAppSurviveARestart) {
  start();
  install("fp32");
  const RequestContext app{0, ":1.9"};
  auto g = session({{"resnet", ""}}, false, &app);
  ASSERT_EQ(g.models.at(0).state, ProviderState::ready);
  broker_.reset();  // writes leases.json
  start();
  broker_->adopt_leases([](const std::string& owner) { return owner == ":1.9"; });
  auto busy = broker_->remove_model(root_, "resnet", {});
  ASSERT_FALSE(busy) << "the adopted lease did not hold";
  EXPECT_EQ(busy.error().code, Errc::Busy);
  broker_->client_vanished(":1.9");
  EXPECT_TRUE(broker_->remove_model(root_, "resnet", {}));
}

TEST(ModelLeaseName, RoundTrip) {
  const auto text = detail::model_lease_name("resnet", "1.0", "fp32");
  EXPECT_EQ(text, "model:resnet/1.0/fp32");
  const auto back = detail::parse_model_lease_name(text);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->name, "resnet");
  EXPECT_EQ(back->version, "1.0");
  EXPECT_EQ(back->variant, "fp32");
  EXPECT_FALSE(detail::parse_model_lease_name("resnet/1.0"));
  EXPECT_FALSE(detail::parse_model_lease_name("model:resnet/1.0"));
  EXPECT_FALSE(detail::parse_model_lease_name("model:../x/1.0/fp32"));
}

}  // namespace
}  // namespace epbrokerd::core
