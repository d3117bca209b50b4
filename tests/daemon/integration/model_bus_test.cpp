// Broker1.ListModels and EnsureModel on the private bus: a model the test catalog
// publishes (two variants sharing a file) is listed with its variants, EnsureModel
// installs a variant as a Job1 of kind "model", and bad requests get the
// documented errors.
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
#include "daemon/log/message_ids.hpp"
#include "tests/daemon/integration/fixture.hpp"

namespace tests::daemon {
namespace {

namespace fs = std::filesystem;
namespace key = common::key;

const std::string kModel = "tiny-net";
const std::string kFp32 = "fp32 weights of tiny-net";
const std::string kInt8 = "int8 weights";
const std::string kLabels = "cat\ndog\n";

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
  for (const auto& [id, weights] : {std::pair{"fp32", kFp32}, std::pair{"int8", kInt8}}) {
    nlohmann::json files = nlohmann::json::array();
    for (const auto& [path, bytes] : {std::pair{"labels.txt", kLabels}, {"model.onnx", weights}}) {
      files.push_back(
          {{"path", path}, {"size", bytes.size()}, {"sha256", catalog::crypto::sha256_hex(bytes)}});
    }
    nlohmann::json v = {
        {"id", id}, {"ort_min", "1.20"}, {"opset", 17}, {"main", "model.onnx"}, {"files", files}};
    if (std::string(id) == "int8") {
      v["devices"] = {"npu"};
      v["eps"] = {"TestNpuExecutionProvider"};
    }
    c["epbroker"]["variants"].push_back(v);
  }
  auto m = catalog::parse_model_metadata(c);
  EXPECT_TRUE(m.has_value()) << m.error().message;
  return m.value_or(catalog::ModelMetadata{});
}

Dicts variants_of(const Dict& row) {
  const auto it = row.find(key::variants);
  if (it == row.end()) {
    ADD_FAILURE() << "no variants";
    return {};
  }
  return it->second.get<Dicts>();
}

// Changes the first byte of `file` in place (as root: write permission added,
// then taken away again), as damage on disk would: the same inode, other bytes.
void flip_first_byte(const fs::path& file) {
  fs::permissions(file, fs::perms::owner_write, fs::perm_options::add);
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ 1);
    f.seekp(0);
    f.write(&c, 1);
  }
  fs::permissions(file, fs::perms::owner_write, fs::perm_options::remove);
}

class ModelBusTest : public CatalogTest {
 protected:
  void SetUp() override {
    CatalogTest::SetUp();
    if (IsSkipped()) return;
    catalog_ = std::make_unique<TestCatalog>();
    catalog_->publish_model(model_meta(), {kFp32, kInt8, kLabels});
    start();
    refresh();
  }

  // EnsureModel of variant `variant`, waited for; its final state.
  std::string ensure(const std::string& variant) {
    const std::string job = broker_->EnsureModel(kModel, {{key::variant, sdbus::Variant(variant)}});
    const std::string state = wait_job(*conn_, job);
    EXPECT_EQ(state, "done") << job_property(*conn_, job, "ErrorMessage").get<std::string>();
    return state;
  }

  fs::path blob(const std::string& bytes) const {
    return bus_->store_dir() / "_blobs" / "sha256" / catalog::crypto::sha256_hex(bytes);
  }
  fs::path variant_dir(const std::string& variant) const {
    return bus_->store_dir() / "_models" / kModel / "1.0" / variant;
  }

  // The lines of the daemon's log holding `what`.
  std::vector<std::string> log_lines(const std::string& what) const {
    std::vector<std::string> out;
    std::istringstream in(bus_->log());
    for (std::string line; std::getline(in, line);) {
      if (line.find(what) != std::string::npos) out.push_back(line);
    }
    return out;
  }
};

