// epbrokerd's configuration: the files under /etc/epbroker (the command line, whose
// flags override some of them, is in command_line.hpp).
//
// Files (every refusal names file:line and the key; nothing is half-applied):
//
//   <config_dir>/epbroker.conf      optional; one [daemon] section
//   <config_dir>/remotes.d/*.conf   optional; one [remote] section per file
//
// Syntax (INI, in the spirit of systemd unit files and fwupd.conf):
//   - one `[section]` or `key = value` per line; whitespace around both trimmed;
//   - lines whose first non-blank character is '#' or ';' are comments, and so are
//     blank lines; there are no trailing comments ("a = b # c" has value "b # c"),
//     no quoting, no line continuation;
//   - keys are [a-z0-9_]+, each at most once per section; every section at most once
//     per file; a key before any section, an unknown section or key, a bad value is an
//     error; no control characters other than tab (CRLF files are refused), and the
//     bytes must be UTF-8;
//   - a line is at most kMaxLineBytes bytes, a file at most kMaxFileBytes;
//   - booleans: 1/yes/true/on or 0/no/false/off (any case); integers: decimal digits
//     (with '-' where a negative value is allowed), no sign, no spaces.
//
// [daemon] keys (all optional):
//   idle_timeout_sec        seconds without jobs, sessions or calls before the daemon
//                           exits; 0 = never; 0..604800, default 60
//   refresh_interval_sec    seconds between automatic catalog refreshes; 0 = only on
//                           RefreshCatalog(); else 60..31536000; default 86400
//   max_sessions_per_client live sessions one bus client may hold; 1..4096, default 64
//   max_jobs_per_client     unfinished jobs one bus client may own; 1..256, default 8
//   install_group           members of this group may install and manage without a
//                           polkit check; empty (default) = nobody. Syntax only is
//                           checked here ([a-z_][a-z0-9_-]{0,31}); the authorizer
//                           resolves it when asked (an unknown group grants nothing)
//   log_level               trace | debug | info | warn | error; default info
//
// [daemon] keys for fetching from remotes (metadata and packages; all optional):
//   connect_timeout_sec     name lookup + TCP + TLS of one connection; 1..300, default 10
//   low_speed_limit_bytes   a transfer slower than this (bytes per second) for
//                           low_speed_time_sec is aborted (slow-retrieval defence);
//                           0 = no check; 0..1073741824, default 1024
//   low_speed_time_sec      1..3600, default 30
//   transfer_timeout_sec    bound on one transfer (one file or one resumed part);
//                           0 = none; 0..86400, default 300
//   fetch_attempts          rounds over a remote's URLs (primary, then mirrors) for
//                           failures that may pass (network, HTTP 5xx); 1..16, default 4
//   max_retry_after_sec     a server's Retry-After (503/429) is waited for up to this
//                           long before the next round; 0 = ignore it; 0..3600, default 60
//
// [remote] keys (one catalog per file; files not ending in ".conf" and hidden files are
// ignored; files are read in name order):
//   name          required; [a-z0-9][a-z0-9-]{0,31}; unique over all files
//   metadata_url  required; base URL of the TUF metadata (".../metadata/")
//   targets_url   required; base URL of the targets (".../targets/")
//   mirrors       optional; space-separated base URLs of copies of the whole repository
//                 as epbroker-publish lays it out: mirror B serves the metadata at
//                 B/metadata/ and the targets at B/targets/. At most kMaxMirrors.
//                 Mirrors are only other places to fetch the same signed bytes: they
//                 are tried after the primary URLs and trusted no more than them.
//   trusted_root  required; the root.json trusted on first use (before the remote has
//                 state of its own); a relative path is relative to config_dir. Its
//                 existence is not checked here (a disabled remote may lack it).
//   allow_http    optional bool, default false: without it every URL must be https://
//   ca_file       optional; PEM bundle of the CAs trusted for this remote's https
//                 servers instead of the system's; relative to config_dir like
//                 trusted_root (existence not checked here)
//   priority      optional int -1000..1000, default 0: when two remotes offer a package
//                 of the same name, the higher priority wins (ties: name order): the
//                 name is then that remote's alone; the other's versions are neither
//                 listed nor installed, not even newer ones
//   enabled       optional bool, default true; a disabled remote is parsed and checked
//                 but never refreshed or used
//
// URLs: http(s)://host[:port][/path], printable ASCII only, no user:password@, no query
// or fragment, at most kMaxUrlBytes; stored with a trailing '/'.
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
inline constexpr std::size_t kMaxUrlBytes = 2048;
inline constexpr std::size_t kMaxPathBytes = 4096;

inline constexpr std::string_view kConfigFileName = "epbroker.conf";
inline constexpr std::string_view kRemotesDirName = "remotes.d";

// Where the daemon reads and writes; every one overridable by a flag (tests, demo).
struct Paths {
  std::filesystem::path config_dir = "/etc/epbroker";
  std::filesystem::path state_dir = "/var/lib/epbroker";
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

// How the daemon fetches (the [daemon] fetch keys, defaults as documented above).
struct FetchSettings {
  std::chrono::seconds connect_timeout{10};
  std::uint64_t low_speed_limit_bytes = 1024;  // 0 = no low-speed check
  std::chrono::seconds low_speed_time{30};
  std::chrono::seconds transfer_timeout{300};  // 0 = no bound
  std::uint32_t attempts = 4;
  std::chrono::seconds max_retry_after{60};  // 0 = Retry-After ignored

  friend bool operator==(const FetchSettings&, const FetchSettings&) = default;
};

// The [daemon] section, defaults as documented above.
struct DaemonSettings {
  std::chrono::seconds idle_timeout{60};         // 0 = never exit when idle
  std::chrono::seconds refresh_interval{86400};  // 0 = no automatic refresh
  std::size_t max_sessions_per_client = 64;
  std::size_t max_jobs_per_client = 8;
  std::string install_group;  // empty = nobody
  LogLevel log_level = LogLevel::info;
  FetchSettings fetch;

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
  std::string name;
  Mirror primary;                      // metadata_url, targets_url
  std::vector<Mirror> mirrors;         // from `mirrors`, in the order written
  std::filesystem::path trusted_root;  // absolute if config_dir is
  bool allow_http = false;
  std::filesystem::path ca_file;  // empty = the system's CAs; absolute if config_dir is
  int priority = 0;
  bool enabled = true;
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
//   Errc::bad_field  any syntax or value problem listed in the header comment,
//                    duplicate remote names (naming both places), a missing required
//                    key (naming the [remote] line), an http:// URL without allow_http;
//   Errc::too_large  a file over kMaxFileBytes;
//   Errc::too_many   more than kMaxRemoteFiles remote files;
//   Errc::io         a file or directory that exists but cannot be read, or a
//                    remotes.d/*.conf entry that is not a regular file.
Result<Config> load_config(const Paths& paths);

}  // namespace epbrokerd::config
