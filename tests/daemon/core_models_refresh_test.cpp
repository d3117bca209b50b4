// The broker's refresh lists the models a trusted catalog offers (issue 21): a
// model card target (custom["epbroker"] kind "model") becomes a ModelEntry with
// its variants; one whose files are not signed as the card says, or whose path
// does not bind its name, is listed refused with the reason; EP packages are
// listed as before; catalog.json keeps the models for the next start, and one
// written before models loads.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "catalog/atomic_file.hpp"
#include "catalog/canonical_json.hpp"
#include "catalog/crypto/hash.hpp"
#include "catalog/crypto/signing_key.hpp"
#include "catalog/ep_metadata.hpp"
#include "catalog/model_metadata.hpp"
#include "catalog/package/pack.hpp"
#include "catalog/tuf/dir_fetcher.hpp"
#include "catalog/tuf/repository.hpp"
#include "daemon/core/broker.hpp"
#include "tests/support/temp_dir.hpp"

namespace epbrokerd::core {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr const char* kUrl = "http://main.test/";
const std::string kFp32 = "fp32 weights";
const std::string kInt8 = "int8 weights";
const std::string kLabels = "cat\ndog\n";

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

// A model card: variants fp32 (any device) and int8 (NPUs), sharing labels.txt.
catalog::ModelMetadata model_meta(const std::string& name, const std::string& version) {
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
  for (const auto& [id, weights] : {std::pair{"fp32", kFp32}, std::pair{"int8", kInt8}}) {
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

class ModelsRefreshTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto r = catalog::tuf::Repository::create(now());
    ASSERT_TRUE(r) << r.error().message;
    repo_ = std::move(*r);
  }

  // An EP package NAME 1.0.0, as the other core tests publish one.
  void add_package(const std::string& pkg) {
    nlohmann::json custom = {{"epbroker",
                              {{"schema", 1},
                               {"name", pkg},
                               {"version", "1.0.0"},
                               {"ep_names", {"TestEp"}},
                               {"vendor", "test"},
                               {"arch", "x86_64"},
                               {"ort_min", "1.20.0"},
                               {"library", "lib/libtest.so"},
                               {"supports", {{{"type", "cpu"}}}}}}};
    auto meta = catalog::parse_ep_metadata(custom);
    ASSERT_TRUE(meta) << meta.error().message;
    const fs::path src = tmp_ / ("src-" + pkg);
    tests::support::write_file(src / "lib/libtest.so", pkg);
    const fs::path package = tmp_ / (pkg + "-1.0.0.tar.zst");
    ASSERT_TRUE(catalog::package::pack_directory(src, *meta, package));
    auto added = repo_.add_target(pkg + "/" + package.filename().string(),
                                  tests::support::read_file(package), catalog::to_json(*meta));
    ASSERT_TRUE(added) << added.error().message;
  }

  // As epbroker-publish add-model does: each content once at NAME/blobs/<sha256>
  // (in `blob_role`), the card at `card_path` (in `card_role`).
  void add_model(const catalog::ModelMetadata& meta, const std::string& card_path,
                 const std::string& card_role = "targets",
                 const std::string& blob_role = "targets") {
    for (const auto* bytes : {&kFp32, &kInt8, &kLabels}) {
      auto added = repo_.add_target(catalog::model_blob_path(meta.name, sha(*bytes)), *bytes,
                                    nullptr, blob_role);
      ASSERT_TRUE(added) << added.error().message;
    }
    auto added = repo_.add_target(card_path, catalog::to_json(meta).dump(), catalog::to_json(meta),
                                  card_role);
    ASSERT_TRUE(added) << added.error().message;
  }

  void publish() {
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
  }

  JobSnapshot refresh() {
    const auto id = broker_->refresh(root_).value();
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (std::chrono::steady_clock::now() < deadline) {
      if (const auto s = broker_->jobs().find(id)->snapshot(); is_final(s.state)) return s;
      std::this_thread::sleep_for(5ms);
    }
    ADD_FAILURE() << "refresh " << id << " did not end";
    return {};
  }

  std::vector<std::string> provider_names() const {
    std::vector<std::string> out;
    for (const auto& p : broker_->providers()) out.push_back(p.name);
    return out;
  }

  fs::path catalog_json() const { return tmp_ / "state/remotes/main/catalog.json"; }

  tests::support::TempDir tmp_;
  catalog::tuf::Repository repo_;
  UidAuthorizer authorizer_;
  const RequestContext root_{0, ":1.1"};
  std::unique_ptr<Broker> broker_;
};

std::vector<std::string> variant_ids(const ModelEntry& e) {
  std::vector<std::string> out;
  for (const auto& v : e.meta.variants) out.push_back(v.id);
  return out;
}

void expect_same(const std::vector<ModelEntry>& a, const std::vector<ModelEntry>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].remote, b[i].remote) << i;
    EXPECT_EQ(a[i].target_path, b[i].target_path) << i;
    EXPECT_EQ(a[i].length, b[i].length) << i;
    EXPECT_EQ(a[i].meta, b[i].meta) << i;
    EXPECT_EQ(a[i].refused, b[i].refused) << i;
  }
}