TEST_F(ModelBusTest, ListModelsListsTheModelAndItsVariants) {
  const Dicts models = broker_->ListModels({});
  ASSERT_EQ(models.size(), 1U);
  const Dict& m = models[0];
  EXPECT_EQ(str(m, key::name), kModel);
  EXPECT_EQ(str(m, key::version), "1.0");
  EXPECT_EQ(str(m, key::publisher), "Test");
  EXPECT_EQ(str(m, key::license), "Apache-2.0");
  EXPECT_EQ(str(m, key::license_url), "https://example.com/license");
  EXPECT_EQ(str(m, key::task), "image-classification");
  EXPECT_EQ(str(m, key::state), "available");
  EXPECT_EQ(str(m, key::reason), "");
  EXPECT_EQ(str(m, key::remote), "test");
  const Dicts variants = variants_of(m);
  ASSERT_EQ(variants.size(), 2U);
  EXPECT_EQ(str(variants[0], key::id), "fp32");
  EXPECT_TRUE(strs(variants[0], key::devices).empty());
  EXPECT_TRUE(strs(variants[0], key::eps).empty());
  EXPECT_EQ(str(variants[0], key::ort_min), "1.20");
  EXPECT_EQ(variants[0].at(key::opset).get<std::uint32_t>(), 17U);
  EXPECT_EQ(u64(variants[0], key::size), kLabels.size() + kFp32.size());
  EXPECT_FALSE(variants[0].at(key::installed).get<bool>());
  EXPECT_EQ(str(variants[1], key::id), "int8");
  EXPECT_EQ(strs(variants[1], key::devices), std::vector<std::string>{"npu"});
  EXPECT_EQ(strs(variants[1], key::eps), std::vector<std::string>{"TestNpuExecutionProvider"});
  EXPECT_EQ(u64(variants[1], key::size), kLabels.size() + kInt8.size());

  // The options are checked.
  EXPECT_EQ(broker_
                ->ListModels({{key::policy, sdbus::Variant(std::string("prefer_cpu"))},
                              {key::ort_version, sdbus::Variant(std::string("1.22.0"))}})
                .size(),
            1U);
  const std::string invalid = "org.epbroker.Error.InvalidArgument";
  EXPECT_EQ(error_name_of([&] {
              broker_->ListModels({{key::policy, sdbus::Variant(std::string("fastest"))}});
            }),
            invalid);
  EXPECT_EQ(error_name_of([&] {
              broker_->ListModels({{key::ort_version, sdbus::Variant(std::string("one"))}});
            }),
            invalid);
  EXPECT_EQ(error_name_of([&] {
              broker_->ListModels({{"colour", sdbus::Variant(true)}});
            }),
            invalid);
}

TEST_F(ModelBusTest, EnsureModelInstallsTheVariantAsAJob) {
  const std::string job =
      broker_->EnsureModel(kModel, {{key::variant, sdbus::Variant(std::string("fp32"))}});
  ASSERT_EQ(wait_job(*conn_, job), "done")
      << job_property(*conn_, job, "ErrorMessage").get<std::string>();
  EXPECT_EQ(job_property(*conn_, job, "Kind").get<std::string>(), "model");
  EXPECT_EQ(job_property(*conn_, job, "Target").get<std::string>(), kModel + "/fp32");

  const fs::path dir = bus_->store_dir() / "_models" / kModel / "1.0" / "fp32";
  EXPECT_TRUE(fs::is_regular_file(dir / "model.onnx")) << dir;
  EXPECT_TRUE(fs::is_regular_file(dir / "labels.txt")) << dir;
  if (fs::is_regular_file(dir / "model.onnx")) {
    EXPECT_EQ(fs::file_size(dir / "model.onnx"), kFp32.size());
  }

  const Dicts variants = variants_of(broker_->ListModels({}).at(0));
  ASSERT_EQ(variants.size(), 2U);
  EXPECT_TRUE(variants[0].at(key::installed).get<bool>());
  EXPECT_FALSE(variants[1].at(key::installed).get<bool>());

  // Again: a job that is done at once.
  const std::string again =
      broker_->EnsureModel(kModel, {{key::variant, sdbus::Variant(std::string("fp32"))}});
  EXPECT_EQ(wait_job(*conn_, again), "done");
}

// The history entry of a model install (action install, to "VERSION/VARIANT"), or
// "" when there is none.
std::string install_entry(BrokerProxy& broker, const std::string& to) {
  for (const auto& e : broker.History(kModel)) {
    if (str(e, key::action) == "install" && str(e, key::to) == to) {
      return str(e, key::from) + "|" + str(e, key::result) + "|" + str(e, key::reason);
    }
  }
  return "";
}

