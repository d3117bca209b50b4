// Models through libepbroker and epbrokerctl against a live daemon on a private
// bus, with a model the test catalog publishes (tiny-net 1.0: variant fp32 for
// any device, int8 for NPUs; both with labels.txt): Client::models(),
// ensure_model()'s lease (its main file's content is the card's), remove_model()
// refused while leased and done after release; `epbrokerctl models` (table and
// JSON), `model install`, `model remove` and their errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "catalog/crypto/hash.hpp"
#include "catalog/model_metadata.hpp"
#include "tests/client/client_fixture.hpp"

namespace tests::client {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using tests::daemon::CommandResult;

const std::string kModel = "tiny-net";
const std::string kFp32 = "fp32 weights of tiny-net";
const std::string kInt8 = "int8 weights";
const std::string kLabels = "cat\ndog\n";

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
              {"task", "image-classification"},
              {"inputs", {{{"name", "data"}, {"type", "float"}, {"shape", {"N", 3}}}}},
              {"outputs", {{{"name", "prob"}, {"type", "float"}, {"shape", {"N", 2}}}}},
              {"variants", json::array()}}}};
  for (const auto& [id, weights] : {std::pair{"fp32", kFp32}, std::pair{"int8", kInt8}}) {
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

CommandResult ctl(const std::vector<std::string>& args) {
  std::vector<std::string> argv{epbrokerctl_path()};
  argv.insert(argv.end(), args.begin(), args.end());
  return daemon::run_command(argv, 120s);
}

std::string describe(const CommandResult& r) {
  return "exit " + std::to_string(r.exit_code) + "\nstdout: " + r.out + "\nstderr: " + r.err;
}

json doc(const CommandResult& r) {
  auto j = json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(j.is_discarded()) << "not JSON: " << describe(r);
  return j.is_discarded() ? json::object() : j;
}

class ModelClientTest : public ClientTest {
 protected:
  void SetUp() override {
    ClientTest::SetUp();
    if (IsSkipped()) return;
    catalog_ = std::make_unique<daemon::TestCatalog>();
    catalog_->publish_model(model_meta(), {kFp32, kInt8, kLabels});
    start();
    refresh();
  }

  // Where the store keeps variant `variant` of tiny-net 1.0.
  fs::path variant_dir(const std::string& variant) const {
    return bus_->store_dir() / "_models" / kModel / "1.0" / variant;
  }

  // epbrokerctl --bus-address THIS_BUS ARGS...
  CommandResult cmd(std::vector<std::string> args) {
    args.insert(args.begin(), {"--bus-address", address()});
    return ctl(args);
  }
};

// ---- libepbroker --------------------------------------------------------------------

TEST_F(ModelClientTest, ModelsListsTheVariantsAndWhatThisMachineGets) {
  auto c = client();
  const auto list = c.models();
  ASSERT_EQ(list.size(), 1U);
  const auto& m = list[0];
  EXPECT_EQ(m.name, kModel);
  EXPECT_EQ(m.version, "1.0");
  EXPECT_EQ(m.publisher, "Test");
  EXPECT_EQ(m.license, "Apache-2.0");
  EXPECT_EQ(m.task, "image-classification");
  EXPECT_EQ(m.state, "available");
  ASSERT_EQ(m.variants.size(), 2U);
  EXPECT_EQ(m.variants[0].id, "fp32");
  EXPECT_EQ(m.variants[0].size, kLabels.size() + kFp32.size());
  EXPECT_FALSE(m.variants[0].installed);
  EXPECT_EQ(m.variants[1].id, "int8");
  EXPECT_EQ(m.variants[1].devices, std::vector<std::string>{"npu"});
  // No provider serves TestNpuExecutionProvider: the generic variant, on a CPU.
  EXPECT_EQ(m.planned, "fp32");
  EXPECT_FALSE(m.plan_device.empty());
  EXPECT_FALSE(m.plan_ep.empty());
  EXPECT_FALSE(m.plan_reason.empty());
  // The options reach the daemon, which checks them.
  EXPECT_EQ(c.models(epbroker::Policy::prefer_npu, "1.22.0").size(), 1U);
  EXPECT_EQ(error_of([&] { c.models(epbroker::Policy::default_policy, "one"); }).code(),
            epbroker::Errc::invalid_argument);
}

TEST_F(ModelClientTest, EnsureModelLeasesThePlannedVariantWithTheCardsContent) {
  auto c = client();
  std::vector<epbroker::Progress> seen;
  epbroker::ModelLease lease =
      c.ensure_model(kModel, {}, [&](const epbroker::Progress& p) { seen.push_back(p); });
  ASSERT_TRUE(lease.active());
  EXPECT_FALSE(lease.session_path().empty());
  EXPECT_EQ(lease.name(), kModel);
  EXPECT_EQ(lease.version(), "1.0");
  EXPECT_EQ(lease.variant(), "fp32");
  EXPECT_EQ(fs::canonical(lease.path()), fs::canonical(variant_dir("fp32")));
  ASSERT_TRUE(fs::is_regular_file(lease.main())) << lease.main();
  EXPECT_EQ(fs::path(lease.main()).filename(), "model.onnx");
  EXPECT_EQ(sha(read(lease.main())), sha(kFp32)) << "the main file is the card's";
  std::vector<std::string> files = lease.files();
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"labels.txt", "model.onnx"}));
  EXPECT_EQ(read(fs::path(lease.path()) / "labels.txt"), kLabels);
  EXPECT_TRUE(lease.devices().empty());  // fp32 is built for any device
  // The job's progress: a model job for tiny-net/fp32, ending done.
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back().kind, "model");
  EXPECT_EQ(seen.back().target, kModel + "/fp32");
  EXPECT_EQ(seen.back().state, epbroker::JobState::done);
  EXPECT_TRUE(c.models().at(0).variants.at(0).installed);

  // Installed now: without download the lease is granted too; the int8 variant,
  // never installed, is not.
  epbroker::ModelOptions no_download;
  no_download.download = false;
  auto second = c.ensure_model(kModel, no_download);
  EXPECT_TRUE(second.active());
  EXPECT_EQ(second.main(), lease.main());
  no_download.variant = "int8";
  EXPECT_EQ(error_of([&] { c.ensure_model(kModel, no_download); }).code(),
            epbroker::Errc::not_found);

  // A moved lease is the same lease; release ends it and keeps what it said.
  epbroker::ModelLease moved = std::move(lease);
  EXPECT_FALSE(lease.active());  // NOLINT(bugprone-use-after-move): moved-from is empty
  EXPECT_TRUE(lease.name().empty());
  EXPECT_TRUE(moved.active());
  moved.release();
  EXPECT_FALSE(moved.active());
  EXPECT_EQ(moved.name(), kModel);
}

