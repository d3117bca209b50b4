// epbroker-tuf-client: the TUF client workflow as a command, following the
// common client-under-test contract of TUF conformance tooling.
//
//   --metadata-dir D init ROOT
//   --metadata-dir D --metadata-url U refresh
//   --metadata-dir D --metadata-url U --target-name T... --target-base-url B
//       --target-dir O download
//
// --time T (YYYY-MM-DDTHH:MM:SSZ) is the reference time of every expiry check
// (init's and the update's); default: the wall clock when the command starts.
// It lets a test read a real repository recorded at a known moment.
//
// Exit status: 0 when the whole command succeeded, 1 on any failure, 2 on a
// usage error.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string_view>
#include <utility>

#include "catalog/atomic_file.hpp"
#include "catalog/tuf/trusted_set.hpp"
#include "catalog/tuf/updater.hpp"
#include "net/curl_fetcher.hpp"
#include "tools/cli.hpp"

namespace {

using catalog::Errc;
using catalog::tuf::TimePoint;

int usage_error(const std::string& msg) {
  return catalog::tools::usage_error("epbroker-tuf-client", msg);
}

int failure(const catalog::Error& e) {
  std::cerr << "epbroker-tuf-client: " << catalog::errc_name(e.code) << ": " << e.message << "\n";
  return 1;
}

// What was trusted and why, one line per role.
void report(const catalog::tuf::TrustedSet& t) {
  const auto& root = t.root().signed_;
  const auto& rr = root.roles.at("root");
  std::cout << "trusted root v" << root.version << ": root key threshold (" << rr.threshold
            << " of " << rr.keyids.size() << ") met, expires "
            << catalog::tuf::format_expires(root.expires) << "\n";
  if (t.timestamp()) {
    const auto& ts = t.timestamp()->signed_;
    std::cout << "trusted timestamp v" << ts.version
              << ": timestamp key threshold met, names snapshot v" << ts.snapshot_meta.version
              << ", expires " << catalog::tuf::format_expires(ts.expires) << "\n";
  }
  if (t.snapshot()) {
    const auto& sn = t.snapshot()->signed_;
    std::cout << "trusted snapshot v" << sn.version
              << ": matches timestamp, snapshot key threshold met, lists " << sn.meta.size()
              << " targets role(s)\n";
  }
  if (const auto* tg = t.targets("targets")) {
    std::cout << "trusted targets v" << tg->signed_.version
              << ": matches snapshot, targets key threshold met, " << tg->signed_.targets.size()
              << " target(s)"
              << (tg->signed_.delegations
                      ? ", " + (tg->signed_.delegations->succinct_roles
                                    ? std::to_string(
                                          tg->signed_.delegations->succinct_roles->bin_count()) +
                                          " delegated role(s) (succinct hash bins)"
                                    : std::to_string(tg->signed_.delegations->roles.size()) +
                                          " delegated role(s)")
                      : std::string())
              << "\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("Refreshes trusted TUF metadata and downloads verified targets.",
               "epbroker-tuf-client");
  catalog::tools::declare_common(app);
  app.fallthrough();  // the options also after the command
  app.require_subcommand(1);
  catalog::tools::Args args;
  catalog::tools::declare_options(
      app,
      {{"metadata-dir", "DIR", "where trusted metadata is kept", true},
       {"metadata-url", "URL", "base URL of the repository's metadata (refresh, download)"},
       {"target-base-url", "URL", "base URL of the repository's targets (download)"},
       {"target-dir", "DIR", "where downloaded targets are stored (download)"},
       {"target-name", "NAME", "target path to download; repeatable, in order"},
       {"https-only", nullptr, "refuse plain http:// URLs (default: http and https)"},
       {"time", "YYYY-MM-DDTHH:MM:SSZ", "reference time (UTC) for expiry checks (default: now)"},
       {"quiet", nullptr, "print nothing but errors"}},
      args);
  const std::pair<const char*, const char*> commands[] = {
      {"init", "trust ROOT (a root.json file) as the starting root; no network"},
      {"refresh", "update root, timestamp, snapshot and targets metadata"},
      {"download", "refresh, then download each --target-name in order"},
  };
  for (const auto& [name, help] : commands) {
    CLI::App* sub = app.add_subcommand(name, help);
    sub->group("Commands");
    if (std::string_view(name) == "init") {
      sub->add_option("ROOT", args.positionals, "the root.json to trust")
          ->required()
          ->expected(1)
          ->allow_extra_args(false)
          ->type_name("");
    }
  }
  app.footer(
      "Exit status: 0 success, 1 failure, 2 usage error.\n"
      "See epbroker-tuf-client(1).");
  if (auto done = catalog::tools::parse(app, argc, argv)) return *done;
  const std::string cmd = app.get_subcommands().front()->get_name();
  const auto metadata_dir = args.get("metadata-dir");
  const bool quiet = args.has("quiet");
  // The one reference time of this command: --time, else the wall clock.
  TimePoint now = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
  if (const auto t = args.get("time")) {
    auto parsed = catalog::tuf::parse_expires(*t);
    if (!parsed) return usage_error("--time: expected YYYY-MM-DDTHH:MM:SSZ, got '" + *t + "'");
    now = *parsed;
  }

  if (cmd == "init") {
    // Trust what the operator hands us, but only if it is a well-formed root
    // signed by its own threshold: a typo should not become a trust anchor.
    auto bytes = catalog::read_file(args.positionals.at(0), 512'000);
    if (!bytes) return failure(bytes.error());
    auto set = catalog::tuf::TrustedSet::create(*bytes, now);
    if (!set) return failure(set.error());
    std::error_code ec;
    std::filesystem::create_directories(*metadata_dir, ec);
    if (ec) return failure({Errc::io, "create " + *metadata_dir + ": " + ec.message()});
    if (auto ok =
            catalog::atomic_write_file(std::filesystem::path(*metadata_dir) / "root.json", *bytes);
        !ok) {
      return failure(ok.error());
    }
    if (!quiet) {
      std::cout << "initialized " << *metadata_dir << " with root v" << set->root().signed_.version
                << "\n";
    }
    return 0;
  }

  const auto metadata_url = args.get("metadata-url");
  if (!metadata_url) return usage_error("--metadata-url is required");

  net::CurlFetcherOptions opts;
  opts.allow_http = !args.has("https-only");
  net::CurlFetcher fetcher(opts);
  catalog::tuf::UpdaterConfig config;
  config.metadata_dir = *metadata_dir;
  config.metadata_base_url = *metadata_url;
  config.target_base_url = args.get("target-base-url").value_or("");
  config.target_dir = args.get("target-dir").value_or("");
  config.now = now;
  if (cmd == "download") {
    if (config.target_base_url.empty()) return usage_error("--target-base-url is required");
    if (config.target_dir.empty()) return usage_error("--target-dir is required");
    if (args.all("target-name").empty()) return usage_error("--target-name is required");
  }
  catalog::tuf::Updater updater(config, fetcher);

  // 1. Refresh: root chain, timestamp, snapshot, targets.
  auto ok = updater.refresh();
  if (!ok) return failure(ok.error());
  if (!quiet) report(*updater.trusted());
  if (cmd == "refresh") return 0;

  // 2. Targets in order; the first failure ends the command.
  for (const auto& name : args.all("target-name")) {
    auto info = updater.get_targetinfo(name);
    if (!info) return failure(info.error());
    const std::string sha = info->hashes.begin()->first + " " + info->hashes.begin()->second;
    if (auto cached = updater.find_cached_target(*info)) {
      if (!quiet)
        std::cout << "target " << name << ": already present and verified at " << cached->string()
                  << "\n";
      continue;
    }
    auto path = updater.download_target(*info);
    if (!path) return failure(path.error());
    if (!quiet) {
      std::cout << "target " << name << ": " << info->length << " bytes, " << sha
                << " as signed, saved to " << path->string() << "\n";
    }
  }
  return 0;
}
