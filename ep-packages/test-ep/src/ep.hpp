// The OrtEp of the test EP: claims float32 Add, Mul, Relu, MatMul and default Gemm
// nodes (each node becomes its own fused node) and computes them with the reference
// kernels of kernels.hpp in CPU memory.
#pragma once

#include <cstddef>
#include <source_location>
#include <string>

#include "ort_api.hpp"

namespace epbroker::test_ep {

class TestEp : public OrtEp {
 public:
  // `logger` is the session's logger; it outlives the EP.
  TestEp(const Api& api, const OrtLogger& logger);

 private:
  static const char* ORT_API_CALL get_name_impl(const OrtEp* this_ptr) noexcept;
  static OrtStatus* ORT_API_CALL get_capability_impl(OrtEp* this_ptr, const OrtGraph* graph,
                                                     OrtEpGraphSupportInfo* support) noexcept;
  static OrtStatus* ORT_API_CALL compile_impl(OrtEp* this_ptr, const OrtGraph** graphs,
                                              const OrtNode** fused_nodes, std::size_t count,
                                              OrtNodeComputeInfo** node_compute_infos,
                                              OrtNode** ep_context_nodes) noexcept;
  static void ORT_API_CALL release_node_compute_infos_impl(OrtEp* this_ptr,
                                                           OrtNodeComputeInfo** infos,
                                                           std::size_t count) noexcept;

  OrtStatus* get_capability(const OrtGraph* graph, OrtEpGraphSupportInfo* support) const;
  OrtStatus* compile_one(const OrtGraph* graph, const OrtNode* fused_node,
                         OrtNodeComputeInfo** info) const;
  void log(OrtLoggingLevel level, const std::string& message,
           std::source_location where = std::source_location::current()) const noexcept;

  Api api_;
  const OrtLogger& logger_;
};

}  // namespace epbroker::test_ep
