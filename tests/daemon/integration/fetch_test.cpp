// The daemon's fetcher wiring (broker's updater_config): a remote's mirrors are
// tried after a dead primary, and an install resumes a partial download left in
// the cache with a Range request that nginx answers 206.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>

#include "tests/daemon/integration/fixture.hpp"
#include "tests/support/ports.hpp"
#include "tests/support/temp_dir.hpp"

namespace tests::daemon {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

using tests::support::closed_port;

// nginx's log entries for `target`'s file, once at least one is there.
std::vector<support::LoggedRequest> requests_for(const TestCatalog& catalog,
                                                 const CatalogTarget& target) {
  const std::string file = fs::path(target.target_path).filename().string();
  std::vector<support::LoggedRequest> found;
  wait_until(
      [&] {
        found = support::ending_with(catalog.server().requests(), file);
        return !found.empty();
      },
      10s);
  return found;
}

TEST_F(CatalogTest, DeadPrimaryFallsThroughToTheMirror) {
  start();
  catalog_->add_as_mirror(*bus_, "http://127.0.0.1:" + std::to_string(closed_port()) + "/");
  refresh();
  install(kTestEp);
  EXPECT_EQ(str(provider(kTestEp), "state"), "ready");
  const auto log = requests_for(*catalog_, catalog_->target(kTestEp));
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0].status, 200);
}

TEST_F(CatalogTest, InstallResumesAPartialDownloadWithRange) {
  start();
  refresh();
  // As if an earlier download of bulk-ep had been cut halfway.
  const CatalogTarget& bulk = catalog_->target(kBulkEp);
  const fs::path rel(bulk.target_path);
  const std::string published = catalog_->repo_dir() / "targets" / rel.parent_path() /
                                (bulk.sha256 + "." + rel.filename().string());
  const std::string bytes = support::read_file(published);
  ASSERT_EQ(bytes.size(), bulk.length);
  const std::size_t half = bytes.size() / 2;
  support::write_file(bus_->cache_dir() / "downloads/test" / (bulk.sha256 + ".part"),
                      bytes.substr(0, half));

  install(kBulkEp);
  EXPECT_EQ(str(provider(kBulkEp), "state"), "ready");
  const auto log = requests_for(*catalog_, bulk);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0].status, 206);
  EXPECT_EQ(log[0].range, "bytes=" + std::to_string(half) + "-");
  EXPECT_EQ(log[0].bytes, bulk.length - half);
  EXPECT_FALSE(fs::exists(bus_->cache_dir() / "downloads/test" / (bulk.sha256 + ".part")));
}

}  // namespace
}  // namespace tests::daemon
