// epbroker-publish sign: one holder adds their signature to staged metadata.
#include <iostream>

#include "tools/publish_commands.hpp"
#include "tools/publish_keys.hpp"

namespace catalog::tools {

int cmd_sign(const Args& args) {
  const std::string role = args.positionals.empty() ? std::string() : args.positionals[0];
  if (args.positionals.size() != 1)
    return usage_error("epbroker-publish sign", "expected exactly one ROLE");
  const auto& specs = args.all("key");
  if (specs.size() != 1) {
    return usage_error("epbroker-publish sign", "give the holder's key as exactly one --key");
  }
  auto fail_with = [](const Error& e) {
    std::cerr << "epbroker-publish sign: " << errc_name(e.code) << ": " << e.message << "\n";
    return 1;
  };
  // 1. The repository with what is staged, and the online keys if given
  //    (--keys): with them, what reaches its threshold is published now.
  auto loaded = open_repo(args);
  if (!loaded) return fail_with(loaded.error());
  auto key = load_signing_key(specs.front());
  if (!key) return fail_with(key.error());
  // 2. Add the signature; publish or keep staged.
  auto report = loaded->repo.sign_staged(
      *args.get("repo"), role, std::move(*key),
      std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now()));
  if (!report) return fail_with(report.error());
  print_report(*report);
  return 0;
}

}  // namespace catalog::tools