TEST_F(ModelBusTest, ModelInstallsAreInTheHistory) {
  // An install: from "" to "1.0/fp32", ok.
  const std::string job =
      broker_->EnsureModel(kModel, {{key::variant, sdbus::Variant(std::string("fp32"))}});
  ASSERT_EQ(wait_job(*conn_, job), "done")
      << job_property(*conn_, job, "ErrorMessage").get<std::string>();
  EXPECT_EQ(install_entry(*broker_, "1.0/fp32"), "|ok|model variant installed from remote test");
  // An install that fails (the server sends other bytes for the int8 weights):
  // recorded with the error's name.
  std::size_t served = 0;
  for (const auto& e : fs::recursive_directory_iterator(catalog_->repo_dir() / "targets")) {
    if (e.is_regular_file() && e.path().filename().string().find(
                                   catalog::crypto::sha256_hex(kInt8)) != std::string::npos) {
      std::string evil = kInt8;
      evil[0] ^= 1;
      fs::permissions(e.path(), fs::perms::owner_write, fs::perm_options::add);
      std::ofstream(e.path(), std::ios::binary | std::ios::trunc) << evil;
      ++served;
    }
  }
  ASSERT_GT(served, 0U);
  const std::string failing =
      broker_->EnsureModel(kModel, {{key::variant, sdbus::Variant(std::string("int8"))}});
  ASSERT_EQ(wait_job(*conn_, failing), "failed");
  const std::string entry = install_entry(*broker_, "1.0/int8");
  EXPECT_TRUE(entry.starts_with("|VerificationFailed|")) << entry;
  EXPECT_FALSE(fs::exists(bus_->store_dir() / "_models" / kModel / "1.0" / "int8"));
}

TEST_F(ModelBusTest, VerifyCoversModelVariants) {
  ASSERT_EQ(ensure("fp32"), "done");
  ASSERT_EQ(ensure("int8"), "done");
  Dicts found = broker_->Verify();
  ASSERT_EQ(found.size(), 2U);  // no package installed: the two variants
  for (std::size_t i = 0; i < 2; ++i) {
    const std::string variant = i == 0 ? "fp32" : "int8";
    EXPECT_EQ(str(found[i], key::name), kModel);
    EXPECT_EQ(str(found[i], key::version), "1.0/" + variant);
    EXPECT_EQ(str(found[i], key::kind), "model");
    EXPECT_EQ(str(found[i], key::variant), variant);
    EXPECT_TRUE(found[i].at(key::ok).get<bool>());
    EXPECT_EQ(str(found[i], key::problem), "");
  }
  EXPECT_TRUE(log_lines("is damaged").empty());

  // The file both variants share, damaged in place: both are damaged, and
  // each says so in the journal with the model MESSAGE_ID.
  flip_first_byte(blob(kLabels));
  found = broker_->Verify();
  ASSERT_EQ(found.size(), 2U);
  const std::string bad = "labels.txt: blob " + catalog::crypto::sha256_hex(kLabels) + ": sha256 ";
  for (std::size_t i = 0; i < 2; ++i) {
    const std::string variant = i == 0 ? "fp32" : "int8";
    EXPECT_FALSE(found[i].at(key::ok).get<bool>()) << variant;
    EXPECT_TRUE(str(found[i], key::problem).starts_with(bad)) << str(found[i], key::problem);
    const auto lines = log_lines("verify: model tiny-net 1.0/" + variant + " is damaged: " + bad);
    ASSERT_EQ(lines.size(), 1U) << bus_->log();
    for (const std::string& field :
         {"MESSAGE_ID=" + std::string(epbrokerd::log::kMessageModelDamaged),
          std::string("EPBROKER_PACKAGE=tiny-net"), "EPBROKER_VERSION=1.0/" + variant,
          std::string("EPBROKER_JOB_KIND=verify")}) {
      EXPECT_NE((lines[0] + " ").find(" " + field + " "), std::string::npos)
          << field << " missing in: " << lines[0];
    }
  }
}

// The history entries of kind install for `to`, as "from|result|reason".
std::vector<std::string> install_entries(BrokerProxy& broker, const std::string& to) {
  std::vector<std::string> out;
  for (const auto& e : broker.History(kModel)) {
    if (str(e, key::action) == "install" && str(e, key::to) == to) {
      out.push_back(str(e, key::from) + "|" + str(e, key::result) + "|" + str(e, key::reason));
    }
  }
  return out;
}

