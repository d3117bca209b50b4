#include "net/curl_fetcher.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cstddef>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "net/redirect_policy.hpp"

namespace net {

namespace {

using catalog::Errc;
using catalog::Error;
using catalog::fail;
using catalog::Result;

// libcurl's global state is initialised once per process, before the first handle.
CURLcode global_init() {
  static std::once_flag once;
  static CURLcode rc = CURLE_OK;
  std::call_once(once, [] { rc = curl_global_init(CURL_GLOBAL_DEFAULT); });
  return rc;
}

bool starts_with_nocase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(s[i])) !=
        std::tolower(static_cast<unsigned char>(prefix[i]))) {
      return false;
    }
  }
  return true;
}

bool is_2xx(long status) { return status >= 200 && status < 300; }

bool is_redirect(long status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

// The most of a redirect answer's body that is read (and dropped).
constexpr std::uint64_t kMaxRedirectBody = 64 * 1024;

// The answer's Retry-After in seconds (libcurl parses both the delta-seconds and
// the HTTP-date forms), if it had one.
std::optional<std::chrono::seconds> retry_after(CURL* curl) {
  curl_off_t seconds = 0;
  if (curl_easy_getinfo(curl, CURLINFO_RETRY_AFTER, &seconds) != CURLE_OK || seconds <= 0) {
    return std::nullopt;
  }
  return std::chrono::seconds(seconds);
}

// A non-2xx final answer. Only 503 (unavailable) and 429 (too many requests)
// carry a server's Retry-After on to the retry logic.
Error status_error(const std::string& url, long status,
                   std::optional<std::chrono::seconds> after = std::nullopt) {
  Errc code = (status == 403 || status == 404 || status == 410) ? Errc::not_found : Errc::network;
  Error e{code, url + ": HTTP status " + std::to_string(status)};
  if ((status == 503 || status == 429) && after) {
    e.retry_after = after;
    e.message += " (Retry-After: " + std::to_string(after->count()) + " s)";
  }
  return e;
}

// What the callbacks share with fetch() for one transfer.
struct Transfer {
  CURL* curl = nullptr;
  const std::string* url = nullptr;
  std::uint64_t max_bytes = 0;  // of the whole resource
  const catalog::tuf::ChunkSink* sink = nullptr;
  const catalog::tuf::StartSink* on_start = nullptr;  // fetch_from() only
  std::uint64_t range = 0;                            // asked start; 0: no Range header

  std::optional<std::uint64_t> content_length;       // of the response whose headers arrive
  std::optional<std::uint64_t> content_range_start;  // likewise, from Content-Range
  bool started = false;              // the body's start is decided (and told to on_start)
  std::uint64_t start = 0;           // where the body starts in the resource
  bool range_refused = false;        // aborted: a 206 for a range not asked for
  bool status_checked = false;       // first body byte seen, status was 2xx
  bool bad_status = false;           // aborted: final answer is not 2xx
  bool follow_redirects = false;     // a redirect's answer is read to its end (see on_body)
  std::uint64_t redirect_bytes = 0;  // of such an answer's body, dropped
  long status = 0;
  std::uint64_t delivered = 0;
  std::optional<Error> error;  // set by a callback that aborted the transfer
};

std::string cap_message(const Transfer& t) {
  return *t.url + ": body exceeds the cap of " + std::to_string(t.max_bytes) + " bytes";
}

long response_code(CURL* curl) {
  long code = 0;
  if (curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code) != CURLE_OK) return 0;
  return code;
}

// Parses "Content-Length: N"; a value too large for 64 bits reads as the maximum.
std::optional<std::uint64_t> parse_content_length(std::string_view line) {
  constexpr std::string_view kName = "content-length:";
  if (!starts_with_nocase(line, kName)) return std::nullopt;
  line.remove_prefix(kName.size());
  while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(line.data(), line.data() + line.size(), value);
  if (end == line.data()) return std::nullopt;
  if (ec == std::errc::result_out_of_range) return std::numeric_limits<std::uint64_t>::max();
  if (ec != std::errc()) return std::nullopt;
  return value;
}

