#include "daemon/config/config.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <map>
#include <set>
#include <system_error>
#include <utility>

#include "catalog/text.hpp"

namespace epbrokerd::config {
namespace {

namespace fs = std::filesystem;
using catalog::Errc;
using catalog::fail;
using catalog::quote_for_message;

constexpr std::uint64_t kMaxIdleTimeout = 604800;        // a week
constexpr std::uint64_t kMinRefreshInterval = 60;        // when not 0
constexpr std::uint64_t kMaxRefreshInterval = 31536000;  // a year
constexpr std::uint64_t kMaxSessionsPerClient = 4096;
constexpr std::uint64_t kMaxJobsPerClient = 256;
constexpr std::uint64_t kMaxConnectTimeout = 300;
constexpr std::uint64_t kMaxLowSpeedLimit = std::uint64_t{1} << 30;
constexpr std::uint64_t kMaxLowSpeedTime = 3600;
constexpr std::uint64_t kMaxTransferTimeout = 86400;
constexpr std::uint64_t kMaxFetchAttempts = 16;
constexpr std::uint64_t kMaxRetryAfter = 3600;
constexpr int kMinPriority = -1000;
constexpr int kMaxPriority = 1000;

// ---- reading -------------------------------------------------------------------

// The file's bytes; std::nullopt if it does not exist.
Result<std::optional<std::string>> read_config_file(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return std::optional<std::string>();
    return fail(Errc::io, path.string() + ": cannot open: " + std::strerror(errno));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    return fail(Errc::io, path.string() + ": cannot stat: " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) return fail(Errc::io, path.string() + ": not a regular file");
  std::string bytes;
  char buf[8192];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(Errc::io, path.string() + ": cannot read: " + std::strerror(errno));
    }
    if (n == 0) break;
    bytes.append(buf, static_cast<std::size_t>(n));
    if (bytes.size() > kMaxFileBytes) {
      return fail(Errc::too_large,
                  path.string() + ": larger than " + std::to_string(kMaxFileBytes) + " bytes");
    }
  }
  return std::optional<std::string>(std::move(bytes));
}

// ---- INI syntax ----------------------------------------------------------------

struct Entry {
  std::string key;
  std::string value;
  std::size_t line = 0;
};

struct Section {
  std::string name;
  std::size_t line = 0;
  std::vector<Entry> entries;
};

std::string at(const std::string& file, std::size_t line) {
  return file + ":" + std::to_string(line) + ": ";
}

// Blanks around keys and values: spaces and tabs only (a carriage return is refused
// where the line is read, not trimmed away).
std::string_view trim(std::string_view s) { return catalog::trim(s, " \t"); }

bool is_lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

bool is_key(std::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char c) { return is_lower_alnum(c) || c == '_'; });
}

std::string hex_byte(unsigned char c) {
  static constexpr char kDigits[] = "0123456789abcdef";
  return std::string("0x") + kDigits[c >> 4] + kDigits[c & 0xf];
}

