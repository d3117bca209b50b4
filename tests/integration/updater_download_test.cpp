// Updater::download_target over real HTTP on loopback when the network is not
// kind: cut transfers resumed with Range, servers that ignore Range, corrupt or
// foreign partial files, transient errors retried with backoff, 404s not
// retried, mirrors tried in order, cancel during the backoff, and Debian's nginx
// answering a resume with 206. Servers: tests/support/http_server.py (fault
// paths, request log) and tests/support/nginx_server.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include "catalog/atomic_file.hpp"
#include "catalog/tuf/repository.hpp"
#include "catalog/tuf/updater.hpp"
#include "net/curl_fetcher.hpp"
#include "tests/support/http_server.hpp"
#include "tests/support/nginx_server.hpp"
#include "tests/support/ports.hpp"
#include "tests/support/temp_dir.hpp"

namespace catalog::tuf {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using tests::support::HttpServer;
using tests::support::LoggedRequest;
using tests::support::NginxServer;
using tests::support::read_file;
using tests::support::TempDir;
using tests::support::write_file;

constexpr std::size_t kBig = 256 * 1024;
constexpr std::size_t kHalf = kBig / 2;
constexpr const char* kBigPath = "pkg/big.bin";
constexpr const char* kOtherPath = "pkg/other.bin";

std::string noise(std::size_t size, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::string out(size, '\0');
  for (auto& c : out) c = static_cast<char>(gen() & 0xFF);
  return out;
}

using tests::support::closed_port;

TimePoint now() {
  return std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
}

::testing::AssertionResult Ok(const Result<fs::path>& r) {
  if (r) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << errc_name(r.error().code) << ": " << r.error().message;
}

class UpdaterDownloadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name :
         {"http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"}) {
      unsetenv(name);
    }
    auto repo = Repository::create(now());
    ASSERT_TRUE(repo) << repo.error().message;
    ASSERT_TRUE(repo->add_target(kBigPath, big_, nlohmann::json::object()));
    ASSERT_TRUE(repo->add_target(kOtherPath, other_, nlohmann::json::object()));
    ASSERT_TRUE(repo->publish(directory_writer(repo_.path()), now()));
    fs::create_directories(client_ / "meta");
    write_file(client_ / "meta/root.json", read_file(repo_ / "metadata/1.root.json"));
    http_ = std::make_unique<HttpServer>(repo_.path());
  }

  // The honest server for metadata and `targets` (a path below it) for targets.
  UpdaterConfig config(const std::string& targets = "targets/") const {
    UpdaterConfig c;
    c.metadata_dir = client_ / "meta";
    c.metadata_base_url = http_->url("metadata/");
    c.target_base_url = http_->url(targets);
    c.target_dir = client_ / "downloads";
    c.retry = {4, 10ms, 40ms};  // quick retries: the tests count requests, not time
    return c;
  }

  TargetFile info(Updater& u, const std::string& path) {
    auto i = u.get_targetinfo(path);
    EXPECT_TRUE(i) << i.error().message;
    return i ? *i : TargetFile{};
  }

  // Requests for the big target's file, in order.
  std::vector<LoggedRequest> big_requests() const { return http_->requests(".big.bin"); }

  // Nothing left in the download dir but `keep` (names).
  std::vector<std::string> downloads() const {
    std::vector<std::string> names;
    if (!fs::exists(client_ / "downloads")) return names;
    for (const auto& e : fs::directory_iterator(client_ / "downloads")) {
      names.push_back(e.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  static net::CurlFetcherOptions options() {
    net::CurlFetcherOptions o;
    o.allow_http = true;
    o.total_timeout_ms = 60000;
    return o;
  }

  const std::string big_ = noise(kBig, 1);
  const std::string other_ = noise(64 * 1024, 2);
  TempDir repo_;
  TempDir client_;
  std::unique_ptr<HttpServer> http_;
  net::CurlFetcher curl_{options()};
};

TEST_F(UpdaterDownloadTest, CutTransferIsResumedWithRangeOnTheRetry) {
  // Every answer is cut after 150000 bytes: the first gives 150000, the retry
  // asks only for the rest (112144 bytes, under the cut) and completes.
  Updater u(config("__drop__/150000/targets/"), curl_);
  const TargetFile t = info(u, kBigPath);
  auto path = u.download_target(t);
  ASSERT_TRUE(Ok(path));
  EXPECT_EQ(read_file(*path), big_);
  const auto log = big_requests();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_FALSE(log[0].range.has_value());
  EXPECT_EQ(log[0].bytes, 150000u);
  EXPECT_EQ(log[1].range, "bytes=150000-");
  EXPECT_EQ(log[1].status, 206);
  EXPECT_EQ(log[1].bytes, kBig - 150000);
  EXPECT_EQ(downloads(), std::vector<std::string>{"pkg%2Fbig.bin"});  // no .part left
}

TEST_F(UpdaterDownloadTest, InterruptedDownloadKeepsItsPartialFileForTheNextCall) {
  UpdaterConfig once = config("__drop__/100000/targets/");
  once.retry.attempts = 1;
  {
    Updater u(once, curl_);
    auto r = u.download_target(info(u, kBigPath));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::network) << r.error().message;
    EXPECT_EQ(read_file(u.partial_path(info(u, kBigPath))), big_.substr(0, 100000));
    EXPECT_FALSE(fs::exists(u.default_path(info(u, kBigPath))));
  }
  Updater later(config(), curl_);
  ASSERT_TRUE(Ok(later.download_target(info(later, kBigPath))));
  const auto log = big_requests();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[1].range, "bytes=100000-");
  EXPECT_EQ(log[1].bytes, kBig - 100000);
}

