// Models from the catalog with a real model: Google's Magika (the demo's model,
// from the pinned PyPI wheel; scripts/demo/fetch-model.sh), published as a signed
// model with two variants that share both of their files
// (scripts/demo/magika.model.json: fp32 for any device, fp32-cpu for the CPU EP),
// served on loopback to the built epbrokerd on a private bus. Checks what a user
// sees: `epbroker-run --model magika` on an empty store installs and runs it; both
// variants installed cost one copy of each file; a tampered file is refused and
// the store is left as it was; a leased variant is not removed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "catalog/atomic_file.hpp"
#include "catalog/crypto/hash.hpp"
#include "catalog/model_metadata.hpp"
#include "catalog/tuf/repository.hpp"
#include "epbroker/client.hpp"
#include "tests/daemon/integration/private_bus.hpp"
#include "tests/support/http_server.hpp"
#include "tests/support/temp_dir.hpp"

#if !defined(EPBROKER_MAGIKA_DIR) || !defined(EPBROKER_SOURCE_ROOT) || !defined(EPBROKER_RUN_PATH)
#error "EPBROKER_MAGIKA_DIR, EPBROKER_SOURCE_ROOT and EPBROKER_RUN_PATH come from CMake"
#endif

namespace tests::client_ort {
namespace {

using ::testing::HasSubstr;
using tests::daemon::CommandResult;
using tests::daemon::run_command;
namespace fs = std::filesystem;

const fs::path kMagika = EPBROKER_MAGIKA_DIR;
const std::vector<std::string> kFiles = {"config.min.json", "model.onnx"};

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + p.string());
  return {std::istreambuf_iterator<char>(in), {}};
}

template <typename T>
T ok_or_throw(catalog::Result<T> r, const std::string& what) {
  if (!r) throw std::runtime_error(what + ": " + r.error().message);
  if constexpr (!std::is_void_v<T>) return std::move(*r);
}

// The card of scripts/demo/magika.model.json with both variants' files (the
// demo model's config.min.json and model.onnx) sized and hashed, as
// `epbroker-publish pack-model` writes it.
catalog::ModelMetadata magika_card() {
  auto card = nlohmann::json::parse(
      read(fs::path(EPBROKER_SOURCE_ROOT) / "scripts/demo/magika.model.json"));
  for (auto& v : card["epbroker"]["variants"]) {
    v["files"] = nlohmann::json::array();
    for (const auto& f : kFiles) {
      const std::string bytes = read(kMagika / f);
      v["files"].push_back(
          {{"path", f}, {"size", bytes.size()}, {"sha256", catalog::crypto::sha256_hex(bytes)}});
    }
  }
  return ok_or_throw(catalog::parse_model_metadata(card), "magika.model.json");
}

// Magika signed and served: each distinct file once as magika/blobs/<sha256>,
// the card as magika/magika-1.0.3.model.json.
class MagikaCatalog {
 public:
  MagikaCatalog() : card_(magika_card()) {
    const auto now = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
    auto repo = ok_or_throw(catalog::tuf::Repository::create(now), "create repository");
    for (const auto& f : kFiles) {
      const std::string bytes = read(kMagika / f);
      ok_or_throw(
          repo.add_target(catalog::model_blob_path("magika", catalog::crypto::sha256_hex(bytes)),
                          bytes, nullptr),
          "add " + f);
    }
    const std::string card_path = "magika/magika-" + card_.version.text + ".model.json";
    ok_or_throw(repo.add_target(card_path, catalog::to_json(card_).dump(), catalog::to_json(card_)),
                "add the card");
    ok_or_throw(repo.publish(catalog::tuf::directory_writer(tmp_ / "repo"), now), "publish");
    server_ = std::make_unique<support::HttpServer>(tmp_ / "repo");
  }

  void add_to(tests::daemon::PrivateBus& bus) const {
    bus.add_remote("test", server_->url("metadata/"), server_->url("targets/"),
                   tmp_ / "repo/metadata/1.root.json");
  }

  // The served file of the blob holding `file` (consistent snapshots: <sha256>.<name>).
  fs::path served_blob(const std::string& file) const {
    const std::string sha = catalog::crypto::sha256_hex(read(kMagika / file));
    for (const auto& e : fs::directory_iterator(tmp_ / "repo/targets/magika/blobs")) {
      if (e.path().filename().string().ends_with("." + sha)) return e.path();
    }
    throw std::runtime_error("no served blob for " + file);
  }

  const catalog::ModelMetadata& card() const { return card_; }