// Splits `text` into sections; only `allowed` section names are accepted. `hint` is
// added to the message for an unknown section.
Result<std::vector<Section>> parse_ini(std::string_view text, const std::string& file,
                                       std::initializer_list<std::string_view> allowed,
                                       std::string_view hint) {
  std::vector<Section> sections;
  std::size_t line_no = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    ++line_no;
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view raw = text.substr(pos, end - pos);
    pos = end + 1;
    const std::string loc = at(file, line_no);

    if (raw.size() > kMaxLineBytes) {
      return fail(Errc::bad_field,
                  loc + "line longer than " + std::to_string(kMaxLineBytes) + " bytes");
    }
    for (const char ch : raw) {
      const auto c = static_cast<unsigned char>(ch);
      if (c == '\r') {
        return fail(Errc::bad_field, loc + "carriage return (CRLF line ends are not accepted)");
      }
      if ((c < 0x20 && c != '\t') || c == 0x7f) {
        return fail(Errc::bad_field, loc + "control character " + hex_byte(c));
      }
    }
    if (!catalog::utf8_length(raw)) return fail(Errc::bad_field, loc + "not valid UTF-8");

    const std::string_view line = trim(raw);
    if (line.empty() || line.front() == '#' || line.front() == ';') continue;

    if (line.front() == '[') {
      if (line.back() != ']' || line.size() < 3) {
        return fail(Errc::bad_field, loc + "malformed section header " + quote_for_message(line));
      }
      const std::string_view name = line.substr(1, line.size() - 2);
      if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
        std::string msg =
            loc + "unknown section " + quote_for_message("[" + std::string(name) + "]");
        if (!hint.empty()) msg += std::string(" (") + std::string(hint) + ")";
        return fail(Errc::bad_field, msg);
      }
      for (const Section& s : sections) {
        if (s.name == name) {
          return fail(Errc::bad_field, loc + "section [" + std::string(name) +
                                           "] given twice (first at line " +
                                           std::to_string(s.line) + ")");
        }
      }
      sections.push_back(Section{std::string(name), line_no, {}});
      continue;
    }

    const std::size_t eq = line.find('=');
    if (eq == std::string_view::npos) {
      return fail(Errc::bad_field, loc + "expected \"key = value\" or \"[section]\", got " +
                                       quote_for_message(line));
    }
    const std::string_view key = trim(line.substr(0, eq));
    const std::string_view value = trim(line.substr(eq + 1));
    if (!is_key(key)) {
      return fail(Errc::bad_field,
                  loc + "invalid key " + quote_for_message(key) + " (expected [a-z0-9_]+)");
    }
    if (sections.empty()) {
      return fail(Errc::bad_field, loc + std::string(key) + ": key outside any section");
    }
    Section& current = sections.back();
    for (const Entry& e : current.entries) {
      if (e.key == key) {
        return fail(Errc::bad_field, loc + std::string(key) +
                                         ": duplicate key (first set at line " +
                                         std::to_string(e.line) + ")");
      }
    }
    current.entries.push_back(Entry{std::string(key), std::string(value), line_no});
  }
  return sections;
}

// ---- values --------------------------------------------------------------------

// Error message prefix for a value: "FILE:LINE: KEY: ".
std::string at_key(const std::string& file, const Entry& e) {
  return at(file, e.line) + e.key + ": ";
}

std::optional<std::uint64_t> parse_uint(std::string_view s) {
  if (s.empty() || s.size() > 19) return std::nullopt;
  if (!std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  std::uint64_t v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

Result<std::uint64_t> uint_in(std::string_view value, std::uint64_t lo, std::uint64_t hi,
                              const std::string& prefix) {
  const auto v = parse_uint(value);
  if (!v || *v < lo || *v > hi) {
    return fail(Errc::bad_field, prefix + "expected an integer in " + std::to_string(lo) + ".." +
                                     std::to_string(hi) + ", got " + quote_for_message(value));
  }
  return *v;
}

Result<int> int_in(std::string_view value, int lo, int hi, const std::string& prefix) {
  const bool negative = !value.empty() && value.front() == '-';
  const auto mag = parse_uint(negative ? value.substr(1) : value);
  const auto bad = [&] {
    return fail(Errc::bad_field, prefix + "expected an integer in " + std::to_string(lo) + ".." +
                                     std::to_string(hi) + ", got " + quote_for_message(value));
  };
  if (!mag || *mag > 1000000) return bad();
  const long long v = negative ? -static_cast<long long>(*mag) : static_cast<long long>(*mag);
  if (v < lo || v > hi) return bad();
  return static_cast<int>(v);
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

Result<bool> parse_bool(std::string_view value, const std::string& prefix) {
  const std::string v = lower(value);
  if (v == "1" || v == "yes" || v == "true" || v == "on") return true;
  if (v == "0" || v == "no" || v == "false" || v == "off") return false;
  return fail(Errc::bad_field, prefix +
                                   "expected a boolean (yes/no, true/false, on/off, 1/0), got " +
                                   quote_for_message(value));
}

bool is_group_name(std::string_view s) {
  if (s.empty() || s.size() > 32) return false;
  if (!((s.front() >= 'a' && s.front() <= 'z') || s.front() == '_')) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return is_lower_alnum(c) || c == '_' || c == '-'; });
}

bool is_remote_name(std::string_view s) {
  if (s.empty() || s.size() > 32 || !is_lower_alnum(s.front())) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return is_lower_alnum(c) || c == '-'; });
}

