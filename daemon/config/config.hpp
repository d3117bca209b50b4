// epbrokerd's configuration: <config_dir>/epbroker.conf (one [daemon] section) and
// <config_dir>/remotes.d/*.conf (one [remote] section per file), config_dir being
// /etc/epbroker unless --config-dir says otherwise (command_line.hpp: the flags, some
// of which override keys). The syntax, every key with its default and range, and how
// remotes.d is read: docs/configuration.md. Every refusal names file:line and the
// key; nothing is half-applied.
//
// The implementation, one concept per file: ini.hpp (reading a file, the strict INI
// syntax), values.hpp (value parsers), sections.hpp ([daemon] keys in
// daemon_section.cpp, [remote] keys and the remotes together in remotes.cpp), and
// config.cpp (load_config). Those headers are internal to daemon/config.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/error.hpp"

namespace epbrokerd::config {

using catalog::Result;

inline constexpr std::size_t kMaxLineBytes = 4096;
inline constexpr std::size_t kMaxFileBytes = 64 * 1024;
inline constexpr std::size_t kMaxRemoteFiles = 128;
inline constexpr std::size_t kMaxMirrors = 8;
inline constexpr std::size_t kMaxRedirectHosts = 16;
inline constexpr std::size_t kMaxUrlBytes = 2048;
inline constexpr std::size_t kMaxPathBytes = 4096;
// idle_timeout_sec and --idle-timeout: at most a week.
inline constexpr std::uint64_t kMaxIdleTimeout = 604800;

inline constexpr std::string_view kConfigFileName = "epbroker.conf";
inline constexpr std::string_view kRemotesDirName = "remotes.d";

// Where the daemon reads and writes; every one overridable by a flag (tests, demo).
struct Paths {
  std::filesystem::path config_dir = "/etc/epbroker";
  // The daemon's own state (trusted metadata per remote, lifecycle, history):
  // written by the daemon's uid.
  std::filesystem::path state_dir = "/var/lib/epbroker/daemon";
  // Where the package store lives (store/, staging/, and trust/: the commit
  // helper's trusted metadata): owned by root and written only by the commit
  // helper (daemon/commit/), which the daemon reaches at `commit_socket`. When it
  // equals state_dir (a private tree: tests, the demo; the command line's
  // --state-dir without --store-root makes it so), the daemon starts the helper
  // itself as its own uid: there is no privilege to separate.
  std::filesystem::path store_root = "/var/lib/epbroker";
  std::filesystem::path commit_socket = "/run/epbroker/commit.sock";
  std::filesystem::path cache_dir = "/var/cache/epbroker";
  std::filesystem::path sysfs_root = "/sys";
  std::filesystem::path procfs_root = "/proc";
  // The root of etc/ld.so.conf and the library directories that EP packages'
  // "requires" are looked up in (hardware::LibraryLocator).
  std::filesystem::path library_root = "/";

  friend bool operator==(const Paths&, const Paths&) = default;
};

enum class LogLevel { trace, debug, info, warn, error };

// "trace", "debug", "info", "warn", "error".
std::string_view to_string(LogLevel level);
// Inverse of to_string() (exact, lower case); Errc::bad_field naming the text otherwise.
Result<LogLevel> parse_log_level(std::string_view text);

// What the daemon does after each successful catalog refresh ([daemon] auto_update).
//   off       nothing;
//   download  newer versions of installed, unheld packages are downloaded into the
//             store, not made current (an `epbrokerctl update` then switches at once);
//   install   they are installed and become current for new sessions.
// Automatic downloads wait for an unmetered connection; admin commands do not.
enum class AutoUpdate { off, download, install };

// "off", "download", "install".
std::string_view to_string(AutoUpdate mode);
// Inverse of to_string() (exact, lower case); Errc::bad_field naming the text otherwise.
Result<AutoUpdate> parse_auto_update(std::string_view text);

// How the daemon fetches (the [daemon] fetch keys; ranges in docs/configuration.md).
struct FetchSettings {
  std::chrono::seconds connect_timeout{10};
  std::uint64_t low_speed_limit_bytes = 1024;  // 0 = no low-speed check
  std::chrono::seconds low_speed_time{30};
  std::chrono::seconds transfer_timeout{300};  // 0 = no bound
  std::uint32_t attempts = 4;
  std::chrono::seconds max_retry_after{60};  // 0 = Retry-After ignored

