// epbrokerctl: the command line (commands, options, help texts, exit codes), read
// with CLI11: one subcommand per command, plus `help [COMMAND]`.
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
  std::string_view arg;      // its one (required) argument, "NAME"; "" = it takes none
  std::string_view summary;  // one line
  std::string_view details;  // the rest of `COMMAND --help`
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

// argv[0] is the program. Options may come before or after the command; "--" ends
// them (also when it comes before the command); a repeated --bus-address keeps the
// last. `help [COMMAND]` is `[COMMAND] --help`. --help and --version are answered
// even with a command or argument missing, unknown or extra. Errors: a one-line
// message naming what was wrong (an unknown option or command, a missing or extra
// argument, a missing or empty --bus-address value, a value given to --json, no
// command); the caller prints it with a pointer to --help and exits kUsage.
std::expected<Invocation, std::string> parse_args(const std::vector<std::string>& argv);

// `epbrokerctl --help`: the commands, the options, the exit status.
std::string tool_help();
// `epbrokerctl COMMAND --help`, `epbrokerctl help COMMAND`.
std::string command_help(const CommandInfo& c);

}  // namespace epbrokerctl
