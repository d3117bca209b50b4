#include "client/epbrokerctl/cli.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <memory>
#include <sstream>
#include <utility>

namespace epbrokerctl {
namespace {

constexpr const char* kToolFooter =
    "Exit status: 0 ok, 1 the daemon reported a failure, 2 usage error or invalid\n"
    "argument, 3 not authorized, 4 not found, 5 daemon not reachable, 130 interrupted\n"
    "(the job was cancelled).";

constexpr const char* kCommandFooter =
    "Options of every command: --json, --bus-address ADDRESS, -h/--help (see\n"
    "`epbrokerctl --help`).";

// CLI11's help with the usage line first, as every epbroker tool's help starts, and
// each command listed with its argument ("install NAME").
class Formatter final : public CLI::Formatter {
 public:
  std::string make_help(const CLI::App* app, std::string name,
                        CLI::AppFormatMode mode) const override {
    const std::string description = make_description(app);
    return make_usage(app, std::move(name)) + (description.empty() ? "" : "\n" + description) +
           make_positionals(app) + make_groups(app, mode) + make_subcommands(app, mode) + "\n" +
           make_footer(app);
  }
  std::string make_subcommand(const CLI::App* sub) const override {
    std::string name = sub->get_name();
    for (const CLI::Option* p :
         sub->get_options([](const CLI::Option* o) { return o->get_positional(); })) {
      name += " " + make_option_usage(p);
    }
    std::ostringstream out;
    CLI::detail::format_help(out, name, sub->get_description(), get_column_width());
    return out.str();
  }
};

// Where a parse leaves what the subcommands read.
struct Words {
  std::string arg;    // a command's argument (NAME)
  std::string topic;  // `help`'s COMMAND
};

// The command line as CLI11 reads it, results into `inv` and `words`.
void declare(CLI::App& app, Invocation& inv, Words& words) {
  auto formatter = std::make_shared<Formatter>();
  formatter->column_width(25);
  formatter->label("SUBCOMMAND", "COMMAND");
  formatter->label("Positionals", "Arguments");
  app.formatter(formatter);
  app.description("Administers epbrokerd, the ONNX Runtime execution-provider broker, over D-Bus.");
  app.fallthrough();  // the tool's options also after the command
  app.require_subcommand(0, 1);
  app.set_help_flag("-h,--help", "this help; `epbrokerctl COMMAND --help` for a command's");
  app.set_version_flag("--version", std::string(), "print epbrokerctl's version");
  app.add_flag(
         "--json", inv.json,
         "print one JSON document on stdout (shapes in\ndocs/epbrokerctl.md), errors included")
      ->disable_flag_override();
  app.add_option("--bus-address", inv.bus_address,
                 "talk to the daemon on this D-Bus address instead of the\nsystem bus (default: "
                 "$EPBROKER_BUS_ADDRESS if set)")
      ->type_name("ADDRESS")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
      ->check(CLI::Validator(
          [](const std::string& v) { return v.empty() ? std::string("must not be empty") : ""; },
          std::string()));
  for (const CommandInfo& c : commands()) {
    CLI::App* sub = app.add_subcommand(std::string(c.name), std::string(c.summary));
    sub->group("Commands");
    sub->footer(std::string(c.details) + "\n" + kCommandFooter);
    if (!c.arg.empty()) {
      sub->add_option(std::string(c.arg), words.arg, "the package's name")
          ->required()
          ->type_name("");
    }
  }
  CLI::App* help = app.add_subcommand("help", "Print this help, or the help of COMMAND.");
  help->group("Commands");
  help->footer(kCommandFooter);
  help->add_option("COMMAND", words.topic, "one of the commands above")->type_name("");
  app.footer(kToolFooter);
}

// CLI11 reads "--" as the end of the options of the (sub)command being read; before
// the command it would make the command a stray word: it moves after the command.
std::vector<std::string> reversed_args(const std::vector<std::string>& argv) {
  std::vector<std::string> args(argv.begin() + (argv.empty() ? 0 : 1), argv.end());
  const auto dashes = std::find(args.begin(), args.end(), "--");
  if (dashes != args.end() && dashes + 1 != args.end() && find_command(*(dashes + 1)) != nullptr) {
    std::iter_swap(dashes, dashes + 1);
  }
  std::reverse(args.begin(), args.end());  // CLI11 takes them last to first
  return args;
}

// The message for arguments CLI11 could not place.
// Called with at least one.
std::string extras_message(const CLI::App& app) {
  const std::string first = app.remaining(true).front();
  if (first.starts_with("-")) return "unknown option '" + first + "'";
  const auto parsed = app.get_subcommands();
  if (parsed.empty()) return "unknown command '" + first + "'";
  return parsed.front()->get_name() + ": unexpected argument '" + first + "'";
}

std::string help_of(const CLI::App& app, const std::string& command) {
  return command.empty() ? app.help() : app.get_subcommand(command)->help(app.get_name());
}

}  // namespace

const std::vector<CommandInfo>& commands() {
  static const std::vector<CommandInfo> kCommands = {
      {"devices", "", "List the CPUs, GPUs and NPUs epbrokerd found on this machine.",
       "Columns: ID (what providers name in DEVICES), TYPE, VENDOR, NAME, DRIVER, and details\n"
       "(CPU cores/threads/arch and notable ISA extensions; a GPU's or NPU's PCI bus path).\n"},
      {"providers", "",
       "List the execution-provider packages the trusted catalogs offer, and their state.",
       "States: ready (installed; LIBRARY is what applications register), available\n"
       "(compatible, not installed), installing (a job is running), incompatible (cannot\n"
       "run here; the reason is printed under it). SIZE is the installed size when ready,\n"
       "else the download size. DEVICES are the device ids (see `devices`) it serves.\n"},
      {"install", "NAME",
       "Install package NAME (its newest compatible version) unless it is ready.",
       "Shows the download's progress (a bar with bytes, rate and ETA on a terminal, plain\n"
       "lines otherwise, on stderr) and waits until the package is installed and verified.\n"
       "Ctrl-C cancels the install job (nothing is installed) and exits 130; if another\n"
       "client started the same install, it goes on for that client.\n"
       "Needs polkit's org.epbroker.install (active local users), or root or membership of\n"
       "the daemon's install_group when polkit is not running.\n"},
      {"remove", "NAME", "Remove every installed version of package NAME.",
       "Refused (Busy, exit 1) while a running application holds a session on it.\n"
       "Needs polkit's org.epbroker.manage (administrators), or root / install_group.\n"},
      {"refresh", "", "Refresh every trusted catalog (the TUF update workflow) and wait for it.",
       "Prints the catalog revision and expiry afterwards. Needs org.epbroker.manage.\n"},
      {"verify", "", "Re-hash every installed package against its signed manifest.",
       "Exits 1 if any package is damaged; `epbrokerctl install NAME` repairs one.\n"},
      {"status", "", "Show the daemon's version and state, catalog, store size, sessions and jobs.",
       "Asking starts epbrokerd if it is not running (D-Bus activation).\n"},
  };
  return kCommands;
}

const CommandInfo* find_command(std::string_view name) {
  for (const auto& c : commands()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

std::expected<Invocation, std::string> parse_args(const std::vector<std::string>& argv) {
  Invocation inv;
  Words words;
  CLI::App app(std::string(), "epbrokerctl");
  declare(app, inv, words);
  try {
    app.parse(reversed_args(argv));
  } catch (const CLI::CallForHelp&) {
    inv.help = true;
  } catch (const CLI::CallForVersion&) {
    inv.version = true;
  } catch (const CLI::ParseError& e) {
    // An unknown word explains a missing argument better than CLI11's message.
    if (!app.remaining(true).empty()) return std::unexpected(extras_message(app));
    const auto parsed = app.get_subcommands();  // "NAME is required" names no command
    return std::unexpected((parsed.empty() ? "" : parsed.front()->get_name() + ": ") + e.what());
  }
  const auto parsed = app.get_subcommands();
  if (!parsed.empty()) inv.command = parsed.front()->get_name();
  if (!words.arg.empty()) inv.args.push_back(words.arg);
  if (inv.command == "help") {
    inv.help = true;
    inv.command = words.topic;
    if (!inv.command.empty() && find_command(inv.command) == nullptr) {
      return std::unexpected("unknown command '" + inv.command + "'");
    }
  }
  if (inv.command.empty() && !inv.help && !inv.version) return std::unexpected("no command given");
  return inv;
}

std::string tool_help() {
  Invocation inv;
  Words words;
  CLI::App app(std::string(), "epbrokerctl");
  declare(app, inv, words);
  return help_of(app, "");
}

std::string command_help(const CommandInfo& c) {
  Invocation inv;
  Words words;
  CLI::App app(std::string(), "epbrokerctl");
  declare(app, inv, words);
  return help_of(app, std::string(c.name));
}

}  // namespace epbrokerctl
