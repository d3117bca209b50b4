// epbroker-publish: create and maintain a signed EP catalog (a TUF repository
// with consistent snapshots) that any static HTTP server can serve.
#include <sys/stat.h>

#include <iostream>

#include "catalog/atomic_file.hpp"
#include "catalog/ep_metadata.hpp"
#include "catalog/tools/cli.hpp"
#include "catalog/tools/publish_commands.hpp"

namespace {

constexpr const char* kUsage = R"(Usage: epbroker-publish COMMAND [OPTIONS] [ARGS]

Creates and maintains a signed catalog of EP packages (a TUF 1.0 repository).
Serve DIR/metadata and DIR/targets with any static HTTP server.

Commands:
  init       create keys and a new repository
  pack       build an EP package (.tar.zst or .tar.gz) from a directory
  add        add (or replace) a package with its EP metadata
  remove     remove a target from the catalog
  timestamp  re-sign snapshot and timestamp with fresh expiry (run from cron)
  rotate     replace a role's key; root is signed by old and new keys
  delegate   let another key sign packages under some paths
  verify     check a repository the way a client would

Run 'epbroker-publish COMMAND --help' for the options of a command.
Exit status: 0 success, 1 failure, 2 usage error.
)";

constexpr const char* kCommonOptions = R"(
Common options:
  --repo DIR            repository directory (metadata/ and targets/)
  --keys DIR            directory of PEM private keys (mode 0700, files 0600)
  --root-days N         root lifetime in days when re-signed (default 365)
  --targets-days N      targets lifetime in days (default 90)
  --snapshot-days N     snapshot lifetime in days (default 7)
  --timestamp-days N    timestamp lifetime in days (default 1)
  -h, --help            show this help
)";

struct Command {
  const char* name;
  const char* usage;
  std::set<std::string> value_options;
  std::set<std::string> flag_options;
  int (*run)(const catalog::tools::Args&);
};

const std::set<std::string> kLifetimeOptions = {"root-days", "targets-days", "snapshot-days",
                                                "timestamp-days"};

std::set<std::string> with_common(std::set<std::string> s) {
  s.insert("repo");
  s.insert("keys");
  s.insert(kLifetimeOptions.begin(), kLifetimeOptions.end());
  return s;
}