// Checks a base URL (see the header); returns it with a trailing '/'. The message of
// an error has no location (the caller adds it).
Result<std::string> check_url(std::string_view url, bool allow_http) {
  if (url.empty()) return fail(Errc::bad_field, "empty URL");
  if (url.size() > kMaxUrlBytes) {
    return fail(Errc::bad_field, "URL longer than " + std::to_string(kMaxUrlBytes) + " bytes");
  }
  std::string_view rest;
  if (url.starts_with("https://")) {
    rest = url.substr(8);
  } else if (url.starts_with("http://")) {
    if (!allow_http) {
      return fail(Errc::bad_field,
                  quote_for_message(url, 200) +
                      ": http:// URL needs allow_http = true (https:// otherwise)");
    }
    rest = url.substr(7);
  } else {
    return fail(Errc::bad_field, quote_for_message(url, 200) +
                                     ": scheme must be https:// (or http:// with allow_http)");
  }
  for (const char ch : url) {
    const auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c >= 0x7f) {
      return fail(Errc::bad_field, quote_for_message(url, 200) +
                                       ": space or non-ASCII character (percent-encode it)");
    }
    if (c == '?' || c == '#') {
      return fail(Errc::bad_field,
                  quote_for_message(url, 200) + ": a base URL has no query or fragment");
    }
    if (std::strchr("\"<>\\^`{|}", c) != nullptr) {
      return fail(Errc::bad_field, quote_for_message(url, 200) + ": character '" +
                                       std::string(1, ch) + "' not allowed in a URL");
    }
  }
  const std::string_view authority = rest.substr(0, rest.find('/'));
  if (authority.find('@') != std::string_view::npos) {
    return fail(Errc::bad_field,
                quote_for_message(url, 200) + ": credentials in URLs are not accepted");
  }
  std::string_view host = authority;
  std::string_view port;
  if (authority.starts_with('[')) {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      return fail(Errc::bad_field, quote_for_message(url, 200) + ": unterminated IPv6 literal");
    }
    host = authority.substr(1, close - 1);
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') {
        return fail(Errc::bad_field, quote_for_message(url, 200) + ": bad host");
      }
      port = after.substr(1);
      if (port.empty()) return fail(Errc::bad_field, quote_for_message(url, 200) + ": bad port");
    }
    const bool ok = !host.empty() && std::all_of(host.begin(), host.end(), [](char c) {
      return std::isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.';
    });
    if (!ok) return fail(Errc::bad_field, quote_for_message(url, 200) + ": bad IPv6 literal");
  } else {
    if (const std::size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
      host = authority.substr(0, colon);
      port = authority.substr(colon + 1);
      if (port.empty()) return fail(Errc::bad_field, quote_for_message(url, 200) + ": bad port");
    }
    const bool ok = !host.empty() && std::all_of(host.begin(), host.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
    });
    if (!ok) return fail(Errc::bad_field, quote_for_message(url, 200) + ": missing or bad host");
  }
  if (!port.empty()) {
    const auto p = parse_uint(port);
    if (!p || *p == 0 || *p > 65535) {
      return fail(Errc::bad_field, quote_for_message(url, 200) + ": bad port");
    }
  }
  std::string out(url);
  if (out.back() != '/') out += '/';
  return out;
}

// ---- sections ------------------------------------------------------------------

