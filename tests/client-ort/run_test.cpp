// epbroker-run end to end: the built binary against a live broker (private bus,
// signed catalog on loopback), on the mixed model (tests/ort/support: MatMul, Add,
// Softmax, Mul, Relu) written to a file with an .npy input and a labels file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "client/epbroker-run/npy.hpp"
#include "epbroker/version.hpp"
#include "tests/client-ort/broker_fixture.hpp"
#include "tests/ort/support/mixed_model.hpp"
#include "tests/support/temp_dir.hpp"

namespace tests::client_ort {
namespace {

using ::testing::HasSubstr;
using tests::daemon::CommandResult;
using tests::daemon::run_command;
namespace fs = std::filesystem;

// The mixed model, its input X as .npy and five labels, in a temp dir.
struct Files {
  support::TempDir dir;
  fs::path model = dir / "mixed.onnx";
  fs::path input = dir / "x.npy";
  fs::path labels = dir / "labels.txt";

  Files() {
    std::ofstream(model, std::ios::binary) << tests::ort::mixed_model_bytes();
    const auto x = tests::ort::mixed_model_inputs().at(0);
    epbroker_run::Array a{epbroker_run::DType::float32, x.dims, {}};
    const auto* p = reinterpret_cast<const unsigned char*>(x.bytes.data());
    a.data.assign(p, p + x.bytes.size());
    if (!epbroker_run::write_npy(input, a)) throw std::runtime_error("writing x.npy");
    std::ofstream(labels) << "zero\none\ntwo\nthree\nfour\n";
  }
};

CommandResult epbroker_run(std::vector<std::string> args) {
  args.insert(args.begin(), EPBROKER_RUN_PATH);
  return run_command(args, std::chrono::seconds(120));
}

std::string describe(const CommandResult& r) {
  return "exit " + std::to_string(r.exit_code) + "\n--- stdout\n" + r.out + "\n--- stderr\n" +
         r.err;
}

const nlohmann::json* part(const nlohmann::json& j, const std::string& ep) {
  for (const auto& p : j.at("assignment")) {
    if (p.at("ep") == ep) return &p;
  }
  return nullptr;
}

class RunTest : public BrokerTest {
 protected:
  Files files_;
};

TEST_F(RunTest, ExplicitEpWithCheckLabelsAndJson) {
  const auto r =
      epbroker_run({files_.model, "--ep", kTestEpName, "--input", "X=" + files_.input.string(),
                    "--labels", files_.labels, "--top", "3", "--check", "--iterations", "5",
                    "--json", "--bus-address", bus_address()});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_THAT(r.err, HasSubstr("installing test-ep: done"));  // progress, on stderr
  const auto j = nlohmann::json::parse(r.out);                // stdout is only JSON

  EXPECT_EQ(j.at("selection"), std::string("ep ") + kTestEpName);
  EXPECT_EQ(j.at("ort_version"), Ort::GetVersionString());
  ASSERT_TRUE(j.at("broker").at("used").get<bool>());
  EXPECT_THAT(j.at("broker").at("session").get<std::string>(), HasSubstr("/session/"));
  ASSERT_EQ(j.at("broker").at("registered").size(), 1U);
  EXPECT_EQ(j.at("broker").at("registered")[0].at("name"), kTestEp);
  EXPECT_EQ(j.at("inputs")[0].at("source"), files_.input.string());
  EXPECT_EQ(j.at("outputs")[0].at("shape"), nlohmann::json({3, 5}));

  // Where the graph ran: test-ep took the arithmetic, the CPU EP the Softmax.
  const auto* ours = part(j, kTestEpName);
  ASSERT_NE(ours, nullptr) << j.at("assignment").dump(2);
  EXPECT_TRUE(ours->at("ops").contains("Relu"));
  ASSERT_EQ(ours->at("devices").size(), 1U);
  EXPECT_EQ(ours->at("devices")[0].at("type"), "cpu");
  EXPECT_THAT(ours->at("devices")[0].at("library_path").get<std::string>(),
              HasSubstr(bus_->store_dir().string()));
  const auto* cpu = part(j, "CPUExecutionProvider");
  ASSERT_NE(cpu, nullptr);
  EXPECT_TRUE(cpu->at("ops").contains("Softmax"));

  const auto& lat = j.at("latency");
  EXPECT_EQ(lat.at("runs"), 5);
  EXPECT_GT(lat.at("p50_ms").get<double>(), 0);
  EXPECT_GE(lat.at("p99_ms").get<double>(), lat.at("p50_ms").get<double>());
  EXPECT_GT(lat.at("throughput_per_s").get<double>(), 0);

  const auto& check = j.at("check");
  EXPECT_TRUE(check.at("within_tolerance").get<bool>()) << check.dump(2);
  EXPECT_LE(check.at("max_abs").get<double>(), 1e-5);
  EXPECT_EQ(check.at("cpu_latency").at("runs"), 5);

  const auto& top = j.at("top");
  EXPECT_EQ(top.at("output"), "Y");
  ASSERT_EQ(top.at("labels").size(), 3U);
  EXPECT_GE(top.at("labels")[0].at("score").get<double>(),
            top.at("labels")[1].at("score").get<double>());
}

TEST_F(RunTest, PolicyAsTextAndPackageNameAsEp) {
  const auto policy = epbroker_run({files_.model, "--policy", "max_performance", "--iterations",
                                    "3", "--bus-address", bus_address()});
  ASSERT_EQ(policy.exit_code, 0) << describe(policy);
  EXPECT_THAT(policy.out, HasSubstr("selection: policy max_performance"));
  EXPECT_THAT(policy.out, HasSubstr("registered test-ep 0.1.0 (EpbrokerTestEp)"));
  EXPECT_THAT(policy.out, HasSubstr("graph assignment (ONNX Runtime's graph assignment info)"));
  EXPECT_THAT(policy.out, HasSubstr("3 runs: p50"));
  EXPECT_THAT(policy.out, HasSubstr("not registered future-ep [ort_too_old]"));

  // A second run finds everything installed: no progress printed.
  const auto by_package = epbroker_run({files_.model, "--ep", kTestEp, "--iterations", "2",
                                        "--json", "--bus-address", bus_address()});
  ASSERT_EQ(by_package.exit_code, 0) << describe(by_package);
  EXPECT_THAT(by_package.err, ::testing::Not(HasSubstr("installing")));
  const auto j = nlohmann::json::parse(by_package.out);
  EXPECT_EQ(j.at("selection"), std::string("ep ") + kTestEpName);
  EXPECT_NE(part(j, kTestEpName), nullptr);
}

TEST_F(RunTest, AbsentEpIsARuntimeErrorNamingWhatThereIs) {
  const auto r = epbroker_run(
      {files_.model, "--ep", "NoSuchExecutionProvider", "--bus-address", bus_address()});
  EXPECT_EQ(r.exit_code, 5) << describe(r);
  EXPECT_THAT(r.err, HasSubstr("CPUExecutionProvider/cpu"));
}

// ---- without a broker: exit codes and messages.

TEST(RunCliTest, UsageErrorsExitTwo) {
  EXPECT_EQ(epbroker_run({}).exit_code, 2);
  const auto both = epbroker_run({"m.onnx", "--policy", "prefer_gpu", "--ep", "X"});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_THAT(both.err, HasSubstr("exclusive"));
  const auto bad = epbroker_run({"m.onnx", "--policy", "fastest"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("max_performance"));
  const auto help = epbroker_run({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.out, HasSubstr("Exit codes:"));
}

TEST(RunCliTest, VersionAndHelpListEveryOption) {
  const auto version = epbroker_run({"--version"});
  EXPECT_EQ(version.exit_code, 0) << describe(version);
  EXPECT_EQ(version.out, std::string("epbroker-run ") + EPBROKER_VERSION_STRING + "\n");
  const auto help = epbroker_run({"-h"});
  EXPECT_EQ(help.exit_code, 0) << describe(help);
  const std::string listed =
      "MODEL.onnx --model --variant --policy --ep --device --input NAME=random --batch "
      "--iterations --warmup "
      "--check --atol --rtol --labels --top --bus-address --no-install --no-broker --library "
      "--json --help --version min_overall_power Selection Exit 130";
  std::istringstream words(listed);
  for (std::string s; words >> s;) EXPECT_THAT(help.out, HasSubstr(s));
}

TEST(RunCliTest, EveryUsageErrorExitsTwoWithOneLineNamingIt) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"m.onnx", "--bogus"}, "--bogus"},
      {{"a.onnx", "b.onnx"}, "b.onnx"},
      {{"m.onnx", "--batch"}, "--batch"},
      {{"m.onnx", "--iterations", "0"}, "--iterations"},
      {{"m.onnx", "--warmup", "x"}, "--warmup"},
      {{"m.onnx", "--rtol", "-1"}, "--rtol"},
      {{"m.onnx", "--device", "tpu"}, "tpu"},
      {{"m.onnx", "--input", "X"}, "--input"},
      {{"m.onnx", "--input", "X=random", "--input", "X=a.npy"}, "given twice"},
      {{"m.onnx", "--json=yes"}, "json"},
      {{"--no-broker"}, "no model"},
      {{"--variant", "fp32"}, "no model"},
  };
  for (const auto& [args, says] : cases) {
    const auto r = epbroker_run(args);
    EXPECT_EQ(r.exit_code, 2) << describe(r);
    EXPECT_THAT(r.err, HasSubstr(says)) << describe(r);
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << describe(r);
  }
}

