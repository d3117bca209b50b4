// Core values -> bus dictionaries (a{sv}). Pure conversion, no logic.
#pragma once

#include <sdbus-c++/sdbus-c++.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "daemon/core/broker.hpp"
#include "daemon/core/history.hpp"
#include "daemon/hardware/device.hpp"

namespace epbrokerd::dbus {

using Dict = std::map<std::string, sdbus::Variant>;

Dict to_dict(const hardware::Device& d);
Dict to_dict(const core::ProviderView& p);
// The same dict as to_dict(p), built once per distinct view on this thread and then
// reused (a Variant is a reference-counted message: copying the dict is cheaper
// than building it). Valid until the next call on this thread.
const Dict& to_dict_cached(const core::ProviderView& p);
Dict to_dict(const core::VerifyResult& r);
Dict to_dict(const core::HistoryEntry& e);
Dict to_dict(const core::UpdateChange& c);  // job only when one was started
// A CollectGarbage dict: name, version; for a model variant also kind "model"
// and variant.
Dict to_dict(const core::VersionRef& r);
// A RemoveModel dict: name, version, variant.
Dict to_removed_model_dict(const core::VersionRef& r);
// A ListModels dict, with the plan (planned, plan_device, plan_ep, plan_reason).
Dict to_dict(const core::ModelListing& listing);
// A model RequestSession grants (kind "model").
Dict to_dict(const core::ModelGrant& g);
// Appends `providers`, then `models`, to `m` as one aa{sv}, the same dicts as
// to_dict() gives, written value by value: no sdbus::Variant (each its own
// message) is built or copied.
void append_providers(sdbus::Message& m, const std::vector<core::ProviderView>& providers,
                      const std::vector<core::ModelGrant>& models = {});

std::string job_path(std::uint64_t id);      // /org/epbroker/Broker1/job/N
std::string session_path(std::uint64_t id);  // /org/epbroker/Broker1/session/N

inline constexpr const char* kBusName = "org.epbroker.Broker1";
inline constexpr const char* kObjectPath = "/org/epbroker/Broker1";

}  // namespace epbrokerd::dbus
