// The a{sv} option arguments of Broker1's methods (dbus/org.epbroker.Broker1.xml)
// as core values. Strict: only the documented keys, each of its documented type,
// values bounded; anything else is org.epbroker.Error.InvalidArgument (thrown as
// sdbus::Error), before the core is asked anything. What the values mean (a
// valid version, a known policy) is the core's to check.
#pragma once

#include <sdbus-c++/sdbus-c++.h>

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "daemon/core/broker.hpp"

namespace epbrokerd::dbus {

using Options = std::map<std::string, sdbus::Variant>;

// At most this many options in one call, and this many package names in Update.
inline constexpr std::size_t kMaxOptions = 8;
inline constexpr std::size_t kMaxUpdateNames = 64;
// The longest string option value (policy, ort_version, version).
inline constexpr std::size_t kMaxOptionLength = 64;

// RequestSession: policy s, ort_version s, providers as, download b, models a{ss}.
core::SessionRequest parse_session_options(const Options& opts);
// InstallProvider: version s, allow_older b.
core::InstallOptions parse_install_options(const Options& opts);

// ListModels: policy s (a known one), ort_version s.
core::ModelListOptions parse_model_list_options(const Options& opts);
// RemoveModel: version s, variant s, now b.
core::ModelRemoveOptions parse_model_remove_options(const Options& opts);
// EnsureModel: variant s, version s, policy s (a known one), ort_version s.
core::ModelInstallOptions parse_model_install_options(const Options& opts);

// Update: dry_run b.
struct UpdateOptions {
  bool dry_run = false;
};
UpdateOptions parse_update_options(const Options& opts);
// Update's names: at most kMaxUpdateNames (each name is checked by the core).
void check_update_names(const std::vector<std::string>& names);

}  // namespace epbrokerd::dbus