// Parses "Content-Range: bytes FIRST-LAST/TOTAL" for FIRST.
std::optional<std::uint64_t> parse_content_range_start(std::string_view line) {
  constexpr std::string_view kName = "content-range:";
  if (!starts_with_nocase(line, kName)) return std::nullopt;
  line.remove_prefix(kName.size());
  while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
  if (!starts_with_nocase(line, "bytes ")) return std::nullopt;
  line.remove_prefix(6);
  std::uint64_t first = 0;
  auto [end, ec] = std::from_chars(line.data(), line.data() + line.size(), first);
  if (ec != std::errc() || end == line.data() || end == line.data() + line.size() || *end != '-') {
    return std::nullopt;
  }
  return first;
}

// The return value that makes libcurl abort a transfer: anything but the size given.
std::size_t abort_transfer(std::size_t n) { return n == 0 ? 1 : 0; }

// Decides where the final (2xx) answer's body starts, checks its announced length
// against what is left of the cap, and tells on_start. False: abort (t->error or
// t->range_refused says why).
bool start_body(Transfer* t) {
  if (t->started) return true;
  const long status = response_code(t->curl);
  if (status == 206) {
    // Partial content counts only as the range asked for; anything else (no
    // Range asked, another start, no Content-Range) is refused, not guessed at.
    if (t->range == 0 || t->content_range_start != t->range) {
      t->range_refused = true;
      return false;
    }
    t->start = t->range;
  } else {
    t->start = 0;  // a 200 to a range request: the whole resource
  }
  const std::uint64_t room = t->max_bytes - t->start;
  if (t->content_length && *t->content_length > room) {
    t->error = Error{Errc::length_mismatch, cap_message(*t) + " (Content-Length " +
                                                std::to_string(*t->content_length) + " from byte " +
                                                std::to_string(t->start) + ")"};
    return false;
  }
  t->started = true;
  if (t->on_start == nullptr) return true;
  try {  // nothing may unwind through libcurl's C frames
    if (auto r = (*t->on_start)(t->start); !r) {
      t->error = std::move(r.error());
      return false;
    }
  } catch (const std::exception& e) {
    t->error = Error{Errc::io, *t->url + ": start of body failed: " + e.what()};
    return false;
  } catch (...) {
    t->error = Error{Errc::io, *t->url + ": start of body failed"};
    return false;
  }
  return true;
}

// Called once per header line of every response (redirects and 1xx included).
std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::size_t n = size * count;
  std::string_view line(data, n);
  if (t->status_checked) return n;  // trailers after the body: nothing to check
  if (starts_with_nocase(line, "HTTP/")) {
    t->content_length.reset();  // a new response begins
    t->content_range_start.reset();
  } else if (auto len = parse_content_length(line)) {
    t->content_length = std::max(t->content_length.value_or(0), *len);
  } else if (auto first = parse_content_range_start(line)) {
    t->content_range_start = *first;
  } else if (line == "\r\n" || line == "\n") {
    // End of this response's headers: decide where the body starts and refuse an
    // announced body over the cap before a single body byte is read. Redirects
    // and error answers are handled elsewhere.
    if (is_2xx(response_code(t->curl)) && !start_body(t)) return abort_transfer(n);
  }
  return n;
}

std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::size_t n = size * count;
  if (!t->status_checked) {
    t->status = response_code(t->curl);
    if (t->follow_redirects && is_redirect(t->status)) {
      // Read to its end and dropped: libcurl says where a redirect leads
      // (CURLINFO_REDIRECT_URL) only once its transfer is complete. Bounded.
      t->redirect_bytes += n;
      if (t->redirect_bytes > kMaxRedirectBody) {
        t->error = Error{Errc::network, *t->url + ": redirect answer with a body over " +
                                            std::to_string(kMaxRedirectBody) + " bytes"};
        return abort_transfer(n);
      }
      return n;
    }
    if (!is_2xx(t->status)) {
      t->bad_status = true;  // the body of an error page never reaches the sink
      return abort_transfer(n);
    }
    t->status_checked = true;
    if (!start_body(t)) return abort_transfer(n);  // no header block seen (HTTP/0.9)
  }
  if (n == 0) return n;
  if (n > t->max_bytes - t->start - t->delivered) {
    t->error = Error{Errc::length_mismatch, cap_message(*t)};
    return abort_transfer(n);
  }
  try {
    auto bytes = std::span<const std::byte>(reinterpret_cast<const std::byte*>(data), n);
    if (auto r = (*t->sink)(bytes); !r) {
      t->error = std::move(r.error());
      return abort_transfer(n);
    }
  } catch (const std::exception& e) {
    t->error = Error{Errc::io, *t->url + ": sink failed: " + e.what()};
    return abort_transfer(n);
  } catch (...) {
    t->error = Error{Errc::io, *t->url + ": sink failed"};
    return abort_transfer(n);
  }
  t->delivered += n;
  return n;
}

