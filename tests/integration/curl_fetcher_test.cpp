// net::CurlFetcher against a real HTTP server on loopback (tests/support/http_server.py),
// honest and hostile answers alike.
#include "net/curl_fetcher.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>

#include "catalog/error.hpp"
#include "tests/support/http_server.hpp"
#include "tests/support/ports.hpp"
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

// Deterministic bytes of every value, large enough to arrive in several chunks.
std::string pattern(std::size_t size) {
  std::string s(size, '\0');
  std::uint32_t x = 0x12345678;
  for (auto& c : s) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<char>(x >> 24);
  }
  return s;
}

// A sink that collects what it is given.
struct Collector {
  std::string body;
  std::size_t chunks = 0;

  catalog::tuf::ChunkSink sink() {
    return [this](std::span<const std::byte> chunk) -> Result<void> {
      body.append(reinterpret_cast<const char*>(chunk.data()), chunk.size());
      ++chunks;
      return {};
    };
  }
};

// Options for the loopback server: plain http, and a total bound well below the
// default so a defence that fails shows as a wrong error instead of a hung test.
CurlFetcherOptions http_options() {
  CurlFetcherOptions o;
  o.allow_http = true;
  o.total_timeout_ms = 60000;
  return o;
}

using tests::support::closed_port;

class CurlFetcherTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // Loopback only: a proxy from the environment must not get in the way.
    for (const char* name :
         {"http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"}) {
      unsetenv(name);
    }
  }

  void SetUp() override {
    tests::support::write_file(root_ / "blob.bin", blob_);
    tests::support::write_file(root_ / "empty", "");
    tests::support::write_file(root_ / "dir/small.txt", "hello\n");
  }

  const std::string blob_ = pattern(300 * 1024 + 17);
  TempDir root_;
  HttpServer server_{root_.path()};
};

TEST_F(CurlFetcherTest, FetchesAFileExactly) {
  CurlFetcher fetcher(http_options());
  Collector c;
  auto r = fetcher.fetch(server_.url("blob.bin"), kMiB, c.sink());
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(c.body, blob_);
  EXPECT_GT(c.chunks, 1u);

  auto small = fetcher.fetch_bytes(server_.url("/dir/small.txt"), 100);
  ASSERT_TRUE(small) << small.error().message;
  EXPECT_EQ(*small, "hello\n");
}

TEST_F(CurlFetcherTest, EmptyBodyWithZeroCap) {
  CurlFetcher fetcher(http_options());
  auto r = fetcher.fetch_bytes(server_.url("empty"), 0);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(*r, "");
}

TEST_F(CurlFetcherTest, CapEqualToSizeSucceeds) {
  CurlFetcher fetcher(http_options());
  Collector c;
  auto r = fetcher.fetch(server_.url("blob.bin"), blob_.size(), c.sink());
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(c.body, blob_);
}

TEST_F(CurlFetcherTest, CapOneBelowSizeFailsOnContentLengthBeforeAnyByte) {
  CurlFetcher fetcher(http_options());
  Collector c;
  const std::string url = server_.url("blob.bin");
  const std::uint64_t cap = blob_.size() - 1;
  auto r = fetcher.fetch(url, cap, c.sink());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::length_mismatch) << r.error().message;
  EXPECT_NE(r.error().message.find(url), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find(std::to_string(cap)), std::string::npos) << r.error().message;
  EXPECT_EQ(c.body.size(), 0u);  // refused on the announced length
}

TEST_F(CurlFetcherTest, EndlessStreamStopsAtCap) {
  CurlFetcher fetcher(http_options());
  Collector c;
  const std::string url = server_.url("__endless__/forever");
  auto r = fetcher.fetch(url, kMiB, c.sink());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::length_mismatch) << r.error().message;
  EXPECT_NE(r.error().message.find(url), std::string::npos) << r.error().message;
  EXPECT_LE(c.body.size(), kMiB);
}

TEST_F(CurlFetcherTest, MissingResourcesAreNotFound) {
  CurlFetcher fetcher(http_options());
  for (const std::string path :
       {"no-such-file", "__status__/404/x", "__status__/403/x", "__status__/410/x"}) {
    Collector c;
    auto r = fetcher.fetch(server_.url(path), kMiB, c.sink());
    ASSERT_FALSE(r) << path;
    EXPECT_EQ(r.error().code, Errc::not_found) << path << ": " << r.error().message;
    EXPECT_EQ(c.body, "") << path << ": an error page reached the sink";
  }
}