// One of the [daemon] fetch keys applied to `f`; nullopt if `e` is not one.
std::optional<Result<void>> apply_fetch_key(const Entry& e, const std::string& prefix,
                                            FetchSettings& f) {
  struct Key {
    std::string_view name;
    std::uint64_t min;
    std::uint64_t max;
    std::function<void(std::uint64_t)> set;
  };
  const Key keys[] = {
      {"connect_timeout_sec", 1, kMaxConnectTimeout,
       [&](std::uint64_t v) { f.connect_timeout = std::chrono::seconds(v); }},
      {"low_speed_limit_bytes", 0, kMaxLowSpeedLimit,
       [&](std::uint64_t v) { f.low_speed_limit_bytes = v; }},
      {"low_speed_time_sec", 1, kMaxLowSpeedTime,
       [&](std::uint64_t v) { f.low_speed_time = std::chrono::seconds(v); }},
      {"transfer_timeout_sec", 0, kMaxTransferTimeout,
       [&](std::uint64_t v) { f.transfer_timeout = std::chrono::seconds(v); }},
      {"fetch_attempts", 1, kMaxFetchAttempts,
       [&](std::uint64_t v) { f.attempts = static_cast<std::uint32_t>(v); }},
      {"max_retry_after_sec", 0, kMaxRetryAfter,
       [&](std::uint64_t v) { f.max_retry_after = std::chrono::seconds(v); }},
  };
  for (const Key& k : keys) {
    if (e.key != k.name) continue;
    auto v = uint_in(e.value, k.min, k.max, prefix);
    if (!v) return Result<void>(std::unexpected(v.error()));
    k.set(*v);
    return Result<void>();
  }
  return std::nullopt;
}

Result<void> apply_daemon_section(const Section& section, const std::string& file,
                                  DaemonSettings& d) {
  for (const Entry& e : section.entries) {
    const std::string prefix = at_key(file, e);
    if (e.key == "idle_timeout_sec") {
      auto v = uint_in(e.value, 0, kMaxIdleTimeout, prefix);
      if (!v) return std::unexpected(v.error());
      d.idle_timeout = std::chrono::seconds(*v);
    } else if (e.key == "refresh_interval_sec") {
      auto v = uint_in(e.value, 0, kMaxRefreshInterval, prefix);
      if (!v) return std::unexpected(v.error());
      if (*v != 0 && *v < kMinRefreshInterval) {
        return fail(Errc::bad_field, prefix + "expected 0 (no automatic refresh) or " +
                                         std::to_string(kMinRefreshInterval) + ".." +
                                         std::to_string(kMaxRefreshInterval) + ", got " +
                                         quote_for_message(e.value));
      }
      d.refresh_interval = std::chrono::seconds(*v);
    } else if (e.key == "max_sessions_per_client") {
      auto v = uint_in(e.value, 1, kMaxSessionsPerClient, prefix);
      if (!v) return std::unexpected(v.error());
      d.max_sessions_per_client = static_cast<std::size_t>(*v);
    } else if (e.key == "max_jobs_per_client") {
      auto v = uint_in(e.value, 1, kMaxJobsPerClient, prefix);
      if (!v) return std::unexpected(v.error());
      d.max_jobs_per_client = static_cast<std::size_t>(*v);
    } else if (e.key == "install_group") {
      if (!e.value.empty() && !is_group_name(e.value)) {
        return fail(Errc::bad_field, prefix + "not a group name ([a-z_][a-z0-9_-]{0,31}): " +
                                         quote_for_message(e.value));
      }
      d.install_group = e.value;
    } else if (e.key == "log_level") {
      auto v = parse_log_level(e.value);
      if (!v) return fail(Errc::bad_field, prefix + v.error().message);
      d.log_level = *v;
    } else if (auto fetch = apply_fetch_key(e, prefix, d.fetch)) {
      if (!*fetch) return std::unexpected(fetch->error());
    } else {
      return fail(Errc::bad_field, prefix + "unknown key in [daemon]");
    }
  }
  return {};
}

