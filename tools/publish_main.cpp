// epbroker-publish: create and maintain a signed EP catalog (a TUF repository
// with consistent snapshots) that any static HTTP server can serve.
#include <CLI/CLI.hpp>

#include "tools/cli.hpp"
#include "tools/publish_commands.hpp"

namespace {

using catalog::tools::OptionSpec;

const std::vector<OptionSpec> kCommonOptions = {
    {"repo", "DIR", "repository directory (metadata/ and targets/)", true},
    {"keys", "DIR", "directory of PEM private keys (mode 0700, files 0600)"},
    {"key", "KEY",
     "a signing key: a PEM private key file or a pkcs11: URI\n(a key in a hardware token); "
     "repeatable"},
    {"root-days", "N", "root lifetime in days when re-signed (default 365)"},
    {"targets-days", "N", "targets lifetime in days (default 90)"},
    {"snapshot-days", "N", "snapshot lifetime in days (default 7)"},
    {"timestamp-days", "N", "timestamp lifetime in days (default 1)"},
};

struct Command {
  const char* name;
  const char* summary;     // the line in the list of commands
  const char* details;     // the rest of COMMAND --help
  const char* positional;  // its one argument, or nullptr
  const char* positional_help;
  std::vector<OptionSpec> options;  // kCommonOptions follow unless `common` is false
  bool common;
  int (*run)(const catalog::tools::Args&);
};

const Command kCommands[] = {
    {"init",
     "create keys and a new repository",
     "Creates N root keys (threshold M, default 1 of 1) and one key each for\n"
     "timestamp, snapshot and targets in --keys, and publishes version 1 of every\n"
     "role with no targets. Refuses to overwrite an existing repository or key.\n"
     "With --root-public-key (repeatable), root's keys are the holders' own: no\n"
     "root key is created, root v1 is staged, and the repository is published once\n"
     "M holders have run 'sign root'.",
     nullptr,
     nullptr,
     {{"root-keys", "N", "number of root keys (1..16, default 1)"},
      {"root-threshold", "M", "root keys needed to sign (1..N, default 1)"},
      {"root-public-key", "PEM", "a root key holder's public key; repeatable"},
      {"key-type", "TYPE", "ed25519 (default), ecdsa (P-256) or rsa (3072 bits)"},
      {"no-consistent-snapshot", nullptr, "publish without consistent snapshots"}},
     true,
     catalog::tools::cmd_init},
    {"pack",
     "build an EP package (.tar.zst or .tar.gz) from a directory",
     "Packs every regular file under DIR into an EP package: a tar archive whose\n"
     "first entry is manifest.json (the EP metadata of EP.json, checked strictly,\n"
     "plus each file's path, size, SHA-256 and mode), then the files sorted by path.\n"
     "zstd-compressed (level 9), or gzip with --gzip. The output is deterministic:\n"
     "the same files and metadata give the same bytes. Refuses symlinks, special\n"
     "files, a manifest.json in DIR, and an EP library that is not in DIR. Prints\n"
     "the package's path, size, SHA-256 and file count.",
     nullptr,
     nullptr,
     {{"dir", "DIR", "the files of the package (e.g. lib/libmy_ep.so)", true},
      {"metadata", "EP.json", "EP metadata ({\"epbroker\": {...}}), as for 'add'", true},
      {"output", "FILE",
       "the package to write, replaced atomically; it must\nend with .tar.zst (.tar.gz with "
       "--gzip)",
       true},
      {"gzip", nullptr, "gzip instead of zstd"}},
     false,
     catalog::tools::cmd_pack},
    {"pack-model",
     "fill in a model card's file sizes and hashes from a directory",
     "Reads the model card MODEL.json ({\"epbroker\": {\"schema\": 2, \"kind\": \"model\",\n"
     "...}}) whose variants need not list their files, walks DIR/ID/ for each\n"
     "variant ID (every regular file, or only the paths the variant's \"files\"\n"
     "lists), and writes the card with each file's path, size and SHA-256, sorted\n"
     "by path, checked strictly. Deterministic. Refuses a missing variant\n"
     "directory, a main file not among its files, symlinks, special files and\n"
     "unsafe paths. Publish the result with 'add-model'.",
     nullptr,
     nullptr,
     {{"dir", "DIR", "the model's files, one directory per variant (DIR/ID/...)", true},
      {"metadata", "MODEL.json", "the model card, files without sizes and hashes", true},
      {"output", "FILE", "the card to write (e.g. NAME.model.json), replaced\natomically", true}},
     false,
     catalog::tools::cmd_pack_model},
    {"add",
     "add (or replace) a package with its EP metadata",
     "Adds PACKAGE to the catalog with the EP metadata in EP.json ({\"epbroker\": {...}},\n"
     "checked strictly) as its custom field. The target path defaults to\n"
     "NAME/BASENAME; one whose first segment is not NAME is refused (clients trust\n"
     "a package name only from its own NAME/ paths). When PACKAGE is an EP package\n"
     "(*.tar.zst, *.tar.gz), its manifest.json must agree with EP.json, or nothing\n"
     "is added. Publishes new targets, snapshot and timestamp versions.",
     "PACKAGE",
     "the package file (an EP package or any other file)",
     {{"metadata", "EP.json", "EP metadata of the package ({\"epbroker\": {...}})", true},
      {"target-path", "PATH", "the target path, under NAME/ (default NAME/BASENAME)"},
      {"role", "ROLE", "the (delegated) targets role to add it to (default targets)"}},
     true,
     catalog::tools::cmd_add},
    {"add-model",
     "add a model version: its card and each distinct file",
     "Adds the model whose card 'pack-model' wrote: re-hashes every file of every\n"
     "variant under DIR/ID/ against the card (nothing is added on a difference),\n"
     "then publishes, in one new targets version, each distinct file content once\n"
     "as the target NAME/blobs/SHA256 and the card as NAME/NAME-VERSION.model.json\n"
     "with its model metadata as custom field. Only a role trusted for NAME/* can\n"
     "add model NAME (as for packages); a delegated role needs NAME/blobs/* too.\n"
     "A version already published with another card is refused.",
     nullptr,
     nullptr,
     {{"model", "CARD.json", "the card 'pack-model' wrote", true},
      {"dir", "DIR", "the model's files, one directory per variant (DIR/ID/...)", true},
      {"role", "ROLE", "the (delegated) targets role to add it to (default targets)"}},
     true,
     catalog::tools::cmd_add_model},
    {"remove",
     "remove a target from the catalog",
     "Removes TARGET_PATH from the catalog and publishes new versions. Removing a\n"
     "model's card (NAME/NAME-VERSION.model.json) also removes the files\n"
     "(NAME/blobs/SHA256) of its role that no other model version lists.",
     "TARGET_PATH",
     "the target path, as 'add' published it",
     {{"role", "ROLE", "the (delegated) targets role it is in (default targets)"}},
     true,
     catalog::tools::cmd_remove},
    {"timestamp",
     "re-sign snapshot and timestamp with fresh expiry (run from cron)",
     "Publishes new snapshot and timestamp versions with fresh expiry, so clients\n"
     "do not see the catalog as frozen. Run it more often than --timestamp-days.",
     nullptr,
     nullptr,
     {},
     true,
     catalog::tools::cmd_timestamp},
    {"rotate",
     "replace a role's key; root is signed by old and new keys",
     "Replaces the key(s) of ROLE (root, timestamp, snapshot or targets) with a new\n"
     "key (generated unless --new-key is given) and publishes a new root signed by\n"
     "the old and the new root keys. Old key files move to --keys/retired/.\n"
     "A new root that the keys given cannot sign to both thresholds (the trusted\n"
     "root's and its own) is staged: other holders add theirs with 'sign root'.",
     "ROLE",
     "root, timestamp, snapshot or targets",
     {{"new-key", "KEY",
       "the new key, a PEM private key file or a pkcs11: URI\n(default: a new one)"},
      {"key-type", "TYPE", "type of a new key: ed25519 (default), ecdsa or rsa"}},
     true,
     catalog::tools::cmd_rotate},
    {"delegate",
     "let another key sign packages under some paths",
     "Delegates target paths matching PATTERN (shell wildcards per '/' segment,\n"
     "e.g. 'vendor/*'; repeatable) from the top-level targets role to a new role\n"
     "ROLE signed by its own key: the vendor's public key (--public-key; the vendor\n"
     "signs ROLE with 'sign ROLE' and adds packages with 'add --role ROLE --key K')\n"
     "or a new key written to --keys/ROLE.pem. Role names are 1 to 128 characters\n"
     "of [A-Za-z0-9._+-].",
     "ROLE",
     "the name of the new role",
     {{"paths", "PATTERN", "target paths ROLE may sign; repeatable", true},
      {"public-key", "PEM", "ROLE's key: the holder's public key (PEM)"},
      {"key-type", "TYPE", "type of a new key: ed25519 (default), ecdsa or rsa"},
      {"terminating", nullptr, "a terminating delegation"}},
     true,
     catalog::tools::cmd_delegate},
    {"sign",
     "add one holder's signature to staged metadata",
     "Signs the staged ROLE (staged/ROLE.json: a root or delegated role waiting for\n"
     "signatures) with the one --key given, keeping the signatures already there.\n"
     "Once the role meets its threshold (a new root: its own and the trusted\n"
     "root's), it is published, with new snapshot and timestamp versions when their\n"
     "keys are given (--keys); otherwise 'timestamp' publishes it later. Refuses a\n"
     "key that is not one of ROLE's.",
     "ROLE",
     "root, or a delegated role",
     {},
     true,
     catalog::tools::cmd_sign},
    {"verify",
     "check a repository the way a client would",
     "Runs the client workflow against DIR starting from ROOT.json (default\n"
     "metadata/1.root.json): walks the root chain, checks timestamp, snapshot,\n"
     "targets and delegations, re-hashes every target and checks every EP metadata,\n"
     "and that every model's files are signed targets of the size and hash its\n"
     "card says.",
     nullptr,
     nullptr,
     {{"repo", "DIR", "repository directory (metadata/ and targets/)", true},
      {"root", "ROOT.json", "the trusted root to start from"}},
     false,
     catalog::tools::cmd_verify},
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app(
      "Creates and maintains a signed catalog of EP packages and models (a TUF 1.0\n"
      "repository).\n"
      "Serve DIR/metadata and DIR/targets with any static HTTP server.",
      "epbroker-publish");
  catalog::tools::declare_common(app);
  app.require_subcommand(1);
  catalog::tools::Args args;
  for (const Command& c : kCommands) {
    CLI::App* sub = app.add_subcommand(c.name, c.summary);
    sub->group("Commands");
    sub->footer(c.details);
    if (c.positional != nullptr) {
      sub->add_option(c.positional, args.positionals, c.positional_help)
          ->required()
          ->expected(1)
          ->allow_extra_args(false)
          ->type_name("");
    }
    catalog::tools::declare_options(*sub, c.options, args);
    if (c.common) catalog::tools::declare_options(*sub, kCommonOptions, args);
  }
  app.footer(
      "Run 'epbroker-publish COMMAND --help' for the options of a command.\n"
      "Exit status: 0 success, 1 failure, 2 usage error.\n"
      "See epbroker-publish(1).");
  if (auto done = catalog::tools::parse(app, argc, argv)) return *done;
  const std::string name = app.get_subcommands().front()->get_name();
  for (const Command& c : kCommands) {
    if (name == c.name) return c.run(args);
  }
  return 2;  // CLI11 admits the commands above only
}