TEST_F(CurlFetcherTest, ServerErrorIsNetworkWithStatus) {
  CurlFetcher fetcher(http_options());
  for (const std::string code : {"500", "503", "418"}) {
    Collector c;
    auto r = fetcher.fetch(server_.url("__status__/" + code + "/x"), kMiB, c.sink());
    ASSERT_FALSE(r) << code;
    EXPECT_EQ(r.error().code, Errc::network) << r.error().message;
    EXPECT_NE(r.error().message.find(code), std::string::npos) << r.error().message;
    EXPECT_EQ(c.body, "");
  }
}

TEST_F(CurlFetcherTest, HttpRefusedUnlessAllowed) {
  CurlFetcher fetcher;  // defaults: https only
  EXPECT_FALSE(fetcher.options().allow_http);
  Collector c;
  auto r = fetcher.fetch(server_.url("blob.bin"), kMiB, c.sink());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::invalid_argument) << r.error().message;
  EXPECT_EQ(c.body, "");
}

TEST_F(CurlFetcherTest, OtherSchemesRefused) {
  CurlFetcher fetcher(http_options());
  const std::string file_url = "file://" + (root_ / "blob.bin").string();
  for (const std::string& url : {file_url, std::string("ftp://127.0.0.1/x"),
                                 std::string("127.0.0.1/blob.bin"), std::string("")}) {
    Collector c;
    auto r = fetcher.fetch(url, kMiB, c.sink());
    ASSERT_FALSE(r) << url;
    EXPECT_EQ(r.error().code, Errc::invalid_argument) << url << ": " << r.error().message;
    EXPECT_EQ(c.body, "");
  }
}

TEST_F(CurlFetcherTest, RedirectToAllowedUrlIsFollowed) {
  CurlFetcher fetcher(http_options());
  Collector c;
  auto r = fetcher.fetch(server_.url("__redirect__/" + url_encode(server_.url("blob.bin"))), kMiB,
                         c.sink());
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(c.body, blob_);
}

TEST_F(CurlFetcherTest, RedirectToFileUrlIsRefused) {
  CurlFetcher fetcher(http_options());
  Collector c;
  const std::string target = "file://" + (root_ / "blob.bin").string();
  auto r = fetcher.fetch(server_.url("__redirect__/" + url_encode(target)), kMiB, c.sink());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::network) << r.error().message;
  EXPECT_EQ(c.body, "");
}

TEST_F(CurlFetcherTest, RedirectsAreBounded) {
  const std::string once = server_.url("__redirect__/" + url_encode(server_.url("blob.bin")));
  const std::string twice = server_.url("__redirect__/" + url_encode(once));
  {
    CurlFetcherOptions o = http_options();
    o.max_redirects = 1;
    Collector c;
    auto r = CurlFetcher(o).fetch(twice, kMiB, c.sink());
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::network) << r.error().message;
    EXPECT_EQ(c.body, "");
  }
  {
    CurlFetcherOptions o = http_options();
    o.max_redirects = 0;
    Collector c;
    auto r = CurlFetcher(o).fetch(once, kMiB, c.sink());
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::network) << r.error().message;
    EXPECT_NE(r.error().message.find("302"), std::string::npos) << r.error().message;
    EXPECT_EQ(c.body, "");
  }
  {
    CurlFetcherOptions o = http_options();
    o.max_redirects = 2;
    Collector c;
    auto r = CurlFetcher(o).fetch(twice, kMiB, c.sink());
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(c.body, blob_);
  }
}

TEST_F(CurlFetcherTest, SlowServerIsAborted) {
  CurlFetcherOptions o = http_options();
  o.low_speed_bytes_per_s = 100;
  o.low_speed_time_s = 2;
  CurlFetcher fetcher(o);
  Collector c;
  auto r = fetcher.fetch(server_.url("__slow__/drip"), kMiB, c.sink());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::network) << r.error().message;
}

TEST_F(CurlFetcherTest, SinkErrorPropagates) {
  CurlFetcher fetcher(http_options());
  std::size_t calls = 0;
  auto sink = [&](std::span<const std::byte>) -> Result<void> {
    ++calls;
    return catalog::fail(Errc::hash_mismatch, "sink says no");
  };
  auto r = fetcher.fetch(server_.url("blob.bin"), kMiB, sink);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::hash_mismatch);
  EXPECT_EQ(r.error().message, "sink says no");
  EXPECT_EQ(calls, 1u);  // aborted at the first refusal
}

TEST_F(CurlFetcherTest, ConnectionRefusedIsNetwork) {
  CurlFetcher fetcher(http_options());
  Collector c;
  const std::string url = "http://127.0.0.1:" + std::to_string(closed_port()) + "/x";
  auto r = fetcher.fetch(url, kMiB, c.sink());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::network) << r.error().message;
  EXPECT_NE(r.error().message.find(url), std::string::npos) << r.error().message;
}