TEST_F(ModelClientTest, RemoveModelIsRefusedWhileLeasedAndDoneAfterRelease) {
  auto c = client();
  auto lease = c.ensure_model(kModel, {});
  ASSERT_TRUE(lease.active());
  const auto busy = error_of([&] { c.remove_model(kModel); });
  EXPECT_EQ(busy.code(), epbroker::Errc::busy) << busy.message();
  EXPECT_TRUE(fs::is_regular_file(lease.main())) << "nothing removed";

  lease.release();
  // The daemon ends the session just after answering Release: ask until it has.
  std::vector<epbroker::RemovedModel> removed;
  ASSERT_TRUE(daemon::wait_until(
      [&] {
        try {
          removed = c.remove_model(kModel);
          return true;
        } catch (const epbroker::Error& e) {
          EXPECT_EQ(e.code(), epbroker::Errc::busy) << e.message();
          return false;
        }
      },
      10s));
  ASSERT_EQ(removed.size(), 1U);
  EXPECT_EQ(removed[0].name, kModel);
  EXPECT_EQ(removed[0].version, "1.0");
  EXPECT_EQ(removed[0].variant, "fp32");
  EXPECT_FALSE(fs::exists(variant_dir("fp32")));
  EXPECT_FALSE(c.models().at(0).variants.at(0).installed);
  EXPECT_EQ(error_of([&] { c.remove_model(kModel); }).code(), epbroker::Errc::not_found);

  // With now, a leased variant goes at once.
  auto again = c.ensure_model(kModel, {});
  removed = c.remove_model(kModel, "1.0", "fp32", /*now=*/true);
  EXPECT_EQ(removed.size(), 1U);
  EXPECT_FALSE(fs::exists(again.main()));
}

TEST_F(ModelClientTest, EnsureModelErrors) {
  auto c = client();
  EXPECT_EQ(error_of([&] { c.ensure_model("no-such-model", {}); }).code(),
            epbroker::Errc::not_found);
  epbroker::ModelOptions o;
  o.variant = "fp64";
  EXPECT_EQ(error_of([&] { c.ensure_model(kModel, o); }).code(), epbroker::Errc::not_found);
  o.variant.clear();
  o.version = "9.9";
  EXPECT_EQ(error_of([&] { c.ensure_model(kModel, o); }).code(), epbroker::Errc::not_found);
  // Nothing was leased or installed by the failures.
  EXPECT_EQ(c.status().sessions, 0U);
  EXPECT_FALSE(fs::exists(bus_->store_dir() / "_models" / kModel));
  // A plain session never lists a model among its providers.
  const auto s = c.request_session({});
  for (const auto& p : s.providers()) EXPECT_NE(p.name, kModel);
}

// ---- epbrokerctl ----------------------------------------------------------------------

