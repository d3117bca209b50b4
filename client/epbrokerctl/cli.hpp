// epbrokerctl: the command line (commands, options, help texts, exit codes).
#pragma once

#include <expected>
#include <string>
#include <string_view>
#include <vector>

namespace epbrokerctl {

// Exit codes (docs/epbrokerctl.md lists them; scripts rely on them).
enum Exit : int {
  kOk = 0,
  kFailed = 1,         // the daemon reported a failure (network, verification, busy, ...)
  kUsage = 2,          // bad command line, or an argument the daemon calls invalid
  kNotAuthorized = 3,  // polkit / the daemon's policy refused
  kNotFound = 4,       // no such package (or nothing installed under that name)
  kUnavailable = 5,    // no bus, daemon not reachable or not answering
  kInterrupted = 130,  // Ctrl-C (SIGINT) or SIGTERM: the job was cancelled
};

struct CommandInfo {
  std::string_view name;
  std::string_view synopsis;  // "install NAME"
  std::string_view summary;   // one line
  std::string_view details;   // the rest of `COMMAND --help`
  std::size_t min_args;
  std::size_t max_args;
};

const std::vector<CommandInfo>& commands();
const CommandInfo* find_command(std::string_view name);

struct Invocation {
  std::string command;  // "" when none was given
  std::vector<std::string> args;
  bool json = false;
  bool help = false;
  bool version = false;
  std::string bus_address;  // "" = $EPBROKER_BUS_ADDRESS, else the system bus
};

// Options may come before or after the command; "--" ends them. Errors name
// what was wrong (the caller prints them with the usage line, exit kUsage).
std::expected<Invocation, std::string> parse_args(const std::vector<std::string>& argv);

std::string tool_help();
std::string command_help(const CommandInfo& c);

}  // namespace epbrokerctl