TEST_F(ModelsRefreshTest, ARefreshListsAModelWithItsVariantsBesideTheProviders) {
  add_package("test-ep");
  add_model(model_meta("resnet", "1.0"), "resnet/resnet-1.0.model.json");
  add_model(model_meta("resnet", "1.1"), "resnet/resnet-1.1.model.json");
  publish();
  start();
  EXPECT_TRUE(broker_->catalog_models().empty());
  ASSERT_EQ(refresh().state, JobState::done);

  const auto models = broker_->catalog_models();
  ASSERT_EQ(models.size(), 2U);
  EXPECT_EQ(models[0].version(), "1.1") << "newest first";
  const ModelEntry& m = models[1];
  EXPECT_EQ(m.name(), "resnet");
  EXPECT_EQ(m.version(), "1.0");
  EXPECT_EQ(m.remote, "main");
  EXPECT_EQ(m.target_path, "resnet/resnet-1.0.model.json");
  EXPECT_EQ(m.length, catalog::to_json(m.meta).dump().size());
  EXPECT_EQ(m.refused, "");
  EXPECT_EQ(m.meta, model_meta("resnet", "1.0"));
  EXPECT_EQ(variant_ids(m), (std::vector<std::string>{"fp32", "int8"}));

  // The EP package is listed as before; neither the model nor its blobs are providers.
  EXPECT_EQ(provider_names(), std::vector<std::string>{"test-ep"});
  const auto p = broker_->providers().front();
  EXPECT_EQ(p.state, common::ProviderState::available);
  EXPECT_EQ(p.version, "1.0.0");
  EXPECT_EQ(p.ep_names, std::vector<std::string>{"TestEp"});
}

TEST_F(ModelsRefreshTest, AModelWhoseBlobIsSignedWithAnotherLengthIsRefused) {
  auto meta = model_meta("resnet", "1.0");
  add_model(meta, "resnet/resnet-1.0.model.json");
  // The fp32 weights' target is signed with other bytes (one more byte) than the card says.
  ASSERT_TRUE(repo_.add_target(catalog::model_blob_path("resnet", sha(kFp32)), kFp32 + "!"));
  publish();
  start();
  ASSERT_EQ(refresh().state, JobState::done);

  const auto models = broker_->catalog_models();
  ASSERT_EQ(models.size(), 1U);
  EXPECT_EQ(models[0].name(), "resnet");
  EXPECT_TRUE(
      models[0].refused.starts_with("length_mismatch: variant \"fp32\", file "
                                    "\"model.onnx\""))
      << models[0].refused;
  EXPECT_NE(models[0].refused.find("signed with length " + std::to_string(kFp32.size() + 1)),
            std::string::npos)
      << models[0].refused;
}

TEST_F(ModelsRefreshTest, AModelUnderADelegatedRoleOutsideItsNamespaceIsRefused) {
  auto key = catalog::crypto::PrivateKey::generate();
  ASSERT_TRUE(key);
  ASSERT_TRUE(repo_.add_delegation("vendor-a", {"vendor-a/*"}, std::move(*key)));
  // The files are genuinely signed (top-level targets, resnet/blobs/...), the card
  // is signed by vendor-a, whose paths do not include "resnet/".
  add_model(model_meta("resnet", "1.0"), "vendor-a/resnet-1.0.model.json", "vendor-a");
  add_package("test-ep");
  publish();
  start();
  ASSERT_EQ(refresh().state, JobState::done);

  const auto models = broker_->catalog_models();
  ASSERT_EQ(models.size(), 1U);
  EXPECT_EQ(models[0].target_path, "vendor-a/resnet-1.0.model.json");
  EXPECT_NE(models[0].refused.find("resnet"), std::string::npos) << models[0].refused;
  EXPECT_NE(models[0].refused.find("vendor-a/resnet-1.0.model.json"), std::string::npos)
      << models[0].refused;
  EXPECT_EQ(provider_names(), std::vector<std::string>{"test-ep"});

  // The genuine model, published later under its own namespace, is listed beside
  // the refused claim, and valid.
  add_model(model_meta("resnet", "1.0"), "resnet/resnet-1.0.model.json");
  publish();
  ASSERT_EQ(refresh().state, JobState::done);
  const auto both = broker_->catalog_models();
  ASSERT_EQ(both.size(), 2U);
  const auto valid = std::count_if(both.begin(), both.end(),
                                   [](const ModelEntry& e) { return e.refused.empty(); });
  EXPECT_EQ(valid, 1);
}

