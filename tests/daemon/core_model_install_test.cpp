// The core's model install job (issue 21, step 7a): Broker::ensure_model() picks
// a version and a variant, asks the committer (here a LocalCommitter) what the
// store lacks, downloads only those blobs as signed targets NAME/blobs/<sha256>,
// and commits; a blob shared by two variants is downloaded and stored once; a
// served blob whose bytes changed fails the job and changes nothing; a cancel
// stops a download.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "catalog/crypto/hash.hpp"
#include "catalog/model_metadata.hpp"
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

// What the test server saw, and a slow path: while `hold` is set, a blob's
// first chunk waits (up to 10 s) until `hold` is cleared.
struct Served {
  std::mutex mu;
  std::vector<std::string> blob_urls;
  std::atomic<bool> hold{false};
  std::atomic<bool> held{false};

  std::size_t blob_requests() {
    std::lock_guard lock(mu);
    return blob_urls.size();
  }
};

class CountingFetcher : public catalog::tuf::Fetcher {
 public:
  CountingFetcher(const fs::path& root, Served& served) : inner_(kUrl, root), served_(served) {}
  catalog::Result<void> fetch(const std::string& url, std::uint64_t max_bytes,
                              const catalog::tuf::ChunkSink& sink) override {
    return inner_.fetch(url, max_bytes, watched(url, sink));
  }
  catalog::Result<void> fetch_from(const std::string& url, std::uint64_t offset,
                                   std::uint64_t max_bytes, const catalog::tuf::StartSink& on_start,
                                   const catalog::tuf::ChunkSink& sink) override {
    return inner_.fetch_from(url, offset, max_bytes, on_start, watched(url, sink));
  }

 private:
  catalog::tuf::ChunkSink watched(const std::string& url, const catalog::tuf::ChunkSink& sink) {
    const bool blob = url.find("/blobs/") != std::string::npos;
    if (blob) {
      std::lock_guard lock(served_.mu);
      served_.blob_urls.push_back(url);
    }
    return [this, blob, &sink](std::span<const std::byte> chunk) -> catalog::Result<void> {
      if (blob && served_.hold) {
        served_.held = true;
        const auto deadline = std::chrono::steady_clock::now() + 10s;
        while (served_.hold && std::chrono::steady_clock::now() < deadline) {
          std::this_thread::sleep_for(2ms);
        }
      }
      return sink(chunk);
    };
  }

  catalog::tuf::DirFetcher inner_;
  Served& served_;
};

class ModelInstallTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto r = catalog::tuf::Repository::create(now());
    ASSERT_TRUE(r) << r.error().message;
    repo_ = std::move(*r);
    for (const auto* bytes : {&kFp32, &kInt8, &kLabels}) {
      auto added =
          repo_.add_target(catalog::model_blob_path("resnet", sha(*bytes)), *bytes, nullptr);
      ASSERT_TRUE(added) << added.error().message;
    }
    const auto meta = model_meta("resnet", "1.0");
    auto added = repo_.add_target("resnet/resnet-1.0.model.json", catalog::to_json(meta).dump(),
                                  catalog::to_json(meta));
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
      return std::make_unique<CountingFetcher>(tmp_ / "repo", served_);
    };
    o.authorizer = &authorizer_;
    auto b = Broker::create(std::move(o), nullptr);
    ASSERT_TRUE(b) << b.error().message;
    broker_ = std::move(*b);
    ASSERT_EQ(wait(broker_->refresh(root_).value()).state, JobState::done);
  }

  JobSnapshot wait(std::uint64_t id) {
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (std::chrono::steady_clock::now() < deadline) {
      if (const auto s = broker_->jobs().find(id)->snapshot(); is_final(s.state)) return s;
      std::this_thread::sleep_for(5ms);
    }
    ADD_FAILURE() << "job " << id << " did not end";
    return {};
  }

  JobSnapshot install(const std::string& variant) {
    ModelInstallOptions o;
    o.variant = variant;
    auto id = broker_->ensure_model(root_, "resnet", o);
    EXPECT_TRUE(id) << id.error().message;
    return id ? wait(*id) : JobSnapshot{};
  }

  fs::path variant_dir(const std::string& variant) const {
    return tmp_ / "state/store/_models/resnet/1.0" / variant;
  }
  std::size_t stored_blobs() const {
    std::error_code ec;
    std::size_t n = 0;
    for (auto it = fs::directory_iterator(tmp_ / "state/store/_blobs/sha256", ec);
         !ec && it != fs::directory_iterator(); it.increment(ec)) {
      ++n;
    }
    return n;
  }

  tests::support::TempDir tmp_;
  catalog::tuf::Repository repo_;
  Served served_;
  UidAuthorizer authorizer_;
  const RequestContext root_{0, ":1.1"};
  std::unique_ptr<Broker> broker_;
};

ino_t inode(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
  return st.st_ino;
}

