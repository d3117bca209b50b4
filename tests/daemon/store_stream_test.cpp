// Store::install_stream(): a package extracted from a pipe while a writer thread
// still feeds it (as the daemon does while it downloads), committed only when
// the caller's before_commit says the bytes verified. Every failure leaves
// staging/ empty and the package not installed.
#include <fcntl.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "catalog/ep_metadata.hpp"
#include "catalog/package/pack.hpp"
#include "daemon/store/store.hpp"
#include "daemon/store/tree.hpp"
#include "tests/support/temp_dir.hpp"

namespace epbrokerd::store {
namespace {

namespace fs = std::filesystem;
using catalog::Errc;
using tests::support::TempDir;

catalog::EpMetadata meta(const std::string& name) {
  auto m = catalog::parse_ep_metadata(nlohmann::json::parse(R"({"epbroker": {
    "schema": 1, "name": "x", "version": "1.0.0", "ep_names": ["TestEp"],
    "vendor": "tests", "arch": "x86_64", "ort_min": "1.23.0", "library": "lib/libep.so",
    "supports": [{"type": "cpu"}]}})"));
  EXPECT_TRUE(m.has_value());
  m->name = name;
  return *m;
}

class StreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A writer whose reader gave up gets EPIPE, not a fatal SIGPIPE.
    std::signal(SIGPIPE, SIG_IGN);
    auto s = Store::open(tmp_ / "state");
    ASSERT_TRUE(s) << s.error().message;
    store_.emplace(std::move(*s));
  }

  // Packs NAME: a 3 MiB library (several pipe-fulls) and a small file.
  fs::path pack(const std::string& name) {
    const fs::path dir = tmp_ / ("src-" + name);
    fs::create_directories(dir / "lib");
    std::string bulk(3 << 20, '\0');
    std::uint32_t x = 7;
    for (char& c : bulk) {
      x = x * 1103515245u + 12345u;
      c = static_cast<char>(x >> 24);
    }
    tests::support::write_file(dir / "lib/libep.so", bulk);
    tests::support::write_file(dir / "README", "stream test\n");
    const fs::path out = tmp_ / (name + ".tar.zst");
    auto ok = catalog::package::pack_directory(dir, meta(name), out);
    EXPECT_TRUE(ok) << ok.error().message;
    return out;
  }

  // Streams `bytes` of `file` (all of it by default) into a pipe from another
  // thread, in 64 KiB writes, while install_stream() reads the other end.
  catalog::Result<InstalledPackage> stream(
      const fs::path& file, const catalog::EpMetadata& signed_meta,
      const std::function<catalog::Result<void>()>& before_commit, std::size_t cut = SIZE_MAX) {
    const std::string bytes = tests::support::read_file(file);
    int fds[2];
    EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    std::jthread writer([&, fd = fds[1]] {
      const std::size_t n = std::min(cut, bytes.size());
      for (std::size_t done = 0; done < n;) {
        const ssize_t w = ::write(fd, bytes.data() + done, std::min<std::size_t>(65536, n - done));
        if (w <= 0) break;  // the reader gave up
        done += static_cast<std::size_t>(w);
      }
      ::close(fd);
    });
    return store_->install_stream(fds[0], bytes.size(), signed_meta, {}, before_commit);
  }

  bool staging_empty() const { return fs::is_empty(store_->staging_dir()); }

  TempDir tmp_;
  std::optional<Store> store_;
};

TEST_F(StreamTest, InstallsWhatStreamsInAndAsksBeforeCommitting) {
  const fs::path file = pack("stream-ep");
  int asked = 0;
  auto installed = stream(file, meta("stream-ep"), [&]() -> catalog::Result<void> {
    ++asked;
    // Sealed and durable already, not yet in the store.
    EXPECT_FALSE(store_->find("stream-ep", "1.0.0"));
    return {};
  });
  ASSERT_TRUE(installed) << installed.error().message;
  EXPECT_EQ(asked, 1);
  EXPECT_TRUE(fs::exists(installed->library_path()));
  EXPECT_EQ(fs::file_size(installed->library_path()), std::uintmax_t{3} << 20);
  EXPECT_TRUE(check_tree(installed->root, installed->manifest).problems.empty());
  EXPECT_TRUE(store_->find("stream-ep", "1.0.0"));
  EXPECT_TRUE(staging_empty());
}

TEST_F(StreamTest, ARefusalBeforeCommitLeavesNothing) {
  const fs::path file = pack("stream-ep");
  auto installed = stream(file, meta("stream-ep"), [] {
    return catalog::fail(Errc::hash_mismatch, "download did not verify");
  });
  ASSERT_FALSE(installed);
  EXPECT_EQ(installed.error().code, Errc::hash_mismatch);
  EXPECT_FALSE(store_->find("stream-ep", "1.0.0"));
  EXPECT_TRUE(staging_empty());
}

TEST_F(StreamTest, ACutStreamIsMalformedAndLeavesNothing) {
  const fs::path file = pack("stream-ep");
  bool asked = false;
  auto installed = stream(
      file, meta("stream-ep"),
      [&]() -> catalog::Result<void> {
        asked = true;
        return {};
      },
      fs::file_size(file) / 2);
  ASSERT_FALSE(installed);
  EXPECT_EQ(installed.error().code, Errc::malformed) << installed.error().message;
  EXPECT_FALSE(asked);
  EXPECT_FALSE(store_->find("stream-ep", "1.0.0"));
  EXPECT_TRUE(staging_empty());
}

TEST_F(StreamTest, AManifestThatDisagreesWithTheSignedMetadataIsRefused) {
  const fs::path file = pack("stream-ep");
  auto installed = stream(file, meta("other-ep"), [] { return catalog::Result<void>(); });
  ASSERT_FALSE(installed);
  EXPECT_EQ(installed.error().code, Errc::manifest_mismatch) << installed.error().message;
  EXPECT_FALSE(store_->find("stream-ep", "1.0.0"));
  EXPECT_FALSE(store_->find("other-ep", "1.0.0"));
  EXPECT_TRUE(staging_empty());
}

}  // namespace
}  // namespace epbrokerd::store
