#include "client/ep/ort_log.hpp"

namespace epbroker::meta_ep {

void Log::write(OrtLoggingLevel level, const std::string& message) const noexcept {
  if (api_ == nullptr || logger_ == nullptr) return;
  try {
    const std::string line = "epbroker_ep: " + message;
    if (OrtStatus* st = api_->Logger_LogMessage(logger_, level, line.c_str(), __FILE__, __LINE__,
                                                "epbroker_ep")) {
      api_->ReleaseStatus(st);
    }
  } catch (...) {  // std::bad_alloc building the line: nothing is logged
  }
}

}  // namespace epbroker::meta_ep
