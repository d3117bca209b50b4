// <epbroker/ort.hpp> against a live broker (private bus, signed catalog on
// loopback) and the real ORT this binary links: registration (idempotent, ort_min
// checked), the seven policies, an explicit EP, and ensure_and_register.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <epbroker/ort.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/client-ort/broker_fixture.hpp"
#include "tests/ort/support/ep_registration.hpp"
#include "tests/ort/support/mixed_model.hpp"
#include "tests/ort/support/node_test.hpp"

namespace tests::client_ort {
namespace {

using ::testing::HasSubstr;
using tests::ort::test_env;

// How many EP devices the env offers for test-ep's EP.
std::size_t test_ep_devices() { return tests::ort::ep_devices_for(test_env(), kTestEpName).size(); }

const epbroker::SkippedProvider* skipped(const epbroker::Registration& r, const std::string& name) {
  for (const auto& s : r.skipped) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

const epbroker::RegisteredProvider* registered(const epbroker::Registration& r,
                                               const std::string& name) {
  for (const auto& p : r.registered) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

class GlueTest : public BrokerTest {
 protected:
  // A session leasing test-ep (installed first).
  epbroker::Session test_ep_session() {
    install(kTestEp);
    epbroker::SessionOptions so;
    so.providers = {kTestEp};
    return client().request_session(so);
  }
};

TEST(VersionTest, ParsesAndOrders) {
  using epbroker::detail::parse_version;
  EXPECT_EQ(parse_version("1.30.0"), (std::array<unsigned long, 3>{1, 30, 0}));
  EXPECT_EQ(parse_version("1.29"), (std::array<unsigned long, 3>{1, 29, 0}));
  EXPECT_EQ(parse_version("1.31.0-dev"), (std::array<unsigned long, 3>{1, 31, 0}));
  EXPECT_LT(*parse_version("1.9.0"), *parse_version("1.29.0"));
  EXPECT_FALSE(parse_version(""));
  EXPECT_FALSE(parse_version("v1.2"));
  EXPECT_FALSE(parse_version("1..2"));
  EXPECT_FALSE(parse_version("1.2x"));
  EXPECT_EQ(epbroker::ort_version(), Ort::GetVersionString());
}

TEST(PolicyMapTest, MapsOneToOne) {
  using epbroker::Policy;
  using epbroker::detail::to_ort_policy;
  EXPECT_EQ(to_ort_policy(Policy::default_policy), OrtExecutionProviderDevicePolicy_DEFAULT);
  EXPECT_EQ(to_ort_policy(Policy::prefer_cpu), OrtExecutionProviderDevicePolicy_PREFER_CPU);
  EXPECT_EQ(to_ort_policy(Policy::prefer_gpu), OrtExecutionProviderDevicePolicy_PREFER_GPU);
  EXPECT_EQ(to_ort_policy(Policy::prefer_npu), OrtExecutionProviderDevicePolicy_PREFER_NPU);
  EXPECT_EQ(to_ort_policy(Policy::max_performance),
            OrtExecutionProviderDevicePolicy_MAX_PERFORMANCE);
  EXPECT_EQ(to_ort_policy(Policy::max_efficiency), OrtExecutionProviderDevicePolicy_MAX_EFFICIENCY);
  EXPECT_EQ(to_ort_policy(Policy::min_overall_power),
            OrtExecutionProviderDevicePolicy_MIN_OVERALL_POWER);
}

TEST_F(GlueTest, RegistersTestEpOncePerEnv) {
  const epbroker::Session session = test_ep_session();
  ASSERT_EQ(test_ep_devices(), 0U);

  const auto first = epbroker::register_providers(test_env(), session);
  const auto* p = registered(first, kTestEp);
  ASSERT_NE(p, nullptr) << (first.skipped.empty() ? "" : first.skipped[0].reason);
  EXPECT_FALSE(p->already);
  EXPECT_EQ(p->ep_names, std::vector<std::string>{kTestEpName});
  EXPECT_THAT(p->library_path, HasSubstr(bus_->store_dir().string()));
  EXPECT_EQ(test_ep_devices(), 1U);

  // Again, and through a second Ort::Env (ORT shares one OrtEnv): a no-op.
  const auto second = epbroker::register_providers(test_env(), session);
  ASSERT_NE(registered(second, kTestEp), nullptr);
  EXPECT_TRUE(registered(second, kTestEp)->already);
  Ort::Env other(ORT_LOGGING_LEVEL_ERROR, "other");
  const auto third = epbroker::register_providers(other, session);
  ASSERT_NE(registered(third, kTestEp), nullptr);
  EXPECT_TRUE(registered(third, kTestEp)->already);
  EXPECT_EQ(test_ep_devices(), 1U);
}

TEST_F(GlueTest, LibraryTheAppRegisteredItselfIsNotRegisteredAgain) {
  const epbroker::Session session = test_ep_session();
  const std::string library = session.ready_providers().at(0).library_path;
  tests::ort::ScopedPlugin own(test_env(), "my-own-name", library);
  const auto r = epbroker::register_providers(test_env(), session);
  ASSERT_NE(registered(r, kTestEp), nullptr);
  EXPECT_TRUE(registered(r, kTestEp)->already);
  EXPECT_EQ(test_ep_devices(), 1U);
}

TEST_F(GlueTest, OlderAppOrtIsSkippedWithTheReason) {
  const epbroker::Session session = test_ep_session();
  // test-ep's ort_min is 1.29.0.
  const auto r = epbroker::register_providers(test_env(), session, "1.28.3");
  EXPECT_TRUE(r.registered.empty());
  const auto* s = skipped(r, kTestEp);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->code, epbroker::SkipCode::ort_too_old);
  EXPECT_THAT(s->reason, HasSubstr("needs ONNX Runtime >= 1.29.0"));
  EXPECT_THAT(s->reason, HasSubstr("1.28.3"));
  EXPECT_EQ(test_ep_devices(), 0U);
}

TEST_F(GlueTest, PackageNeedingANewerOrtThanThisOneIsNeverRegistered) {
  install(kFutureEp);
  epbroker::SessionOptions so;
  so.providers = {kFutureEp};
  const epbroker::Session session = client().request_session(so);
  ASSERT_EQ(session.ready_providers().size(), 1U);  // the daemon was not told our version
  const auto r = epbroker::register_providers(test_env(), session);
  EXPECT_TRUE(r.registered.empty());
  const auto* s = skipped(r, kFutureEp);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->code, epbroker::SkipCode::ort_too_old);
  EXPECT_THAT(s->reason, HasSubstr("99.0.0"));
  EXPECT_THAT(s->reason, HasSubstr(Ort::GetVersionString()));
  EXPECT_EQ(test_ep_devices(), 0U);
}

TEST_F(GlueTest, ExplicitEpRunsOnIt) {
  const epbroker::Session session = test_ep_session();
  epbroker::register_providers(test_env(), session);
  support::TempDir tmp;
  Ort::SessionOptions so;
  tests::ort::record_ep_assignment(so);
  tests::ort::enable_profiling(so, tmp / "profile");
  epbroker::DeviceChoice choice;
  choice.ep_name = kTestEpName;
  const epbroker::Selection sel = epbroker::configure(so, test_env(), choice);
  EXPECT_EQ(sel.ep_name, kTestEpName);
  ASSERT_EQ(sel.devices.size(), 1U);
  EXPECT_EQ(sel.devices[0].type, "cpu");
  EXPECT_THAT(sel.devices[0].library_path, HasSubstr(bus_->store_dir().string()));

  const std::string model = tests::ort::mixed_model_bytes();
  Ort::Session s(test_env(), model.data(), model.size(), so);
  const auto in = tests::ort::mixed_model_inputs();
  auto x = tests::ort::as_ort_value(in[0]);
  const char* in_names[] = {"X"};
  const char* out_names[] = {"Y"};
  auto out = s.Run(Ort::RunOptions{}, in_names, &x, 1, out_names, 1);
  const auto got = tests::ort::to_tensor(out[0], "Y");
  ASSERT_TRUE(got.has_value()) << got.error();
  EXPECT_EQ(tests::ort::compare_tensors(tests::ort::mixed_model_reference()[0], *got),
            std::nullopt);
  const auto ops = tests::ort::ops_by_ep(tests::ort::ep_assignment(s));
  ASSERT_TRUE(ops.contains(kTestEpName))
      << tests::ort::describe_assignment(tests::ort::ep_assignment(s));
  EXPECT_TRUE(ops.at(kTestEpName).contains("Relu"));
  const auto prof = tests::ort::end_profiling(s);
  ASSERT_TRUE(prof.has_value()) << prof.error();
  EXPECT_TRUE(tests::ort::providers_of(*prof).contains(kTestEpName));
}

TEST_F(GlueTest, ExplicitChoiceOfAnAbsentEpSaysWhatThereIs) {
  Ort::SessionOptions so;
  epbroker::DeviceChoice choice;
  choice.ep_name = "NoSuchExecutionProvider";
  try {
    epbroker::configure(so, test_env(), choice);
    FAIL() << "configure accepted an absent EP";
  } catch (const epbroker::Error& e) {
    EXPECT_EQ(e.code(), epbroker::Errc::not_found);
    EXPECT_THAT(e.message(), HasSubstr("CPUExecutionProvider/cpu"));
  }
}

TEST_F(GlueTest, EnsureAndRegisterInstallsAndReportsEverything) {
  std::vector<epbroker::Progress> progress;
  const auto r = epbroker::ensure_and_register(
      client(), test_env(), [&](const epbroker::Progress& p) { progress.push_back(p); });
  EXPECT_TRUE(r.session.active());
  ASSERT_NE(registered(r.registration, kTestEp), nullptr);
  EXPECT_EQ(test_ep_devices(), 1U);
  // Progress of test-ep's install: monotone, ending done with every byte.
  ASSERT_FALSE(progress.empty());
  for (std::size_t i = 1; i < progress.size(); ++i) {
    if (progress[i].job == progress[i - 1].job) {
      EXPECT_GE(progress[i].bytes_done, progress[i - 1].bytes_done);
    }
  }
  EXPECT_EQ(progress.back().target, kTestEp);
  EXPECT_EQ(progress.back().state, epbroker::JobState::done);
  EXPECT_EQ(progress.back().bytes_done, progress.back().bytes_total);
  // future-ep: too new for this ORT, so not even downloaded; the runtime: not an EP.
  const auto* future = skipped(r.registration, kFutureEp);
  ASSERT_NE(future, nullptr);
  EXPECT_EQ(future->code, epbroker::SkipCode::ort_too_old);
  const auto* runtime = skipped(r.registration, kRuntime);
  ASSERT_NE(runtime, nullptr);
  EXPECT_EQ(runtime->code, epbroker::SkipCode::runtime_package);
  for (const auto& p : client().providers()) {
    if (p.name == kFutureEp || p.name == kRuntime) {
      EXPECT_EQ(p.state, epbroker::ProviderState::available) << p.name;
    }
    if (p.name == kRuntime) {
      EXPECT_EQ(p.kind, "runtime");
    }
    if (p.name == kTestEp) {
      EXPECT_EQ(p.kind, "execution_provider");
    }
  }
  // A second call registers nothing new and installs nothing.
  progress.clear();
  const auto again = epbroker::ensure_and_register(
      client(), test_env(), [&](const epbroker::Progress& p) { progress.push_back(p); });
  EXPECT_TRUE(progress.empty());
  ASSERT_NE(registered(again.registration, kTestEp), nullptr);
  EXPECT_TRUE(registered(again.registration, kTestEp)->already);
  EXPECT_EQ(test_ep_devices(), 1U);
}

// ---- every policy yields a valid session and a correct run on this machine.

class PolicyTest : public GlueTest, public ::testing::WithParamInterface<epbroker::Policy> {};

TEST_P(PolicyTest, YieldsAWorkingSession) {
  epbroker::EnsureOptions eo;
  eo.policy = GetParam();
  const auto r = epbroker::ensure_and_register(client(), test_env(), {}, eo);
  ASSERT_NE(registered(r.registration, kTestEp), nullptr);
  const auto out = tests::ort::run_model_bytes(
      test_env(), tests::ort::mixed_model_bytes(), tests::ort::mixed_model_inputs(),
      [&](Ort::SessionOptions& so) { epbroker::configure(so, test_env(), GetParam()); });
  ASSERT_TRUE(out.has_value()) << out.error();
  EXPECT_EQ(tests::ort::compare_outputs(tests::ort::mixed_model_reference(), *out), std::nullopt);
}

INSTANTIATE_TEST_SUITE_P(
    All, PolicyTest,
    ::testing::Values(epbroker::Policy::default_policy, epbroker::Policy::prefer_cpu,
                      epbroker::Policy::prefer_gpu, epbroker::Policy::prefer_npu,
                      epbroker::Policy::max_performance, epbroker::Policy::max_efficiency,
                      epbroker::Policy::min_overall_power),
    [](const ::testing::TestParamInfo<epbroker::Policy>& p) {
      return std::string(epbroker::to_string(p.param));
    });

}  // namespace
}  // namespace tests::client_ort
