// The shared runtime: this binary is built against ORT's headers only, with
// ORT_API_MANUAL_INIT and without libonnxruntime (CMake checks that it has no such
// NEEDED entry). load_runtime() opens the store's ONNX Runtime package, and the C++
// API, plugin registration and inference all go through it.
#ifndef ORT_API_MANUAL_INIT
#error "build with ORT_API_MANUAL_INIT: this app must not use a linked ORT"
#endif

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <epbroker/ort.hpp>

#include <fstream>
#include <string>
#include <vector>

#include "tests/client-ort/broker_fixture.hpp"

namespace tests::client_ort {
namespace {

using ::testing::HasSubstr;

// The mapped files of this process whose name contains "libonnxruntime".
std::vector<std::string> mapped_onnxruntimes() {
  std::ifstream maps("/proc/self/maps");
  std::vector<std::string> out;
  std::string line;
  while (std::getline(maps, line)) {
    const auto slash = line.find('/');
    if (slash == std::string::npos || line.find("libonnxruntime") == std::string::npos) continue;
    const std::string path = line.substr(slash);
    if (std::find(out.begin(), out.end(), path) == out.end()) out.push_back(path);
  }
  return out;
}

TEST(RuntimeOpenTest, RefusesWhatIsNotAnOnnxRuntime) {
  try {
    (void)epbroker::Runtime::open("/nonexistent/libonnxruntime.so.1");
    FAIL() << "opened a missing file";
  } catch (const epbroker::Error& e) {
    EXPECT_EQ(e.code(), epbroker::Errc::incompatible);
    EXPECT_THAT(e.message(), HasSubstr("cannot load ONNX Runtime /nonexistent"));
  }
  // A real shared library without OrtGetApiBase: test-ep's plugin.
  const std::string plugin = std::string(EPBROKER_TEST_EP_STAGE) + "/lib/libepbroker_test_ep.so";
  try {
    (void)epbroker::Runtime::open(plugin);
    FAIL() << "opened a plugin EP as a runtime";
  } catch (const epbroker::Error& e) {
    EXPECT_EQ(e.code(), epbroker::Errc::incompatible);
    EXPECT_THAT(e.message(), HasSubstr("no OrtGetApiBase"));
  }
  EXPECT_TRUE(mapped_onnxruntimes().empty());
}

class RuntimeTest : public BrokerTest {};

TEST_F(RuntimeTest, SessionWithoutTheRuntimeSaysWhatToDo) {
  install(kTestEp);
  epbroker::SessionOptions so;
  so.providers = {kTestEp, kRuntime};  // the runtime is only "available"
  const epbroker::Session session = client().request_session(so);
  try {
    (void)epbroker::load_runtime(session);
    FAIL() << "load_runtime succeeded without a ready runtime";
  } catch (const epbroker::Error& e) {
    EXPECT_EQ(e.code(), epbroker::Errc::not_found);
    EXPECT_THAT(e.message(), HasSubstr("epbrokerctl install onnxruntime"));
  }
}

TEST_F(RuntimeTest, StoreRuntimeRunsAModelWithABrokeredPlugin) {
  ASSERT_TRUE(mapped_onnxruntimes().empty()) << "an ORT is linked: " << mapped_onnxruntimes()[0];
  install(kTestEp);
  install(kRuntime);
  epbroker::SessionOptions so;
  so.providers = {kTestEp, kRuntime};
  const epbroker::Session session = client().request_session(so);

  const epbroker::Runtime rt = epbroker::load_runtime(session);
  ASSERT_TRUE(rt);
  EXPECT_STREQ(rt.api_base()->GetVersionString(), "1.30.0");
  EXPECT_EQ(rt.version(), "1.30.0");
  EXPECT_THAT(rt.library_path(), HasSubstr(bus_->store_dir().string()));
  EXPECT_THAT(mapped_onnxruntimes(), ::testing::ElementsAre(HasSubstr(bus_->store_dir().string())));
  rt.init_cxx_api();
  EXPECT_EQ(epbroker::ort_version(), "1.30.0");

  // Plugin EPs register into the store's runtime like into any other.
  Ort::Env env(ORT_LOGGING_LEVEL_ERROR, "runtime-test");
  const auto reg = epbroker::register_providers(env, session);
  ASSERT_EQ(reg.registered.size(), 1U);
  EXPECT_EQ(reg.registered[0].name, kTestEp);
  ASSERT_EQ(reg.skipped.size(), 1U);
  EXPECT_EQ(reg.skipped[0].code, epbroker::SkipCode::runtime_package);

  // Add over [2,3] on test-ep alone (CPU fallback off): the whole graph ran on it.
  Ort::SessionOptions options;
  options.AddConfigEntry("session.disable_cpu_ep_fallback", "1");
  epbroker::DeviceChoice choice;
  choice.ep_name = kTestEpName;
  epbroker::configure(options, env, choice);
  const std::string model_path =
      std::string(EPBROKER_ONNX_TESTDATA) + "/node/test_add_bcast/model.onnx";
  Ort::Session s(env, model_path.c_str(), options);
  // test_add_bcast: x[3,4,5] + y[5].
  std::vector<float> x(60);
  std::vector<float> y(5);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) * 0.5F;
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = static_cast<float>(i) - 2.0F;
  const std::vector<std::int64_t> xs{3, 4, 5};
  const std::vector<std::int64_t> ys{5};
  const auto mem = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
  std::vector<Ort::Value> in;
  in.push_back(Ort::Value::CreateTensor<float>(mem, x.data(), x.size(), xs.data(), xs.size()));
  in.push_back(Ort::Value::CreateTensor<float>(mem, y.data(), y.size(), ys.data(), ys.size()));
  const char* in_names[] = {"x", "y"};
  const char* out_names[] = {"sum"};
  auto out = s.Run(Ort::RunOptions{}, in_names, in.data(), in.size(), out_names, 1);
  ASSERT_EQ(out.size(), 1U);
  const float* sum = out[0].GetTensorData<float>();
  for (std::size_t i = 0; i < x.size(); ++i) ASSERT_EQ(sum[i], x[i] + y[i % 5]) << i;
}

}  // namespace
}  // namespace tests::client_ort