TEST_F(UpdaterDownloadTest, ServerIgnoringRangeRestartsFromZero) {
  Updater u(config("__norange__/targets/"), curl_);
  const TargetFile t = info(u, kBigPath);
  write_file(u.partial_path(t), big_.substr(0, kHalf));
  auto path = u.download_target(t);
  ASSERT_TRUE(Ok(path));
  EXPECT_EQ(read_file(*path), big_);
  const auto log = big_requests();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0].range, "bytes=" + std::to_string(kHalf) + "-");
  EXPECT_EQ(log[0].status, 200);
  EXPECT_EQ(log[0].bytes, kBig);
}

TEST_F(UpdaterDownloadTest, CorruptPartialFileLeadsToOneRestartFromZero) {
  Updater u(config(), curl_);
  const TargetFile t = info(u, kBigPath);
  std::string junk = big_.substr(0, kHalf);
  junk[1000] = static_cast<char>(junk[1000] ^ 0x55);
  write_file(u.partial_path(t), junk);
  auto path = u.download_target(t);
  ASSERT_TRUE(Ok(path));
  EXPECT_EQ(read_file(*path), big_);
  const auto log = big_requests();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0].status, 206);  // the resume: its result fails the hash
  EXPECT_FALSE(log[1].range.has_value());
  EXPECT_EQ(log[1].bytes, kBig);
}

TEST_F(UpdaterDownloadTest, CorruptPartialFileAndBadServerFailWithoutLoop) {
  // The restart from zero happens once; a server whose bytes are wrong anyway
  // then fails the download, and the partial file goes.
  TempDir bad_repo;
  fs::copy(repo_.path(), bad_repo.path(), fs::copy_options::recursive);
  Updater u(config(), curl_);
  const TargetFile t = info(u, kBigPath);
  const std::string file = "targets/pkg/" + t.hashes.at("sha256") + ".big.bin";
  std::string wrong = big_;
  wrong[kBig - 1] = static_cast<char>(wrong[kBig - 1] ^ 1);
  write_file(bad_repo / file, wrong);
  HttpServer bad(bad_repo.path());
  UpdaterConfig c = config();
  c.target_base_url = bad.url("targets/");
  Updater v(c, curl_);
  write_file(v.partial_path(t), big_.substr(0, kHalf));
  auto r = v.download_target(info(v, kBigPath));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::hash_mismatch) << r.error().message;
  EXPECT_EQ(bad.requests(".big.bin").size(), 2u);  // resume, then once from zero
  EXPECT_TRUE(downloads().empty());
}

TEST_F(UpdaterDownloadTest, PartialFileOfAnotherTargetIsNotUsed) {
  Updater u(config(), curl_);
  const TargetFile big = info(u, kBigPath);
  const TargetFile other = info(u, kOtherPath);
  ASSERT_NE(u.partial_path(big), u.partial_path(other));
  write_file(u.partial_path(other), other_.substr(0, 1000));
  ASSERT_TRUE(Ok(u.download_target(big)));
  const auto log = big_requests();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_FALSE(log[0].range.has_value());
  EXPECT_EQ(read_file(u.partial_path(other)), other_.substr(0, 1000));  // untouched
}

TEST_F(UpdaterDownloadTest, CompletePartialFileNeedsNoRequest) {
  Updater u(config(), curl_);
  const TargetFile t = info(u, kBigPath);
  write_file(u.partial_path(t), big_);
  auto path = u.download_target(t);
  ASSERT_TRUE(Ok(path));
  EXPECT_EQ(read_file(*path), big_);
  EXPECT_TRUE(big_requests().empty());
}

TEST_F(UpdaterDownloadTest, ServiceUnavailableIsRetriedThenSucceeds) {
  Updater u(config("__fail_first__/2/503/targets/"), curl_);
  ASSERT_TRUE(Ok(u.download_target(info(u, kBigPath))));
  const auto log = big_requests();
  ASSERT_EQ(log.size(), 3u);
  EXPECT_EQ(log[0].status, 503);
  EXPECT_EQ(log[1].status, 503);
  EXPECT_EQ(log[2].status, 200);
}

TEST_F(UpdaterDownloadTest, MetadataIsRetriedWhole) {
  UpdaterConfig c = config();
  c.metadata_base_url = http_->url("__fail_first__/1/503/metadata/");
  Updater u(c, curl_);
  ASSERT_TRUE(u.refresh());
  for (const char* role : {"/timestamp.json", ".snapshot.json", ".targets.json"}) {
    const auto log = http_->requests(role);
    ASSERT_EQ(log.size(), 2u) << role;
    EXPECT_EQ(log[0].status, 503) << role;
    EXPECT_EQ(log[1].status, 200) << role;
    EXPECT_FALSE(log[1].range.has_value()) << role;
  }
}