 private:
  catalog::ModelMetadata card_;
  support::TempDir tmp_;
  std::unique_ptr<support::HttpServer> server_;
};

// Every regular file under `dir` (recursively), relative paths; empty if absent.
std::set<std::string> files_under(const fs::path& dir) {
  std::set<std::string> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) out.insert(fs::relative(e.path(), dir).string());
  }
  return out;
}

// Bytes of the model files under `dir` (the store's markers left out): each inode
// once (physical), and each path (logical, as if every link were a copy).
std::pair<std::uint64_t, std::uint64_t> usage(const fs::path& dir) {
  std::set<std::pair<dev_t, ino_t>> seen;
  std::uint64_t physical = 0, logical = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    struct stat st {};
    // Only the variants' files: not the store's marker of each variant.
    if (e.path().filename() == ".epbroker-model.json") continue;
    if (lstat(e.path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    logical += static_cast<std::uint64_t>(st.st_size);
    if (seen.insert({st.st_dev, st.st_ino}).second)
      physical += static_cast<std::uint64_t>(st.st_size);
  }
  return {physical, logical};
}

// ModelOptions for one variant.
epbroker::ModelOptions variant(const std::string& id) {
  epbroker::ModelOptions o;
  o.variant = id;
  return o;
}

std::string describe(const CommandResult& r) {
  return "exit " + std::to_string(r.exit_code) + "\n--- stdout\n" + r.out + "\n--- stderr\n" +
         r.err;
}

class ModelRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "only root may install (no polkit on the test bus)";
    ASSERT_TRUE(fs::is_regular_file(kMagika / "model.onnx"))
        << kMagika
        << " lacks the demo model: run scripts/bootstrap.sh (scripts/demo/fetch-model.sh)";
    catalog_ = std::make_unique<MagikaCatalog>();
    bus_ = std::make_unique<tests::daemon::PrivateBus>();
    catalog_->add_to(*bus_);
    client_ = std::make_unique<epbroker::Client>(epbroker::ClientOptions{bus_->address()});
    client_->refresh();
  }
  void TearDown() override {
    if (HasFailure() && bus_) std::cerr << "---- bus.log ----\n" << bus_->log() << "----\n";
    client_.reset();
    bus_.reset();
    catalog_.reset();
  }

  CommandResult epbroker_run(std::vector<std::string> args) {
    args.insert(args.begin(), EPBROKER_RUN_PATH);
    args.insert(args.end(), {"--bus-address", bus_->address()});
    return run_command(args, std::chrono::seconds(120));
  }
  fs::path models_dir() const { return bus_->store_dir() / "_models/magika/1.0.3"; }
  fs::path blobs_dir() const { return bus_->store_dir() / "_blobs/sha256"; }

  std::unique_ptr<MagikaCatalog> catalog_;
  std::unique_ptr<tests::daemon::PrivateBus> bus_;
  std::unique_ptr<epbroker::Client> client_;
};

