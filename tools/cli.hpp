// The command lines of the catalog tools, read with CLI11: a command's options are
// declared from a table (OptionSpec) and their values collected into Args, which the
// commands read; parse() answers --help, --version and usage errors alike for
// every tool.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace CLI {
class App;
}  // namespace CLI

namespace catalog::tools {

struct Args {
  std::map<std::string, std::vector<std::string>> options;  // name -> values, in order
  std::set<std::string> flags;
  std::vector<std::string> positionals;

  std::optional<std::string> get(const std::string& name) const;
  const std::vector<std::string>& all(const std::string& name) const;
  bool has(const std::string& flag) const { return flags.contains(flag); }
};

// One option of a command, listed by --help in table order.
struct OptionSpec {
  const char* name;  // without the dashes: "repo"
  const char* meta;  // what the value is, "DIR"; nullptr for a flag
  const char* help;  // lines after the first are indented by CLI11
  bool required = false;
};

// Declares `specs` on `app`: an option takes one value per use ("--name VALUE" or
// "--name=VALUE") and may be repeated (every value kept, in order, in
// args.options[name]); a flag is recorded in args.flags and refuses "--name=VALUE".
// A required option missing is a usage error ("--name is required"). `args` must
// outlive the parse.
void declare_options(CLI::App& app, const std::vector<OptionSpec>& specs, Args& args);

// What every catalog tool's app has: -h/--help ("show this help", on its commands
// too), --version (prints "<app name> <PROJECT_VERSION>"), the help layout.
void declare_common(CLI::App& app);

// Parses argv[1..argc) with `app`. Returns the exit status when the tool is done:
// 0 after printing the help (of the command given, if any) or the version on stdout;
// 2 after a usage error, printed on stderr as "TOOL[ COMMAND]: what is wrong" and a
// line pointing to that --help. Returns std::nullopt when the tool goes on.
std::optional<int> parse(CLI::App& app, int argc, const char* const* argv);

// Prints a usage error found after parsing, as parse() does; returns 2.
int usage_error(const std::string& who, const std::string& message);

}  // namespace catalog::tools
