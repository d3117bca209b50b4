// epbrokerd's command line: flags that override the configuration files (config.hpp)
// or name other places, read with CLI11. usage() is the --help text.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "daemon/config/config.hpp"

namespace epbrokerd::config {

// The daemon's command line (see usage()).
struct Options {
  bool help = false;     // --help / -h: print usage(), exit 0
  bool version = false;  // --version: print the version, exit 0
  Paths paths;           // defaults unless given by flags
  // --bus-address, else a non-empty EPBROKER_BUS_ADDRESS; empty = the system bus.
  std::string bus_address;
  std::optional<std::chrono::seconds> idle_timeout;  // --idle-timeout, overrides the file
  std::optional<LogLevel> log_level;                 // --log-level, overrides the file
};

// Parses argv[1..argc). Accepts "--flag VALUE" and "--flag=VALUE". Directory flags
// must be non-empty and are made absolute (against the current directory). Values are
// checked as in the files (--idle-timeout 0..604800, --log-level a level name).
// --help/--version win over anything else on the line, except the "=" forms that are
// refused before the rest is read: "--help=VALUE", "--version=VALUE", "--flag=".
// Errors, all Errc::invalid_argument with a one-line message naming the flag: unknown
// flag, positional argument, missing or empty value, bad value, a flag given twice, a
// value given to --help/--version.
// Reads EPBROKER_BUS_ADDRESS from the environment when --bus-address is absent.
Result<Options> parse_command_line(int argc, const char* const* argv);

// The --help text (ends with a newline).
std::string usage();

// load_config(options.paths), then the flags on top: --idle-timeout and --log-level
// replace the files' values; bus_address is taken from the options.
Result<Config> load_config(const Options& options);

}  // namespace epbrokerd::config