using EasyHandle = std::unique_ptr<CURL, decltype(&curl_easy_cleanup)>;

// Records the first failing curl_easy_setopt, so configuration reads as a list.
class Setter {
 public:
  explicit Setter(CURL* curl) : curl_(curl) {}

  template <typename T>
  void set(CURLoption option, const char* name, T value) {
    if (failed_) return;
    if (CURLcode rc = curl_easy_setopt(curl_, option, value); rc != CURLE_OK) {
      failed_ = std::string("curl_easy_setopt(") + name + "): " + curl_easy_strerror(rc);
    }
  }

  const std::optional<std::string>& failed() const { return failed_; }

 private:
  CURL* curl_;
  std::optional<std::string> failed_;
};

// Configuration text for a message: printable ASCII, at most 200 bytes.
std::string printable(const std::string& s) {
  std::string out = "\"";
  for (const char c : s.substr(0, 200)) {
    out.push_back(c >= 0x20 && c < 0x7f && c != '"' ? c : '?');
  }
  return out + "\"";
}

// Where the redirect from `url` (the URL asked) to `location` leads, as far as
// messages may name it; an error if the policy refuses it or it is one too many.
Result<Origin> redirect_target(const CurlFetcherOptions& options, const std::string& url,
                               const char* location, int hops,
                               const std::vector<HostPattern>& allowed_hosts) {
  const auto from = parse_origin(url);
  const auto d = from ? check_redirect(*from, location, options.allow_http, allowed_hosts)
                      : RedirectDecision{};
  switch (d.verdict) {
    case RedirectVerdict::follow:
      break;
    case RedirectVerdict::bad_target:
      return fail(Errc::network,
                  url + ": redirect refused: not to an absolute http(s) URL this fetcher reads" +
                      (from ? "" : " (nor is the URL asked one)"));
    case RedirectVerdict::scheme:
      return fail(Errc::network,
                  url + ": redirect refused: scheme \"" + d.scheme + "\" not supported (" +
                      (options.allow_http ? "http:// or https://" : "https://") + " only)");
    case RedirectVerdict::host:
      return fail(Errc::network, url + ": redirect to " + d.to->text() +
                                     " refused: neither this URL's origin nor in the "
                                     "remote's redirect_hosts");
  }
  if (hops >= options.max_redirects) {
    return fail(Errc::network,
                url + ": more than " + std::to_string(options.max_redirects) + " redirects");
  }
  return *d.to;
}

// The outcome of the last request of a transfer (no redirect to follow).
Result<void> finish(CURL* curl, CURLcode rc, Transfer& t, const std::string& where,
                    std::uint64_t range, const std::string& range_text, const char* errbuf,
                    bool* range_refused) {
  if (t.range_refused || (range > 0 && t.bad_status && t.status == 416)) {
    *range_refused = true;
    return fail(Errc::network, where + ": range " + range_text + " not served as asked");
  }
  if (t.bad_status) return std::unexpected(status_error(where, t.status, retry_after(curl)));
  if (rc != CURLE_OK) {
    std::string message = where + ": " + curl_easy_strerror(rc);
    if (errbuf[0] != '\0') message += std::string(" (") + errbuf + ")";
    return fail(Errc::network, std::move(message));
  }
  if (long status = response_code(curl); !is_2xx(status)) {
    if (range > 0 && status == 416) {
      *range_refused = true;
      return fail(Errc::network, where + ": range " + range_text + " not satisfiable");
    }
    return std::unexpected(status_error(where, status, retry_after(curl)));
  }
  // An empty body: its headers may not have been seen as such (HTTP/0.9).
  if (!start_body(&t)) {
    if (t.error) return std::unexpected(std::move(*t.error));
    *range_refused = true;
    return fail(Errc::network, where + ": range " + range_text + " not served as asked");
  }
  return {};
}

}  // namespace

