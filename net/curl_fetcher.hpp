// catalog::tuf::Fetcher over libcurl: how the daemon reaches remote catalogs.
//
// Hostile-server defences live here, below the TUF workflow: scheme allow-list (https
// only unless told otherwise, never file://), the same allow-list for redirects, a
// redirect policy (the URL's own origin or listed hosts only: redirect_policy.hpp)
// and bound, connect/low-speed/total timeouts, and the byte cap enforced while
// streaming (an announced Content-Length over the cap aborts before any body byte).
// Messages carry no byte a server sent (error pages are never read) and name a
// redirect target by its origin only, never its path or query: the daemon shows
// them to every bus client.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "catalog/error.hpp"
#include "catalog/tuf/fetcher.hpp"

namespace net {

struct CurlFetcherOptions {
  // Also accept plain http:// URLs (and redirects to them). Off: https:// only.
  // file:// and every other scheme are always refused.
  bool allow_http = false;
  // Time allowed to establish the connection (DNS, TCP, TLS), in milliseconds.
  long connect_timeout_ms = 10000;
  // A transfer slower than low_speed_bytes_per_s for low_speed_time_s seconds is
  // aborted (slow-retrieval defence). Either <= 0 disables the check.
  long low_speed_bytes_per_s = 1024;
  long low_speed_time_s = 30;
  // Hard bound on one request (each redirect hop is one), in milliseconds; <= 0
  // means no bound.
  long total_timeout_ms = 300000;
  // Redirects followed at most (to allowed schemes only); <= 0 follows none, and a
  // redirect answer then fails as a non-2xx status.
  int max_redirects = 3;
  // Hosts a redirect may lead to besides the origin of the URL asked (the same
  // scheme, host and port): "host" (on the default port of the redirect's
  // scheme) or "host:port", IPv6 literals in brackets (redirect_policy.hpp). An
  // entry that does not parse fails every fetch with Errc::invalid_argument.
  std::vector<std::string> redirect_hosts{};
  // PEM bundle of trusted CAs; empty uses the system default.
  std::string ca_file;
  std::string user_agent = "epbroker/0.1";
};

// Thread-safe: every fetch() uses its own easy handle; one CurlFetcher may be shared
// by threads. Never throws.
class CurlFetcher : public catalog::tuf::Fetcher {
 public:
  explicit CurlFetcher(CurlFetcherOptions options = {});

  // Contract (see catalog::tuf::Fetcher), plus:
  //  - a URL whose scheme is not allowed fails with Errc::invalid_argument before any
  //    connection is made;
  //  - HTTP 403/404/410 fail with Errc::not_found, other non-2xx with Errc::network
  //    (status in the message); the body of an error answer never reaches `sink`;
  //    a 503 or 429 with a Retry-After header (seconds or an HTTP date) sets the
  //    error's retry_after;
  //  - transport failures (refused, timeouts, TLS) fail with Errc::network and
  //    libcurl's explanation;
  //  - redirects (301, 302, 303, 307, 308) are followed one at a time, at most
  //    max_redirects, each checked before it is asked (redirect_policy.hpp): a
  //    refused one (another scheme, another origin not in redirect_hosts) or one
  //    too many fails with Errc::network, naming the target's scheme or origin.
  //    Network, not not_found: that mirror did not deliver, the next one may (and
  //    a not_found would end the root chain's walk: catalog/tuf/updater); not
  //    invalid_argument, which would stop every mirror at once;
  //  - more than `max_bytes` (announced or received) fails with Errc::length_mismatch,
  //    message naming the URL and the cap; the transfer is aborted at once;
  //  - an error returned by `sink` aborts the transfer and is returned as is.
  catalog::Result<void> fetch(const std::string& url, std::uint64_t max_bytes,
                              const catalog::tuf::ChunkSink& sink) override;

  // A resume with "Range: bytes=OFFSET-" (contract of Fetcher::fetch_from, plus
  // fetch()'s above). Only an HTTP 206 whose Content-Range starts at `offset`
  // counts as resumed (on_start(offset)); a 200 is the whole resource
  // (on_start(0)). A 206 for another range, or a 416, is not trusted: the
  // resource is asked again without Range and delivered whole. Offset 0 sends
  // no Range header. A 206 answer to fetch() (no Range asked) is Errc::network.
  catalog::Result<void> fetch_from(const std::string& url, std::uint64_t offset,
                                   std::uint64_t max_bytes, const catalog::tuf::StartSink& on_start,
                                   const catalog::tuf::ChunkSink& sink) override;

  const CurlFetcherOptions& options() const { return options_; }

 private:
  // One request; `range` adds "Range: bytes=N-". Sets *range_refused (and
  // delivers nothing) when the answer is a 206 for another range or a 416.
  catalog::Result<void> transfer(const std::string& url, std::uint64_t range,
                                 std::uint64_t max_bytes, const catalog::tuf::StartSink* on_start,
                                 const catalog::tuf::ChunkSink& sink, bool* range_refused);

  CurlFetcherOptions options_;
};

}  // namespace net
