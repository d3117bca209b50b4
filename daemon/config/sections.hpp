// Internal to daemon/config (the public contract is config.hpp): the sections of the
// configuration files, their keys applied to the settings (docs/configuration.md).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "daemon/config/config.hpp"
#include "daemon/config/ini.hpp"

namespace epbrokerd::config::detail {

// epbroker.conf's [daemon] section (daemon_section.cpp): its keys set in `d`, in the
// order written. Errc::bad_field naming FILE:LINE: KEY for an unknown key or a bad
// value.
Result<void> apply_daemon_section(const Section& section, const std::string& file,
                                  DaemonSettings& d);

// <config_dir>/remotes.d/*.conf (remotes.cpp): every remote, enabled or not, ordered
// by priority (highest first), then name; none if remotes.d does not exist. Errors as
// documented at load_config().
Result<std::vector<Remote>> load_remotes(const std::filesystem::path& config_dir);

}  // namespace epbrokerd::config::detail
