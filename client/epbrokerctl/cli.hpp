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

// How many arguments a command takes (named CommandInfo::arg).
enum class Arity {
  one,       // exactly one: `install NAME`
  optional,  // none or one: `history [NAME]`
  many,      // any number: `update [NAME...]`
};

// An option of a command that takes a value: `--policy POLICY`.
struct OptionInfo {
  std::string_view name;   // "--policy"
  std::string_view value;  // "POLICY"
  std::string_view help;
};

struct CommandInfo {
  std::string_view name = {};
  std::string_view arg = {};      // its argument, "NAME"; "" = it takes none
  std::string_view summary = {};  // one line
  std::string_view details = {};  // the rest of `COMMAND --help`
  Arity arity = Arity::one;       // when it takes an argument
  std::string_view arg_help = "the package's name";
  std::string_view flag = {};       // its one option, "--dry-run"; "" = none
  std::string_view flag_help = {};  // what the option does
  // The words that must follow it, each a command of its own: `remote reset NAME`.
  std::vector<CommandInfo> actions = {};
  // Its options that take a value (Invocation's field of the same name).
  std::vector<OptionInfo> options = {};
};

const std::vector<CommandInfo>& commands();
const CommandInfo* find_command(std::string_view name);

struct Invocation {
  std::string command;  // "" when none was given
  std::string action;   // the command's action word (`remote reset`: "reset"); "" if none
  std::vector<std::string> args;
  // install NAME@VERSION: VERSION (args[0] is NAME then); "" = the newest compatible one.
  std::string package_version;
  bool allow_older = false;  // install --allow-older
  bool dry_run = false;      // update --dry-run
  bool now = false;          // remove --now, model remove --now
  // models, model install: --policy (a policy name, checked), --ort-version;
  // model install, model remove: --variant, --version ("" when not given).
  std::string policy;
  std::string ort_version;
  std::string variant;
  std::string model_version;
  bool json = false;
  bool help = false;
  bool version = false;
  std::string bus_address;       // "" = $EPBROKER_BUS_ADDRESS, else the system bus
  bool no_ask_password = false;  // --no-ask-password: start no polkit agent (polkit_agent.hpp)
};

// argv[0] is the program. Options may come before or after the command (a
// command's own option, such as --dry-run, after it); "--" ends them (also when it
// comes before the command); a repeated --bus-address keeps the last. `help
// [COMMAND]` is `[COMMAND] --help`. --help and --version are answered even with a
// command or argument missing, unknown or extra. Errors: a one-line message naming
// what was wrong (an unknown option or command, a missing or extra argument or
// action, a missing or empty --bus-address value, a value given to --json, an
// `install NAME@VERSION` without a name or a well-formed version, an unknown
// --policy, a malformed --ort-version or model --version, no command); the
// caller prints it with a pointer to --help and exits kUsage.
std::expected<Invocation, std::string> parse_args(const std::vector<std::string>& argv);

// `epbrokerctl --help`: the commands, the options, the exit status.
std::string tool_help();
// `epbrokerctl COMMAND --help`, `epbrokerctl help COMMAND`; with `action`, that
// action's (`epbrokerctl remote reset --help`).
std::string command_help(const CommandInfo& c, std::string_view action = {});

}  // namespace epbrokerctl
