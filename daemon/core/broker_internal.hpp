// Helpers the broker's files share (broker.cpp, broker_catalog.cpp,
// broker_install.cpp, broker_sessions.cpp); not part of the core's API.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "catalog/compat.hpp"
#include "catalog/error.hpp"
#include "catalog/tuf/updater.hpp"
#include "catalog/version.hpp"
#include "daemon/config/config.hpp"
#include "daemon/core/broker.hpp"
#include "daemon/core/job.hpp"
#include "daemon/hardware/discovery.hpp"

namespace epbrokerd::core::detail {

// The short name of an error as history's "result" says it ("NotFound").
std::string result_name(const Error& e);

// Package names as the catalog allows them; checked before any lookup.
bool valid_name(const std::string& name);

// A version above every real ONNX Runtime: compatibility without the app's ORT.
catalog::Version any_ort();

// Compatibility matching's view of the machine: the devices, and where packages'
// "requires" are looked up.
catalog::MachineInfo machine_info(const std::vector<hardware::Device>& devices,
                                  const hardware::Roots& roots);

// Keeps, for each package name, only the entries of the first remote (in
// `entries`' order: remote priority) that lists it: a name belongs to the
// highest-priority remote offering it, so a lower one cannot take it over with
// a higher version or shadow it with an incompatible one.
std::vector<CatalogEntry> drop_shadowed(std::vector<CatalogEntry> entries);

// A catalog entry as state/remotes/<name>/catalog.json keeps it.
nlohmann::json entry_json(const CatalogEntry& e);

const config::Remote* find_remote(const config::Config& c, const std::string& name);

// `job` must outlive the Updater: cancelling it stops fetches and backoff waits.
catalog::tuf::UpdaterConfig updater_config(const config::Config& c, const config::Remote& r,
                                           const Job& job);

// First use of a remote: trust its configured root, and remember which one
// (<metadata_dir>/../trusted_root.sha256: the anchor).
catalog::Result<void> ensure_trusted_root(const config::Remote& r,
                                          const std::filesystem::path& metadata_dir);

// When the remote's configured trusted_root is not the root its trusted
// metadata was anchored in (the admin replaced the file, e.g. after the
// publisher started a new root), what to tell the admin; nullopt when it is the
// same, or unknown (a state from before anchors were kept: the anchor is
// recorded now).
std::optional<std::string> anchor_changed(const config::Remote& r,
                                          const std::filesystem::path& metadata_dir);

}  // namespace epbrokerd::core::detail