Result<Remote> parse_remote_section(const Section& section, const std::string& file,
                                    const fs::path& config_dir) {
  const Entry* name = nullptr;
  const Entry* metadata_url = nullptr;
  const Entry* targets_url = nullptr;
  const Entry* mirrors = nullptr;
  const Entry* trusted_root = nullptr;
  const Entry* ca_file = nullptr;
  Remote r;
  for (const Entry& e : section.entries) {
    const std::string prefix = at_key(file, e);
    if (e.key == "name") {
      name = &e;
    } else if (e.key == "metadata_url") {
      metadata_url = &e;
    } else if (e.key == "targets_url") {
      targets_url = &e;
    } else if (e.key == "mirrors") {
      mirrors = &e;
    } else if (e.key == "trusted_root") {
      trusted_root = &e;
    } else if (e.key == "ca_file") {
      ca_file = &e;
    } else if (e.key == "allow_http") {
      auto v = parse_bool(e.value, prefix);
      if (!v) return std::unexpected(v.error());
      r.allow_http = *v;
    } else if (e.key == "enabled") {
      auto v = parse_bool(e.value, prefix);
      if (!v) return std::unexpected(v.error());
      r.enabled = *v;
    } else if (e.key == "priority") {
      auto v = int_in(e.value, kMinPriority, kMaxPriority, prefix);
      if (!v) return std::unexpected(v.error());
      r.priority = *v;
    } else {
      return fail(Errc::bad_field, prefix + "unknown key in [remote]");
    }
  }
  const std::pair<const Entry*, std::string_view> required[] = {{name, "name"},
                                                                {metadata_url, "metadata_url"},
                                                                {targets_url, "targets_url"},
                                                                {trusted_root, "trusted_root"}};
  for (const auto& [entry, key] : required) {
    if (entry == nullptr) {
      return fail(Errc::bad_field,
                  at(file, section.line) + std::string(key) + ": missing (required in [remote])");
    }
  }

  if (!is_remote_name(name->value)) {
    return fail(Errc::bad_field, at_key(file, *name) + "expected [a-z0-9][a-z0-9-]{0,31}, got " +
                                     quote_for_message(name->value));
  }
  r.name = name->value;

  const auto url = [&](const Entry& e) -> Result<std::string> {
    auto u = check_url(e.value, r.allow_http);
    if (!u) return fail(Errc::bad_field, at_key(file, e) + u.error().message);
    return u;
  };
  auto m = url(*metadata_url);
  if (!m) return std::unexpected(m.error());
  auto t = url(*targets_url);
  if (!t) return std::unexpected(t.error());
  r.primary = Mirror{std::move(*m), std::move(*t)};

  if (mirrors != nullptr) {
    std::set<std::string> seen;
    std::string_view rest = mirrors->value;
    while (!(rest = trim(rest)).empty()) {
      const std::size_t end = rest.find_first_of(" \t");
      const std::string_view one = rest.substr(0, end);
      rest = end == std::string_view::npos ? std::string_view() : rest.substr(end);
      auto base = check_url(one, r.allow_http);
      if (!base) return fail(Errc::bad_field, at_key(file, *mirrors) + base.error().message);
      if (!seen.insert(*base).second) {
        return fail(Errc::bad_field, at_key(file, *mirrors) + "mirror " +
                                         quote_for_message(one, 200) + " listed twice");
      }
      if (r.mirrors.size() == kMaxMirrors) {
        return fail(Errc::bad_field, at_key(file, *mirrors) + "more than " +
                                         std::to_string(kMaxMirrors) + " mirrors");
      }
      r.mirrors.push_back(Mirror{*base + "metadata/", *base + "targets/"});
    }
  }

  // Paths: non-empty, bounded, relative ones against config_dir.
  const auto path = [&](const Entry& e) -> Result<fs::path> {
    if (e.value.empty()) return fail(Errc::bad_field, at_key(file, e) + "empty path");
    if (e.value.size() > kMaxPathBytes) {
      return fail(Errc::bad_field,
                  at_key(file, e) + "path longer than " + std::to_string(kMaxPathBytes) + " bytes");
    }
    const fs::path p(e.value);
    return p.is_absolute() ? p : (config_dir / p).lexically_normal();
  };
  auto root = path(*trusted_root);
  if (!root) return std::unexpected(root.error());
  r.trusted_root = std::move(*root);
  if (ca_file != nullptr) {
    auto ca = path(*ca_file);
    if (!ca) return std::unexpected(ca.error());
    r.ca_file = std::move(*ca);
  }
  return r;
}

}  // namespace