TEST_F(ModelClientTest, CtlModelsShowsTheVariantsAndThePlan) {
  auto r = cmd({"models"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_TRUE(r.out.starts_with("NAME")) << r.out;
  for (const char* s : {"tiny-net", "1.0", "Apache-2.0", "image-classification", "fp32, int8",
                        "tiny-net 1.0: this machine gets: fp32 on ", " via ", "  why: "}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << s << " missing from\n" << r.out;
  }
  EXPECT_EQ(r.out.find("(* installed)"), std::string::npos) << r.out;

  r = cmd({"--json", "models", "--policy", "prefer_cpu", "--ort-version", "1.22.0"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  const json j = doc(r);
  ASSERT_EQ(j["models"].size(), 1U) << j;
  const json& m = j["models"][0];
  EXPECT_EQ(m["name"], kModel);
  EXPECT_EQ(m["version"], "1.0");
  EXPECT_EQ(m["license"], "Apache-2.0");
  EXPECT_EQ(m["task"], "image-classification");
  EXPECT_EQ(m["state"], "available");
  EXPECT_TRUE(m["reason"].is_null());
  ASSERT_EQ(m["variants"].size(), 2U);
  EXPECT_EQ(m["variants"][0]["id"], "fp32");
  EXPECT_EQ(m["variants"][0]["installed"], false);
  EXPECT_EQ(m["variants"][0]["size"], kLabels.size() + kFp32.size());
  EXPECT_EQ(m["variants"][1]["devices"], json::array({"npu"}));
  EXPECT_EQ(m["planned"], "fp32");
  EXPECT_TRUE(m["plan_device"].is_string()) << m;
  EXPECT_TRUE(m["plan_ep"].is_string()) << m;

  // A policy the daemon does not know never reaches it.
  r = cmd({"models", "--policy", "fastest"});
  EXPECT_EQ(r.exit_code, 2) << describe(r);
}

TEST_F(ModelClientTest, CtlModelInstallAndRemove) {
  // Human output: progress on stderr, the result on stdout.
  auto r = cmd({"model", "install", kModel});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_TRUE(r.out.starts_with("installed model tiny-net 1.0, variant fp32 (")) << r.out;
  EXPECT_NE(r.err.find("done"), std::string::npos) << r.err;
  ASSERT_TRUE(fs::is_regular_file(variant_dir("fp32") / "model.onnx"));
  EXPECT_EQ(read(variant_dir("fp32") / "model.onnx"), kFp32);
  EXPECT_EQ(read(variant_dir("fp32") / "labels.txt"), kLabels);
  r = cmd({"models"});
  EXPECT_NE(r.out.find("fp32*, int8"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(* installed)"), std::string::npos) << r.out;

  // --json, an explicit variant (installed whatever this machine has).
  r = cmd({"--json", "model", "install", kModel, "--variant", "int8", "--version", "1.0"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_EQ(r.err, "") << "--json prints no progress";
  json j = doc(r);
  EXPECT_EQ(j["model"], json({{"name", kModel},
                              {"version", "1.0"},
                              {"variant", "int8"},
                              {"size", kLabels.size() + kInt8.size()}}));
  EXPECT_EQ(j["job"]["kind"], "model");
  EXPECT_EQ(j["job"]["target"], kModel + "/int8");
  EXPECT_EQ(j["job"]["state"], "done");
  EXPECT_EQ(read(variant_dir("int8") / "model.onnx"), kInt8);

  // Remove one variant (--json), then the rest (text); the shared labels stay
  // with the variant that keeps them.
  r = cmd({"--json", "model", "remove", kModel, "--variant", "int8"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_EQ(
      doc(r),
      json({{"removed",
             json::array({json({{"name", kModel}, {"version", "1.0"}, {"variant", "int8"}})})},
            {"now", false}}));
  EXPECT_FALSE(fs::exists(variant_dir("int8")));
  EXPECT_EQ(read(variant_dir("fp32") / "labels.txt"), kLabels);
  r = cmd({"model", "remove", kModel});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_EQ(r.out, "removed model tiny-net 1.0, variant fp32\n");
  EXPECT_FALSE(fs::exists(variant_dir("fp32")));

  // Nothing left: NotFound, exit 4, with a hint.
  r = cmd({"--json", "model", "remove", kModel});
  EXPECT_EQ(r.exit_code, 4) << describe(r);
  EXPECT_EQ(doc(r)["error"]["code"], "NotFound");
  EXPECT_TRUE(doc(r)["error"]["hint"].is_string());
}

TEST_F(ModelClientTest, VerifyShowsModelVariants) {
  ASSERT_EQ(cmd({"model", "install", kModel, "--variant", "fp32"}).exit_code, 0);
  ASSERT_EQ(cmd({"model", "install", kModel, "--variant", "int8"}).exit_code, 0);
  // libepbroker: a model variant's row in the existing VerifyResult, version
  // "VERSION/VARIANT".
  auto c = client();
  auto results = c.verify();
  ASSERT_EQ(results.size(), 2U);
  EXPECT_EQ(results[0].name, kModel);
  EXPECT_EQ(results[0].version, "1.0/fp32");
  EXPECT_TRUE(results[0].ok);
  EXPECT_EQ(results[1].version, "1.0/int8");
  // epbrokerctl: the table, and --json.
  auto r = cmd({"verify"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_TRUE(r.out.starts_with("NAME")) << r.out;
  for (const char* s : {"tiny-net  1.0/fp32  ok", "tiny-net  1.0/int8  ok"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << s << " missing from\n" << r.out;
  }
  r = cmd({"--json", "verify"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_EQ(doc(r), json({{"ok", true},
                          {"results", json::array({json({{"name", kModel},
                                                         {"version", "1.0/fp32"},
                                                         {"ok", true},
                                                         {"problem", nullptr}}),
                                                   json({{"name", kModel},
                                                         {"version", "1.0/int8"},
                                                         {"ok", true},
                                                         {"problem", nullptr}})})}}));

  // The file both variants share, damaged in place (root: write permission
  // added, one byte changed, taken away again): both rows are damaged, exit 1.
  const fs::path blob = bus_->store_dir() / "_blobs/sha256" / sha(kLabels);
  fs::permissions(blob, fs::perms::owner_write, fs::perm_options::add);
  {
    std::fstream f(blob, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(0);
    f.write("C", 1);  // "cat" -> "Cat"
  }
  fs::permissions(blob, fs::perms::owner_write, fs::perm_options::remove);
  const std::string bad = "labels.txt: blob " + sha(kLabels) + ": sha256 ";
  results = c.verify();
  ASSERT_EQ(results.size(), 2U);
  for (const auto& v : results) {
    EXPECT_FALSE(v.ok) << v.version;
    EXPECT_TRUE(v.problem.starts_with(bad)) << v.problem;
  }
  r = cmd({"verify"});
  EXPECT_EQ(r.exit_code, 1) << describe(r);
  for (const std::string& s :
       {"tiny-net  1.0/fp32  DAMAGED: " + bad, "tiny-net  1.0/int8  DAMAGED: " + bad}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << s << " missing from\n" << r.out;
  }
  EXPECT_EQ(r.out.find("Repair a damaged package"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Repair a damaged model variant with `epbrokerctl model install NAME "
                       "--version VERSION --variant VARIANT`."),
            std::string::npos)
      << r.out;
  r = cmd({"--json", "verify"});
  EXPECT_EQ(r.exit_code, 1) << describe(r);
  const json j = doc(r);
  EXPECT_EQ(j["ok"], false);
  ASSERT_EQ(j["results"].size(), 2U) << j;
  for (const auto& row : j["results"]) {
    EXPECT_EQ(row["name"], kModel);
    EXPECT_EQ(row["ok"], false);
    EXPECT_TRUE(row["problem"].get<std::string>().starts_with(bad)) << row;
  }

  // `model install` of one variant repairs the shared file for both.
  r = cmd({"model", "install", kModel, "--variant", "int8"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  r = cmd({"verify"});
  EXPECT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_EQ(read(variant_dir("fp32") / "labels.txt"), kLabels);
}

TEST_F(ModelClientTest, CtlModelErrorsAndTheirExitCodes) {
  // A model the catalog lacks, and a variant it lacks: NotFound, exit 4.
  auto r = cmd({"--json", "model", "install", "no-such-model"});
  EXPECT_EQ(r.exit_code, 4) << describe(r);
  EXPECT_EQ(doc(r)["error"]["code"], "NotFound");
  r = cmd({"model", "install", kModel, "--variant", "fp64"});
  EXPECT_EQ(r.exit_code, 4) << describe(r);
  EXPECT_NE(r.err.find("epbrokerctl models"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(bus_->store_dir() / "_models" / kModel));
  // A bad name is the daemon's InvalidArgument: exit 2.
  r = cmd({"--json", "model", "install", "Bad Name"});
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  EXPECT_EQ(doc(r)["error"]["code"], "InvalidArgument");

  // Leased by an app: remove is Busy (exit 1, the hint names --now), --now removes it.
  auto c = client();
  auto lease = c.ensure_model(kModel, {});
  r = cmd({"model", "remove", kModel});
  EXPECT_EQ(r.exit_code, 1) << describe(r);
  EXPECT_NE(r.err.find("(Busy)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("epbrokerctl model remove --now tiny-net"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::is_regular_file(lease.main()));
  r = cmd({"--json", "model", "remove", "--now", kModel});
  EXPECT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_EQ(doc(r)["now"], true);
  EXPECT_FALSE(fs::exists(lease.main()));
}

}  // namespace
}  // namespace tests::client