TEST(RunCliTest, UnreachableBrokerExitsThreeWithAHint) {
  Files files;
  const auto r = epbroker_run({files.model, "--bus-address", "unix:path=/nonexistent/bus"});
  EXPECT_EQ(r.exit_code, 3) << describe(r);
  EXPECT_THAT(r.err, HasSubstr("--no-broker"));
}

TEST(RunCliTest, InputProblemsExitFour) {
  Files files;
  EXPECT_EQ(epbroker_run({(files.dir / "none.onnx").string(), "--no-broker"}).exit_code, 4);
  const auto f64 = epbroker_run({files.model, "--no-broker", "--input",
                                 "X=" + std::string(EPBROKER_CLIENT_ORT_DATA) + "/f64.npy"});
  EXPECT_EQ(f64.exit_code, 4) << describe(f64);
  EXPECT_THAT(f64.err, HasSubstr("not supported"));
  const auto shape = epbroker_run({files.model, "--no-broker", "--input",
                                   "X=" + std::string(EPBROKER_CLIENT_ORT_DATA) + "/f32_2x3.npy"});
  EXPECT_EQ(shape.exit_code, 4) << describe(shape);
  EXPECT_THAT(shape.err, HasSubstr("has shape [2,3], the model wants [3,4]"));
  const auto name = epbroker_run({files.model, "--no-broker", "--input", "Z=random"});
  EXPECT_EQ(name.exit_code, 4);
  EXPECT_THAT(name.err, HasSubstr("it has: X"));
}