  friend bool operator==(const FetchSettings&, const FetchSettings&) = default;
};

// The [daemon] section (ranges in docs/configuration.md).
struct DaemonSettings {
  std::chrono::seconds idle_timeout{60};         // 0 = never exit when idle
  std::chrono::seconds refresh_interval{86400};  // 0 = no automatic refresh
  std::size_t max_sessions_per_client = 64;
  std::size_t max_jobs_per_client = 8;
  std::string install_group;  // empty = nobody; else [a-z_][a-z0-9_-]{0,31}
  // How long a call waits for polkit's answer (which may wait for the user to
  // authenticate) before it is refused; other callers are served meanwhile.
  std::chrono::seconds authorization_timeout{120};
  LogLevel log_level = LogLevel::info;
  FetchSettings fetch;
  // Package lifecycle (docs/configuration.md, "Package lifecycle").
  std::size_t keep_versions = 1;  // previously current versions kept per package; 0 = none
  // How long a version that only applications with an older ONNX Runtime still need is
  // kept after the last of them asked for it.
  std::chrono::days keep_for_older_ort{30};
  bool remove_revoked = false;  // delete versions the catalog no longer lists, once unleased
  AutoUpdate auto_update = AutoUpdate::install;

  friend bool operator==(const DaemonSettings&, const DaemonSettings&) = default;
};

// One place to fetch a remote's repository from. Both URLs end in '/'.
struct Mirror {
  std::string metadata_url;
  std::string targets_url;

  friend bool operator==(const Mirror&, const Mirror&) = default;
};

// One remotes.d/*.conf file.
struct Remote {
  std::string name;                    // [a-z0-9][a-z0-9-]{0,31}, unique over all files
  Mirror primary;                      // metadata_url, targets_url
  std::vector<Mirror> mirrors;         // from `mirrors`, in the order written
  std::filesystem::path trusted_root;  // absolute if config_dir is
  bool allow_http = false;             // else every URL, mirrors' too, is https://
  std::filesystem::path ca_file;       // empty = the system's CAs; absolute if config_dir is
  int priority = 0;                    // -1000..1000; the highest offering a package name owns it
  bool enabled = true;                 // a disabled remote is checked but never refreshed or used
  // Hosts its servers may redirect to besides the origin of the URL asked
  // (net/redirect_policy.hpp): "host" or "host:port", lower case, IPv6 in brackets.
  std::vector<std::string> redirect_hosts{};
  std::filesystem::path source;  // the file it was read from (for messages)

  friend bool operator==(const Remote&, const Remote&) = default;
};

// Everything the daemon runs with.
struct Config {
  Paths paths;
  DaemonSettings daemon;
  // All remotes, enabled or not, ordered by priority (highest first), then name.
  std::vector<Remote> remotes;
  // D-Bus address to connect to instead of the system bus; empty = system bus. Set
  // only from the command line / EPBROKER_BUS_ADDRESS, never from the files.
  std::string bus_address;
};

// Reads paths.config_dir/epbroker.conf and paths.config_dir/remotes.d/*.conf.
// A missing config dir or epbroker.conf gives the defaults; a missing remotes.d gives
// no remotes. Errors (the first one found; message "FILE:LINE: KEY: what"):
//   Errc::bad_field  any syntax or value problem (docs/configuration.md),
//                    duplicate remote names (naming both places), a missing required
//                    key (naming the [remote] line), an http:// URL without allow_http;
//   Errc::too_large  a file over kMaxFileBytes;
//   Errc::too_many   more than kMaxRemoteFiles remote files;
//   Errc::io         a file or directory that exists but cannot be read, or a
//                    remotes.d/*.conf entry that is not a regular file.
Result<Config> load_config(const Paths& paths);

}  // namespace epbrokerd::config