CurlFetcher::CurlFetcher(CurlFetcherOptions options) : options_(std::move(options)) {}

Result<void> CurlFetcher::fetch(const std::string& url, std::uint64_t max_bytes,
                                const catalog::tuf::ChunkSink& sink) {
  bool range_refused = false;
  auto r = transfer(url, 0, max_bytes, nullptr, sink, &range_refused);
  if (range_refused) return fail(Errc::network, url + ": HTTP 206 to a request without Range");
  return r;
}

Result<void> CurlFetcher::fetch_from(const std::string& url, std::uint64_t offset,
                                     std::uint64_t max_bytes,
                                     const catalog::tuf::StartSink& on_start,
                                     const catalog::tuf::ChunkSink& sink) {
  if (offset > max_bytes) {
    return fail(Errc::invalid_argument, url + ": offset " + std::to_string(offset) +
                                            " is past the cap of " + std::to_string(max_bytes));
  }
  bool range_refused = false;
  auto r = transfer(url, offset, max_bytes, &on_start, sink, &range_refused);
  if (!range_refused || offset == 0) {
    if (range_refused) return fail(Errc::network, url + ": HTTP 206 to a request without Range");
    return r;
  }
  // A range answered wrongly (or 416): nothing was delivered; take it whole.
  r = transfer(url, 0, max_bytes, &on_start, sink, &range_refused);
  if (range_refused) return fail(Errc::network, url + ": HTTP 206 to a request without Range");
  return r;
}

