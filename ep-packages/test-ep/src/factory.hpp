// The OrtEpFactory of the test EP: offers ORT's CPU hardware device under the EP
// name "EpbrokerTestEp" and creates TestEp instances for sessions.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ort_api.hpp"

namespace epbroker::test_ep {

class TestEpFactory : public OrtEpFactory {
 public:
  explicit TestEpFactory(const Api& api);

 private:
  static const char* ORT_API_CALL get_name_impl(const OrtEpFactory* this_ptr) noexcept;
  static const char* ORT_API_CALL get_vendor_impl(const OrtEpFactory* this_ptr) noexcept;
  static std::uint32_t ORT_API_CALL get_vendor_id_impl(const OrtEpFactory* this_ptr) noexcept;
  static const char* ORT_API_CALL get_version_impl(const OrtEpFactory* this_ptr) noexcept;
  static OrtStatus* ORT_API_CALL get_supported_devices_impl(
      OrtEpFactory* this_ptr, const OrtHardwareDevice* const* devices, std::size_t num_devices,
      OrtEpDevice** ep_devices, std::size_t max_ep_devices, std::size_t* num_ep_devices) noexcept;
  static OrtStatus* ORT_API_CALL create_ep_impl(OrtEpFactory* this_ptr,
                                                const OrtHardwareDevice* const* devices,
                                                const OrtKeyValuePairs* const* ep_metadata,
                                                std::size_t num_devices,
                                                const OrtSessionOptions* session_options,
                                                const OrtLogger* logger, OrtEp** ep) noexcept;
  static void ORT_API_CALL release_ep_impl(OrtEpFactory* this_ptr, OrtEp* ep) noexcept;
  static OrtStatus* ORT_API_CALL validate_compiled_model_impl(
      OrtEpFactory* this_ptr, const OrtHardwareDevice* const* devices, std::size_t num_devices,
      const char* compatibility_info, OrtCompiledModelCompatibility* compatibility) noexcept;
  static OrtStatus* ORT_API_CALL create_allocator_impl(OrtEpFactory* this_ptr,
                                                       const OrtMemoryInfo* memory_info,
                                                       const OrtKeyValuePairs* options,
                                                       OrtAllocator** allocator) noexcept;
  static void ORT_API_CALL release_allocator_impl(OrtEpFactory* this_ptr,
                                                  OrtAllocator* allocator) noexcept;
  static OrtStatus* ORT_API_CALL
  create_data_transfer_impl(OrtEpFactory* this_ptr, OrtDataTransferImpl** data_transfer) noexcept;
  static bool ORT_API_CALL is_stream_aware_impl(const OrtEpFactory* this_ptr) noexcept;
  static OrtStatus* ORT_API_CALL create_sync_stream_impl(OrtEpFactory* this_ptr,
                                                         const OrtMemoryDevice* memory_device,
                                                         const OrtKeyValuePairs* options,
                                                         OrtSyncStreamImpl** stream) noexcept;
  static OrtStatus* ORT_API_CALL
  incompatibility_details_impl(OrtEpFactory* this_ptr, const OrtHardwareDevice* hw,
                               OrtDeviceEpIncompatibilityDetails* details) noexcept;
  static OrtStatus* ORT_API_CALL
  create_resource_importer_impl(OrtEpFactory* this_ptr, const OrtEpDevice* ep_device,
                                OrtExternalResourceImporterImpl** importer) noexcept;
  static OrtStatus* ORT_API_CALL get_num_custom_op_domains_impl(OrtEpFactory* this_ptr,
                                                                std::size_t* num_domains) noexcept;
  static OrtStatus* ORT_API_CALL get_custom_op_domains_impl(OrtEpFactory* this_ptr,
                                                            OrtCustomOpDomain** domains,
                                                            std::size_t num_domains) noexcept;
  static OrtStatus* ORT_API_CALL select_best_model_candidate_impl(
      OrtEpFactory* this_ptr, const OrtHardwareDevice* device,
      const OrtKeyValuePairs* const* candidates, std::size_t num_candidates,
      const OrtSessionOptions* session_options, std::size_t* selected_index) noexcept;

  OrtStatus* get_supported_devices(const OrtHardwareDevice* const* devices, std::size_t num_devices,
                                   OrtEpDevice** ep_devices, std::size_t max_ep_devices,
                                   std::size_t* num_ep_devices);

  Api api_;
};

}  // namespace epbroker::test_ep
