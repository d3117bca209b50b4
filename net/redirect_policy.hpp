// Where a redirect may lead (CurlFetcher follows redirects itself, one hop at a
// time, and asks this before each): a server that answers a fetch must not be
// able to make the daemon ask another host of its choosing (a host on the
// daemon's own network, say), so a redirect is followed only
//   - to the origin of the URL asked (the same scheme, host and port), or
//   - to a host the remote's configuration lists (`redirect_hosts`),
// and only to a scheme the fetcher allows (https://; http:// too with allow_http).
// Host names are compared as written, case-insensitively: "localhost" and
// "127.0.0.1" are different hosts, and nothing is resolved here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace net {

// The origin of an absolute http:// or https:// URL.
struct Origin {
  std::string scheme;      // "http" or "https"
  std::string host;        // lower case; an IPv6 literal keeps its brackets
  std::uint16_t port = 0;  // as written, else the scheme's default (80, 443)

  // "scheme://host:port": what messages name of a URL that is not ours to show.
  std::string text() const;
  friend bool operator==(const Origin&, const Origin&) = default;
};

// Parses the scheme and the authority of `url`. Nullopt unless the scheme is
// http or https (any case), the authority has no user info ('@'), and the host
// is letters, digits, '-', '.', '_' (a name or IPv4) or a bracketed IPv6
// literal (hex digits, ':', '.'), with an optional port 1..65535. Strict on
// purpose: what this accepts, libcurl reads the same way.
std::optional<Origin> parse_origin(std::string_view url);

// One `redirect_hosts` entry: "host" or "host:port" ("[v6]" or "[v6]:port"),
// the host as parse_origin() accepts it. Without a port it matches the default
// port of the redirect's scheme.
struct HostPattern {
  std::string host;  // lower case
  std::optional<std::uint16_t> port;

  friend bool operator==(const HostPattern&, const HostPattern&) = default;
};

// Nullopt when `text` is not such an entry (no scheme, path or wildcard).
std::optional<HostPattern> parse_host_pattern(std::string_view text);

// What check_redirect() decided.
enum class RedirectVerdict {
  follow,
  bad_target,  // not an absolute URL parse_origin() accepts (scheme aside)
  scheme,      // a scheme the fetcher does not allow (file://, http:// without allow_http)
  host,        // another origin, not listed
};

struct RedirectDecision {
  RedirectVerdict verdict = RedirectVerdict::bad_target;
  std::optional<Origin> to;  // the target's origin, when it parsed
  std::string scheme;        // the target's scheme, lower case, for messages (at most 16
                             // characters of [a-z0-9+.-]; "?" otherwise)
};

// Whether a fetch of a URL whose origin is `from` may follow a redirect to
// `target` (an absolute URL, as libcurl's CURLINFO_REDIRECT_URL gives it).
RedirectDecision check_redirect(const Origin& from, std::string_view target, bool allow_http,
                                const std::vector<HostPattern>& allowed_hosts);

}  // namespace net