const Command kCommands[] = {
    {"init",
     "Usage: epbroker-publish init --repo DIR --keys DIR [--root-keys N] [--root-threshold M]\n"
     "                             [--no-consistent-snapshot]\n\n"
     "Creates N root keys (threshold M, default 1 of 1) and one key each for\n"
     "timestamp, snapshot and targets in --keys, and publishes version 1 of every\n"
     "role with no targets. Refuses to overwrite an existing repository or key.\n",
     with_common({"root-keys", "root-threshold"}),
     {"no-consistent-snapshot"},
     catalog::tools::cmd_init},
    {"pack",
     "Usage: epbroker-publish pack --dir DIR --metadata EP.json --output FILE [--gzip]\n\n"
     "Packs every regular file under DIR into an EP package: a tar archive whose\n"
     "first entry is manifest.json (the EP metadata of EP.json, checked strictly,\n"
     "plus each file's path, size, SHA-256 and mode), then the files sorted by path.\n"
     "zstd-compressed (level 9), or gzip with --gzip. The output is deterministic:\n"
     "the same files and metadata give the same bytes. Refuses symlinks, special\n"
     "files, a manifest.json in DIR, and an EP library that is not in DIR. Prints\n"
     "the package's path, size, SHA-256 and file count.\n\n"
     "Options:\n"
     "  --dir DIR             the files of the package (e.g. lib/libmy_ep.so)\n"
     "  --metadata EP.json    EP metadata ({\"epbroker\": {...}}), as for 'add'\n"
     "  --output FILE         the package to write, replaced atomically; it must\n"
     "                        end with .tar.zst (.tar.gz with --gzip)\n"
     "  --gzip                gzip instead of zstd\n"
     "  -h, --help            show this help\n",
     {"dir", "metadata", "output"},
     {"gzip"},
     catalog::tools::cmd_pack},
    {"add",
     "Usage: epbroker-publish add --repo DIR --keys DIR --metadata EP.json PACKAGE\n"
     "                            [--target-path PATH] [--role ROLE]\n\n"
     "Adds PACKAGE to the catalog with the EP metadata in EP.json ({\"epbroker\": {...}},\n"
     "checked strictly) as its custom field. The target path defaults to\n"
     "NAME/BASENAME. When PACKAGE is an EP package (*.tar.zst, *.tar.gz), its\n"
     "manifest.json must agree with EP.json, or nothing is added. Publishes new\n"
     "targets, snapshot and timestamp versions.\n",
     with_common({"metadata", "target-path", "role"}),
     {},
     catalog::tools::cmd_add},
    {"remove",
     "Usage: epbroker-publish remove --repo DIR --keys DIR TARGET_PATH [--role ROLE]\n\n"
     "Removes TARGET_PATH from the catalog and publishes new versions.\n",
     with_common({"role"}),
     {},
     catalog::tools::cmd_remove},
    {"timestamp",
     "Usage: epbroker-publish timestamp --repo DIR --keys DIR\n\n"
     "Publishes new snapshot and timestamp versions with fresh expiry, so clients\n"
     "do not see the catalog as frozen. Run it more often than --timestamp-days.\n",
     with_common({}),
     {},
     catalog::tools::cmd_timestamp},
    {"rotate",
     "Usage: epbroker-publish rotate --repo DIR --keys DIR ROLE [--new-key PEM]\n\n"
     "Replaces the key(s) of ROLE (root, timestamp, snapshot or targets) with a new\n"
     "key (generated unless --new-key is given) and publishes a new root signed by\n"
     "the old and the new root keys. Old key files move to --keys/retired/.\n",
     with_common({"new-key"}),
     {},
     catalog::tools::cmd_rotate},
    {"delegate",
     "Usage: epbroker-publish delegate --repo DIR --keys DIR ROLE --paths PATTERN...\n"
     "                                 [--key PEM] [--terminating]\n\n"
     "Delegates target paths matching PATTERN (shell wildcards per '/' segment,\n"
     "e.g. 'vendor/*'; repeatable) from the top-level targets role to a new role\n"
     "ROLE signed by its own key: --key (e.g. a vendor's) or a new key written to\n"
     "--keys/ROLE.pem. Add packages to it with 'add --role ROLE'.\n",
     with_common({"paths", "key"}),
     {"terminating"},
     catalog::tools::cmd_delegate},
    {"verify",
     "Usage: epbroker-publish verify --repo DIR [--root ROOT.json]\n\n"
     "Runs the client workflow against DIR starting from ROOT.json (default\n"
     "metadata/1.root.json): walks the root chain, checks timestamp, snapshot,\n"
     "targets and delegations, re-hashes every target and checks every EP metadata.\n",
     {"repo", "root"},
     {},
     catalog::tools::cmd_verify},
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    std::cout << kUsage;
    return argc < 2 ? 2 : 0;
  }
  const std::string name = argv[1];
  for (const auto& cmd : kCommands) {
    if (name != cmd.name) continue;
    std::string err;
    auto args = catalog::tools::parse_args(argc, argv, 2, cmd.value_options, cmd.flag_options, err);
    if (!args) {
      std::cerr << "epbroker-publish " << name << ": " << err << "\nTry 'epbroker-publish " << name
                << " --help'.\n";
      return 2;
    }
    if (args->has("help")) {
      std::cout << cmd.usage << (name == "verify" || name == "pack" ? "" : kCommonOptions);
      return 0;
    }
    return cmd.run(*args);
  }
  std::cerr << "epbroker-publish: unknown command '" << name
            << "'\nTry 'epbroker-publish --help'.\n";
  return 2;
}
