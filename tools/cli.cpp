#include "tools/cli.hpp"

#include <CLI/CLI.hpp>
#include <iostream>

namespace catalog::tools {
namespace {

// "TOOL" or "TOOL COMMAND": whose help a usage error points to.
std::string who(const CLI::App& app) {
  const auto commands = app.get_subcommands();
  return commands.empty() ? app.get_name() : app.get_name() + " " + commands.front()->get_name();
}

// The arguments CLI11 could not place, in the words of the tools' messages.
// Called with at least one.
std::string extras_message(const CLI::App& app) {
  const std::string first = app.remaining(true).front();
  if (first.size() > 1 && first.starts_with("-")) {
    return "unknown option '" + first.substr(0, first.find('=')) + "'";
  }
  if (app.get_subcommands().empty() && !app.get_subcommands({}).empty()) {
    return "unknown command '" + first + "'";
  }
  return "unexpected argument '" + first + "'";
}

}  // namespace

std::optional<std::string> Args::get(const std::string& name) const {
  auto it = options.find(name);
  if (it == options.end() || it->second.empty()) return std::nullopt;
  return it->second.back();
}

const std::vector<std::string>& Args::all(const std::string& name) const {
  static const std::vector<std::string> empty;
  auto it = options.find(name);
  return it == options.end() ? empty : it->second;
}

void declare_options(CLI::App& app, const std::vector<OptionSpec>& specs, Args& args) {
  for (const OptionSpec& s : specs) {
    const std::string name = s.name;
    CLI::Option* o = nullptr;
    if (s.meta == nullptr) {
      o = app.add_flag_callback(
                 "--" + name, [&args, name] { args.flags.insert(name); }, s.help)
              ->disable_flag_override();
    } else {
      o = app.add_option("--" + name, args.options[name], s.help)
              ->type_name(s.meta)
              ->expected(1)
              ->allow_extra_args(false)
              ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    }
    o->required(s.required);
  }
}

void declare_common(CLI::App& app) {
  app.get_formatter()->column_width(24);
  app.get_formatter()->label("SUBCOMMAND", "COMMAND");
  app.get_formatter()->label("Positionals", "Arguments");
  app.set_help_flag("-h,--help", "show this help");
  app.set_version_flag("--version", app.get_name() + " " + EPBROKER_VERSION,
                       "print the version and exit");
}

std::optional<int> parse(CLI::App& app, int argc, const char* const* argv) {
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();  // the command's, when one was given
    return 0;
  } catch (const CLI::CallForVersion& e) {
    std::cout << e.what() << "\n";
    return 0;
  } catch (const CLI::ParseError& e) {
    // An unknown word explains a missing command or argument better than CLI11's
    // "A subcommand is required", which it checks first.
    if (!app.remaining(true).empty()) return usage_error(who(app), extras_message(app));
    const std::string what = e.what();
    return usage_error(who(app), what == "A subcommand is required" ? "missing command" : what);
  }
}

int usage_error(const std::string& who, const std::string& message) {
  std::cerr << who << ": " << message << "\nTry '" << who << " --help'.\n";
  return 2;
}

}  // namespace catalog::tools
