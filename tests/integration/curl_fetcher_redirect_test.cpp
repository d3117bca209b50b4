// net::CurlFetcher's redirect policy (net/redirect_policy.hpp) against real servers
// on loopback: a redirect is followed to the origin of the URL asked, or to a host
// the remote lists (redirect_hosts), never elsewhere; and what a failed fetch says
// carries no byte the server sent, nor a redirect target's path.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "catalog/error.hpp"
#include "net/curl_fetcher.hpp"
#include "net/redirect_policy.hpp"
#include "tests/support/http_server.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/tls_cert.hpp"

namespace net {
namespace {

using catalog::Errc;
using catalog::Result;
using tests::support::HttpServer;
using tests::support::TempDir;
using tests::support::url_encode;

constexpr std::uint64_t kMiB = 1024 * 1024;
constexpr const char* kSecret = "s3cr3t-internal-token";

struct Collector {
  std::string body;
  catalog::tuf::ChunkSink sink() {
    return [this](std::span<const std::byte> chunk) -> Result<void> {
      body.append(reinterpret_cast<const char*>(chunk.data()), chunk.size());
      return {};
    };
  }
};

CurlFetcherOptions http_options(std::vector<std::string> redirect_hosts = {}) {
  CurlFetcherOptions o;
  o.allow_http = true;
  o.total_timeout_ms = 60000;
  o.redirect_hosts = std::move(redirect_hosts);
  return o;
}

bool contains(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

// What `message` says after naming `url`: the test server's redirect URLs carry
// their target in their own path, which a message may name (it is the URL asked).
std::string after(const std::string& message, const std::string& url) {
  return message.starts_with(url) ? message.substr(url.size()) : message;
}

class RedirectTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    for (const char* name :
         {"http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"}) {
      unsetenv(name);
    }
  }
  void SetUp() override { tests::support::write_file(root_ / "blob.bin", blob_); }

  // A URL of `server_` that redirects to `target`.
  std::string redirect_to(const std::string& target) const {
    return server_.url("__redirect__/" + url_encode(target));
  }
  // "HOST:PORT" of `other` as redirect_hosts lists it.
  static std::string host_port(const std::string& host, const HttpServer& other) {
    return host + ":" + std::to_string(other.port());
  }

  const std::string blob_ = std::string(70000, 'b');
  TempDir root_;
  HttpServer server_{root_.path()};
};

TEST_F(RedirectTest, ToTheSameOriginIsFollowed) {
  Collector c;
  auto r = CurlFetcher(http_options()).fetch(redirect_to(server_.url("blob.bin")), kMiB, c.sink());
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(c.body, blob_);
}

// The attack: a server the daemon fetches from sends it to another host (one on
// the daemon's network, say). Refused before anything is asked of that host; the
// message names the host, not the path (which may carry a token).
TEST_F(RedirectTest, ToAnotherHostIsRefusedUnlessListed) {
  HttpServer other(root_.path(), {.bind = "127.0.0.2"});
  const std::string target = other.url(std::string("blob.bin?key=") + kSecret);
  {
    Collector c;
    auto r = CurlFetcher(http_options()).fetch(redirect_to(target), kMiB, c.sink());
    ASSERT_FALSE(r) << "followed to another host";
    EXPECT_EQ(r.error().code, Errc::network) << r.error().message;
    EXPECT_TRUE(contains(r.error().message, "http://127.0.0.2:" + std::to_string(other.port())))
        << r.error().message;
    EXPECT_TRUE(contains(r.error().message, "redirect_hosts")) << r.error().message;
    EXPECT_FALSE(contains(after(r.error().message, redirect_to(target)), kSecret))
        << r.error().message;
    EXPECT_EQ(c.body, "");
    EXPECT_TRUE(other.requests().empty()) << "the other host was asked";
  }
  {  // Listed without a port: the default port of http (80), not this one.
    Collector c;
    auto r = CurlFetcher(http_options({"127.0.0.2"})).fetch(redirect_to(target), kMiB, c.sink());
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::network) << r.error().message;
    EXPECT_TRUE(other.requests().empty());
  }
  {  // Listed with its port: followed.
    Collector c;
    auto r = CurlFetcher(http_options({"example.net", host_port("127.0.0.2", other)}))
                 .fetch(redirect_to(target), kMiB, c.sink());
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(c.body, blob_);
    EXPECT_EQ(other.requests().size(), 1U);
  }
}

