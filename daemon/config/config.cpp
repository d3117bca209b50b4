// load_config(): epbroker.conf, then remotes.d/*.conf. The pieces: ini.hpp (file
// syntax), values.hpp (value parsers), sections.hpp ([daemon] and [remote] keys).
#include "daemon/config/config.hpp"

#include <filesystem>
#include <utility>

#include "daemon/config/ini.hpp"
#include "daemon/config/sections.hpp"

namespace epbrokerd::config {

Result<Config> load_config(const Paths& paths) {
  Config config;
  config.paths = paths;

  // epbroker.conf
  const std::filesystem::path main_file = paths.config_dir / kConfigFileName;
  auto main_bytes = detail::read_config_file(main_file);
  if (!main_bytes) return std::unexpected(main_bytes.error());
  if (*main_bytes) {
    auto sections =
        detail::parse_ini(**main_bytes, main_file.string(), {"daemon"},
                          "epbroker.conf has only [daemon]; remotes go in remotes.d/*.conf");
    if (!sections) return std::unexpected(sections.error());
    for (const detail::Section& s : *sections) {
      auto ok = detail::apply_daemon_section(s, main_file.string(), config.daemon);
      if (!ok) return std::unexpected(ok.error());
    }
  }

  // remotes.d/*.conf
  auto remotes = detail::load_remotes(paths.config_dir);
  if (!remotes) return std::unexpected(remotes.error());
  config.remotes = std::move(*remotes);
  return config;
}

}  // namespace epbrokerd::config
