// Value parsers of the configuration keys (values.hpp), the log levels and the
// auto_update modes (config.hpp).
#include "daemon/config/values.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <system_error>

#include "catalog/text.hpp"
#include "daemon/config/config.hpp"
#include "daemon/config/ini.hpp"

namespace epbrokerd::config {
namespace {

using catalog::Errc;
using catalog::fail;
using catalog::quote_for_message;

}  // namespace

namespace detail {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace

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

Result<std::filesystem::path> parse_path(std::string_view value, const std::filesystem::path& base,
                                         const std::string& prefix) {
  if (value.empty()) return fail(Errc::bad_field, prefix + "empty path");
  if (value.size() > kMaxPathBytes) {
    return fail(Errc::bad_field,
                prefix + "path longer than " + std::to_string(kMaxPathBytes) + " bytes");
  }
  const std::filesystem::path p(value);
  return p.is_absolute() ? p : (base / p).lexically_normal();
}

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

}  // namespace detail

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

std::string_view to_string(AutoUpdate mode) {
  switch (mode) {
    case AutoUpdate::off:
      return "off";
    case AutoUpdate::download:
      return "download";
    case AutoUpdate::install:
      return "install";
  }
  return "install";
}

Result<AutoUpdate> parse_auto_update(std::string_view text) {
  for (const AutoUpdate m : {AutoUpdate::off, AutoUpdate::download, AutoUpdate::install}) {
    if (text == to_string(m)) return m;
  }
  return fail(Errc::bad_field, "expected off, download or install, got " + quote_for_message(text));
}

}  // namespace epbrokerd::config
