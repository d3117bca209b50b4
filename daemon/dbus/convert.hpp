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
Dict to_dict(const core::VersionRef& r);
// A ListModels dict; `installed(variant id)` says whether the store has that variant.
Dict to_dict(const core::ModelEntry& m, const std::function<bool(const std::string&)>& installed);
// Appends `providers` to `m` as aa{sv}, the same dicts as to_dict() gives, written
// value by value: no sdbus::Variant (each its own message) is built or copied.
void append_providers(sdbus::Message& m, const std::vector<core::ProviderView>& providers);

std::string job_path(std::uint64_t id);      // /org/epbroker/Broker1/job/N
std::string session_path(std::uint64_t id);  // /org/epbroker/Broker1/session/N

inline constexpr const char* kBusName = "org.epbroker.Broker1";
inline constexpr const char* kObjectPath = "/org/epbroker/Broker1";

}  // namespace epbrokerd::dbus