TEST_F(ModelInstallTest, ASecondVariantDownloadsOnlyTheBlobItDoesNotShare) {
  start();
  const auto first = install("fp32");
  ASSERT_EQ(first.state, JobState::done) << (first.error ? first.error->message : "");
  EXPECT_EQ(first.kind, JobKind::model);
  EXPECT_EQ(first.target, "resnet/fp32");
  EXPECT_EQ(first.version, "1.0");
  EXPECT_EQ(first.bytes_total, kFp32.size() + kLabels.size());
  EXPECT_EQ(first.bytes_done, first.bytes_total);
  EXPECT_EQ(served_.blob_requests(), 2U);
  EXPECT_EQ(tests::support::read_file(variant_dir("fp32") / "model.onnx"), kFp32);

  const auto second = install("int8");
  ASSERT_EQ(second.state, JobState::done) << (second.error ? second.error->message : "");
  EXPECT_EQ(second.target, "resnet/int8");
  EXPECT_EQ(second.bytes_total, kInt8.size()) << "labels.txt is in the store already";
  EXPECT_EQ(served_.blob_requests(), 3U);
  EXPECT_EQ(stored_blobs(), 3U);
  EXPECT_EQ(inode(variant_dir("fp32") / "labels.txt"), inode(variant_dir("int8") / "labels.txt"));
  EXPECT_EQ(tests::support::read_file(variant_dir("int8") / "model.onnx"), kInt8);

  // Installed: a job that is done at once, with nothing downloaded.
  const auto again = install("int8");
  EXPECT_EQ(again.state, JobState::done);
  EXPECT_EQ(served_.blob_requests(), 3U);
}

TEST_F(ModelInstallTest, WithoutAVariantThePlanChoosesOneForThisMachine) {
  start();
  auto id = broker_->ensure_model(root_, "resnet", {});
  ASSERT_TRUE(id) << id.error().message;
  const auto s = wait(*id);
  EXPECT_EQ(s.state, JobState::done);
  EXPECT_EQ(s.target, "resnet/fp32") << "int8 is built for NPUs; this machine has none";
}

TEST_F(ModelInstallTest, UnknownNamesVersionsAndVariantsAreRefused) {
  start();
  auto unknown = broker_->ensure_model(root_, "nothere", {});
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, Errc::NotFound);
  ModelInstallOptions o;
  o.version = "2.0";
  auto version = broker_->ensure_model(root_, "resnet", o);
  ASSERT_FALSE(version);
  EXPECT_EQ(version.error().code, Errc::NotFound);
  o = {};
  o.variant = "fp16";
  auto variant = broker_->ensure_model(root_, "resnet", o);
  ASSERT_FALSE(variant);
  EXPECT_EQ(variant.error().code, Errc::NotFound);
  auto bad = broker_->ensure_model(root_, "../resnet", {});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, Errc::InvalidArgument);
  auto denied = broker_->ensure_model(RequestContext{1000, ":1.2"}, "resnet", {});
  ASSERT_FALSE(denied);
  EXPECT_EQ(denied.error().code, Errc::NotAuthorized);
}

TEST_F(ModelInstallTest, AServedBlobWithChangedBytesFailsAndChangesNothing) {
  // The server's copy of the fp32 weights changes (same length, other bytes).
  bool changed = false;
  for (const auto& f : fs::directory_iterator(tmp_ / "repo/targets/resnet/blobs")) {
    if (f.path().filename().string().ends_with(sha(kFp32))) {
      tests::support::write_file(f.path(), std::string(kFp32.size(), 'x'));
      changed = true;
    }
  }
  ASSERT_TRUE(changed);
  start();
  const auto s = install("fp32");
  ASSERT_EQ(s.state, JobState::failed);
  ASSERT_TRUE(s.error);
  EXPECT_EQ(s.error->code, Errc::VerificationFailed) << s.error->message;
  EXPECT_FALSE(fs::exists(variant_dir("fp32")));
  EXPECT_EQ(stored_blobs(), 0U);
}

TEST_F(ModelInstallTest, ARefusedModelIsNotInstalled) {
  // "broken": its card says fp32's weights are one byte longer than signed.
  auto meta = model_meta("broken", "1.0");
  for (auto& f : meta.variants[0].files) {
    if (f.path == "model.onnx") f.size += 1;
  }
  for (const auto* bytes : {&kFp32, &kInt8, &kLabels}) {
    ASSERT_TRUE(repo_.add_target(catalog::model_blob_path("broken", sha(*bytes)), *bytes, nullptr));
  }
  ASSERT_TRUE(repo_.add_target("broken/broken-1.0.model.json", catalog::to_json(meta).dump(),
                               catalog::to_json(meta)));
  ASSERT_TRUE(repo_.publish(catalog::tuf::directory_writer(tmp_ / "repo"), now()));
  start();
  ModelInstallOptions o;
  o.variant = "int8";  // even a variant whose own files are fine: the card is refused
  auto refused = broker_->ensure_model(root_, "broken", o);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Errc::VerificationFailed);
  EXPECT_NE(refused.error().message.find("length_mismatch"), std::string::npos)
      << refused.error().message;
  EXPECT_EQ(served_.blob_requests(), 0U);
}

TEST_F(ModelInstallTest, ACancelStopsTheDownload) {
  start();
  served_.hold = true;
  ModelInstallOptions o;
  o.variant = "fp32";
  auto id = broker_->ensure_model(root_, "resnet", o);
  ASSERT_TRUE(id) << id.error().message;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!served_.held && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(2ms);
  }
  ASSERT_TRUE(served_.held);
  EXPECT_EQ(broker_->jobs().find(*id)->snapshot().state, JobState::downloading);
  ASSERT_TRUE(broker_->cancel_job(root_, *id));
  served_.hold = false;
  const auto s = wait(*id);
  EXPECT_EQ(s.state, JobState::cancelled);
  EXPECT_FALSE(fs::exists(variant_dir("fp32")));
  EXPECT_EQ(stored_blobs(), 0U);
}

}  // namespace
}  // namespace epbrokerd::core
