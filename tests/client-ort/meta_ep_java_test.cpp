// libepbroker_ep.so from Java: ONNX Runtime's Java binding (1.29.0 from Maven
// Central, its own libonnxruntime inside) registers the broker's library with
// one line and runs test_matmul_2d on test-ep alone (java/MetaEpApp.java),
// against a live broker on a private bus.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "tests/client-ort/broker_fixture.hpp"

namespace tests::client_ort {
namespace {

using ::testing::HasSubstr;
using tests::daemon::run_command;

tests::daemon::CommandResult java_app() {
  return run_command(
      {EPBROKER_JAVA, "-cp", std::string(EPBROKER_ORT_JAVA_JAR) + ":" + EPBROKER_JAVA_CLASSES,
       "MetaEpApp", EPBROKER_META_EP_LIBRARY,
       std::string(EPBROKER_ONNX_TESTDATA) + "/node/test_matmul_2d/model.onnx"},
      std::chrono::seconds(180));
}

class MetaEpJavaTest : public BrokerTest {};

TEST_F(MetaEpJavaTest, OneLineInJavaRunsTheBrokeredEpAlone) {
  install(kTestEp);
  ::setenv("EPBROKER_BUS_ADDRESS", bus_address().c_str(), 1);
  const auto r = java_app();
  ::unsetenv("EPBROKER_BUS_ADDRESS");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  // The binding's own ORT told the daemon its version; test-ep needs 1.29.0.
  EXPECT_THAT(r.out, HasSubstr("ort 1.29.0\n"));
  EXPECT_THAT(r.out, HasSubstr("devices 1\n")) << r.err;
  EXPECT_THAT(r.out, HasSubstr("library_path " +
                               std::filesystem::canonical(EPBROKER_META_EP_LIBRARY).string()));
  EXPECT_THAT(r.out, HasSubstr("maxdiff 0.0\n")) << r.out;
  EXPECT_THAT(r.out, HasSubstr("done\n"));
}

TEST_F(MetaEpJavaTest, WithNoDaemonJavaKeepsTheCpuEpAndLogsWhy) {
  ::setenv("EPBROKER_BUS_ADDRESS", "unix:path=/nonexistent/epbroker-bus", 1);
  const auto r = java_app();
  ::unsetenv("EPBROKER_BUS_ADDRESS");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("devices 0\n"));
  EXPECT_THAT(r.err, HasSubstr("epbroker_ep: no brokered execution providers"));
}

}  // namespace
}  // namespace tests::client_ort
