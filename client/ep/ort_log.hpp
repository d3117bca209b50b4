// Messages of libepbroker_ep.so through the OrtLogger that ORT hands to
// CreateEpFactories: they land where the app sends ORT's own log (stderr by
// default, at the env's severity: warnings and errors show, info does not).
#pragma once

#include <cstdint>
#include <string>

// onnxruntime_c_api.h includes the plugin-EP API at its end (which has no include
// guard of its own, so it is never included directly).
#include <onnxruntime_c_api.h>

namespace epbroker::meta_ep {

// The OrtApi version this library asks for: ORT 1.22, the first with the
// plugin-EP API (RegisterExecutionProviderLibrary, CreateEpFactories). Only
// functions of that version or older are called, so newer runtimes serve it too.
inline constexpr std::uint32_t kOrtApiVersion = 22;
// The oldest API that can still log why this library offers nothing.
inline constexpr std::uint32_t kOrtLogApiVersion = 15;  // Logger_LogMessage

class Log {
 public:
  Log(const OrtApi* api, const OrtLogger* logger) : api_(api), logger_(logger) {}

  void info(const std::string& message) const { write(ORT_LOGGING_LEVEL_INFO, message); }
  void warning(const std::string& message) const { write(ORT_LOGGING_LEVEL_WARNING, message); }
  void error(const std::string& message) const { write(ORT_LOGGING_LEVEL_ERROR, message); }

 private:
  // Prefixed "epbroker_ep: "; a logging failure is dropped (nothing to tell it to).
  void write(OrtLoggingLevel level, const std::string& message) const noexcept;

  const OrtApi* api_;
  const OrtLogger* logger_;
};

}  // namespace epbroker::meta_ep
