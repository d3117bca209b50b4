// The honest path of the TUF client workflow against a repository on disk
// written by catalog::tuf::Repository: refresh, find, download, cache, update.
#include <gtest/gtest.h>

#include "catalog/atomic_file.hpp"
#include "catalog/tuf/dir_fetcher.hpp"
#include "catalog/tuf/repository.hpp"
#include "catalog/tuf/updater.hpp"
#include "tests/support/temp_dir.hpp"

namespace catalog::tuf {
namespace {

using tests::support::TempDir;

TimePoint now() {
  return std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
}

class TufWorkflowTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto r = Repository::create(now());
    ASSERT_TRUE(r) << r.error().message;
    repo_.emplace(std::move(*r));
    ASSERT_TRUE(repo_->add_target("pkg/a.tar.zst", "hello package", nlohmann::json{{"x", 1}}));
    ASSERT_TRUE(repo_->publish(directory_writer(server_.path()), now()));
    std::filesystem::create_directories(client_ / "meta");
    auto root = read_file(server_ / "metadata/1.root.json", 1 << 20);
    ASSERT_TRUE(root);
    ASSERT_TRUE(atomic_write_file(client_ / "meta/root.json", *root));
  }

  Updater updater() {
    UpdaterConfig c;
    c.metadata_dir = client_ / "meta";
    c.metadata_base_url = "repo:/metadata/";
    c.target_base_url = "repo:/targets/";
    c.target_dir = client_ / "targets";
    return Updater(c, fetcher_);
  }

  TempDir server_;
  TempDir client_;
  DirFetcher fetcher_{"repo:/", server_.path()};
  std::optional<Repository> repo_;
};

TEST_F(TufWorkflowTest, RefreshFindDownload) {
  auto u = updater();
  auto ok = u.refresh();
  ASSERT_TRUE(ok) << ok.error().message;
  auto info = u.get_targetinfo("pkg/a.tar.zst");
  ASSERT_TRUE(info) << info.error().message;
  EXPECT_EQ(info->length, 13u);
  EXPECT_EQ(info->custom["x"], 1);
  EXPECT_FALSE(u.find_cached_target(*info));
  auto path = u.download_target(*info);
  ASSERT_TRUE(path) << path.error().message;
  EXPECT_EQ(tests::support::read_file(*path), "hello package");
  EXPECT_TRUE(u.find_cached_target(*info));
  for (const char* f : {"root.json", "timestamp.json", "snapshot.json", "targets.json"}) {
    EXPECT_TRUE(std::filesystem::exists(client_ / "meta" / f)) << f;
  }
}

TEST_F(TufWorkflowTest, SecondRefreshSeesNewTargetsAndRotatedRoot) {
  ASSERT_TRUE(updater().refresh());
  auto k = crypto::PrivateKey::generate();
  ASSERT_TRUE(k);
  ASSERT_TRUE(repo_->rotate("root", std::move(*k)));
  ASSERT_TRUE(repo_->add_target("pkg/b", "bbb"));
  ASSERT_TRUE(repo_->publish(directory_writer(server_.path()), now()));
  auto u = updater();
  auto ok = u.refresh();
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(u.trusted()->root().signed_.version, 2u);
  EXPECT_TRUE(u.get_targetinfo("pkg/b"));
  auto missing = u.get_targetinfo("pkg/nope");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, Errc::not_found);
}

}  // namespace
}  // namespace catalog::tuf