TEST_F(ModelRunTest, RunByNameOnAnEmptyStoreInstallsLeasesAndRunsIt) {
  ASSERT_TRUE(files_under(models_dir()).empty());
  const auto r = epbroker_run({"--model", "magika", "--check", "--iterations", "2", "--json"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_THAT(r.err, HasSubstr("installing magika/"));  // progress on stderr
  const auto j = nlohmann::json::parse(r.out);
  const auto& c = j.at("catalog_model");
  EXPECT_EQ(c.at("name"), "magika");
  EXPECT_EQ(c.at("version"), "1.0.3");
  // The default policy targets the CPU: fp32-cpu lists the CPU and its EP.
  EXPECT_EQ(c.at("variant"), "fp32-cpu");
  EXPECT_THAT(c.at("session").get<std::string>(), HasSubstr("/session/"));
  const fs::path main = j.at("model").get<std::string>();
  EXPECT_EQ(main, models_dir() / "fp32-cpu/model.onnx");
  EXPECT_EQ(read(main), read(kMagika / "model.onnx"));
  EXPECT_EQ(j.at("outputs").at(0).at("name"), "target_label");
  EXPECT_EQ(j.at("outputs").at(0).at("shape"), nlohmann::json::array({1, 214}));
  EXPECT_TRUE(j.at("check").at("within_tolerance").get<bool>()) << j.at("check").dump();

  // A second run finds it installed: nothing downloaded, the same file.
  const auto again =
      epbroker_run({"--model", "magika", "--iterations", "1", "--json", "--no-install"});
  ASSERT_EQ(again.exit_code, 0) << describe(again);
  EXPECT_THAT(again.err, ::testing::Not(HasSubstr("installing magika/")));
  EXPECT_EQ(nlohmann::json::parse(again.out).at("model"), main.string());
}

TEST_F(ModelRunTest, TwoVariantsSharingTheirFilesCostOneCopy) {
  auto fp32 = client_->ensure_model("magika", variant("fp32"));
  auto cpu = client_->ensure_model("magika", variant("fp32-cpu"));
  EXPECT_EQ(fp32.variant(), "fp32");
  EXPECT_EQ(cpu.variant(), "fp32-cpu");
  for (const auto& f : kFiles) {
    struct stat a {
    }, b{};
    ASSERT_EQ(stat((models_dir() / "fp32" / f).c_str(), &a), 0) << f;
    ASSERT_EQ(stat((models_dir() / "fp32-cpu" / f).c_str(), &b), 0) << f;
    EXPECT_EQ(a.st_ino, b.st_ino) << f << ": one inode in both variants";
    EXPECT_EQ(read(models_dir() / "fp32" / f), read(kMagika / f));
  }
  // The store holds each content once: two blobs, not four.
  EXPECT_EQ(files_under(blobs_dir()).size(), 2U);
  const auto [physical, logical] = usage(bus_->store_dir() / "_models");
  const std::uint64_t one_copy =
      fs::file_size(kMagika / "model.onnx") + fs::file_size(kMagika / "config.min.json");
  EXPECT_EQ(logical, 2 * one_copy);
  EXPECT_EQ(physical, one_copy);
  std::cout << "[ figures ] magika, 2 variants sharing 2 files: " << logical << " bytes as copies, "
            << physical << " bytes stored\n";

  // Leased: not removed, the files stay.
  try {
    client_->remove_model("magika", "", "fp32");
    ADD_FAILURE() << "a leased variant was removed";
  } catch (const epbroker::Error& e) {
    EXPECT_EQ(e.code(), epbroker::Errc::busy) << e.what();
  }
  EXPECT_TRUE(fs::exists(models_dir() / "fp32/model.onnx"));
  // Released: removed, and the blobs stay for the other variant.
  fp32.release();
  const auto removed = client_->remove_model("magika", "", "fp32");
  ASSERT_EQ(removed.size(), 1U);
  EXPECT_EQ(removed[0].variant, "fp32");
  EXPECT_FALSE(fs::exists(models_dir() / "fp32"));
  EXPECT_EQ(read(cpu.main()), read(kMagika / "model.onnx"));
  EXPECT_EQ(files_under(blobs_dir()).size(), 2U);
}

TEST_F(ModelRunTest, ATamperedFileIsRefusedAndTheStoreIsLeftAsItWas) {
  const fs::path served = catalog_->served_blob("model.onnx");
  std::string bytes = read(served);
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 1);
  std::ofstream(served, std::ios::binary | std::ios::trunc) << bytes;
  const auto before = files_under(bus_->store_dir());

  const auto r = epbroker_run({"--model", "magika", "--iterations", "1"});
  EXPECT_EQ(r.exit_code, 3) << describe(r);
  EXPECT_THAT(r.err, HasSubstr("VerificationFailed")) << describe(r);
  EXPECT_THAT(r.err, HasSubstr("nothing was installed")) << describe(r);
  EXPECT_EQ(files_under(bus_->store_dir()), before);
  EXPECT_TRUE(files_under(models_dir()).empty());
  EXPECT_TRUE(files_under(blobs_dir()).empty());
}

TEST_F(ModelRunTest, AnUnknownModelExitsThreeWithAHint) {
  const auto r = epbroker_run({"--model", "no-such-model"});
  EXPECT_EQ(r.exit_code, 3) << describe(r);
  EXPECT_THAT(r.err, HasSubstr("NotFound"));
  EXPECT_THAT(r.err, HasSubstr("epbrokerctl models"));
}

TEST(ModelRunCliTest, ModelUsageErrorsExitTwo) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"m.onnx", "--model", "magika"}, "exclusive"},
      {{"m.onnx", "--variant", "fp32"}, "--variant needs --model"},
      {{"--model", "magika", "--no-broker"}, "needs the broker"},
      {{"--model", "magika", "--library", "x=/y.so"}, "needs the broker"},
  };
  for (const auto& [args, says] : cases) {
    std::vector<std::string> argv = args;
    argv.insert(argv.begin(), EPBROKER_RUN_PATH);
    const auto r = run_command(argv);
    EXPECT_EQ(r.exit_code, 2) << describe(r);
    EXPECT_THAT(r.err, HasSubstr(says)) << describe(r);
  }
}

}  // namespace
}  // namespace tests::client_ort
