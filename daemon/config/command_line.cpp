#include "daemon/config/command_line.hpp"

#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <string_view>
#include <system_error>
#include <utility>

#include "catalog/text.hpp"

namespace epbrokerd::config {
namespace {

namespace fs = std::filesystem;
using catalog::Errc;
using catalog::fail;
using catalog::quote_for_message;

constexpr std::size_t kMaxBusAddressBytes = 4096;

// The flags that take a value, in the order --help lists them.
struct ValueFlag {
  const char* name;
  const char* meta;
  const char* help;  // lines after the first are indented by CLI11
};
constexpr ValueFlag kValueFlags[] = {
    {"--config-dir", "DIR",
     "configuration: DIR/epbroker.conf, DIR/remotes.d/*.conf\n(default /etc/epbroker)"},
    {"--state-dir", "DIR",
     "the daemon's state: trusted metadata, lifecycle, history\n(default "
     "/var/lib/epbroker/daemon)"},
    {"--store-root", "DIR",
     "the package store (store/), owned by the commit helper\n(default /var/lib/epbroker; "
     "--state-dir alone makes it the state\ndirectory, written by a helper the daemon starts)"},
    {"--commit-socket", "PATH",
     "the commit helper's socket, used when the store root is\nnot the state directory "
     "(default /run/epbroker/commit.sock)"},
    {"--cache-dir", "DIR", "partial downloads (default /var/cache/epbroker)"},
    {"--sysfs-root", "DIR", "where sysfs is mounted (default /sys)"},
    {"--procfs-root", "DIR", "where procfs is mounted (default /proc)"},
    {"--library-root", "DIR",
     "the root under which etc/ld.so.conf and the shared\nlibrary directories are read, for "
     "packages' \"requires\"\n(default /)"},
    {"--bus-address", "ADDR",
     "D-Bus address to serve on instead of the system bus\n(default: $EPBROKER_BUS_ADDRESS if "
     "set)"},
    {"--idle-timeout", "SEC",
     "exit after SEC idle seconds, 0 = never (overrides\nidle_timeout_sec of epbroker.conf)"},
    {"--log-level", "LEVEL", "trace, debug, info, warn or error (overrides log_level)"},
};

constexpr const char* kDescription =
    "The epbroker daemon: brokers ONNX Runtime execution provider packages from\n"
    "signed catalogs over D-Bus (org.epbroker.Broker1). Normally started by D-Bus\n"
    "activation through systemd (epbrokerd.service).";

constexpr const char* kFooter =
    "Every option that takes a value also accepts --option=VALUE.\n"
    "\n"
    "epbroker.conf [daemon] keys: idle_timeout_sec, refresh_interval_sec,\n"
    "max_sessions_per_client, max_jobs_per_client, install_group, log_level,\n"
    "authorization_timeout_sec (120: longest wait for polkit's answer); the\n"
    "lifecycle: keep_versions (1), keep_for_older_ort_days (30), remove_revoked\n"
    "(false), auto_update (off|download|install, default install); for\n"
    "fetching: connect_timeout_sec (default 10), low_speed_limit_bytes (1024) and\n"
    "low_speed_time_sec (30): slower transfers are aborted, transfer_timeout_sec\n"
    "(300, 0 = none), fetch_attempts (4), max_retry_after_sec (60: longest\n"
    "Retry-After honoured). remotes.d/*.conf [remote] keys: name, metadata_url,\n"
    "targets_url, mirrors, trusted_root, allow_http, ca_file, priority, enabled.\n"
    "\n"
    "See epbrokerd(8) and epbroker.conf(5).";

// Declares the flags on `app`. A value flag takes 0 or 1 value and keeps every
// occurrence, so that a missing value ("") and a repeated flag are reported below in
// the daemon's words; unknown arguments are kept too (allow_extras), for the same reason.
void declare(CLI::App& app) {
  app.description(kDescription);
  app.footer(kFooter);
  app.allow_extras();
  app.get_formatter()->column_width(22);
  app.set_help_flag("-h,--help", "print this help and exit");
  app.set_version_flag("--version", std::string(), "print the version and exit");
  for (const ValueFlag& f : kValueFlags) {
    CLI::Option* o = app.add_option(f.name, f.help)
                         ->type_name(f.meta)
                         ->expected(0, 1)
                         ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    if (std::string_view(f.name) == "--bus-address") o->envname("EPBROKER_BUS_ADDRESS");
  }
}

// A usage error: the message and where to look.
std::unexpected<catalog::Error> bad(std::string message) {
  return fail(Errc::invalid_argument, std::move(message) + " (see --help)");
}

// CLI11 reads "--flag=" as "--flag" without a value and "--help=x" as --help:
// both are refused here, before CLI11 sees them (up to a "--").
Result<void> check_equals_forms(const CLI::App& app, int argc, const char* const* argv) {
  for (int i = 1; i < argc && argv[i] != nullptr; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") break;
    const std::size_t eq = arg.find('=');
    if (!arg.starts_with("--") || eq == std::string_view::npos) continue;
    const std::string flag(arg.substr(0, eq));
    const CLI::Option* o = app.get_option_no_throw(flag);
    if (o == nullptr) continue;  // unknown: reported with the other extras
    if (o->get_expected_max() == 0) return bad(flag + " takes no value");  // a flag
    if (eq + 1 == arg.size()) return bad(flag + ": empty value");
  }
  return {};
}

// The first argument CLI11 could not place.
Result<void> check_extras(const CLI::App& app) {
  const std::vector<std::string> extras = app.remaining();
  if (extras.empty()) return {};
  const std::string_view first = extras.front();
  if (first.starts_with("--")) {
    return bad("unknown option " + quote_for_message(first.substr(0, first.find('='))));
  }
  return bad("unexpected argument " + quote_for_message(first));
}

// Stores the value `v` of flag `f` (given once, not empty) into `o`.
Result<void> apply(std::string_view f, const std::string& v, Options& o) {
  const auto dir = [&](fs::path& out) -> Result<void> {
    if (v.size() > kMaxPathBytes) return bad(std::string(f) + ": path too long");
    std::error_code ec;
    fs::path p = fs::absolute(fs::path(v), ec);
    if (ec) return bad(std::string(f) + ": " + ec.message());
    out = p.lexically_normal();
    return {};
  };
  if (f == "--config-dir") return dir(o.paths.config_dir);
  if (f == "--state-dir") return dir(o.paths.state_dir);
  if (f == "--store-root") return dir(o.paths.store_root);
  if (f == "--commit-socket") return dir(o.paths.commit_socket);
  if (f == "--cache-dir") return dir(o.paths.cache_dir);
  if (f == "--sysfs-root") return dir(o.paths.sysfs_root);
  if (f == "--procfs-root") return dir(o.paths.procfs_root);
  if (f == "--library-root") return dir(o.paths.library_root);
  if (f == "--bus-address") {
    if (v.size() > kMaxBusAddressBytes)
      return bad("--bus-address (or EPBROKER_BUS_ADDRESS): too long");
    o.bus_address = v;
    return {};
  }
  if (f == "--idle-timeout") {
    // Decimal digits only, as in the files (CLI11's integers would take 0x10, +5).
    std::uint64_t n = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (v.size() > 19 || v.front() < '0' || v.front() > '9' || ec != std::errc() ||
        end != v.data() + v.size() || n > kMaxIdleTimeout) {
      return fail(Errc::invalid_argument, "--idle-timeout: expected an integer in 0.." +
                                              std::to_string(kMaxIdleTimeout) + ", got " +
                                              quote_for_message(v));
    }
    o.idle_timeout = std::chrono::seconds(n);
    return {};
  }
  auto level = parse_log_level(v);  // the last flag: --log-level
  if (!level) return fail(Errc::invalid_argument, "--log-level: " + level.error().message);
  o.log_level = *level;
  return {};
}

}  // namespace

std::string usage() {
  CLI::App app(std::string(), "epbrokerd");
  declare(app);
  return app.help();
}

Result<Options> parse_command_line(int argc, const char* const* argv) {
  Options o;
  CLI::App app(std::string(), "epbrokerd");
  declare(app);
  if (auto ok = check_equals_forms(app, argc, argv); !ok) return std::unexpected(ok.error());
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    o.help = true;
    return o;
  } catch (const CLI::CallForVersion&) {
    o.version = true;
    return o;
  } catch (const CLI::ParseError& e) {
    return bad(e.what());
  }
  if (auto ok = check_extras(app); !ok) return std::unexpected(ok.error());
  for (const ValueFlag& f : kValueFlags) {
    const CLI::Option* opt = app.get_option(f.name);
    if (opt->count() == 0) continue;
    if (opt->count() > 1) return bad(std::string(f.name) + " given twice");
    const std::string& value = opt->results().front();
    if (value.empty()) return bad(std::string(f.name) + " needs a value");
    if (auto ok = apply(f.name, value, o); !ok) return std::unexpected(ok.error());
  }
  // A state directory of one's own without a store root: one private tree, the
  // store in it (tests, the demo; see Paths::store_root).
  if (app.get_option("--state-dir")->count() > 0 && app.get_option("--store-root")->count() == 0) {
    o.paths.store_root = o.paths.state_dir;
  }
  return o;
}

Result<Config> load_config(const Options& options) {
  auto config = load_config(options.paths);
  if (!config) return config;
  if (options.idle_timeout) config->daemon.idle_timeout = *options.idle_timeout;
  if (options.log_level) config->daemon.log_level = *options.log_level;
  config->bus_address = options.bus_address;
  return config;
}

}  // namespace epbrokerd::config
