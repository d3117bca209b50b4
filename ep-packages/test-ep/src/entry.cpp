// The library's only exported symbols: the plugin-EP entry points ORT looks up
// after dlopen() (see exports.map).
#include <cstddef>
#include <new>

#include "factory.hpp"
#include "ort_api.hpp"

#define TEST_EP_EXPORT __attribute__((visibility("default")))

extern "C" {

TEST_EP_EXPORT OrtStatus* CreateEpFactories(const char* registered_name,
                                            const OrtApiBase* ort_api_base,
                                            const OrtLogger* default_logger,
                                            OrtEpFactory** factories, std::size_t max_factories,
                                            std::size_t* num_factories) noexcept;
TEST_EP_EXPORT OrtStatus* ReleaseEpFactory(OrtEpFactory* factory) noexcept;

OrtStatus* CreateEpFactories(const char* /*registered_name*/, const OrtApiBase* ort_api_base,
                             const OrtLogger* /*default_logger*/, OrtEpFactory** factories,
                             std::size_t max_factories, std::size_t* num_factories) noexcept {
  using epbroker::test_ep::Api;
  using epbroker::test_ep::kOrtApiVersion;
  *num_factories = 0;
  // Version 1 of the API always exists; it is used to report a too old runtime.
  const OrtApi* ort = ort_api_base->GetApi(kOrtApiVersion);
  if (ort == nullptr) {
    const OrtApi* v1 = ort_api_base->GetApi(1);
    return v1 == nullptr ? nullptr
                         : v1->CreateStatus(ORT_NOT_IMPLEMENTED,
                                            "EpbrokerTestEp needs ONNX Runtime 1.29 or newer");
  }
  const Api api{ort, ort->GetEpApi()};
  if (api.ep == nullptr) {
    return ort->CreateStatus(ORT_NOT_IMPLEMENTED, "EpbrokerTestEp: runtime has no plugin-EP API");
  }
  if (max_factories < 1) {
    return ort->CreateStatus(ORT_INVALID_ARGUMENT, "EpbrokerTestEp: no room for its factory");
  }
  auto* factory = new (std::nothrow) epbroker::test_ep::TestEpFactory(api);
  if (factory == nullptr) return ort->CreateStatus(ORT_FAIL, "EpbrokerTestEp: out of memory");
  factories[0] = factory;
  *num_factories = 1;
  return nullptr;
}

OrtStatus* ReleaseEpFactory(OrtEpFactory* factory) noexcept {
  delete static_cast<epbroker::test_ep::TestEpFactory*>(factory);
  return nullptr;
}

}  // extern "C"