// Another name of the same address is another origin: names are compared, not
// resolved. So is another port of the same host.
TEST_F(RedirectTest, AnotherNameOrPortOfTheSameAddressIsAnotherOrigin) {
  HttpServer other_port(root_.path());
  const std::string by_name = "http://localhost:" + std::to_string(server_.port()) + "/blob.bin";
  for (const std::string& target : {by_name, other_port.url("blob.bin")}) {
    Collector c;
    auto r = CurlFetcher(http_options()).fetch(redirect_to(target), kMiB, c.sink());
    ASSERT_FALSE(r) << target;
    EXPECT_EQ(r.error().code, Errc::network) << r.error().message;
    EXPECT_EQ(c.body, "");
  }
  EXPECT_TRUE(other_port.requests().empty());
  EXPECT_EQ(server_.requests("/blob.bin").size(), 0U) << "localhost was asked";

  Collector c;
  auto r = CurlFetcher(http_options({"LocalHost:" + std::to_string(server_.port())}))
               .fetch(redirect_to(by_name), kMiB, c.sink());
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(c.body, blob_);
}

// A chain is checked hop by hop against the URL first asked: a same-origin hop
// does not launder the next one.
TEST_F(RedirectTest, EveryHopIsChecked) {
  HttpServer other(root_.path(), {.bind = "127.0.0.2"});
  Collector c;
  auto r = CurlFetcher(http_options())
               .fetch(redirect_to(redirect_to(other.url("blob.bin"))), kMiB, c.sink());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::network) << r.error().message;
  EXPECT_TRUE(other.requests().empty());
  EXPECT_EQ(server_.requests().size(), 2U);  // both hops on the first host, nothing more
}

// A redirect that was followed names its target by origin only in later errors.
TEST_F(RedirectTest, AnErrorAfterARedirectNamesTheTargetsOriginOnly) {
  HttpServer other(root_.path(), {.bind = "127.0.0.2"});
  const std::string target = other.url(std::string("__status__/500/") + kSecret);
  Collector c;
  auto r = CurlFetcher(http_options({host_port("127.0.0.2", other)}))
               .fetch(redirect_to(target), kMiB, c.sink());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::network) << r.error().message;
  EXPECT_TRUE(contains(r.error().message, "HTTP status 500")) << r.error().message;
  EXPECT_TRUE(contains(r.error().message, "redirected to http://127.0.0.2:")) << r.error().message;
  EXPECT_FALSE(contains(after(r.error().message, redirect_to(target)), kSecret))
      << r.error().message;
}

// An error page's body never reaches the sink nor the message.
TEST_F(RedirectTest, AnErrorPagesBodyIsNeitherDeliveredNorQuoted) {
  tests::support::write_file(root_ / "page.txt", std::string("internal: ") + kSecret + "\n");
  for (const int status : {403, 404, 500, 503}) {
    Collector c;
    const std::string url = server_.url("__status_file__/" + std::to_string(status) + "/page.txt");
    auto r = CurlFetcher(http_options()).fetch(url, kMiB, c.sink());
    ASSERT_FALSE(r) << status;
    EXPECT_TRUE(contains(r.error().message, "HTTP status " + std::to_string(status)))
        << r.error().message;
    EXPECT_FALSE(contains(r.error().message, kSecret)) << r.error().message;
    EXPECT_EQ(c.body, "");
  }
  // The page is served as such (the test's own check).
  auto page = CurlFetcher(http_options()).fetch_bytes(server_.url("page.txt"), kMiB);
  ASSERT_TRUE(page) << page.error().message;
  EXPECT_TRUE(contains(*page, kSecret));
}

TEST_F(RedirectTest, ABadRedirectHostsEntryFailsEveryFetch) {
  for (const char* bad : {"", "https://a.example", "a.example/x", "*.example", "a.example:0",
                          "a.example:65536", "user@a.example", "[::1", "a b"}) {
    Collector c;
    auto r = CurlFetcher(http_options({bad})).fetch(server_.url("blob.bin"), kMiB, c.sink());
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().code, Errc::invalid_argument) << r.error().message;
  }
  EXPECT_TRUE(server_.requests().empty());
}

// https: a downgrade to http is a scheme the fetcher does not allow, listed host
// or not; nothing reaches the http server.
class RedirectTlsTest : public RedirectTest {
 protected:
  TempDir certs_;
  tests::support::TlsCertificate cert_ =
      tests::support::make_self_signed_certificate(certs_.path(), "server");
  HttpServer tls_{root_.path(), {.tls_cert = cert_.cert, .tls_key = cert_.key}};
};

