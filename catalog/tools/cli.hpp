// Minimal command-line parsing shared by the catalog tools: long options with
// values (--name VALUE or --name=VALUE, repeatable), flags, positionals.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace catalog::tools {

struct Args {
  std::map<std::string, std::vector<std::string>> options;  // name -> values, in order
  std::set<std::string> flags;
  std::vector<std::string> positionals;

  std::optional<std::string> get(const std::string& name) const;
  const std::vector<std::string>& all(const std::string& name) const;
  bool has(const std::string& flag) const { return flags.contains(flag); }
};

// `value_options` take a value, `flag_options` do not; anything else starting
// with "--" is an error (returned in `error`). "-h" is read as "--help".
std::optional<Args> parse_args(int argc, char** argv, int first,
                               const std::set<std::string>& value_options,
                               const std::set<std::string>& flag_options, std::string& error);

}  // namespace catalog::tools
