// net::CurlFetcher::fetch_from (resume with Range) against real servers on
// loopback: tests/support/http_server.py (honest ranges, ranges ignored, ranges
// answered wrongly, cut transfers) and Debian's nginx.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "catalog/error.hpp"
#include "net/curl_fetcher.hpp"
#include "tests/support/http_server.hpp"
#include "tests/support/nginx_server.hpp"
#include "tests/support/temp_dir.hpp"

namespace net {
namespace {

using catalog::Errc;
using catalog::Result;
using tests::support::HttpServer;
using tests::support::LoggedRequest;
using tests::support::NginxServer;
using tests::support::TempDir;

constexpr std::size_t kSize = 300'000;

std::string pattern(std::size_t size) {
  std::string s(size, '\0');
  std::uint32_t x = 0x9e3779b9;
  for (auto& c : s) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<char>(x >> 24);
  }
  return s;
}

// What one fetch_from() call reported and delivered.
struct Received {
  std::vector<std::uint64_t> starts;  // every on_start() call
  std::string body;

  catalog::tuf::StartSink on_start() {
    return [this](std::uint64_t start) -> Result<void> {
      starts.push_back(start);
      return {};
    };
  }
  catalog::tuf::ChunkSink sink() {
    return [this](std::span<const std::byte> chunk) -> Result<void> {
      if (starts.empty()) return catalog::fail(Errc::io, "a body byte before on_start");
      body.append(reinterpret_cast<const char*>(chunk.data()), chunk.size());
      return {};
    };
  }
};

class CurlRangeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name :
         {"http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"}) {
      unsetenv(name);
    }
    tests::support::write_file(root_ / "file.bin", data_);
  }

  Result<void> fetch_from(const std::string& url, std::uint64_t offset, Received& got,
                          std::uint64_t cap = kSize) {
    return fetcher_.fetch_from(url, offset, cap, got.on_start(), got.sink());
  }

  static CurlFetcherOptions options() {
    CurlFetcherOptions o;
    o.allow_http = true;
    o.total_timeout_ms = 60000;
    return o;
  }

  const std::string data_ = pattern(kSize);
  TempDir root_;
  CurlFetcher fetcher_{options()};
};

TEST_F(CurlRangeTest, HonouredRangeDeliversOnlyTheRest) {
  HttpServer server(root_.path());
  Received got;
  ASSERT_TRUE(fetch_from(server.url("file.bin"), 100'000, got));
  EXPECT_EQ(got.starts, std::vector<std::uint64_t>{100'000});
  EXPECT_EQ(got.body, data_.substr(100'000));
  const auto log = server.requests();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0].range, "bytes=100000-");
  EXPECT_EQ(log[0].status, 206);
}

TEST_F(CurlRangeTest, OffsetZeroSendsNoRange) {
  HttpServer server(root_.path());
  Received got;
  ASSERT_TRUE(fetch_from(server.url("file.bin"), 0, got));
  EXPECT_EQ(got.starts, std::vector<std::uint64_t>{0});
  EXPECT_EQ(got.body, data_);
  const auto log = server.requests();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_FALSE(log[0].range.has_value());
}

TEST_F(CurlRangeTest, ServerIgnoringRangeStartsFromZero) {
  HttpServer server(root_.path());
  Received got;
  ASSERT_TRUE(fetch_from(server.url("__norange__/file.bin"), 100'000, got));
  EXPECT_EQ(got.starts, std::vector<std::uint64_t>{0});
  EXPECT_EQ(got.body, data_);
}

TEST_F(CurlRangeTest, RangeAnsweredForAnotherStartIsAskedAgainWhole) {
  HttpServer server(root_.path());
  Received got;
  ASSERT_TRUE(fetch_from(server.url("__shiftrange__/file.bin"), 100'000, got));
  EXPECT_EQ(got.starts, std::vector<std::uint64_t>{0});
  EXPECT_EQ(got.body, data_);
  const auto log = server.requests();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0].status, 206);  // bytes 99999-: refused, nothing delivered
  EXPECT_EQ(log[1].status, 200);
  EXPECT_FALSE(log[1].range.has_value());
}

TEST_F(CurlRangeTest, UnsatisfiableRangeIsAskedAgainWhole) {
  // The cap allows a longer file than the server has: 416, then the whole (short)
  // file, which the caller's length check then refuses.
  HttpServer server(root_.path());
  Received got;
  ASSERT_TRUE(fetch_from(server.url("file.bin"), kSize + 10, got, kSize + 100));
  EXPECT_EQ(got.starts, std::vector<std::uint64_t>{0});
  EXPECT_EQ(got.body, data_);
  const auto log = server.requests();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0].status, 416);
  EXPECT_EQ(log[1].status, 200);
}

TEST_F(CurlRangeTest, CapCountsFromTheStart) {
  HttpServer server(root_.path());
  // 206 for 100000-: 200000 bytes announced, but only 150000 may follow byte 100000.
  Received got;
  auto r = fetch_from(server.url("file.bin"), 100'000, got, 250'000);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::length_mismatch) << r.error().message;
  EXPECT_TRUE(got.body.empty());
  // An offset past the cap is the caller's mistake.
  Received none;
  r = fetch_from(server.url("file.bin"), 10, none, 5);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::invalid_argument);
  EXPECT_TRUE(none.starts.empty());
}

TEST_F(CurlRangeTest, CutTransferFailsAsNetworkAfterDeliveringItsBytes) {
  HttpServer server(root_.path());
  Received got;
  auto r = fetch_from(server.url("__drop__/50000/file.bin"), 100'000, got);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::network) << r.error().message;
  EXPECT_EQ(got.starts, std::vector<std::uint64_t>{100'000});
  EXPECT_EQ(got.body, data_.substr(100'000, 50'000));
}

TEST_F(CurlRangeTest, ErrorStatusOfARangeRequestIsNotDelivered) {
  HttpServer server(root_.path());
  Received got;
  auto r = fetch_from(server.url("__status__/503/file.bin"), 100'000, got);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::network);
  r = fetch_from(server.url("missing.bin"), 100'000, got);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::not_found);
  EXPECT_TRUE(got.starts.empty());
}

TEST_F(CurlRangeTest, NginxHonoursRanges) {
  NginxServer nginx(root_.path());
  Received got;
  ASSERT_TRUE(fetch_from(nginx.url("file.bin"), 123'456, got));
  EXPECT_EQ(got.starts, std::vector<std::uint64_t>{123'456});
  EXPECT_EQ(got.body, data_.substr(123'456));
  const auto log = nginx.wait_for_requests(1);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0].status, 206);
  EXPECT_EQ(log[0].range, "bytes=123456-");
  EXPECT_EQ(log[0].bytes, kSize - 123'456);
}

}  // namespace
}  // namespace net
