// Which variant of a model a session gets, and on which device and EP: a pure
// function of the model's signed metadata, the machine's devices, the providers
// the broker lists and the session's policy. No I/O and no locking, so every rule
// is unit-tested on its own (tests/daemon/core_variant_plan_test.cpp).
//
// Two steps:
//  1. The target, as ONNX Runtime picks one for a session policy
//     (onnxruntime/core/session/provider_policy_context.cc): every (device, EP)
//     pair the providers offer, plus the built-in CPU EP on every CPU device, is
//     ordered as ORT's OrderDevices() orders OrtEpDevices (order_ep_devices()),
//     and the policy takes the first pair of its device type, else the first CPU
//     pair (select_target()).
//  2. The variant: those whose ort_min the app's ORT meets are ranked by how
//     closely they are built for the target (VariantFit); the best fit wins, ties
//     going to the publisher's order. When none fits, the CPU pairs are tried the
//     same way, in ORT's order (ORT adds its CPU EP after the policy's pair).
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/device_type.hpp"
#include "catalog/model_metadata.hpp"
#include "catalog/version.hpp"
#include "common/wire.hpp"
#include "daemon/core/error.hpp"
#include "daemon/hardware/device.hpp"

namespace epbrokerd::core {

// ONNX Runtime's own CPU EP: in every ORT build, on every CPU device.
inline constexpr std::string_view kCpuEpName = "CPUExecutionProvider";

// One provider as the broker lists it (a ProviderView), reduced to what variant
// selection needs.
struct ProviderOffer {
  std::string name;  // package name
  common::PackageKind kind = common::PackageKind::execution_provider;
  common::ProviderState state = common::ProviderState::available;
  std::vector<std::string> ep_names;
  catalog::VersionText ort_min;      // the package's minimum ONNX Runtime
  std::string vendor;                // as its metadata says ("Intel"); "" unknown
  std::vector<std::string> devices;  // ids of the devices it serves ("gpu0")
};

// Whether variant selection may pick `p`: an execution provider that is ready,
// available or installing (never incompatible, revoked or refused) whose ort_min
// `app_ort` meets (not checked when `app_ort` is unset).
bool offer_usable(const ProviderOffer& p, const std::optional<catalog::Version>& app_ort);

// One (device, EP) pair: an EP a usable provider (or ORT itself) runs on a device.
struct EpDevice {
  std::string device;  // id, e.g. "npu0"
  catalog::DeviceType type = catalog::DeviceType::cpu;
  bool discrete = false;  // a separate GPU chip (hardware::Device::discrete)
  std::string ep;         // EP name, e.g. "OpenVINOExecutionProvider"
  std::string provider;   // package name; "" for kCpuEpName built into ORT
  common::ProviderState state = common::ProviderState::ready;  // the provider's
  bool vendor_match = false;  // the provider's vendor is the device's vendor

  bool built_in() const { return provider.empty(); }
  friend bool operator==(const EpDevice&, const EpDevice&) = default;
};

// Every pair on `devices`: for each device (in their order), each usable provider
// serving its id (in the order of `providers`, ids of absent devices ignored) with
// each of its EP names, and kCpuEpName on every CPU device; ordered as ORT's
// OrderDevices(): NPUs, then GPUs, then CPUs; among GPUs discrete before
// integrated; then pairs whose provider's vendor is the device's vendor; then
// provider EPs (by EP name) before the built-in CPU EP; the rest in the order above
// (a stable sort).
std::vector<EpDevice> order_ep_devices(std::span<const hardware::Device> devices,
                                       std::span<const ProviderOffer> providers,
                                       const std::optional<catalog::Version>& app_ort);

// The device type a policy asks for, as ORT's policies do: prefer_npu,
// max_efficiency, min_overall_power → npu; prefer_gpu, max_performance → gpu;
// default, prefer_cpu → cpu.
catalog::DeviceType policy_device_type(common::Policy policy);

// ORT's choice of one pair from `ordered` (order_ep_devices()'s order): the first of
// `type`, else the first CPU pair; std::nullopt when there is neither.
std::optional<EpDevice> select_target(std::span<const EpDevice> ordered, catalog::DeviceType type);

// How closely a variant is built for a target (device type T, EP E); lower is
// better. A variant fits when its devices are absent or list T, and its eps are
// absent or list E.
enum class VariantFit {
  device_and_ep = 1,  // lists T and E
  device = 2,         // lists T, any EP
  ep = 3,             // any device, lists E
  generic = 4,        // any device, any EP
};

// How `variant` fits (type, ep); std::nullopt when it does not.
std::optional<VariantFit> variant_fit(const catalog::ModelVariant& variant,
                                      catalog::DeviceType type, std::string_view ep);

struct VariantRequest {
  common::Policy policy = common::Policy::default_policy;
  std::optional<catalog::Version> app_ort;  // unset: variants' ort_min not checked
  std::string variant;                      // an explicit variant id; "" = choose
};

// Why a variant was not chosen.
struct VariantNote {
  std::string variant;
  std::string reason;  // e.g. "built for gpu/GpuEp, not for npu0/NpuEp"

  friend bool operator==(const VariantNote&, const VariantNote&) = default;
};

struct VariantChoice {
  std::string variant;  // id
  std::string device;   // id, e.g. "npu0"
  catalog::DeviceType device_type = catalog::DeviceType::cpu;
  std::string ep;
  std::string provider;  // package name; "" for kCpuEpName
  // For people: the policy's target and why this variant, e.g. "policy
  // max_efficiency → npu0 via NpuEp (npu-ep, available); int8-npu is built for
  // npu/NpuEp".
  std::string reason;
  std::vector<VariantNote> others;  // every other variant, in the publisher's order
};

// The variant a session with `request` gets on `devices` (hardware discovery's
// list) given the broker's `providers`.
//
// Chosen: the policy's target (select_target() over order_ep_devices()) and the
// best-fitting variant for it among those whose ort_min `request.app_ort` meets
// (VariantFit, then the publisher's order); when none fits, the first other CPU
// pair in ORT's order that a variant fits, the same way (the CPU target, then the
// rest, the built-in CPU EP last).
//
// Explicit `request.variant`: that variant, on the policy's target when it fits,
// else on the first pair in ORT's order that it fits best.
//
// Errors: Errc::NotFound for an explicit id the model lacks; Errc::Incompatible
// when no variant fits (or the explicit one does not: its ort_min, or no pair), the
// message naming each variant's reason.
Result<VariantChoice> plan_variant(const catalog::ModelMetadata& model,
                                   std::span<const hardware::Device> devices,
                                   std::span<const ProviderOffer> providers,
                                   const VariantRequest& request);

}  // namespace epbrokerd::core
