#include "net/redirect_policy.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace net {

namespace {

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

std::string to_lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), lower);
  return out;
}

bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
}

bool is_v6_char(char c) {
  return std::isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.';
}

std::optional<std::uint16_t> parse_port(std::string_view s) {
  if (s.empty() || s.size() > 5) return std::nullopt;
  unsigned value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size() || value == 0 || value > 65535) {
    return std::nullopt;
  }
  return static_cast<std::uint16_t>(value);
}

// "host" or "host:port" (IPv6 in brackets): the host in lower case, the port if
// written. Nullopt for anything else.
struct HostPort {
  std::string host;
  std::optional<std::uint16_t> port;
};

std::optional<HostPort> parse_host_port(std::string_view s) {
  std::string_view host = s;
  std::string_view port;
  bool has_port = false;
  if (s.starts_with('[')) {
    const std::size_t close = s.find(']');
    if (close == std::string_view::npos || close < 2) return std::nullopt;
    host = s.substr(0, close + 1);
    if (!std::all_of(host.begin() + 1, host.end() - 1, is_v6_char)) return std::nullopt;
    const std::string_view after = s.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return std::nullopt;
      port = after.substr(1);
      has_port = true;
    }
  } else {
    if (const std::size_t colon = s.rfind(':'); colon != std::string_view::npos) {
      host = s.substr(0, colon);
      port = s.substr(colon + 1);
      has_port = true;
    }
    if (host.empty() || !std::all_of(host.begin(), host.end(), is_name_char)) return std::nullopt;
  }
  HostPort out{to_lower(host), std::nullopt};
  if (has_port) {
    out.port = parse_port(port);
    if (!out.port) return std::nullopt;
  }
  return out;
}

std::uint16_t default_port(std::string_view scheme) { return scheme == "https" ? 443 : 80; }

// The scheme of `url` (before "://"), lower case, if it looks like one.
std::string scheme_of(std::string_view url) {
  const std::size_t sep = url.find("://");
  if (sep == std::string_view::npos || sep == 0 || sep > 16) return "?";
  const std::string s = to_lower(url.substr(0, sep));
  const bool ok = std::all_of(s.begin(), s.end(), [](char c) {
    return std::islower(static_cast<unsigned char>(c)) ||
           std::isdigit(static_cast<unsigned char>(c)) || c == '+' || c == '.' || c == '-';
  });
  return ok ? s : "?";
}

}  // namespace

std::string Origin::text() const { return scheme + "://" + host + ":" + std::to_string(port); }

std::optional<Origin> parse_origin(std::string_view url) {
  const std::string scheme = scheme_of(url);
  if (scheme != "http" && scheme != "https") return std::nullopt;
  std::string_view rest = url.substr(scheme.size() + 3);
  const std::string_view authority = rest.substr(0, rest.find_first_of("/?#"));
  // No user info, and no byte another URL parser might read differently.
  auto hp = parse_host_port(authority);
  if (!hp) return std::nullopt;
  return Origin{scheme, std::move(hp->host), hp->port.value_or(default_port(scheme))};
}

std::optional<HostPattern> parse_host_pattern(std::string_view text) {
  auto hp = parse_host_port(text);
  if (!hp) return std::nullopt;
  return HostPattern{std::move(hp->host), hp->port};
}

RedirectDecision check_redirect(const Origin& from, std::string_view target, bool allow_http,
                                const std::vector<HostPattern>& allowed_hosts) {
  RedirectDecision d;
  d.scheme = scheme_of(target);
  if (d.scheme != "https" && !(d.scheme == "http" && allow_http)) {
    d.verdict = d.scheme == "?" ? RedirectVerdict::bad_target : RedirectVerdict::scheme;
    return d;
  }
  d.to = parse_origin(target);
  if (!d.to) {
    d.verdict = RedirectVerdict::bad_target;
    return d;
  }
  if (*d.to == from) {
    d.verdict = RedirectVerdict::follow;
    return d;
  }
  const bool listed = std::any_of(allowed_hosts.begin(), allowed_hosts.end(), [&](const auto& h) {
    return h.host == d.to->host && h.port.value_or(default_port(d.to->scheme)) == d.to->port;
  });
  d.verdict = listed ? RedirectVerdict::follow : RedirectVerdict::host;
  return d;
}

}  // namespace net
