#include "daemon/core/variant_plan.hpp"

#include <algorithm>

namespace epbrokerd::core {

using catalog::DeviceType;
using common::ProviderState;

namespace {

bool contains(const std::vector<std::string>& list, std::string_view s) {
  return std::find(list.begin(), list.end(), s) != list.end();
}

// ORT's sort key of a device type: NPU < GPU < CPU.
int type_rank(DeviceType t) {
  switch (t) {
    case DeviceType::npu:
      return 0;
    case DeviceType::gpu:
      return 1;
    case DeviceType::cpu:
      return 2;
  }
  return 3;
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (const auto& p : parts) {
    if (!out.empty()) out += sep;
    out += p;
  }
  return out;
}

// "npu0 via NpuEp (npu-ep, available)", "cpu0 via CPUExecutionProvider (built in)"
std::string describe(const EpDevice& t) {
  std::string out = t.device + " via " + t.ep + " (";
  if (t.built_in()) return out + "built in)";
  return out + t.provider + ", " + std::string(common::provider_state_name(t.state)) + ")";
}

// What a variant is built for: "npu/NpuEp", "npu (any EP)", "NpuEp (any device)",
// "any device and EP".
std::string built_for(const catalog::ModelVariant& v) {
  std::vector<std::string> types;
  for (auto t : v.devices) types.emplace_back(catalog::device_type_name(t));
  const std::string devices = join(types, ",");
  const std::string eps = join(v.eps, ",");
  if (!devices.empty() && !eps.empty()) return devices + "/" + eps;
  if (!devices.empty()) return devices + " (any EP)";
  if (!eps.empty()) return eps + " (any device)";
  return "any device and EP";
}

// "int8-npu is built for npu/NpuEp", "fp32 is generic"
std::string fit_sentence(const catalog::ModelVariant& v) {
  if (v.devices.empty() && v.eps.empty()) return v.id + " is generic";
  return v.id + " is built for " + built_for(v);
}

std::string target_text(const EpDevice& t) { return t.device + "/" + t.ep; }

const catalog::ModelVariant* find_variant(const catalog::ModelMetadata& model,
                                          std::string_view id) {
  for (const auto& v : model.variants) {
    if (v.id == id) return &v;
  }
  return nullptr;
}

// Why the app's ORT cannot load `v`; "" when it can (or is not known).
std::string ort_problem(const catalog::ModelVariant& v,
                        const std::optional<catalog::Version>& app_ort) {
  if (!app_ort || v.ort_min.value <= *app_ort) return "";
  return "needs ONNX Runtime >= " + v.ort_min.text + ", app has " + catalog::to_string(*app_ort);
}

struct Ranked {
  const catalog::ModelVariant* best = nullptr;
  VariantFit fit = VariantFit::generic;
};

// The best-fitting variant for `target` among those the app's ORT loads; ties: the
// publisher's order.
Ranked rank_for(const catalog::ModelMetadata& model, const EpDevice& target,
                const std::optional<catalog::Version>& app_ort) {
  Ranked r;
  for (const auto& v : model.variants) {
    if (!ort_problem(v, app_ort).empty()) continue;
    const auto fit = variant_fit(v, target.type, target.ep);
    if (fit && (!r.best || *fit < r.fit)) {
      r.best = &v;
      r.fit = *fit;
    }
  }
  return r;
}

// Why `v` was not chosen for `chosen` (on `target`).
std::string note_for(const catalog::ModelVariant& v, const catalog::ModelVariant& chosen,
                     const EpDevice& target, const std::optional<catalog::Version>& app_ort) {
  if (auto p = ort_problem(v, app_ort); !p.empty()) return p;
  const auto fit = variant_fit(v, target.type, target.ep);
  if (!fit) return "built for " + built_for(v) + ", not for " + target_text(target);
  const auto chosen_fit = variant_fit(chosen, target.type, target.ep);
  if (chosen_fit && *chosen_fit == *fit) {
    return "fits " + target_text(target) + " as well, listed after " + chosen.id;
  }
  return "fits " + target_text(target) + " less closely than " + chosen.id;
}

VariantChoice choice_of(const catalog::ModelMetadata& model, const catalog::ModelVariant& chosen,
                        const EpDevice& target, std::string reason,
                        const std::optional<catalog::Version>& app_ort) {
  VariantChoice c;
  c.variant = chosen.id;
  c.device = target.device;
  c.device_type = target.type;
  c.ep = target.ep;
  c.provider = target.provider;
  c.reason = std::move(reason);
  for (const auto& v : model.variants) {
    if (&v == &chosen) continue;
    c.others.push_back({v.id, note_for(v, chosen, target, app_ort)});
  }
  return c;
}

// "fp32: needs ...; int8-npu: built for npu/NpuEp, not for cpu0/CPUExecutionProvider"
std::string why_none(const catalog::ModelMetadata& model, const EpDevice& target,
                     const std::optional<catalog::Version>& app_ort) {
  std::vector<std::string> parts;
  for (const auto& v : model.variants) {
    std::string p = ort_problem(v, app_ort);
    if (p.empty()) p = "built for " + built_for(v) + ", not for " + target_text(target);
    parts.push_back(v.id + ": " + p);
  }
  return join(parts, "; ");
}

Result<VariantChoice> plan_explicit(const catalog::ModelMetadata& model,
                                    std::span<const EpDevice> ordered,
                                    const std::optional<EpDevice>& target,
                                    const VariantRequest& request, const std::string& policy) {
  const auto* v = find_variant(model, request.variant);
  if (!v) {
    std::vector<std::string> ids;
    for (const auto& each : model.variants) ids.push_back(each.id);
    return fail(Errc::NotFound, "model " + model.name + " has no variant '" + request.variant +
                                    "' (it has " + join(ids, ", ") + ")");
  }
  if (auto p = ort_problem(*v, request.app_ort); !p.empty()) {
    return fail(Errc::Incompatible, "variant " + v->id + " of " + model.name + " " + p);
  }
  const std::string head = "variant " + v->id + " asked for; ";
  if (target && variant_fit(*v, target->type, target->ep)) {
    return choice_of(
        model, *v, *target,
        head + "policy " + policy + " → " + describe(*target) + "; " + fit_sentence(*v),
        request.app_ort);
  }
  const EpDevice* best = nullptr;
  VariantFit best_fit = VariantFit::generic;
  for (const auto& pair : ordered) {
    const auto fit = variant_fit(*v, pair.type, pair.ep);
    if (fit && (!best || *fit < best_fit)) {
      best = &pair;
      best_fit = *fit;
    }
  }
  if (!best) {
    return fail(Errc::Incompatible, "variant " + v->id + " of " + model.name + " is built for " +
                                        built_for(*v) + ": no provider here serves that");
  }
  std::string reason = head + "policy " + policy + " → ";
  reason += target ? target_text(*target) + " does not fit it" : "no device";
  reason += "; " + describe(*best) + " does; " + fit_sentence(*v);
  return choice_of(model, *v, *best, std::move(reason), request.app_ort);
}

}  // namespace

bool offer_usable(const ProviderOffer& p, const std::optional<catalog::Version>& app_ort) {
  if (p.kind != common::PackageKind::execution_provider) return false;
  if (p.state != ProviderState::ready && p.state != ProviderState::available &&
      p.state != ProviderState::installing) {
    return false;
  }
  return !app_ort || p.ort_min.value <= *app_ort;
}

std::vector<EpDevice> order_ep_devices(std::span<const hardware::Device> devices,
                                       std::span<const ProviderOffer> providers,
                                       const std::optional<catalog::Version>& app_ort) {
  std::vector<EpDevice> out;
  for (const auto& d : devices) {
    for (const auto& p : providers) {
      if (!offer_usable(p, app_ort) || !contains(p.devices, d.id)) continue;
      for (const auto& ep : p.ep_names) {
        out.push_back({d.id, d.type, d.type == DeviceType::gpu && d.discrete, ep, p.name, p.state,
                       !p.vendor.empty() && p.vendor == d.vendor});
      }
    }
    if (d.type == DeviceType::cpu) {
      out.push_back(
          {d.id, d.type, false, std::string(kCpuEpName), "", ProviderState::ready, false});
    }
  }
  // ORT's OrderDevices() comparator; std::stable_sort keeps the device order
  // where ORT's std::sort leaves it unspecified.
  std::stable_sort(out.begin(), out.end(), [](const EpDevice& a, const EpDevice& b) {
    if (a.type != b.type) return type_rank(a.type) < type_rank(b.type);
    if (a.discrete != b.discrete) return a.discrete;
    if (a.vendor_match != b.vendor_match) return a.vendor_match;
    if (a.built_in() != b.built_in()) return b.built_in();
    if (!a.built_in()) return a.ep < b.ep;
    return false;
  });
  return out;
}

catalog::DeviceType policy_device_type(common::Policy policy) {
  switch (policy) {
    case common::Policy::prefer_npu:
    case common::Policy::max_efficiency:
    case common::Policy::min_overall_power:
      return DeviceType::npu;
    case common::Policy::prefer_gpu:
    case common::Policy::max_performance:
      return DeviceType::gpu;
    case common::Policy::default_policy:
    case common::Policy::prefer_cpu:
      return DeviceType::cpu;
  }
  return DeviceType::cpu;
}

std::optional<EpDevice> select_target(std::span<const EpDevice> ordered, DeviceType type) {
  for (const auto& want : {type, DeviceType::cpu}) {
    for (const auto& pair : ordered) {
      if (pair.type == want) return pair;
    }
  }
  return std::nullopt;
}

std::optional<VariantFit> variant_fit(const catalog::ModelVariant& variant, DeviceType type,
                                      std::string_view ep) {
  const bool lists_type = !variant.devices.empty();
  const bool lists_ep = !variant.eps.empty();
  if (lists_type &&
      std::find(variant.devices.begin(), variant.devices.end(), type) == variant.devices.end()) {
    return std::nullopt;
  }
  if (lists_ep && !contains(variant.eps, ep)) return std::nullopt;
  if (lists_type && lists_ep) return VariantFit::device_and_ep;
  if (lists_type) return VariantFit::device;
  if (lists_ep) return VariantFit::ep;
  return VariantFit::generic;
}

Result<VariantChoice> plan_variant(const catalog::ModelMetadata& model,
                                   std::span<const hardware::Device> devices,
                                   std::span<const ProviderOffer> providers,
                                   const VariantRequest& request) {
  const std::string policy(common::policy_name(request.policy));
  const auto wanted = policy_device_type(request.policy);
  const auto ordered = order_ep_devices(devices, providers, request.app_ort);
  const auto target = select_target(ordered, wanted);
  if (!request.variant.empty()) return plan_explicit(model, ordered, target, request, policy);
  if (!target) return fail(Errc::Incompatible, "no CPU device to run " + model.name + " on");

  std::string reason = "policy " + policy + " → ";
  if (target->type != wanted) {
    reason += "no " + std::string(catalog::device_type_name(wanted)) + " served here, ";
  }
  if (auto r = rank_for(model, *target, request.app_ort); r.best) {
    return choice_of(model, *r.best, *target,
                     reason + describe(*target) + "; " + fit_sentence(*r.best), request.app_ort);
  }
  // ORT adds its CPU EP after the policy's pair: the CPU pairs, in ORT's order.
  std::vector<std::string> tried;
  for (const auto& cpu : ordered) {
    if (cpu.type != DeviceType::cpu || cpu == *target) continue;
    if (auto r = rank_for(model, cpu, request.app_ort); r.best) {
      return choice_of(model, *r.best, cpu,
                       reason + describe(*target) + ", but no variant fits it; falling back to " +
                           describe(cpu) + "; " + fit_sentence(*r.best),
                       request.app_ort);
    }
    tried.push_back(target_text(cpu));
  }
  std::string why = "no variant of " + model.name + " fits " + target_text(*target) + " (" +
                    why_none(model, *target, request.app_ort) + ")";
  if (!tried.empty()) why += "; nor " + join(tried, ", ");
  return fail(Errc::Incompatible, why);
}

}  // namespace epbrokerd::core