std::string_view to_string(LogLevel level) {
  switch (level) {
    case LogLevel::trace:
      return "trace";
    case LogLevel::debug:
      return "debug";
    case LogLevel::info:
      return "info";
    case LogLevel::warn:
      return "warn";
    case LogLevel::error:
      return "error";
  }
  return "info";
}

Result<LogLevel> parse_log_level(std::string_view text) {
  for (const LogLevel l :
       {LogLevel::trace, LogLevel::debug, LogLevel::info, LogLevel::warn, LogLevel::error}) {
    if (text == to_string(l)) return l;
  }
  return fail(Errc::bad_field,
              "expected trace, debug, info, warn or error, got " + quote_for_message(text));
}

Result<Config> load_config(const Paths& paths) {
  Config config;
  config.paths = paths;

  // epbroker.conf
  const fs::path main_file = paths.config_dir / kConfigFileName;
  auto main_bytes = read_config_file(main_file);
  if (!main_bytes) return std::unexpected(main_bytes.error());
  if (*main_bytes) {
    auto sections = parse_ini(**main_bytes, main_file.string(), {"daemon"},
                              "epbroker.conf has only [daemon]; remotes go in remotes.d/*.conf");
    if (!sections) return std::unexpected(sections.error());
    for (const Section& s : *sections) {
      auto ok = apply_daemon_section(s, main_file.string(), config.daemon);
      if (!ok) return std::unexpected(ok.error());
    }
  }

  // remotes.d/*.conf
  const fs::path remotes_dir = paths.config_dir / kRemotesDirName;
  std::error_code ec;
  const fs::file_status st = fs::status(remotes_dir, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {
    return fail(Errc::io, remotes_dir.string() + ": " + ec.message());
  }
  if (fs::exists(st)) {
    if (!fs::is_directory(st)) return fail(Errc::io, remotes_dir.string() + ": not a directory");
    std::vector<fs::path> files;
    fs::directory_iterator it(remotes_dir, ec);
    for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
      const std::string fname = it->path().filename().string();
      if (fname.starts_with('.') || !fname.ends_with(".conf")) continue;
      if (files.size() == kMaxRemoteFiles) {
        return fail(Errc::too_many, remotes_dir.string() + ": more than " +
                                        std::to_string(kMaxRemoteFiles) + " *.conf files");
      }
      files.push_back(it->path());
    }
    if (ec) return fail(Errc::io, remotes_dir.string() + ": cannot list: " + ec.message());
    std::sort(files.begin(), files.end());

    std::map<std::string, std::string> where_defined;  // name -> "file:line"
    for (const fs::path& f : files) {
      const std::string file = f.string();
      auto bytes = read_config_file(f);
      if (!bytes) return std::unexpected(bytes.error());
      if (!*bytes) continue;  // removed while we listed
      auto sections = parse_ini(**bytes, file, {"remote"}, "a remotes.d file has one [remote]");
      if (!sections) return std::unexpected(sections.error());
      if (sections->empty()) {
        return fail(Errc::bad_field, at(file, 1) + "no [remote] section in this file");
      }
      auto remote = parse_remote_section(sections->front(), file, paths.config_dir);
      if (!remote) return std::unexpected(remote.error());
      const Section& s = sections->front();
      const auto name_entry = std::find_if(s.entries.begin(), s.entries.end(),
                                           [](const Entry& e) { return e.key == "name"; });
      const std::string here = at(file, name_entry->line);
      const auto [prev, inserted] =
          where_defined.emplace(remote->name, here.substr(0, here.size() - 2));
      if (!inserted) {
        return fail(Errc::bad_field, here + "name: remote " + quote_for_message(remote->name) +
                                         " already defined at " + prev->second);
      }
      remote->source = f;
      config.remotes.push_back(std::move(*remote));
    }
  }
  std::stable_sort(config.remotes.begin(), config.remotes.end(),
                   [](const Remote& a, const Remote& b) {
                     if (a.priority != b.priority) return a.priority > b.priority;
                     return a.name < b.name;
                   });
  return config;
}

}  // namespace epbrokerd::config