Result<void> CurlFetcher::transfer(const std::string& url, std::uint64_t range,
                                   std::uint64_t max_bytes, const catalog::tuf::StartSink* on_start,
                                   const catalog::tuf::ChunkSink& sink, bool* range_refused) {
  *range_refused = false;
  const bool https = starts_with_nocase(url, "https://");
  const bool http = starts_with_nocase(url, "http://");
  if (!https && !(http && options_.allow_http)) {
    return fail(Errc::invalid_argument,
                url + ": scheme not allowed (" +
                    (options_.allow_http ? "http:// or https://" : "https://") + " only)");
  }
  if (url.find('\0') != std::string::npos) {
    return fail(Errc::invalid_argument, "URL contains a NUL byte");
  }
  std::vector<HostPattern> allowed_hosts;
  for (const auto& h : options_.redirect_hosts) {
    auto pattern = parse_host_pattern(h);
    if (!pattern) {
      return fail(Errc::invalid_argument,
                  "redirect_hosts: " + printable(h) + " is not a host or host:port");
    }
    allowed_hosts.push_back(std::move(*pattern));
  }
  if (CURLcode rc = global_init(); rc != CURLE_OK) {
    return fail(Errc::network, std::string("curl_global_init: ") + curl_easy_strerror(rc));
  }
  EasyHandle easy(curl_easy_init(), &curl_easy_cleanup);
  if (!easy) return fail(Errc::network, url + ": curl_easy_init failed");
  CURL* curl = easy.get();

  Transfer t;  // one per request: set again for every redirect hop
  const std::string range_text = std::to_string(range) + "-";
  char errbuf[CURL_ERROR_SIZE] = {};

  Setter s(curl);
  // The same allow-list for the first request and for every redirect target.
#if LIBCURL_VERSION_NUM >= 0x075500  // 7.85.0: string forms, the bitmasks are deprecated
  const char* protocols = options_.allow_http ? "http,https" : "https";
  s.set(CURLOPT_PROTOCOLS_STR, "PROTOCOLS_STR", protocols);
  s.set(CURLOPT_REDIR_PROTOCOLS_STR, "REDIR_PROTOCOLS_STR", protocols);
#else
  const long protocols = CURLPROTO_HTTPS | (options_.allow_http ? CURLPROTO_HTTP : 0L);
  s.set(CURLOPT_PROTOCOLS, "PROTOCOLS", protocols);
  s.set(CURLOPT_REDIR_PROTOCOLS, "REDIR_PROTOCOLS", protocols);
#endif
  // Redirects are followed below, one hop at a time, each target checked before
  // it is asked: libcurl's own following would ask any host of the right scheme.
  s.set(CURLOPT_FOLLOWLOCATION, "FOLLOWLOCATION", 0L);
  s.set(CURLOPT_NOSIGNAL, "NOSIGNAL", 1L);  // no SIGALRM games: safe in threads
  // Bigger reads than the default 16 KiB: a package of hundreds of MB otherwise
  // costs tens of thousands of callbacks (hashing, progress, file writes).
  s.set(CURLOPT_BUFFERSIZE, "BUFFERSIZE", 512L * 1024L);
  s.set(CURLOPT_CONNECTTIMEOUT_MS, "CONNECTTIMEOUT_MS", std::max(options_.connect_timeout_ms, 0L));
  s.set(CURLOPT_TIMEOUT_MS, "TIMEOUT_MS", std::max(options_.total_timeout_ms, 0L));
  if (options_.low_speed_bytes_per_s > 0 && options_.low_speed_time_s > 0) {
    s.set(CURLOPT_LOW_SPEED_LIMIT, "LOW_SPEED_LIMIT", options_.low_speed_bytes_per_s);
    s.set(CURLOPT_LOW_SPEED_TIME, "LOW_SPEED_TIME", options_.low_speed_time_s);
  }
  if (!options_.ca_file.empty()) s.set(CURLOPT_CAINFO, "CAINFO", options_.ca_file.c_str());
  s.set(CURLOPT_USERAGENT, "USERAGENT", options_.user_agent.c_str());
  if (range > 0) s.set(CURLOPT_RANGE, "RANGE", range_text.c_str());
  // No CURLOPT_ACCEPT_ENCODING: bytes are counted and handed over exactly as signed.
  s.set(CURLOPT_ERRORBUFFER, "ERRORBUFFER", errbuf);
  // A proxy's "200 Connection established" must not read as the answer (it
  // would decide where the body starts).
  s.set(CURLOPT_SUPPRESS_CONNECT_HEADERS, "SUPPRESS_CONNECT_HEADERS", 1L);
  s.set(CURLOPT_HEADERFUNCTION, "HEADERFUNCTION", &on_header);
  s.set(CURLOPT_HEADERDATA, "HEADERDATA", static_cast<void*>(&t));
  s.set(CURLOPT_WRITEFUNCTION, "WRITEFUNCTION", &on_body);
  s.set(CURLOPT_WRITEDATA, "WRITEDATA", static_cast<void*>(&t));
  if (s.failed()) return fail(Errc::network, url + ": " + *s.failed());

  // What messages call the request: the URL asked, and after a redirect the
  // origin it led to (never the target's path or query).
  std::string where = url;
  std::string next = url;
  for (int hops = 0;; ++hops) {
    t = Transfer{};
    t.curl = curl;
    t.url = &where;
    t.max_bytes = max_bytes;
    t.sink = &sink;
    t.on_start = on_start;
    t.range = range;
    t.follow_redirects = options_.max_redirects > 0;
    errbuf[0] = '\0';
    if (CURLcode rc = curl_easy_setopt(curl, CURLOPT_URL, next.c_str()); rc != CURLE_OK) {
      return fail(Errc::network, where + ": curl_easy_setopt(URL): " + curl_easy_strerror(rc));
    }
    const CURLcode rc = curl_easy_perform(curl);
    if (t.error) return std::unexpected(std::move(*t.error));
    const long status = t.bad_status ? t.status : response_code(curl);
    char* location = nullptr;
    if (options_.max_redirects > 0 && is_redirect(status) &&
        curl_easy_getinfo(curl, CURLINFO_REDIRECT_URL, &location) == CURLE_OK &&
        location != nullptr) {
      auto target = redirect_target(options_, url, location, hops, allowed_hosts);
      if (!target) return std::unexpected(std::move(target.error()));
      next = location;
      where = url + " (redirected to " + target->text() + ")";
      continue;
    }
    return finish(curl, rc, t, where, range, range_text, errbuf, range_refused);
  }
}

}  // namespace net