// A delegated role that fails (its new metadata's signature broken) withholds the
// files of every card: those cards are not refused for want of their files; the
// valid version listed before stays, the new one waits (the job fails, naming
// the role).
TEST_F(ModelsRefreshTest, AFailingRoleWithholdingTheFilesKeepsThePreviousModels) {
  repo_.pin_hashes = false;  // snapshot pins versions only: the signature is checked
  auto key = catalog::crypto::PrivateKey::generate();
  ASSERT_TRUE(key);
  ASSERT_TRUE(repo_.add_delegation("blobs", {"resnet/blobs/*"}, std::move(*key)));
  add_model(model_meta("resnet", "1.0"), "resnet/resnet-1.0.model.json", "targets", "blobs");
  publish();
  start();
  ASSERT_EQ(refresh().state, JobState::done);
  const auto before = broker_->catalog_models();
  ASSERT_EQ(before.size(), 1U);
  ASSERT_EQ(before[0].refused, "");

  add_model(model_meta("resnet", "1.1"), "resnet/resnet-1.1.model.json", "targets", "blobs");
  publish();
  const fs::path served = tmp_ / "repo/metadata" /
                          (std::to_string(repo_.delegated.at("blobs").version) + ".blobs.json");
  auto doc = catalog::parse_json(tests::support::read_file(served));
  ASSERT_TRUE(doc);
  std::string sig = (*doc)["signatures"][0]["sig"].get<std::string>();
  sig[0] = sig[0] == '0' ? '1' : '0';
  (*doc)["signatures"][0]["sig"] = sig;
  tests::support::write_file(served, doc->dump(1));

  const auto job = refresh();
  EXPECT_EQ(job.state, JobState::failed);
  ASSERT_TRUE(job.error);
  EXPECT_NE(job.error->message.find("delegated role blobs"), std::string::npos)
      << job.error->message;
  expect_same(broker_->catalog_models(), before);
}

TEST_F(ModelsRefreshTest, CatalogJsonKeepsTheModelsForTheNextStart) {
  add_package("test-ep");
  add_model(model_meta("resnet", "1.0"), "resnet/resnet-1.0.model.json");
  auto bad = model_meta("mobilenet", "2.0");
  add_model(bad, "mobilenet/mobilenet-2.0.model.json");
  ASSERT_TRUE(repo_.add_target(catalog::model_blob_path("mobilenet", sha(kInt8)), "other"));
  publish();
  start();
  ASSERT_EQ(refresh().state, JobState::done);
  const auto before = broker_->catalog_models();
  ASSERT_EQ(before.size(), 2U);
  EXPECT_NE(before[0].refused, "") << "mobilenet sorts first, refused";
  EXPECT_EQ(before[1].refused, "");
  const auto providers_before = provider_names();

  broker_.reset();
  start();  // no refresh: read from catalog.json
  expect_same(broker_->catalog_models(), before);
  EXPECT_EQ(provider_names(), providers_before);

  // A catalog.json written before models (no "models" key) still loads.
  broker_.reset();
  auto doc = catalog::parse_json(tests::support::read_file(catalog_json()));
  ASSERT_TRUE(doc);
  ASSERT_TRUE(doc->contains("models"));
  doc->erase("models");
  ASSERT_TRUE(catalog::atomic_write_file(catalog_json(), doc->dump(1)));
  start();
  EXPECT_TRUE(broker_->catalog_models().empty());
  EXPECT_EQ(provider_names(), providers_before);
}

TEST_F(ModelsRefreshTest, ACachedModelWhosePathNoLongerBindsItsNameIsRefused) {
  add_model(model_meta("resnet", "1.0"), "resnet/resnet-1.0.model.json");
  publish();
  start();
  ASSERT_EQ(refresh().state, JobState::done);
  broker_.reset();
  // catalog.json edited (or written by a daemon without the check): the entry
  // moves under another namespace and loses its refusal.
  auto doc = catalog::parse_json(tests::support::read_file(catalog_json()));
  ASSERT_TRUE(doc);
  (*doc)["models"][0]["target_path"] = "other/resnet-1.0.model.json";
  ASSERT_TRUE(catalog::atomic_write_file(catalog_json(), doc->dump(1)));
  start();
  const auto models = broker_->catalog_models();
  ASSERT_EQ(models.size(), 1U);
  EXPECT_NE(models[0].refused, "");
}

}  // namespace
}  // namespace epbrokerd::core
