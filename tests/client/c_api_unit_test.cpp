// libepbroker's C API (<epbroker/epbroker.h>) without a bus: status names, policy
// names, NULL arguments, the per-thread last error, cancel handles, an unreachable bus,
// and NULL handles given to the free functions and accessors; the same for models
// (NULL arguments, the options handle, NULL model handles).
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <thread>

#include "epbroker/client.hpp"
#include "epbroker/epbroker.h"
#include "epbroker/version.hpp"

namespace {

using epbroker::Errc;

constexpr const char* kUnreachable = "unix:path=/nonexistent/epbroker-c-api-test/bus";

TEST(CApi, EveryStatusHasItsName) {
  const std::pair<epbroker_status, const char*> names[] = {
      {EPBROKER_OK, "OK"},
      {EPBROKER_ERR_NOT_FOUND, "NotFound"},
      {EPBROKER_ERR_NOT_AUTHORIZED, "NotAuthorized"},
      {EPBROKER_ERR_INVALID_ARGUMENT, "InvalidArgument"},
      {EPBROKER_ERR_INCOMPATIBLE, "Incompatible"},
      {EPBROKER_ERR_VERIFICATION_FAILED, "VerificationFailed"},
      {EPBROKER_ERR_NETWORK, "Network"},
      {EPBROKER_ERR_BUSY, "Busy"},
      {EPBROKER_ERR_CANCELLED, "Cancelled"},
      {EPBROKER_ERR_UNAVAILABLE, "Unavailable"},
      {EPBROKER_ERR_TIMEOUT, "Timeout"},
      {EPBROKER_ERR_PROTOCOL, "Protocol"},
      {EPBROKER_ERR_DISK_FULL, "DiskFull"},
      {EPBROKER_ERR_INTERNAL, "Internal"},
      {EPBROKER_ERR_NO_MEMORY, "NoMemory"},
  };
  int expected_value = 0;
  for (const auto& [status, name] : names) {
    EXPECT_EQ(status, expected_value++) << name << ": the values never change";
    EXPECT_STREQ(epbroker_status_name(status), name);
  }
  EXPECT_STREQ(epbroker_status_name(static_cast<epbroker_status>(15)), "Unknown");

  // 1..13 are the Errc values + 1, with epbrokerctl's names (errc_name).
  for (int e = 0; e <= static_cast<int>(Errc::internal); ++e) {
    const auto errc = static_cast<Errc>(e);
    EXPECT_EQ(std::string(epbroker_status_name(static_cast<epbroker_status>(e + 1))),
              epbroker::errc_name(errc));
  }
}

TEST(CApi, PolicyNamesRoundTrip) {
  for (int v = EPBROKER_POLICY_DEFAULT; v <= EPBROKER_POLICY_MIN_OVERALL_POWER; ++v) {
    const auto policy = static_cast<epbroker_policy>(v);
    const std::string name = epbroker_policy_name(policy);
    // The C++ API's words, in the same order.
    EXPECT_EQ(name, epbroker::to_string(static_cast<epbroker::Policy>(v)));
    epbroker_policy parsed = EPBROKER_POLICY_DEFAULT;
    ASSERT_EQ(epbroker_policy_parse(name.c_str(), &parsed), EPBROKER_OK) << name;
    EXPECT_EQ(parsed, policy) << name;
  }
  EXPECT_STREQ(epbroker_policy_name(EPBROKER_POLICY_PREFER_GPU), "prefer_gpu");
  EXPECT_STREQ(epbroker_policy_name(static_cast<epbroker_policy>(7)), "");

  epbroker_policy out = EPBROKER_POLICY_MAX_EFFICIENCY;
  EXPECT_EQ(epbroker_policy_parse("fastest", &out), EPBROKER_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(out, EPBROKER_POLICY_MAX_EFFICIENCY) << "written only on success";
  EXPECT_NE(std::string(epbroker_last_error_message()).find("'fastest'"), std::string::npos)
      << epbroker_last_error_message();
  EXPECT_STREQ(epbroker_last_error_bus_name(), "");
}

TEST(CApi, NullArgumentsAreRefusedByName) {
  epbroker_policy policy = EPBROKER_POLICY_DEFAULT;
  epbroker_device_list* devices = nullptr;
  epbroker_provider_list* providers = nullptr;
  epbroker_daemon_status* status = nullptr;
  epbroker_history_list* history = nullptr;
  epbroker_session* session = nullptr;
  epbroker_session_options* options = epbroker_session_options_new();
  ASSERT_NE(options, nullptr);
  // Each call, and the message it must leave (each failure replaces the thread's last).
  const std::pair<std::function<epbroker_status()>, const char*> cases[] = {
      {[&] { return epbroker_policy_parse(nullptr, &policy); },
       "epbroker_policy_parse: argument 'name' is NULL"},
      {[&] { return epbroker_policy_parse("default", nullptr); },
       "epbroker_policy_parse: argument 'out' is NULL"},
      {[&] { return epbroker_client_new(kUnreachable, nullptr); },
       "epbroker_client_new: argument 'out' is NULL"},
      {[&] { return epbroker_devices(nullptr, &devices); },
       "epbroker_devices: argument 'client' is NULL"},
      {[&] { return epbroker_providers(nullptr, &providers); },
       "epbroker_providers: argument 'client' is NULL"},
      {[&] { return epbroker_status_get(nullptr, &status); },
       "epbroker_status_get: argument 'client' is NULL"},
      {[&] {
         return epbroker_ensure_ready(nullptr, "test-ep", nullptr, nullptr, nullptr, nullptr);
       },
       "epbroker_ensure_ready: argument 'client' is NULL"},
      {[&] {
         return epbroker_install(nullptr, "test-ep", nullptr, 0, nullptr, nullptr, nullptr,
                                 nullptr);
       },
       "epbroker_install: argument 'client' is NULL"},
      {[&] { return epbroker_refresh(nullptr, nullptr, nullptr, nullptr, nullptr); },
       "epbroker_refresh: argument 'client' is NULL"},
      {[&] { return epbroker_update(nullptr, nullptr, 0, 1, nullptr, nullptr, nullptr, nullptr); },
       "epbroker_update: argument 'client' is NULL"},
      {[&] { return epbroker_hold(nullptr, "test-ep"); },
       "epbroker_hold: argument 'client' is NULL"},
      {[&] { return epbroker_unhold(nullptr, "test-ep"); },
       "epbroker_unhold: argument 'client' is NULL"},
      {[&] { return epbroker_rollback(nullptr, "test-ep", nullptr, nullptr); },
       "epbroker_rollback: argument 'client' is NULL"},
      {[&] { return epbroker_history(nullptr, nullptr, &history); },
       "epbroker_history: argument 'client' is NULL"},
      {[&] { return epbroker_gc(nullptr, nullptr); }, "epbroker_gc: argument 'client' is NULL"},
      {[&] { return epbroker_remove(nullptr, "test-ep", 0); },
       "epbroker_remove: argument 'client' is NULL"},
      {[&] { return epbroker_reset_remote(nullptr, "test"); },
       "epbroker_reset_remote: argument 'client' is NULL"},
      {[&] { return epbroker_verify(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr); },
       "epbroker_verify: argument 'client' is NULL"},
      {[&] { return epbroker_request_session(nullptr, nullptr, &session); },
       "epbroker_request_session: argument 'client' is NULL"},
      {[&] { return epbroker_session_release(nullptr); },
       "epbroker_session_release: argument 'session' is NULL"},
      {[&] { return epbroker_session_options_set_ort_version(nullptr, "1.30.0"); },
       "epbroker_session_options_set_ort_version: argument 'options' is NULL"},
      {[&] { return epbroker_session_options_add_provider(nullptr, "test-ep"); },
       "epbroker_session_options_add_provider: argument 'options' is NULL"},
      {[&] { return epbroker_session_options_add_provider(options, nullptr); },
       "epbroker_session_options_add_provider: argument 'name' is NULL"},
  };
  for (const auto& [call, message] : cases) {
    EXPECT_EQ(call(), EPBROKER_ERR_INVALID_ARGUMENT) << message;
    EXPECT_STREQ(epbroker_last_error_message(), message);
    EXPECT_STREQ(epbroker_last_error_bus_name(), "") << message;
  }
  EXPECT_EQ(policy, EPBROKER_POLICY_DEFAULT) << "outputs are written only on success";
  EXPECT_EQ(devices, nullptr);
  EXPECT_EQ(providers, nullptr);
  EXPECT_EQ(status, nullptr);
  EXPECT_EQ(history, nullptr);
  EXPECT_EQ(session, nullptr);

  // Optional arguments are not refused.
  EXPECT_EQ(epbroker_session_options_add_provider(options, "test-ep"), EPBROKER_OK);
  EXPECT_EQ(epbroker_session_options_set_ort_version(options, nullptr), EPBROKER_OK);
  EXPECT_EQ(epbroker_session_options_set_ort_version(options, "1.30.0"), EPBROKER_OK);
  epbroker_session_options_free(options);
}

TEST(CApi, TheLastErrorIsPerThread) {
  epbroker_policy out;
  ASSERT_EQ(epbroker_policy_parse("mine", &out), EPBROKER_ERR_INVALID_ARGUMENT);
  const std::string mine = epbroker_last_error_message();
  EXPECT_NE(mine.find("'mine'"), std::string::npos) << mine;

  std::string fresh;
  std::string theirs;
  std::thread other([&] {
    fresh = epbroker_last_error_message();
    epbroker_policy o;
    EXPECT_EQ(epbroker_policy_parse("theirs", &o), EPBROKER_ERR_INVALID_ARGUMENT);
    theirs = epbroker_last_error_message();
  });
  other.join();
  EXPECT_EQ(fresh, "") << "a thread starts with no error";
  EXPECT_NE(theirs.find("'theirs'"), std::string::npos) << theirs;
  EXPECT_EQ(std::string(epbroker_last_error_message()), mine) << "another thread's failure";

  // A call that succeeds leaves the message as it was.
  ASSERT_EQ(epbroker_policy_parse("prefer_npu", &out), EPBROKER_OK);
  EXPECT_EQ(std::string(epbroker_last_error_message()), mine);
}

TEST(CApi, CancelHandles) {
  epbroker_cancel* cancel = epbroker_cancel_new();
  ASSERT_NE(cancel, nullptr);
  EXPECT_EQ(epbroker_cancel_is_triggered(cancel), 0);
  std::thread([cancel] { epbroker_cancel_trigger(cancel); }).join();
  EXPECT_EQ(epbroker_cancel_is_triggered(cancel), 1);
  epbroker_cancel_trigger(cancel);  // stays set
  EXPECT_EQ(epbroker_cancel_is_triggered(cancel), 1);
  epbroker_cancel_free(cancel);

  epbroker_cancel* other = epbroker_cancel_new();
  EXPECT_EQ(epbroker_cancel_is_triggered(other), 0) << "each handle has its own flag";
  epbroker_cancel_free(other);

  epbroker_cancel_trigger(nullptr);
  EXPECT_EQ(epbroker_cancel_is_triggered(nullptr), 0);
}

TEST(CApi, AnUnreachableBusIsUnavailable) {
  auto* sentinel = reinterpret_cast<epbroker_client*>(0x1);
  epbroker_client* client = sentinel;
  EXPECT_EQ(epbroker_client_new(kUnreachable, &client), EPBROKER_ERR_UNAVAILABLE);
  EXPECT_EQ(client, sentinel) << "written only on success";
  const std::string message = epbroker_last_error_message();
  EXPECT_NE(message.find(kUnreachable), std::string::npos) << message;
  // The same error as the C++ API's.
  try {
    epbroker::Client cxx(epbroker::ClientOptions{kUnreachable});
    ADD_FAILURE() << "connected to " << kUnreachable;
  } catch (const epbroker::Error& e) {
    EXPECT_EQ(e.code(), Errc::unavailable);
    EXPECT_EQ(e.message(), message);
    EXPECT_EQ(e.bus_name(), epbroker_last_error_bus_name());
  }
}

TEST(CApi, FreeFunctionsAndAccessorsAcceptNull) {
  epbroker_string_free(nullptr);
  epbroker_cancel_free(nullptr);
  epbroker_client_free(nullptr);
  epbroker_device_list_free(nullptr);
  epbroker_provider_list_free(nullptr);
  epbroker_provider_free(nullptr);
  epbroker_daemon_status_free(nullptr);
  epbroker_update_list_free(nullptr);
  epbroker_history_list_free(nullptr);
  epbroker_removed_list_free(nullptr);
  epbroker_verify_list_free(nullptr);
  epbroker_session_options_free(nullptr);
  epbroker_session_free(nullptr);
  epbroker_session_options_set_policy(nullptr, EPBROKER_POLICY_PREFER_CPU);
  epbroker_session_options_set_download(nullptr, 1);

  EXPECT_EQ(epbroker_device_list_size(nullptr), 0U);
  EXPECT_EQ(epbroker_device_list_get(nullptr, 0), nullptr);
  EXPECT_STREQ(epbroker_device_id(nullptr), "");
  EXPECT_EQ(epbroker_device_isa(nullptr, 0), nullptr);
  EXPECT_EQ(epbroker_device_threads(nullptr), 0U);
  EXPECT_STREQ(epbroker_provider_name(nullptr), "");
  EXPECT_EQ(epbroker_provider_state_of(nullptr), EPBROKER_PROVIDER_UNKNOWN);
  EXPECT_EQ(epbroker_provider_version_info(nullptr, 0), nullptr);
  EXPECT_STREQ(epbroker_version_info_role(nullptr), "");
  EXPECT_STREQ(epbroker_progress_state_name(nullptr), "");
  EXPECT_EQ(epbroker_progress_state(nullptr), EPBROKER_JOB_UNKNOWN);
  EXPECT_EQ(epbroker_daemon_status_job(nullptr, 0), nullptr);
  EXPECT_EQ(epbroker_job_info_progress(nullptr), nullptr);
  EXPECT_STREQ(epbroker_job_info_error(nullptr), "");
  EXPECT_STREQ(epbroker_session_path(nullptr), "");
  EXPECT_EQ(epbroker_session_provider(nullptr, 0), nullptr);
  EXPECT_STREQ(epbroker_history_entry_action(nullptr), "");
  EXPECT_STREQ(epbroker_update_change_to(nullptr), "");
  EXPECT_STREQ(epbroker_removed_version(nullptr), "");
  EXPECT_EQ(epbroker_verify_result_ok(nullptr), 0);
}

TEST(CApi, ModelNullArgumentsAreRefusedByName) {
  epbroker_model_list* models = nullptr;
  epbroker_model_lease* lease = nullptr;
  epbroker_removed_model_list* removed = nullptr;
  // Each call, and the message it must leave.
  const std::pair<std::function<epbroker_status()>, const char*> cases[] = {
      {[&] { return epbroker_models(nullptr, EPBROKER_POLICY_DEFAULT, nullptr, &models); },
       "epbroker_models: argument 'client' is NULL"},
      {[&] {
         return epbroker_ensure_model(nullptr, "tiny-net", nullptr, nullptr, nullptr, nullptr,
                                      &lease);
       },
       "epbroker_ensure_model: argument 'client' is NULL"},
      {[&] { return epbroker_remove_model(nullptr, "tiny-net", nullptr, nullptr, 0, &removed); },
       "epbroker_remove_model: argument 'client' is NULL"},
      {[&] { return epbroker_model_lease_release(nullptr); },
       "epbroker_model_lease_release: argument 'lease' is NULL"},
      {[&] { return epbroker_model_options_set_variant(nullptr, "fp32"); },
       "epbroker_model_options_set_variant: argument 'options' is NULL"},
      {[&] { return epbroker_model_options_set_version(nullptr, "1.0"); },
       "epbroker_model_options_set_version: argument 'options' is NULL"},
      {[&] { return epbroker_model_options_set_ort_version(nullptr, "1.30.0"); },
       "epbroker_model_options_set_ort_version: argument 'options' is NULL"},
  };
  for (const auto& [call, message] : cases) {
    EXPECT_EQ(call(), EPBROKER_ERR_INVALID_ARGUMENT) << message;
    EXPECT_STREQ(epbroker_last_error_message(), message);
    EXPECT_STREQ(epbroker_last_error_bus_name(), "") << message;
  }
  EXPECT_EQ(models, nullptr) << "outputs are written only on success";
  EXPECT_EQ(lease, nullptr);
  EXPECT_EQ(removed, nullptr);
}

TEST(CApi, ModelOptionsHandle) {
  epbroker_model_options* options = epbroker_model_options_new();
  ASSERT_NE(options, nullptr);
  EXPECT_EQ(epbroker_model_options_set_variant(options, "fp32"), EPBROKER_OK);
  EXPECT_EQ(epbroker_model_options_set_version(options, "1.0"), EPBROKER_OK);
  EXPECT_EQ(epbroker_model_options_set_ort_version(options, "1.30.0"), EPBROKER_OK);
  // NULL strings are "" (the defaults), not errors.
  EXPECT_EQ(epbroker_model_options_set_variant(options, nullptr), EPBROKER_OK);
  EXPECT_EQ(epbroker_model_options_set_version(options, nullptr), EPBROKER_OK);
  EXPECT_EQ(epbroker_model_options_set_ort_version(options, nullptr), EPBROKER_OK);
  // The setters that cannot fail; a policy outside the enum is refused by
  // epbroker_ensure_model (client_c_api_integration), not here.
  epbroker_model_options_set_policy(options, EPBROKER_POLICY_PREFER_NPU);
  epbroker_model_options_set_policy(options, static_cast<epbroker_policy>(7));
  epbroker_model_options_set_download(options, 0);
  epbroker_model_options_free(options);

  epbroker_model_options* other = epbroker_model_options_new();
  EXPECT_NE(other, nullptr) << "each call makes a handle";
  epbroker_model_options_free(other);
}

TEST(CApi, ModelHandlesAcceptNull) {
  epbroker_model_list_free(nullptr);
  epbroker_model_options_free(nullptr);
  epbroker_model_lease_free(nullptr);
  epbroker_removed_model_list_free(nullptr);
  epbroker_model_options_set_policy(nullptr, EPBROKER_POLICY_PREFER_CPU);
  epbroker_model_options_set_download(nullptr, 1);

  EXPECT_EQ(epbroker_model_list_size(nullptr), 0U);
  EXPECT_EQ(epbroker_model_list_get(nullptr, 0), nullptr);
  EXPECT_STREQ(epbroker_model_name(nullptr), "");
  EXPECT_STREQ(epbroker_model_license_url(nullptr), "");
  EXPECT_STREQ(epbroker_model_state(nullptr), "");
  EXPECT_STREQ(epbroker_model_planned(nullptr), "");
  EXPECT_STREQ(epbroker_model_plan_reason(nullptr), "");
  EXPECT_EQ(epbroker_model_variant_count(nullptr), 0U);
  EXPECT_EQ(epbroker_model_variant_info(nullptr, 0), nullptr);
  EXPECT_STREQ(epbroker_variant_info_id(nullptr), "");
  EXPECT_EQ(epbroker_variant_info_device_count(nullptr), 0U);
  EXPECT_EQ(epbroker_variant_info_device(nullptr, 0), nullptr);
  EXPECT_EQ(epbroker_variant_info_ep(nullptr, 0), nullptr);
  EXPECT_EQ(epbroker_variant_info_opset(nullptr), 0U);
  EXPECT_EQ(epbroker_variant_info_size(nullptr), 0U);
  EXPECT_EQ(epbroker_variant_info_installed(nullptr), 0);
  EXPECT_STREQ(epbroker_model_lease_name(nullptr), "");
  EXPECT_STREQ(epbroker_model_lease_main(nullptr), "");
  EXPECT_EQ(epbroker_model_lease_file_count(nullptr), 0U);
  EXPECT_EQ(epbroker_model_lease_file(nullptr, 0), nullptr);
  EXPECT_EQ(epbroker_model_lease_ep(nullptr, 0), nullptr);
  EXPECT_STREQ(epbroker_model_lease_session_path(nullptr), "");
  EXPECT_EQ(epbroker_model_lease_active(nullptr), 0);
  EXPECT_EQ(epbroker_removed_model_list_size(nullptr), 0U);
  EXPECT_EQ(epbroker_removed_model_list_get(nullptr, 0), nullptr);
  EXPECT_STREQ(epbroker_removed_model_variant(nullptr), "");
}

TEST(CApi, VersionIsTheLibrarys) { EXPECT_STREQ(epbroker_version(), EPBROKER_VERSION_STRING); }

}  // namespace
