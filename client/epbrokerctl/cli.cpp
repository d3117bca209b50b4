#include "client/epbrokerctl/cli.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <memory>
#include <optional>
#include <sstream>
#include <utility>

#include "epbroker/client.hpp"

namespace epbrokerctl {
namespace {

constexpr const char* kToolFooter =
    "Exit status: 0 ok, 1 the daemon reported a failure, 2 usage error or invalid\n"
    "argument, 3 not authorized, 4 not found, 5 daemon not reachable, 130 interrupted\n"
    "(the job was cancelled).\n"
    "See epbrokerctl(1).";

constexpr const char* kCommandFooter =
    "Options of every command: --json, --bus-address ADDRESS, --no-ask-password,\n"
    "-h/--help (see `epbrokerctl --help`). See epbrokerctl(1).";

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
    std::ostringstream out;
    CLI::detail::format_help(out, synopsis(sub), sub->get_description(), get_column_width());
    return out.str();
  }

 private:
  // "install NAME[@VERSION] [--allow-older]", "remote reset NAME".
  std::string synopsis(const CLI::App* sub) const {
    std::string name = sub->get_name();
    for (const CLI::Option* p :
         sub->get_options([](const CLI::Option* o) { return o->get_positional(); })) {
      name += " " + make_option_usage(p);
    }
    for (const CLI::Option* o : sub->get_options([sub](const CLI::Option* o) {
           return o->nonpositional() && o != sub->get_help_ptr();
         })) {
      // "[--policy POLICY]" for an option with a value, "[--now]" for a flag.
      const std::string type = o->get_type_name();  // "" for a flag
      const std::string value = type.empty() ? "" : " " + type;
      name += " [" + o->get_name() + value + "]";
    }
    std::string actions;
    for (const CLI::App* a : sub->get_subcommands({})) {
      actions += (actions.empty() ? "" : " | ") + synopsis(a);
    }
    if (!actions.empty()) name += " " + actions;
    return name;
  }
};

// Where a parse leaves what the subcommands read.
struct Words {
  std::string arg;                // a command's argument (NAME)
  std::vector<std::string> many;  // a command's arguments (update's NAME...)
  std::string topic;              // `help`'s COMMAND
};

bool* flag_of(Invocation& inv, std::string_view flag) {
  if (flag == "--allow-older") return &inv.allow_older;
  if (flag == "--dry-run") return &inv.dry_run;
  if (flag == "--now") return &inv.now;
  return nullptr;
}

std::string* value_of(Invocation& inv, std::string_view option) {
  if (option == "--policy") return &inv.policy;
  if (option == "--ort-version") return &inv.ort_version;
  if (option == "--variant") return &inv.variant;
  if (option == "--version") return &inv.model_version;
  return nullptr;
}

// One command (or action) as a CLI11 subcommand of `parent`.
void declare_command(CLI::App& parent, const CommandInfo& c, Invocation& inv, Words& words) {
  CLI::App* sub = parent.add_subcommand(std::string(c.name), std::string(c.summary));
  sub->group("Commands");
  sub->footer(std::string(c.details) + "\n" + kCommandFooter);
  if (!c.arg.empty()) {
    CLI::Option* o = c.arity == Arity::many
                         ? sub->add_option(std::string(c.arg), words.many, std::string(c.arg_help))
                         : sub->add_option(std::string(c.arg), words.arg, std::string(c.arg_help));
    o->type_name("");
    if (c.arity == Arity::one) o->required();
  }
  if (!c.flag.empty()) {
    if (bool* target = flag_of(inv, c.flag)) {
      sub->add_flag(std::string(c.flag), *target, std::string(c.flag_help))
          ->disable_flag_override();
    }
  }
  for (const OptionInfo& o : c.options) {
    if (std::string* target = value_of(inv, o.name)) {
      sub->add_option(std::string(o.name), *target, std::string(o.help))
          ->type_name(std::string(o.value));
    }
  }
  for (const CommandInfo& a : c.actions) declare_command(*sub, a, inv, words);
  // At most one action; a missing one is reported by parse_args.
  if (!c.actions.empty()) sub->require_subcommand(0, 1);
}

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
  app.add_flag("--no-ask-password", inv.no_ask_password,
               "never ask for a password: on a terminal, commands that\nneed polkit's "
               "authorization otherwise start its text agent\n(pkttyagent)")
      ->disable_flag_override();
  for (const CommandInfo& c : commands()) declare_command(app, c, inv, words);
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

