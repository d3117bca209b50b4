#include "catalog/tools/cli.hpp"

namespace catalog::tools {

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

std::optional<Args> parse_args(int argc, char** argv, int first,
                               const std::set<std::string>& value_options,
                               const std::set<std::string>& flag_options, std::string& error) {
  Args args;
  bool only_positionals = false;
  for (int i = first; i < argc; ++i) {
    std::string a = argv[i];
    if (only_positionals || a.size() < 2 || a[0] != '-') {
      args.positionals.push_back(a);
      continue;
    }
    if (a == "--") {
      only_positionals = true;
      continue;
    }
    if (a == "-h") a = "--help";
    if (!a.starts_with("--")) {
      error = "unknown option '" + a + "'";
      return std::nullopt;
    }
    std::string name = a.substr(2);
    std::optional<std::string> value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (flag_options.contains(name) || name == "help") {
      if (value) {
        error = "option --" + name + " takes no value";
        return std::nullopt;
      }
      args.flags.insert(name);
    } else if (value_options.contains(name)) {
      if (!value) {
        if (i + 1 >= argc) {
          error = "option --" + name + " needs a value";
          return std::nullopt;
        }
        value = argv[++i];
      }
      args.options[name].push_back(*value);
    } else {
      error = "unknown option '--" + name + "'";
      return std::nullopt;
    }
  }
  return args;
}

}  // namespace catalog::tools