TEST_F(UpdaterDownloadTest, NotFoundIsNotRetried) {
  Updater u(config("__status__/404/targets/"), curl_);
  auto r = u.download_target(info(u, kBigPath));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::not_found);
  EXPECT_EQ(big_requests().size(), 1u);
  EXPECT_TRUE(downloads().empty());
}

TEST_F(UpdaterDownloadTest, TransientFailureGivesUpAfterTheAttempts) {
  UpdaterConfig c = config("__status__/503/targets/");
  c.retry.attempts = 3;
  Updater u(c, curl_);
  auto r = u.download_target(info(u, kBigPath));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::network);
  EXPECT_EQ(big_requests().size(), 3u);
  EXPECT_TRUE(downloads().empty());  // nothing received: no partial file either
}

TEST_F(UpdaterDownloadTest, DeadFirstMirrorFallsThroughToTheSecond) {
  const std::string dead = "http://127.0.0.1:" + std::to_string(closed_port()) + "/";
  UpdaterConfig c = config();
  c.metadata_base_url = dead + "metadata/";
  c.target_base_url = dead + "targets/";
  c.mirrors = {{http_->url("metadata/"), http_->url("targets/")}};
  Updater u(c, curl_);
  auto path = u.download_target(info(u, kBigPath));
  ASSERT_TRUE(Ok(path));
  EXPECT_EQ(read_file(*path), big_);
  EXPECT_EQ(big_requests().size(), 1u);
  EXPECT_EQ(http_->requests("/timestamp.json").size(), 1u);
}

TEST_F(UpdaterDownloadTest, MirrorServingWrongBytesFallsThroughToTheNext) {
  TempDir bad_repo;
  fs::copy(repo_.path(), bad_repo.path(), fs::copy_options::recursive);
  Updater probe(config(), curl_);
  const TargetFile t = info(probe, kBigPath);
  std::string wrong = big_;
  wrong[10] = static_cast<char>(wrong[10] ^ 1);
  write_file(bad_repo / ("targets/pkg/" + t.hashes.at("sha256") + ".big.bin"), wrong);
  HttpServer bad(bad_repo.path());

  UpdaterConfig c = config();
  c.target_base_url = bad.url("targets/");
  c.mirrors = {{http_->url("metadata/"), http_->url("targets/")}};
  Updater u(c, curl_);
  auto path = u.download_target(info(u, kBigPath));
  ASSERT_TRUE(Ok(path));
  EXPECT_EQ(read_file(*path), big_);
  EXPECT_EQ(bad.requests(".big.bin").size(), 1u);  // refused once, not retried
  const auto log = big_requests();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_FALSE(log[0].range.has_value());  // the refused bytes were not resumed from
}

TEST_F(UpdaterDownloadTest, CancelDuringBackoffReturnsPromptly) {
  std::atomic<bool> cancel{false};
  UpdaterConfig c = config("__status__/503/targets/");
  c.retry = {4, std::chrono::minutes(5), std::chrono::minutes(5)};
  c.cancel = [&] { return cancel.load(); };
  Updater u(c, curl_);
  const TargetFile t = info(u, kBigPath);
  auto done = std::async(std::launch::async, [&] { return u.download_target(t); });
  // Cancel once the first answer (503) is in: the updater is then in its backoff.
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (big_requests().empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  const bool asked = !big_requests().empty();
  cancel = true;
  ASSERT_TRUE(asked);
  ASSERT_EQ(done.wait_for(10s), std::future_status::ready) << "the backoff ignored cancel";
  auto r = done.get();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::cancelled);
  EXPECT_EQ(big_requests().size(), 1u);
}

TEST_F(UpdaterDownloadTest, NginxAnswersTheResumeWith206) {
  NginxServer nginx(repo_.path());
  UpdaterConfig c = config();
  c.metadata_base_url = nginx.url("metadata/");
  c.target_base_url = nginx.url("targets/");
  Updater u(c, curl_);
  const TargetFile t = info(u, kBigPath);
  // As if an earlier download had been cut halfway.
  write_file(u.partial_path(t), big_.substr(0, kHalf));
  auto path = u.download_target(t);
  ASSERT_TRUE(Ok(path));
  EXPECT_EQ(read_file(*path), big_);
  EXPECT_FALSE(fs::exists(u.partial_path(t)));

  // root 2 (404), timestamp, snapshot, targets, then the target.
  const auto all = nginx.wait_for_requests(5);
  const auto log = tests::support::ending_with(all, ".big.bin");
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0].status, 206);
  EXPECT_EQ(log[0].range, "bytes=" + std::to_string(kHalf) + "-");
  EXPECT_EQ(log[0].bytes, kBig - kHalf);
}

}  // namespace
}  // namespace catalog::tuf
