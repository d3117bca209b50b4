// The C API's models against a live epbrokerd on a private bus, with a model the test
// catalog publishes (tiny-net 1.0: variant fp32 for any device, int8 for NPUs; both
// with labels.txt): epbroker_models (the variants and the plan),
// epbroker_ensure_model's lease (its main file hashes to the card's sha256) with
// progress and its options, epbroker_remove_model refused (Busy) while leased and
// done after release, and a cancelled install.
#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "catalog/crypto/hash.hpp"
#include "catalog/model_metadata.hpp"
#include "epbroker/epbroker.h"
#include "tests/client/c_api_fixture.hpp"

namespace tests::client {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace capi;

using ModelsPtr = std::unique_ptr<epbroker_model_list, Freer<epbroker_model_list_free>>;
using ModelOptionsPtr = std::unique_ptr<epbroker_model_options, Freer<epbroker_model_options_free>>;
using LeasePtr = std::unique_ptr<epbroker_model_lease, Freer<epbroker_model_lease_free>>;
using RemovedPtr =
    std::unique_ptr<epbroker_removed_model_list, Freer<epbroker_removed_model_list_free>>;
using CancelPtr = std::unique_ptr<epbroker_cancel, Freer<epbroker_cancel_free>>;

const std::string kModel = "tiny-net";
const std::string kLabels = "cat\ndog\n";
const std::string kInt8 = "int8 weights";

// fp32's main file: 1 MiB, so that the download reports some progress.
const std::string& fp32_weights() {
  static const std::string bytes = [] {
    std::string b(1 << 20, '\0');
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<char>((i * 131 + i / 7) & 0xff);
    return b;
  }();
  return bytes;
}

std::string sha(const std::string& bytes) { return catalog::crypto::sha256_hex(bytes); }

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// tiny-net 1.0's card: fp32 (any device) and int8 (NPUs, TestNpuExecutionProvider),
// each with model.onnx (its main file) and labels.txt.
catalog::ModelMetadata model_meta() {
  json c = {{"epbroker",
             {{"schema", 2},
              {"kind", "model"},
              {"name", kModel},
              {"version", "1.0"},
              {"publisher", "Test"},
              {"license", "Apache-2.0"},
              {"license_url", "https://example.com/license"},
              {"description", "a test model"},
              {"task", "image-classification"},
              {"inputs", {{{"name", "data"}, {"type", "float"}, {"shape", {"N", 3}}}}},
              {"outputs", {{{"name", "prob"}, {"type", "float"}, {"shape", {"N", 2}}}}},
              {"variants", json::array()}}}};
  for (const auto& [id, weights] : {std::pair{"fp32", fp32_weights()}, std::pair{"int8", kInt8}}) {
    json files = json::array();
    for (const auto& [path, bytes] : {std::pair{"labels.txt", kLabels}, {"model.onnx", weights}}) {
      files.push_back({{"path", path}, {"size", bytes.size()}, {"sha256", sha(bytes)}});
    }
    json v = {
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

// The sha256 the card gives variant `variant`'s file `path`.
std::string card_sha(const catalog::ModelMetadata& meta, const std::string& variant,
                     const std::string& path) {
  for (const auto& v : meta.variants) {
    if (v.id != variant) continue;
    for (const auto& f : v.files) {
      if (f.path == path) return f.sha256;
    }
  }
  ADD_FAILURE() << "the card has no " << variant << "/" << path;
  return "";
}

// One progress report as the callback saw it.
struct Report {
  std::string kind, target;
  epbroker_job_state state;
  std::uint64_t done, total;
};

void record(const epbroker_progress* p, void* user) {
  static_cast<std::vector<Report>*>(user)->push_back(
      {epbroker_progress_kind(p), epbroker_progress_target(p), epbroker_progress_state(p),
       epbroker_progress_bytes_done(p), epbroker_progress_bytes_total(p)});
}

std::vector<std::string> lease_files(const epbroker_model_lease* l) {
  std::vector<std::string> out;
  for (size_t i = 0; i < epbroker_model_lease_file_count(l); ++i) {
    out.emplace_back(epbroker_model_lease_file(l, i));
  }
  std::sort(out.begin(), out.end());
  return out;
}

class CApiModelTest : public CApiClientTest {
 protected:
  void SetUp() override {
    CApiClientTest::SetUp();
    if (IsSkipped()) return;
    meta_ = model_meta();
    catalog_ = std::make_unique<daemon::TestCatalog>();
    catalog_->publish_model(meta_, {fp32_weights(), kInt8, kLabels});
  }

  // Starts the bus and the daemon with a fresh catalog; with `slow`, the catalog's
  // targets (the model's files) come at 1 byte per second.
  void begin(bool slow = false) {
    start();
    if (slow) serve_targets_slowly();
    refresh();
  }

  // Where the store keeps variant `variant` of tiny-net 1.0.
  fs::path variant_dir(const std::string& variant) const {
    return bus_->store_dir() / "_models" / kModel / "1.0" / variant;
  }

  // tiny-net as epbroker_models lists it (the list stays alive in `keep`).
  const epbroker_model* listed(epbroker_client* c, ModelsPtr& keep,
                               epbroker_policy policy = EPBROKER_POLICY_DEFAULT) {
    epbroker_model_list* list = nullptr;
    EXPECT_EQ(epbroker_models(c, policy, nullptr, &list), EPBROKER_OK) << last_error();
    keep.reset(list);
    for (size_t i = 0; i < epbroker_model_list_size(list); ++i) {
      const auto* m = epbroker_model_list_get(list, i);
      if (epbroker_model_name(m) == kModel) return m;
    }
    ADD_FAILURE() << "no model " << kModel;
    return nullptr;
  }

  catalog::ModelMetadata meta_;
};

TEST_F(CApiModelTest, ModelsListsThePublishedModelWithAPlan) {
  begin();
  auto c = connect();
  ASSERT_TRUE(c);
  ModelsPtr keep;
  const auto* m = listed(c.get(), keep);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(epbroker_model_list_size(keep.get()), 1U);
  EXPECT_EQ(epbroker_model_list_get(keep.get(), 1), nullptr);
  EXPECT_STREQ(epbroker_model_version(m), "1.0");
  EXPECT_STREQ(epbroker_model_publisher(m), "Test");
  EXPECT_STREQ(epbroker_model_license(m), "Apache-2.0");
  EXPECT_STREQ(epbroker_model_license_url(m), "https://example.com/license");
  EXPECT_STREQ(epbroker_model_description(m), "a test model");
  EXPECT_STREQ(epbroker_model_task(m), "image-classification");
  EXPECT_STREQ(epbroker_model_state(m), "available");
  EXPECT_STREQ(epbroker_model_reason(m), "");
  EXPECT_STREQ(epbroker_model_remote(m), "test");

  ASSERT_EQ(epbroker_model_variant_count(m), 2U);
  EXPECT_EQ(epbroker_model_variant_info(m, 2), nullptr);
  const auto* fp32 = epbroker_model_variant_info(m, 0);
  EXPECT_STREQ(epbroker_variant_info_id(fp32), "fp32");
  EXPECT_EQ(epbroker_variant_info_device_count(fp32), 0U);
  EXPECT_EQ(epbroker_variant_info_ep_count(fp32), 0U);
  EXPECT_STREQ(epbroker_variant_info_ort_min(fp32), "1.20");
  EXPECT_EQ(epbroker_variant_info_opset(fp32), 17U);
  EXPECT_EQ(epbroker_variant_info_size(fp32), kLabels.size() + fp32_weights().size());
  EXPECT_EQ(epbroker_variant_info_installed(fp32), 0);
  const auto* int8 = epbroker_model_variant_info(m, 1);
  EXPECT_STREQ(epbroker_variant_info_id(int8), "int8");
  ASSERT_EQ(epbroker_variant_info_device_count(int8), 1U);
  EXPECT_STREQ(epbroker_variant_info_device(int8, 0), "npu");
  EXPECT_EQ(epbroker_variant_info_device(int8, 1), nullptr);
  ASSERT_EQ(epbroker_variant_info_ep_count(int8), 1U);
  EXPECT_STREQ(epbroker_variant_info_ep(int8, 0), "TestNpuExecutionProvider");
  EXPECT_EQ(epbroker_variant_info_size(int8), kLabels.size() + kInt8.size());

  // No provider serves TestNpuExecutionProvider: the generic variant, on a CPU.
  EXPECT_STREQ(epbroker_model_planned(m), "fp32");
  EXPECT_STRNE(epbroker_model_plan_device(m), "");
  EXPECT_STRNE(epbroker_model_plan_ep(m), "");
  EXPECT_STRNE(epbroker_model_plan_reason(m), "");

  // The options reach the daemon, which checks them; a policy outside the enum
  // never leaves the library.
  epbroker_model_list* list = nullptr;
  ASSERT_EQ(epbroker_models(c.get(), EPBROKER_POLICY_PREFER_NPU, "1.22.0", &list), EPBROKER_OK)
      << last_error();
  EXPECT_EQ(epbroker_model_list_size(list), 1U);
  epbroker_model_list_free(list);
  list = nullptr;
  EXPECT_EQ(epbroker_models(c.get(), EPBROKER_POLICY_DEFAULT, "one", &list),
            EPBROKER_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(epbroker_last_error_bus_name(), "org.epbroker.Error.InvalidArgument")
      << last_error();
  EXPECT_EQ(epbroker_models(c.get(), static_cast<epbroker_policy>(7), nullptr, &list),
            EPBROKER_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(epbroker_last_error_bus_name(), "") << last_error();
  EXPECT_EQ(epbroker_models(c.get(), EPBROKER_POLICY_DEFAULT, nullptr, nullptr),
            EPBROKER_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(epbroker_last_error_message(), "epbroker_models: argument 'out' is NULL");
  EXPECT_EQ(list, nullptr);
}

TEST_F(CApiModelTest, EnsureModelLeasesTheMainFileTheCardHashes) {
  begin();
  auto c = connect();
  ASSERT_TRUE(c);
  std::vector<Report> seen;
  epbroker_model_lease* out = nullptr;
  ASSERT_EQ(epbroker_ensure_model(c.get(), kModel.c_str(), nullptr, record, &seen, nullptr, &out),
            EPBROKER_OK)
      << last_error();
  LeasePtr lease(out);
  EXPECT_EQ(epbroker_model_lease_active(out), 1);
  EXPECT_TRUE(std::string(epbroker_model_lease_session_path(out)).starts_with("/org/epbroker/"))
      << epbroker_model_lease_session_path(out);
  EXPECT_STREQ(epbroker_model_lease_name(out), kModel.c_str());
  EXPECT_STREQ(epbroker_model_lease_version(out), "1.0");
  EXPECT_STREQ(epbroker_model_lease_variant(out), "fp32");
  EXPECT_EQ(fs::canonical(epbroker_model_lease_path(out)), fs::canonical(variant_dir("fp32")));
  const fs::path main = epbroker_model_lease_main(out);
  ASSERT_TRUE(fs::is_regular_file(main)) << main;
  EXPECT_EQ(main.filename(), "model.onnx");
  EXPECT_EQ(sha(read(main)), card_sha(meta_, "fp32", "model.onnx")) << "the card's file";
  EXPECT_EQ(lease_files(out), (std::vector<std::string>{"labels.txt", "model.onnx"}));
  EXPECT_EQ(epbroker_model_lease_file(out, 2), nullptr);
  EXPECT_EQ(read(fs::path(epbroker_model_lease_path(out)) / "labels.txt"), kLabels);
  EXPECT_EQ(epbroker_model_lease_device_count(out), 0U) << "fp32 is built for any device";
  EXPECT_EQ(epbroker_model_lease_ep_count(out), 0U);

  // The job's progress: a model job for tiny-net/fp32, bytes never going down,
  // ending done with every byte.
  ASSERT_FALSE(seen.empty());
  for (std::size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].kind, "model") << i;
    EXPECT_EQ(seen[i].target, kModel + "/fp32") << i;
    if (i > 0) {
      EXPECT_GE(seen[i].done, seen[i - 1].done) << i;
    }
  }
  EXPECT_EQ(seen.back().state, EPBROKER_JOB_DONE);
  EXPECT_GT(seen.back().total, 0U);
  EXPECT_EQ(seen.back().done, seen.back().total);
  ModelsPtr keep;
  const auto* m = listed(c.get(), keep);
  EXPECT_EQ(epbroker_variant_info_installed(epbroker_model_variant_info(m, 0)), 1);

  // Release: inactive, the path gone, what it said still readable.
  ASSERT_EQ(epbroker_model_lease_release(out), EPBROKER_OK) << last_error();
  EXPECT_EQ(epbroker_model_lease_active(out), 0);
  EXPECT_STREQ(epbroker_model_lease_session_path(out), "");
  EXPECT_STREQ(epbroker_model_lease_main(out), main.c_str());
  EXPECT_EQ(epbroker_model_lease_file_count(out), 2U);
}

TEST_F(CApiModelTest, EnsureModelOptionsAndErrors) {
  begin();
  auto c = connect();
  ASSERT_TRUE(c);
  ModelOptionsPtr options(epbroker_model_options_new());
  ASSERT_TRUE(options);

  // Required arguments, `out` checked before anything is installed.
  epbroker_model_lease* out = nullptr;
  EXPECT_EQ(epbroker_ensure_model(c.get(), nullptr, nullptr, nullptr, nullptr, nullptr, &out),
            EPBROKER_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(epbroker_last_error_message(), "epbroker_ensure_model: argument 'name' is NULL");
  EXPECT_EQ(
      epbroker_ensure_model(c.get(), kModel.c_str(), nullptr, nullptr, nullptr, nullptr, nullptr),
      EPBROKER_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(epbroker_last_error_message(), "epbroker_ensure_model: argument 'out' is NULL");
  // A policy outside the enum, kept by the setter, is refused here.
  epbroker_model_options_set_policy(options.get(), static_cast<epbroker_policy>(7));
  EXPECT_EQ(epbroker_ensure_model(c.get(), kModel.c_str(), options.get(), nullptr, nullptr, nullptr,
                                  &out),
            EPBROKER_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(epbroker_last_error_message()).find("policy 7"), std::string::npos)
      << last_error();
  EXPECT_FALSE(fs::exists(bus_->store_dir() / "_models" / kModel)) << "nothing installed";
  epbroker_model_options_set_policy(options.get(), EPBROKER_POLICY_PREFER_CPU);

  // The daemon's errors: no such model, version or variant.
  EXPECT_EQ(
      epbroker_ensure_model(c.get(), "no-such-model", nullptr, nullptr, nullptr, nullptr, &out),
      EPBROKER_ERR_NOT_FOUND);
  EXPECT_STREQ(epbroker_last_error_bus_name(), "org.epbroker.Error.NotFound") << last_error();
  ASSERT_EQ(epbroker_model_options_set_version(options.get(), "9.9"), EPBROKER_OK);
  EXPECT_EQ(epbroker_ensure_model(c.get(), kModel.c_str(), options.get(), nullptr, nullptr, nullptr,
                                  &out),
            EPBROKER_ERR_NOT_FOUND);
  ASSERT_EQ(epbroker_model_options_set_version(options.get(), nullptr), EPBROKER_OK);
  ASSERT_EQ(epbroker_model_options_set_variant(options.get(), "fp64"), EPBROKER_OK);
  EXPECT_EQ(epbroker_ensure_model(c.get(), kModel.c_str(), options.get(), nullptr, nullptr, nullptr,
                                  &out),
            EPBROKER_ERR_NOT_FOUND);
  // Without download, a variant not installed is not leased.
  ASSERT_EQ(epbroker_model_options_set_variant(options.get(), "int8"), EPBROKER_OK);
  epbroker_model_options_set_download(options.get(), 0);
  EXPECT_EQ(epbroker_ensure_model(c.get(), kModel.c_str(), options.get(), nullptr, nullptr, nullptr,
                                  &out),
            EPBROKER_ERR_NOT_FOUND);
  EXPECT_EQ(out, nullptr) << "written only on success";
  EXPECT_FALSE(fs::exists(bus_->store_dir() / "_models" / kModel)) << "nothing installed";

  // An explicit variant with its version and ORT version: installed whatever this
  // machine has, with what it is built for.
  epbroker_model_options_set_download(options.get(), 1);
  ASSERT_EQ(epbroker_model_options_set_version(options.get(), "1.0"), EPBROKER_OK);
  ASSERT_EQ(epbroker_model_options_set_ort_version(options.get(), "1.22.0"), EPBROKER_OK);
  ASSERT_EQ(epbroker_ensure_model(c.get(), kModel.c_str(), options.get(), nullptr, nullptr, nullptr,
                                  &out),
            EPBROKER_OK)
      << last_error();
  LeasePtr lease(out);
  EXPECT_STREQ(epbroker_model_lease_variant(out), "int8");
  EXPECT_STREQ(epbroker_model_lease_version(out), "1.0");
  ASSERT_EQ(epbroker_model_lease_device_count(out), 1U);
  EXPECT_STREQ(epbroker_model_lease_device(out, 0), "npu");
  EXPECT_EQ(epbroker_model_lease_device(out, 1), nullptr);
  ASSERT_EQ(epbroker_model_lease_ep_count(out), 1U);
  EXPECT_STREQ(epbroker_model_lease_ep(out, 0), "TestNpuExecutionProvider");
  EXPECT_EQ(read(epbroker_model_lease_main(out)), kInt8);
  EXPECT_EQ(sha(read(epbroker_model_lease_main(out))), card_sha(meta_, "int8", "model.onnx"));
  // Installed now: without download the same variant is leased too.
  epbroker_model_options_set_download(options.get(), 0);
  epbroker_model_lease* second = nullptr;
  ASSERT_EQ(epbroker_ensure_model(c.get(), kModel.c_str(), options.get(), nullptr, nullptr, nullptr,
                                  &second),
            EPBROKER_OK)
      << last_error();
  LeasePtr keep_second(second);
  EXPECT_STREQ(epbroker_model_lease_main(second), epbroker_model_lease_main(out));
  EXPECT_STRNE(epbroker_model_lease_session_path(second), epbroker_model_lease_session_path(out));
}

TEST_F(CApiModelTest, RemoveModelIsBusyWhileLeasedAndDoneAfterRelease) {
  begin();
  auto c = connect();
  ASSERT_TRUE(c);
  epbroker_model_lease* out = nullptr;
  ASSERT_EQ(
      epbroker_ensure_model(c.get(), kModel.c_str(), nullptr, nullptr, nullptr, nullptr, &out),
      EPBROKER_OK)
      << last_error();
  LeasePtr lease(out);
  const std::string main = epbroker_model_lease_main(out);

  epbroker_removed_model_list* removed = nullptr;
  EXPECT_EQ(epbroker_remove_model(c.get(), kModel.c_str(), nullptr, nullptr, 0, &removed),
            EPBROKER_ERR_BUSY);
  EXPECT_STREQ(epbroker_status_name(EPBROKER_ERR_BUSY), "Busy");
  EXPECT_STREQ(epbroker_last_error_bus_name(), "org.epbroker.Error.Busy") << last_error();
  EXPECT_EQ(removed, nullptr);
  EXPECT_TRUE(fs::is_regular_file(main)) << "nothing removed";
  EXPECT_EQ(epbroker_remove_model(c.get(), nullptr, nullptr, nullptr, 0, &removed),
            EPBROKER_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(epbroker_last_error_message(), "epbroker_remove_model: argument 'name' is NULL");

  ASSERT_EQ(epbroker_model_lease_release(out), EPBROKER_OK) << last_error();
  // The daemon ends the session just after answering Release: ask until it has.
  epbroker_status status = EPBROKER_ERR_BUSY;
  ASSERT_TRUE(daemon::wait_until(
      [&] {
        status = epbroker_remove_model(c.get(), kModel.c_str(), "1.0", nullptr, 0, &removed);
        EXPECT_TRUE(status == EPBROKER_OK || status == EPBROKER_ERR_BUSY) << last_error();
        return status != EPBROKER_ERR_BUSY;
      },
      10s));
  ASSERT_EQ(status, EPBROKER_OK) << last_error();
  RemovedPtr keep(removed);
  ASSERT_EQ(epbroker_removed_model_list_size(removed), 1U);
  const auto* r = epbroker_removed_model_list_get(removed, 0);
  EXPECT_STREQ(epbroker_removed_model_name(r), kModel.c_str());
  EXPECT_STREQ(epbroker_removed_model_version(r), "1.0");
  EXPECT_STREQ(epbroker_removed_model_variant(r), "fp32");
  EXPECT_EQ(epbroker_removed_model_list_get(removed, 1), nullptr);
  EXPECT_FALSE(fs::exists(variant_dir("fp32")));
  EXPECT_FALSE(fs::exists(main));
  EXPECT_EQ(epbroker_remove_model(c.get(), kModel.c_str(), nullptr, nullptr, 0, nullptr),
            EPBROKER_ERR_NOT_FOUND);

  // With now, a leased variant goes at once (`out` may be NULL).
  ASSERT_EQ(
      epbroker_ensure_model(c.get(), kModel.c_str(), nullptr, nullptr, nullptr, nullptr, &out),
      EPBROKER_OK)
      << last_error();
  LeasePtr again(out);
  ASSERT_TRUE(fs::is_regular_file(main));
  EXPECT_EQ(epbroker_remove_model(c.get(), kModel.c_str(), "1.0", "fp32", 1, nullptr), EPBROKER_OK)
      << last_error();
  EXPECT_FALSE(fs::exists(main));
}

TEST_F(CApiModelTest, EnsureModelCancelledWhileDownloading) {
  begin(/*slow=*/true);
  auto c = connect();
  ASSERT_TRUE(c);
  CancelPtr cancel(epbroker_cancel_new());
  ASSERT_TRUE(cancel);
  // The fault server logs the request for fp32's main file (NAME/blobs/<sha256>).
  const std::string blob = sha(fp32_weights());
  std::atomic<bool> started{false};
  std::thread canceller([&] {
    started =
        daemon::wait_until([&] { return !catalog_->fault_server().requests(blob).empty(); }, 60s);
    epbroker_cancel_trigger(cancel.get());
  });
  std::vector<Report> seen;
  epbroker_model_lease* out = nullptr;
  const auto status =
      epbroker_ensure_model(c.get(), kModel.c_str(), nullptr, record, &seen, cancel.get(), &out);
  canceller.join();
  EXPECT_TRUE(started) << "the daemon never asked for the model's file";
  EXPECT_EQ(status, EPBROKER_ERR_CANCELLED) << last_error();
  EXPECT_EQ(out, nullptr);
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back().state, EPBROKER_JOB_CANCELLED);
  EXPECT_FALSE(fs::exists(variant_dir("fp32")));
  ModelsPtr keep;
  const auto* m = listed(c.get(), keep);
  EXPECT_EQ(epbroker_variant_info_installed(epbroker_model_variant_info(m, 0)), 0);

  // Triggered before the call: cancelled at once, nothing started.
  EXPECT_EQ(
      epbroker_ensure_model(c.get(), kModel.c_str(), nullptr, nullptr, nullptr, cancel.get(), &out),
      EPBROKER_ERR_CANCELLED);
  EXPECT_EQ(out, nullptr);
}

}  // namespace
}  // namespace tests::client
