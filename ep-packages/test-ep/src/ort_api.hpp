// The ONNX Runtime C API as the test EP sees it, and small helpers around OrtStatus.
//
// The plugin never links libonnxruntime: every call goes through the OrtApi/OrtEpApi
// tables that ORT hands to CreateEpFactories. Callbacks that ORT invokes are C
// functions: they are noexcept and report failures as OrtStatus*, never as exceptions.
#pragma once

// onnxruntime_c_api.h includes the plugin-EP API (onnxruntime_ep_c_api.h) at its end;
// that header has no include guard of its own, so it is never included directly.
#include <onnxruntime_c_api.h>

#include <cstdint>
#include <exception>
#include <new>
#include <string>

namespace epbroker::test_ep {

// Names the EP registers under, and what ORT reports for it.
inline constexpr const char* kEpName = "EpbrokerTestEp";
inline constexpr const char* kEpVendor = "epbroker";
inline constexpr const char* kEpVersion = "0.1.0";
// The ORT API version the plugin asks for (ORT 1.29); newer runtimes serve it too.
inline constexpr std::uint32_t kOrtApiVersion = 29;
static_assert(ORT_API_VERSION >= kOrtApiVersion, "ONNX Runtime headers older than 1.29");

// The API tables, valid for the life of the plugin.
struct Api {
  const OrtApi* ort = nullptr;
  const OrtEpApi* ep = nullptr;
};

inline OrtStatus* make_status(const Api& api, OrtErrorCode code, const std::string& message) {
  return api.ort->CreateStatus(code, message.c_str());
}

// Runs `body` (which returns OrtStatus*) and turns any exception into an OrtStatus,
// so that nothing unwinds through ORT's C frames.
template <typename Body>
OrtStatus* guard(const Api& api, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return api.ort->CreateStatus(ORT_FAIL, "EpbrokerTestEp: out of memory");
  } catch (const std::exception& e) {
    return api.ort->CreateStatus(ORT_EP_FAIL, e.what());
  } catch (...) {
    return api.ort->CreateStatus(ORT_EP_FAIL, "EpbrokerTestEp: unknown exception");
  }
}

}  // namespace epbroker::test_ep

// Returns the OrtStatus* of `expr` from the enclosing function when it is an error.
#define TEST_EP_RETURN_IF_ERROR(expr)          \
  do {                                         \
    if (OrtStatus* test_ep_status_ = (expr)) { \
      return test_ep_status_;                  \
    }                                          \
  } while (false)