TEST_F(RedirectTlsTest, ADowngradeToHttpIsRefusedEvenToAListedHost) {
  CurlFetcherOptions o;
  o.ca_file = cert_.cert.string();
  o.redirect_hosts = {host_port("127.0.0.1", server_)};
  Collector c;
  auto r = CurlFetcher(o).fetch(tls_.url("__redirect__/" + url_encode(server_.url("blob.bin"))),
                                kMiB, c.sink());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::network) << r.error().message;
  EXPECT_TRUE(contains(r.error().message, "\"http\" not supported")) << r.error().message;
  EXPECT_TRUE(server_.requests().empty()) << "the http URL was asked";
}

// ---- the policy itself --------------------------------------------------------

TEST(RedirectPolicy, ParsesOrigins) {
  EXPECT_EQ(parse_origin("https://A.Example/x?y#z"), (Origin{"https", "a.example", 443}));
  EXPECT_EQ(parse_origin("HTTP://a.example:8080"), (Origin{"http", "a.example", 8080}));
  EXPECT_EQ(parse_origin("http://[::1]:81/"), (Origin{"http", "[::1]", 81}));
  for (const char* bad : {"ftp://a.example/", "file:///etc/passwd", "https://", "https://:80/",
                          "https://u:p@a.example/", "https://a.example@b.example/",
                          "https://a.example:/", "https://a.example:99999/", "https://a%2eb/",
                          "https://a\\b/", "https://[::1/", "https://[zz]/", "a.example"}) {
    EXPECT_FALSE(parse_origin(bad)) << bad;
  }
}

TEST(RedirectPolicy, ParsesHostPatterns) {
  EXPECT_EQ(parse_host_pattern("CDN.example.net"), (HostPattern{"cdn.example.net", std::nullopt}));
  EXPECT_EQ(parse_host_pattern("cdn.example.net:8443"), (HostPattern{"cdn.example.net", 8443}));
  EXPECT_EQ(parse_host_pattern("[fd00::1]:443"), (HostPattern{"[fd00::1]", 443}));
  for (const char* bad : {"", ":443", "https://a", "a/b", "*.a", "a:", "a:x", "a b", "[]"}) {
    EXPECT_FALSE(parse_host_pattern(bad)) << bad;
  }
}

TEST(RedirectPolicy, DecidesByOriginListAndScheme) {
  const Origin from{"https", "a.example", 443};
  const std::vector<HostPattern> none;
  const std::vector<HostPattern> cdn{{"cdn.example", std::nullopt}, {"alt.example", 8443}};
  auto verdict = [&](const char* target, bool allow_http, const std::vector<HostPattern>& hosts) {
    return check_redirect(from, target, allow_http, hosts).verdict;
  };
  EXPECT_EQ(verdict("https://a.example/x", false, none), RedirectVerdict::follow);
  EXPECT_EQ(verdict("https://A.EXAMPLE:443/x", false, none), RedirectVerdict::follow);
  EXPECT_EQ(verdict("https://a.example:8443/x", false, none), RedirectVerdict::host);
  EXPECT_EQ(verdict("https://b.example/x", false, none), RedirectVerdict::host);
  EXPECT_EQ(verdict("https://cdn.example/x", false, cdn), RedirectVerdict::follow);
  EXPECT_EQ(verdict("https://cdn.example:444/x", false, cdn), RedirectVerdict::host);
  EXPECT_EQ(verdict("https://alt.example:8443/x", false, cdn), RedirectVerdict::follow);
  EXPECT_EQ(verdict("https://alt.example/x", false, cdn), RedirectVerdict::host);
  // Schemes: never file://; http:// only with allow_http, and then by the same rules
  // (the same origin means the same scheme too).
  EXPECT_EQ(verdict("file:///etc/passwd", true, cdn), RedirectVerdict::scheme);
  EXPECT_EQ(verdict("http://cdn.example/x", false, cdn), RedirectVerdict::scheme);
  EXPECT_EQ(verdict("http://a.example/x", true, none), RedirectVerdict::host);
  EXPECT_EQ(verdict("http://cdn.example/x", true, cdn), RedirectVerdict::follow);
  EXPECT_EQ(verdict("https://u@cdn.example/x", false, cdn), RedirectVerdict::bad_target);
  EXPECT_EQ(verdict("/relative", false, cdn), RedirectVerdict::bad_target);
  EXPECT_EQ(check_redirect(from, "gopher://x/", false, none).scheme, "gopher");
  EXPECT_EQ(check_redirect(from, "https://b.example:8443/p?q", false, none).to->text(),
            "https://b.example:8443");
}

}  // namespace
}  // namespace net