TEST_F(ModelBusTest, EnsureModelRepairsADamagedSharedBlob) {
  ASSERT_EQ(ensure("fp32"), "done");
  ASSERT_EQ(ensure("int8"), "done");
  // Installed and intact: EnsureModel checks it, changes and records nothing.
  EXPECT_EQ(fs::hard_link_count(blob(kLabels)), 3U);  // the blob and both variants
  ASSERT_EQ(ensure("fp32"), "done");
  EXPECT_EQ(install_entries(*broker_, "1.0/fp32").size(), 1U);

  // The labels both variants share, damaged in place; an app holds the int8
  // variant (a lease) and has its labels open.
  flip_first_byte(blob(kLabels));
  const auto [session, granted] = broker_->RequestSession(
      {{key::models, sdbus::Variant(std::map<std::string, std::string>{{kModel, "int8"}})}});
  std::ifstream held(variant_dir("int8") / "labels.txt", std::ios::binary);
  ASSERT_TRUE(held.is_open());
  Dicts found = broker_->Verify();
  ASSERT_EQ(found.size(), 2U);
  EXPECT_FALSE(found[0].at(key::ok).get<bool>());
  EXPECT_FALSE(found[1].at(key::ok).get<bool>());

  // EnsureModel of fp32 finds it damaged and repairs it: the blob is downloaded
  // again and replaces the damaged one in both variants (int8 leased or not).
  const std::string job =
      broker_->EnsureModel(kModel, {{key::variant, sdbus::Variant(std::string("fp32"))}});
  ASSERT_EQ(wait_job(*conn_, job), "done")
      << job_property(*conn_, job, "ErrorMessage").get<std::string>();
  EXPECT_EQ(job_property(*conn_, job, "BytesTotal").get<std::uint64_t>(), kLabels.size());
  found = broker_->Verify();
  ASSERT_EQ(found.size(), 2U);
  for (const auto& row : found) {
    EXPECT_TRUE(row.at(key::ok).get<bool>())
        << str(row, key::version) << ": " << str(row, key::problem);
  }
  for (const char* variant : {"fp32", "int8"}) {
    EXPECT_TRUE(fs::equivalent(variant_dir(variant) / "labels.txt", blob(kLabels))) << variant;
  }
  EXPECT_EQ(fs::hard_link_count(blob(kLabels)), 3U);
  // The file the app opened before the repair was never written: its damaged bytes.
  std::string before_repair(kLabels.size(), '\0');
  held.read(before_repair.data(), static_cast<std::streamsize>(before_repair.size()));
  std::string damaged = kLabels;
  damaged[0] = static_cast<char>(damaged[0] ^ 1);
  EXPECT_EQ(before_repair, damaged);

  // The history: the repair, from and to the variant, with what was wrong.
  const auto entries = install_entries(*broker_, "1.0/fp32");
  ASSERT_EQ(entries.size(), 2U);
  const std::string repaired = "1.0/fp32|ok|repaired: labels.txt: blob " +
                               catalog::crypto::sha256_hex(kLabels) + ": sha256 ";
  EXPECT_TRUE(entries[1].starts_with(repaired)) << entries[1];
  EXPECT_EQ(log_lines("model tiny-net 1.0 (fp32) is damaged, repairing").size(), 1U);
  auto proxy = sdbus::createProxy(*conn_, kBrokerName, session);
  proxy->callMethod("Release").onInterface(kSessionInterface);
}

TEST_F(ModelBusTest, EnsureModelErrors) {
  EXPECT_EQ(error_name_of([&] { broker_->EnsureModel("no-such-model", {}); }),
            "org.epbroker.Error.NotFound");
  EXPECT_EQ(error_name_of([&] {
              broker_->EnsureModel(kModel, {{key::variant, sdbus::Variant(std::string("fp64"))}});
            }),
            "org.epbroker.Error.NotFound");
  const std::string invalid = "org.epbroker.Error.InvalidArgument";
  EXPECT_EQ(error_name_of([&] {
              broker_->EnsureModel(kModel, {{"colour", sdbus::Variant(true)}});
            }),
            invalid);
  EXPECT_EQ(error_name_of([&] {
              broker_->EnsureModel(kModel, {{key::variant, sdbus::Variant(std::uint32_t{1})}});
            }),
            invalid);
  EXPECT_EQ(error_name_of([&] {
              broker_->EnsureModel(kModel, {{key::policy, sdbus::Variant(std::string("fastest"))}});
            }),
            invalid);
  EXPECT_EQ(error_name_of([&] { broker_->EnsureModel("Bad Name", {}); }), invalid);
}

}  // namespace
}  // namespace tests::daemon