// The command word and its action: "remote reset".
std::string command_path(const CLI::App& app) {
  std::string out;
  for (const CLI::App* a = &app; !a->get_subcommands().empty();) {
    a = a->get_subcommands().front();
    out += (out.empty() ? "" : " ") + a->get_name();
  }
  return out;
}

// The message for arguments CLI11 could not place.
// Called with at least one.
std::string extras_message(const CLI::App& app) {
  const std::string first = app.remaining(true).front();
  if (first.starts_with("-")) return "unknown option '" + first + "'";
  const auto parsed = app.get_subcommands();
  if (parsed.empty()) return "unknown command '" + first + "'";
  const CLI::App* command = parsed.front();
  if (command->get_subcommands().empty() && !command->get_subcommands({}).empty()) {
    return command->get_name() + ": unknown action '" + first + "'";
  }
  return command_path(app) + ": unexpected argument '" + first + "'";
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
       "One row per package. VERSION is the current version when installed (what new\n"
       "sessions get), else the newest the catalogs offer. States: ready (installed),\n"
       "available (compatible, not installed), installing (a job is running),\n"
       "incompatible (cannot run here), revoked (the signed catalogs no longer list any\n"
       "installed version; never granted), refused (a catalog lists the name only from a\n"
       "path outside NAME/, signed by a role not trusted for it; never installed); the\n"
       "reason is printed under the table. SIZE is the installed size when ready, else the\n"
       "download size. DEVICES are the device ids (see `devices`) it serves. Below the\n"
       "table, for each installed package with more\n"
       "to say: the versions kept besides the current one, with their role (rollback,\n"
       "older_ort, staged, leased, revoked, removing, unused), why, and their leases;\n"
       "`update available: X`; `held` and why.\n"},
      {.name = "models",
       .summary = "List the ML models the trusted catalogs offer, and what this machine gets.",
       .details =
           "One row per model version, newest first: NAME, VERSION, LICENSE, TASK and its\n"
           "VARIANTS (each built for some devices or EPs, or for any; `*` marks an installed\n"
           "one). Below the table, for each: the variant a session gets on this machine, on\n"
           "which device and through which EP, and why (or why none fits), planned for\n"
           "--policy (default: default) and an app with ONNX Runtime --ort-version (default:\n"
           "not checked). A refused version (its card or files are not signed as the card\n"
           "says) is never installed; why is said. Open to everyone.\n",
       .options = {{"--policy", "POLICY",
                    "plan for this device policy: default, prefer_cpu,\nprefer_gpu, prefer_npu, "
                    "max_performance,\nmax_efficiency, min_overall_power"},
                   {"--ort-version", "VERSION",
                    "plan for an app with this ONNX Runtime version\n(e.g. 1.22.0)"}}},
      {.name = "model",
       .summary = "Install or remove a model's variant: `install NAME`, `remove NAME`.",
       .details = "An action follows the command: `epbrokerctl model install NAME`,\n"
                  "`epbrokerctl model remove NAME`.\n",
       .actions =
           {{.name = "install",
             .arg = "NAME",
             .summary = "Install a variant of model NAME: the one planned for this machine.",
             .details =
                 "Installs the variant `epbrokerctl models` plans for this machine (under\n"
                 "--policy), or --variant, of the newest version the catalogs offer, or\n"
                 "--version, and shows the download's progress as `install` does. When that\n"
                 "variant is installed, its files are checked (hashed, as `verify` does):\n"
                 "nothing is downloaded when they are intact, and a damaged variant is\n"
                 "repaired (its damaged files downloaded again and replaced, in every variant\n"
                 "sharing them). Ctrl-C cancels the job and exits 130. Needs polkit's\n"
                 "org.epbroker.install.\n",
             .arg_help = "the model's name",
             .options = {{"--variant", "VARIANT",
                          "this variant (see `models`), whatever this\n"
                          "machine has"},
                         {"--version", "VERSION",
                          "this version of the model (default: the "
                          "newest)"},
                         {"--policy", "POLICY", "plan the variant for this device policy"}}},
            {.name = "remove",
             .arg = "NAME",
             .summary = "Remove installed variants of model NAME.",
             .details =
                 "Removes every installed variant of NAME, or those of --version and\n"
                 "--variant. A variant a running application leases is refused (exit 1) and\n"
                 "nothing is removed, unless --now: then it is deleted at once (applications\n"
                 "that opened its files keep them). Files shared with a variant that stays\n"
                 "are kept. Needs polkit's org.epbroker.manage.\n",
             .arg_help = "the model's name",
             .flag = "--now",
             .flag_help = "also variants sessions lease, at once",
             .options = {{"--version", "VERSION", "only this version's variants"},
                         {"--variant", "VARIANT", "only this variant"}}}}},
      {"install", "NAME[@VERSION]",
       "Install package NAME's newest compatible version, or VERSION, and make it current.",
       "Shows the download's progress (a bar with bytes, rate and ETA on a terminal, plain\n"
       "lines otherwise, on stderr) and waits until the package is installed and verified;\n"
       "nothing is downloaded when that version is current already. Running applications\n"
       "keep the version they have; new sessions get the new one. A version older than the\n"
       "current one needs --allow-older. Ctrl-C cancels the install job (nothing is\n"
       "installed) and exits 130; if another client started the same install, it goes on\n"
       "for that client.\n"
       "Needs polkit's org.epbroker.install (active local users), and\n"
       "org.epbroker.downgrade for an older version; or root or membership of the daemon's\n"
       "install_group when polkit is not running.\n",
       Arity::one, "the package's name, optionally with @VERSION (e.g. openvino@1.8.1)",
       "--allow-older", "allow a version older than the current one (a downgrade)"},
      {"update", "NAME",
       "Update every installed package, or the named ones, to its newest compatible version.",
       "Prints one line per package: `NAME FROM -> TO`, or `NAME FROM (why it stays)`.\n"
       "Held packages are left alone. Progress and Ctrl-C as for install; each package's\n"
       "job runs to its end, and the first failure is reported after the last one ended.\n"
       "--dry-run only lists what would change. Needs polkit's org.epbroker.update.\n",
       Arity::many, "package names (none: every installed package)", "--dry-run",
       "list what would change, change nothing"},
      {"hold", "NAME", "Hold package NAME: updates, manual and automatic, skip it.",
       "`epbrokerctl unhold NAME` allows updates again. Installing a given version\n"
       "(`install NAME@VERSION`) still works. Needs polkit's org.epbroker.hold.\n"},
      {"unhold", "NAME", "Let updates reach package NAME again.",
       "Undoes `hold` (and the hold `rollback` sets). Needs polkit's org.epbroker.hold.\n"},
      {"rollback", "NAME",
       "Make the previously current version of NAME current again, and hold NAME.",
       "Needs a previous version kept (see `providers`; keep_versions in epbroker.conf).\n"
       "The package is held afterwards so that updates do not undo the rollback;\n"
       "`epbrokerctl unhold NAME` allows them again. Needs polkit's org.epbroker.downgrade.\n"},
      {"history", "NAME", "Show the lifecycle history, or package NAME's.",
       "Oldest first: TIME (UTC), UID (the caller; 0 also for the daemon's own work, such\n"
       "as automatic updates), ACTION (install, update, downgrade, rollback, download,\n"
       "remove, revoke, unrevoke, gc, hold, unhold, remote_reset), NAME, VERSIONS (from ->\n"
       "to), RESULT (ok, or the error), REASON. Open to everyone.\n",
       Arity::optional, "a package's name (none: every package)"},
      {"gc", "", "Delete installed versions that are neither current nor kept, unless leased.",
       "Lists each version deleted, or says there was nothing to remove. The daemon also\n"
       "does this on its own after updates and when leases end.\n"
       "Needs polkit's org.epbroker.manage.\n"},
      {"remove", "NAME", "Remove package NAME: no new session gets it from now on.",
       "Versions no session leases are deleted at once, leased ones when their last lease\n"
       "ends (running applications keep working). --now deletes every version at once:\n"
       "applications that already loaded the library keep running with it, but cannot load\n"
       "it again. Needs polkit's org.epbroker.manage (administrators), or root /\n"
       "install_group.\n",
       Arity::one, "the package's name", "--now",
       "delete every version now, even while sessions lease it"},
      {"refresh", "", "Refresh every trusted catalog (the TUF update workflow) and wait for it.",
       "Prints the catalog revision and expiry afterwards. Needs org.epbroker.manage.\n"},
      {"verify", "", "Re-hash every installed package and model variant against what was signed.",
       "Shows the progress on stderr (the daemon hashes as a job; one at a time, and a\n"
       "call joins a running one). Without root or org.epbroker.manage a new\n"
       "verification starts at most every 10 minutes; in between, the latest result is\n"
       "shown (stderr says when it was found). A model variant's row has VERSION\n"
       "\"VERSION/VARIANT\"; a file variants share is one copy, so a damaged one shows in\n"
       "every variant listing it. Exits 1 if anything is damaged; `epbrokerctl install\n"
       "NAME` repairs a package, `epbrokerctl model install NAME --version VERSION\n"
       "--variant VARIANT` a model variant (for every variant sharing its files).\n"},
      {"status", "", "Show the daemon's version and state, catalog, store size, sessions and jobs.",
       "Asking starts epbrokerd if it is not running (D-Bus activation).\n"},
      {.name = "remote",
       .summary = "Manage a catalog remote: `reset NAME` re-anchors it.",
       .details = "An action follows the command: `epbrokerctl remote reset NAME`.\n",
       .actions = {{"reset", "NAME", "Drop remote NAME's trusted metadata and re-anchor it.",
                    "For when the remote's configured trusted_root (/etc/epbroker/remotes.d/)\n"
                    "was replaced and `refresh` says the trusted root differs: the next\n"
                    "`epbrokerctl refresh` starts again from the configured root. Needs\n"
                    "org.epbroker.manage.\n",
                    Arity::one, "the remote's name (its file in /etc/epbroker/remotes.d/)"}}},
  };
  return kCommands;
}

