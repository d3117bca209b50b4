#include "factory.hpp"

#include <limits>
#include <memory>
#include <string>

#include "ep.hpp"

namespace epbroker::test_ep {

TestEpFactory::TestEpFactory(const Api& api) : OrtEpFactory{}, api_(api) {
  ort_version_supported = ORT_API_VERSION;
  GetName = get_name_impl;
  GetVendor = get_vendor_impl;
  GetSupportedDevices = get_supported_devices_impl;
  CreateEp = create_ep_impl;
  ReleaseEp = release_ep_impl;
  GetVendorId = get_vendor_id_impl;
  GetVersion = get_version_impl;
  ValidateCompiledModelCompatibilityInfo = validate_compiled_model_impl;
  // The EP works in CPU memory: no allocator, data transfer or stream of its own.
  // These are still set (as "none") because some ORT versions call them unchecked.
  CreateAllocator = create_allocator_impl;
  ReleaseAllocator = release_allocator_impl;
  CreateDataTransfer = create_data_transfer_impl;
  IsStreamAware = is_stream_aware_impl;
  CreateSyncStreamForDevice = create_sync_stream_impl;
  GetHardwareDeviceIncompatibilityDetails = incompatibility_details_impl;
  CreateExternalResourceImporterForDevice = create_resource_importer_impl;
  GetNumCustomOpDomains = get_num_custom_op_domains_impl;
  GetCustomOpDomains = get_custom_op_domains_impl;
  // InitGraphicsInterop / DeinitGraphicsInterop stay nullptr (documented as optional).
  SelectBestModelCandidate = select_best_model_candidate_impl;
}

const char* ORT_API_CALL TestEpFactory::get_name_impl(const OrtEpFactory* /*this_ptr*/) noexcept {
  return kEpName;
}

const char* ORT_API_CALL TestEpFactory::get_vendor_impl(const OrtEpFactory* /*this_ptr*/) noexcept {
  return kEpVendor;
}

std::uint32_t ORT_API_CALL
TestEpFactory::get_vendor_id_impl(const OrtEpFactory* /*this_ptr*/) noexcept {
  return 0;  // not a PCI vendor
}

const char* ORT_API_CALL
TestEpFactory::get_version_impl(const OrtEpFactory* /*this_ptr*/) noexcept {
  return kEpVersion;
}

OrtStatus* ORT_API_CALL TestEpFactory::get_supported_devices_impl(
    OrtEpFactory* this_ptr, const OrtHardwareDevice* const* devices, std::size_t num_devices,
    OrtEpDevice** ep_devices, std::size_t max_ep_devices, std::size_t* num_ep_devices) noexcept {
  auto* self = static_cast<TestEpFactory*>(this_ptr);
  *num_ep_devices = 0;
  return guard(self->api_, [&] {
    return self->get_supported_devices(devices, num_devices, ep_devices, max_ep_devices,
                                       num_ep_devices);
  });
}

OrtStatus* TestEpFactory::get_supported_devices(const OrtHardwareDevice* const* devices,
                                                std::size_t num_devices, OrtEpDevice** ep_devices,
                                                std::size_t max_ep_devices,
                                                std::size_t* num_ep_devices) {
  // One EP device, on the first CPU: a second one would only duplicate it.
  for (std::size_t i = 0; i < num_devices && *num_ep_devices < max_ep_devices; ++i) {
    if (api_.ort->HardwareDevice_Type(devices[i]) != OrtHardwareDeviceType_CPU) continue;

    OrtKeyValuePairs* raw_metadata = nullptr;
    api_.ort->CreateKeyValuePairs(&raw_metadata);
    const auto release = [this](OrtKeyValuePairs* p) { api_.ort->ReleaseKeyValuePairs(p); };
    std::unique_ptr<OrtKeyValuePairs, decltype(release)> metadata(raw_metadata, release);
    // Informational only. ORT adds "version" (from GetVersion) and "library_path"
    // itself and refuses an EP device whose metadata already has "version".
    api_.ort->AddKeyValuePair(metadata.get(), "epbroker.test_fixture", "1");
    api_.ort->AddKeyValuePair(metadata.get(), "epbroker.ops", "Add,Mul,Relu,MatMul,Gemm");

    OrtEpDevice* ep_device = nullptr;
    TEST_EP_RETURN_IF_ERROR(
        api_.ep->CreateEpDevice(this, devices[i], metadata.get(), nullptr, &ep_device));
    ep_devices[(*num_ep_devices)++] = ep_device;
    break;
  }
  return nullptr;
}

OrtStatus* ORT_API_CALL TestEpFactory::create_ep_impl(
    OrtEpFactory* this_ptr, const OrtHardwareDevice* const* /*devices*/,
    const OrtKeyValuePairs* const* /*ep_metadata*/, std::size_t num_devices,
    const OrtSessionOptions* /*session_options*/, const OrtLogger* logger, OrtEp** ep) noexcept {
  auto* self = static_cast<TestEpFactory*>(this_ptr);
  *ep = nullptr;
  if (num_devices != 1 || logger == nullptr) {
    return self->api_.ort->CreateStatus(ORT_INVALID_ARGUMENT,
                                        "EpbrokerTestEp: expected exactly one (CPU) device");
  }
  return guard(self->api_, [&]() -> OrtStatus* {
    *ep = new TestEp(self->api_, *logger);
    return nullptr;
  });
}

void ORT_API_CALL TestEpFactory::release_ep_impl(OrtEpFactory* /*this_ptr*/, OrtEp* ep) noexcept {
  delete static_cast<TestEp*>(ep);
}

OrtStatus* ORT_API_CALL TestEpFactory::validate_compiled_model_impl(
    OrtEpFactory* /*this_ptr*/, const OrtHardwareDevice* const* /*devices*/,
    std::size_t /*num_devices*/, const char* /*compatibility_info*/,
    OrtCompiledModelCompatibility* compatibility) noexcept {
  // The EP never writes EPContext (pre-compiled) models.
  *compatibility = OrtCompiledModelCompatibility_EP_NOT_APPLICABLE;
  return nullptr;
}

OrtStatus* ORT_API_CALL TestEpFactory::create_allocator_impl(OrtEpFactory* /*this_ptr*/,
                                                             const OrtMemoryInfo* /*memory_info*/,
                                                             const OrtKeyValuePairs* /*options*/,
                                                             OrtAllocator** allocator) noexcept {
  *allocator = nullptr;  // ORT's default CPU allocator
  return nullptr;
}

void ORT_API_CALL TestEpFactory::release_allocator_impl(OrtEpFactory* /*this_ptr*/,
                                                        OrtAllocator* /*allocator*/) noexcept {}

OrtStatus* ORT_API_CALL TestEpFactory::create_data_transfer_impl(
    OrtEpFactory* /*this_ptr*/, OrtDataTransferImpl** data_transfer) noexcept {
  *data_transfer = nullptr;  // CPU memory only: nothing to copy between devices
  return nullptr;
}

bool ORT_API_CALL TestEpFactory::is_stream_aware_impl(const OrtEpFactory* /*this_ptr*/) noexcept {
  return false;
}

OrtStatus* ORT_API_CALL TestEpFactory::create_sync_stream_impl(
    OrtEpFactory* /*this_ptr*/, const OrtMemoryDevice* /*memory_device*/,
    const OrtKeyValuePairs* /*options*/, OrtSyncStreamImpl** stream) noexcept {
  *stream = nullptr;
  return nullptr;
}

OrtStatus* ORT_API_CALL TestEpFactory::incompatibility_details_impl(
    OrtEpFactory* /*this_ptr*/, const OrtHardwareDevice* /*hw*/,
    OrtDeviceEpIncompatibilityDetails* /*details*/) noexcept {
  return nullptr;  // every device ORT shows us is fine; unchanged details say so
}

OrtStatus* ORT_API_CALL TestEpFactory::create_resource_importer_impl(
    OrtEpFactory* /*this_ptr*/, const OrtEpDevice* /*ep_device*/,
    OrtExternalResourceImporterImpl** importer) noexcept {
  *importer = nullptr;
  return nullptr;
}

OrtStatus* ORT_API_CALL TestEpFactory::get_num_custom_op_domains_impl(
    OrtEpFactory* /*this_ptr*/, std::size_t* num_domains) noexcept {
  *num_domains = 0;
  return nullptr;
}

OrtStatus* ORT_API_CALL TestEpFactory::get_custom_op_domains_impl(
    OrtEpFactory* /*this_ptr*/, OrtCustomOpDomain** /*domains*/,
    std::size_t /*num_domains*/) noexcept {
  return nullptr;
}

OrtStatus* ORT_API_CALL TestEpFactory::select_best_model_candidate_impl(
    OrtEpFactory* /*this_ptr*/, const OrtHardwareDevice* /*device*/,
    const OrtKeyValuePairs* const* /*candidates*/, std::size_t /*num_candidates*/,
    const OrtSessionOptions* /*session_options*/, std::size_t* selected_index) noexcept {
  // No compiled-model variant is ours.
  *selected_index = std::numeric_limits<std::size_t>::max();
  return nullptr;
}

}  // namespace epbroker::test_ep