TEST_F(CurlFetcherTest, ServiceUnavailableCarriesItsRetryAfter) {
  CurlFetcher fetcher(http_options());
  Collector c;
  auto r = fetcher.fetch(server_.url("__retry_after__/1/7/blob.bin"), kMiB, c.sink());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::network) << r.error().message;
  EXPECT_EQ(r.error().retry_after, std::chrono::seconds(7)) << r.error().message;
  EXPECT_NE(r.error().message.find("Retry-After: 7"), std::string::npos) << r.error().message;
  EXPECT_EQ(c.body, "");
  // Other errors carry none.
  for (const std::string code : {"500", "503"}) {
    auto other = fetcher.fetch(server_.url("__status__/" + code + "/x"), kMiB, c.sink());
    ASSERT_FALSE(other);
    EXPECT_FALSE(other.error().retry_after.has_value()) << code;
  }
  // The server's second answer is the file.
  ASSERT_TRUE(fetcher.fetch(server_.url("__retry_after__/1/7/blob.bin"), kMiB, c.sink()));
  EXPECT_EQ(c.body, blob_);
}

TEST_F(CurlFetcherTest, TransferTimeoutEndsATransferThatKeepsMoving) {
  // 80 KiB/s: well above the low-speed limit, so only the overall bound can end it
  // (the whole 300 KiB takes 3.7 s at least: 75 pieces 50 ms apart). 2 s, so that
  // the first piece arrives before it even on a loaded machine (1 s once came close).
  CurlFetcherOptions o = http_options();
  o.low_speed_bytes_per_s = 1024;
  o.low_speed_time_s = 30;
  o.total_timeout_ms = 2000;
  Collector c;
  auto r = CurlFetcher(o).fetch(server_.url("__trickle__/blob.bin"), kMiB, c.sink());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::network) << r.error().message;
  EXPECT_NE(r.error().message.find("timed out"), std::string::npos) << r.error().message;
  EXPECT_GT(c.body.size(), 0U);  // it was moving
  EXPECT_LT(c.body.size(), blob_.size());
}

TEST_F(CurlFetcherTest, ConnectTimeoutBoundsAConnectThatHangs) {
  tests::support::Tarpit pit;
  CurlFetcherOptions o = http_options();
  o.connect_timeout_ms = 500;
  Collector c;
  auto r =
      CurlFetcher(o).fetch("http://127.0.0.1:" + std::to_string(pit.port()) + "/x", kMiB, c.sink());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::network) << r.error().message;
  EXPECT_NE(r.error().message.find("Timeout was reached"), std::string::npos) << r.error().message;
}

// https on loopback with a certificate made now: refused unless its CA is given.
class CurlTlsTest : public CurlFetcherTest {
 protected:
  TempDir certs_;
  tests::support::TlsCertificate cert_ =
      tests::support::make_self_signed_certificate(certs_.path(), "server");
  HttpServer tls_{root_.path(), {.tls_cert = cert_.cert, .tls_key = cert_.key}};
};

TEST_F(CurlTlsTest, UntrustedCertificateIsNetworkAndDeliversNothing) {
  CurlFetcher fetcher;  // https only, the system's CAs
  Collector c;
  auto r = fetcher.fetch(tls_.url("blob.bin"), kMiB, c.sink());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::network) << r.error().message;
  EXPECT_NE(r.error().message.find("certificate"), std::string::npos) << r.error().message;
  EXPECT_EQ(c.body, "");
  EXPECT_TRUE(tls_.requests().empty()) << "a request got through the refused handshake";
}

TEST_F(CurlTlsTest, ItsCaFileMakesItTrusted) {
  CurlFetcher fetcher({.ca_file = cert_.cert.string()});
  Collector c;
  auto r = fetcher.fetch(tls_.url("blob.bin"), kMiB, c.sink());
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(c.body, blob_);
}

TEST_F(CurlTlsTest, RedirectFromHttpsToHttpIsRefused) {
  CurlFetcher fetcher({.ca_file = cert_.cert.string()});
  Collector c;
  auto r = fetcher.fetch(tls_.url("__redirect__/" + url_encode(server_.url("blob.bin"))), kMiB,
                         c.sink());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::network) << r.error().message;
  EXPECT_EQ(c.body, "");
  EXPECT_TRUE(server_.requests().empty()) << "the http URL was asked";
}

// Redirects to another host: refused unless the remote lists it
// (curl_fetcher_redirect_test.cpp).

}  // namespace
}  // namespace net