const CommandInfo* find_command(std::string_view name) {
  for (const auto& c : commands()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

namespace {

// A first check of the shape, so a typo is a usage error here (exit 2); the
// daemon parses the version itself (catalog::parse_version: D(.D){0,3}(-S)?) and
// refuses anything else with InvalidArgument.
bool valid_version(std::string_view v) {
  if (v.empty() || v.size() > 64 || v.front() < '0' || v.front() > '9') return false;
  if (v.back() == '.' || v.find("..") != std::string_view::npos) return false;
  return std::all_of(v.begin(), v.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.' ||
           c == '-';
  });
}

// The value of --policy, --ort-version and a model's --version checked; the
// message of a usage error, or nullopt.
std::optional<std::string> check_values(const Invocation& inv) {
  const std::string where = inv.action.empty() ? inv.command : inv.command + " " + inv.action;
  if (!inv.policy.empty() && !epbroker::parse_policy(inv.policy)) {
    std::string names;
    for (auto p : {epbroker::Policy::default_policy, epbroker::Policy::prefer_cpu,
                   epbroker::Policy::prefer_gpu, epbroker::Policy::prefer_npu,
                   epbroker::Policy::max_performance, epbroker::Policy::max_efficiency,
                   epbroker::Policy::min_overall_power}) {
      names += (names.empty() ? "" : ", ") + std::string(epbroker::to_string(p));
    }
    return where + ": unknown policy '" + inv.policy + "' (" + names + ")";
  }
  for (const auto& [option, value] :
       {std::pair{"--ort-version", &inv.ort_version}, {"--version", &inv.model_version}}) {
    if (!value->empty() && !valid_version(*value)) {
      return where + ": " + option + " '" + *value + "' is not a version (digits and dots, e.g. " +
             "1.22.0)";
    }
  }
  return std::nullopt;
}

// `install NAME@VERSION` into args[0] = NAME and package_version = VERSION.
std::optional<std::string> split_version(Invocation& inv) {
  if (inv.args.empty()) return std::nullopt;
  const std::string word = inv.args.front();
  const auto at = word.find('@');
  if (at == std::string::npos) return std::nullopt;
  const std::string name = word.substr(0, at);
  const std::string version = word.substr(at + 1);
  if (name.empty()) return "install: '" + word + "' names no package (NAME@VERSION)";
  if (version.empty()) {
    return "install: '" + word + "' names no version (NAME@VERSION, e.g. " + name + "@1.2.0)";
  }
  if (!valid_version(version)) {
    return "install: '" + version + "' is not a version (digits and dots, e.g. 1.2.0)";
  }
  inv.args.front() = name;
  inv.package_version = version;
  return std::nullopt;
}

}  // namespace

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
    const std::string path = command_path(app);  // "NAME is required" names no command
    return std::unexpected((path.empty() ? "" : path + ": ") + e.what());
  }
  const auto parsed = app.get_subcommands();
  const CLI::App* command = parsed.empty() ? nullptr : parsed.front();
  if (command != nullptr) {
    inv.command = command->get_name();
    if (!command->get_subcommands().empty()) {
      inv.action = command->get_subcommands().front()->get_name();
    }
  }
  if (!words.arg.empty()) inv.args.push_back(words.arg);
  inv.args.insert(inv.args.end(), words.many.begin(), words.many.end());
  if (inv.command == "help") {
    inv.help = true;
    inv.command = words.topic;
    if (!inv.command.empty() && find_command(inv.command) == nullptr) {
      return std::unexpected("unknown command '" + inv.command + "'");
    }
  }
  if (inv.command.empty() && !inv.help && !inv.version) return std::unexpected("no command given");
  if (inv.help || inv.version) return inv;
  const CommandInfo* info = find_command(inv.command);
  if (info != nullptr && !info->actions.empty() && inv.action.empty()) {
    std::string actions;
    for (const auto& a : info->actions)
      actions += (actions.empty() ? "" : ", ") + std::string(a.name);
    return std::unexpected(inv.command + ": which action? (" + actions + ")");
  }
  if (inv.command == "install") {
    if (auto error = split_version(inv)) return std::unexpected(*error);
  }
  if (auto error = check_values(inv)) return std::unexpected(*error);
  return inv;
}

std::string tool_help() {
  Invocation inv;
  Words words;
  CLI::App app(std::string(), "epbrokerctl");
  declare(app, inv, words);
  return help_of(app, "");
}

std::string command_help(const CommandInfo& c, std::string_view action) {
  Invocation inv;
  Words words;
  CLI::App app(std::string(), "epbrokerctl");
  declare(app, inv, words);
  if (action.empty()) return help_of(app, std::string(c.name));
  const CLI::App* sub = app.get_subcommand(std::string(c.name));
  return sub->get_subcommand(std::string(action))->help("epbrokerctl " + std::string(c.name));
}

}  // namespace epbrokerctl