TEST(RunCliTest, NoBrokerRunsOnTheCpuEpAndChecks) {
  Files files;
  const auto r =
      epbroker_run({files.model, "--no-broker", "--check", "--json", "--iterations", "3"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_FALSE(j.at("broker").at("used").get<bool>());
  EXPECT_NE(part(j, "CPUExecutionProvider"), nullptr);
  EXPECT_EQ(j.at("check").at("max_abs").get<double>(), 0.0);
}

TEST(RunCliTest, LibraryRegistersAPluginDirectlyWithoutTheBroker) {
  Files files;
  // No bus at all: --library must not contact the broker.
  const auto r =
      epbroker_run({files.model, "--library", "mine=" + std::string(EPBROKER_TEST_EP_LIBRARY),
                    "--ep", kTestEpName, "--check", "--json", "--iterations", "3", "--bus-address",
                    "unix:path=/nonexistent/bus"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_FALSE(j.at("broker").at("used").get<bool>());
  EXPECT_EQ(j.at("selection"), std::string("ep ") + kTestEpName);
  const auto* p = part(j, kTestEpName);
  ASSERT_NE(p, nullptr) << r.out;
  ASSERT_FALSE(p->at("devices").empty());
  EXPECT_EQ(p->at("devices")[0].at("library_path"),
            fs::canonical(EPBROKER_TEST_EP_LIBRARY).string());
  EXPECT_LE(j.at("check").at("max_abs").get<double>(), 1e-4);

  const auto bad = epbroker_run(
      {files.model, "--library", "mine=" + (files.dir / "nope.so").string(), "--ep", kTestEpName});
  EXPECT_EQ(bad.exit_code, 5) << describe(bad);
  EXPECT_THAT(bad.err, HasSubstr("could not register it"));
  EXPECT_EQ(epbroker_run({files.model, "--library", "=x"}).exit_code, 2);
}

}  // namespace
}  // namespace tests::client_ort
