// The store's trust boundary, attacked (issue 17 item 2): a compromised epbrokerd
// runs as an unprivileged uid with everything that uid can reach (its state
// directory, its downloads, the commit helper's connection) and tries to make
// root-loaded code out of bytes the signed catalog does not vouch for.
//
// The commit helper runs as root in a process of its own (forked here with the
// CommitEnv epbroker-commit would build from its configuration; the protocol and
// every check are the real ones), on a socketpair as systemd's Accept=yes gives
// it; the attacker is a forked process that drops to uid/gid 65534 and then
// speaks the protocol itself. After every attack the store is byte for byte,
// mode for mode and owner for owner what it was. Needs root (to own the store
// and to drop to another uid), as the CatalogTest fixtures do.
#include <fcntl.h>
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "catalog/crypto/hash.hpp"
#include "catalog/ep_metadata.hpp"
#include "catalog/package/pack.hpp"
#include "catalog/tuf/dir_fetcher.hpp"
#include "catalog/tuf/repository.hpp"
#include "catalog/tuf/updater.hpp"
#include "daemon/commit/protocol.hpp"
#include "daemon/commit/server.hpp"
#include "tests/support/temp_dir.hpp"

namespace epbrokerd::commit {
namespace {

namespace fs = std::filesystem;
constexpr const char* kUrl = "http://repo.test/";
constexpr uid_t kAttacker = 65534;
constexpr gid_t kAttackerGroup = 65534;

catalog::EpMetadata metadata(const std::string& name, const std::string& version) {
  nlohmann::json custom = {{"epbroker",
                            {{"schema", 1},
                             {"name", name},
                             {"version", version},
                             {"ep_names", {"TestEp"}},
                             {"vendor", "epbroker tests"},
                             {"arch", "x86_64"},
                             {"ort_min", "1.20.0"},
                             {"library", "lib/libtest.so"},
                             {"supports", {{{"type", "cpu"}}}}}}};
  auto meta = catalog::parse_ep_metadata(custom);
  EXPECT_TRUE(meta) << meta.error().message;
  return *meta;
}

// Every entry under `dir`: type, mode, owner, size and SHA-256 of its content.
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0) continue;
    std::string what = std::to_string(st.st_mode) + " " + std::to_string(st.st_uid) + ":" +
                       std::to_string(st.st_gid);
    if (S_ISREG(st.st_mode)) {
      what += " " + catalog::crypto::sha256_hex(tests::support::read_file(it->path()));
    }
    out[fs::relative(it->path(), dir).string()] = what;
  }
  return out;
}

class CommitAttackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: the store is root's, the attacker is not";
    ::chmod(tmp_.path().c_str(), 0755);
    auto repo = catalog::tuf::Repository::create(now());
    ASSERT_TRUE(repo) << repo.error().message;
    repo_ = std::move(*repo);
    add("test-ep", "1.0.0", "genuine 1.0.0");
    add("test-ep", "1.1.0", "genuine 1.1.0");
    publish();
    env_.store_root = tmp_ / "root";
    env_.stream_idle = std::chrono::seconds(1);  // a stalled pipe ends soon
    config::Remote remote;
    remote.name = "main";
    remote.trusted_root = tmp_ / "anchor.json";
    fs::copy_file(tmp_ / "repo/metadata/1.root.json", remote.trusted_root);
    env_.remotes.push_back(remote);
    // The daemon's side: its state (metadata it verified, downloads), all its uid's.
    daemon_ = tmp_ / "daemon";
    fs::create_directories(daemon_ / "metadata");
    fs::copy_file(remote.trusted_root, daemon_ / "metadata/root.json");
  }

  static catalog::tuf::TimePoint now() {
    return std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
  }
  static std::string target(const std::string& name, const std::string& version) {
    return name + "/" + name + "-" + version + ".tar.zst";
  }
  void add(const std::string& name, const std::string& version, const std::string& content,
           const std::string& path = "") {
    const fs::path dir = tmp_ / ("src-" + name + version);
    fs::create_directories(dir / "lib");
    tests::support::write_file(dir / "lib/libtest.so", content);
    const fs::path package = tmp_ / ("pkg-" + name + version + ".tar.zst");
    fs::remove(package);
    const auto meta = metadata(name, version);
    ASSERT_TRUE(catalog::package::pack_directory(dir, meta, package));
    auto added = repo_.add_target(path.empty() ? target(name, version) : path,
                                  tests::support::read_file(package), catalog::to_json(meta));
    ASSERT_TRUE(added) << added.error().message;
  }
  void publish() {
    auto ok = repo_.publish(catalog::tuf::directory_writer(tmp_ / "repo"), now());
    ASSERT_TRUE(ok) << ok.error().message;
  }
  // What an honest daemon does: refresh, download (verified), all as its uid's files.
  fs::path download(const std::string& path) {
    catalog::tuf::DirFetcher fetcher(kUrl, tmp_ / "repo");
    catalog::tuf::UpdaterConfig u;
    u.metadata_dir = daemon_ / "metadata";
    u.metadata_base_url = std::string(kUrl) + "metadata/";
    u.target_base_url = std::string(kUrl) + "targets/";
    u.target_dir = daemon_ / "downloads";
    catalog::tuf::Updater updater(u, fetcher);
    auto info = updater.get_targetinfo(path);
    EXPECT_TRUE(info) << info.error().message;
    if (!info) return {};
    auto file = updater.download_target(*info);
    EXPECT_TRUE(file) << file.error().message;
    chown_daemon();
    return file ? *file : fs::path();
  }
  void chown_daemon() {
    for (auto& e : fs::recursive_directory_iterator(daemon_)) {
      (void)::lchown(e.path().c_str(), kAttacker, kAttackerGroup);
    }
    (void)::lchown(daemon_.c_str(), kAttacker, kAttackerGroup);
  }

  // Runs the helper (root) and `attacker` (uid 65534, holding the other end of
  // the connection) in processes of their own; returns what the attacker wrote
  // to its result pipe (the helper's final answer, or what it observed).
  std::string attack(const std::function<std::string(int sock)>& attacker) {
    int pair[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair), 0);
    int out[2];
    EXPECT_EQ(::pipe(out), 0);
    const pid_t helper = ::fork();
    if (helper == 0) {
      ::close(pair[1]);
      _exit(serve_one(pair[0], env_));
    }
    const pid_t evil = ::fork();
    if (evil == 0) {
      ::close(pair[0]);
      ::close(out[0]);
      if (::setgroups(0, nullptr) != 0 ||
          ::setresgid(kAttackerGroup, kAttackerGroup, kAttackerGroup) != 0 ||
          ::setresuid(kAttacker, kAttacker, kAttacker) != 0) {
        _exit(3);
      }
      const std::string r = attacker(pair[1]);
      (void)!::write(out[1], r.data(), r.size());
      _exit(0);
    }
    ::close(pair[0]);
    ::close(pair[1]);
    ::close(out[1]);
    std::string result;
    char buf[4096];
    for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;)
      result.append(buf, static_cast<std::size_t>(n));
    ::close(out[0]);
    int status = 0;
    ::waitpid(evil, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "attacker process failed";
    ::waitpid(helper, &status, 0);
    return result;
  }

  // The attacker's usual move: an install request with these descriptors.
  static std::string request_install(int sock, const std::string& path, int meta_fd, int pkg_fd) {
    const int fds[] = {meta_fd, pkg_fd};
    if (!send_message(sock, {{"op", "install"}, {"remote", "main"}, {"target", path}}, fds)) {
      return "send failed";
    }
    for (;;) {
      auto m = receive_message(sock, 60'000);
      if (!m) return "no answer: " + m.error().message;
      if (m->body.contains("progress")) continue;
      if (m->body.value("ok", false)) return "ok";
      return m->body.value("code", std::string("?")) + ": " +
             m->body.value("message", std::string());
    }
  }
  std::string install_with(const std::string& path, const fs::path& package) {
    return attack([&](int sock) {
      const int meta = ::open((daemon_ / "metadata").c_str(), O_RDONLY | O_DIRECTORY);
      const int pkg = ::open(package.c_str(), O_RDONLY);
      return request_install(sock, path, meta, pkg);
    });
  }
  // An honest install of test-ep 1.0.0, the baseline every attack starts from.
  void install_genuine() {
    const auto file = download(target("test-ep", "1.0.0"));
    ASSERT_EQ(install_with(target("test-ep", "1.0.0"), file), "ok");
    const fs::path lib = env_.store_root / "store/test-ep/1.0.0/lib/libtest.so";
    ASSERT_EQ(tests::support::read_file(lib), "genuine 1.0.0");
    struct stat st {};
    ASSERT_EQ(::stat(lib.c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 0u);
    EXPECT_EQ(st.st_mode & 07777, 0444u);
    before_ = snapshot(env_.store_root / "store");
  }
  void expect_store_unchanged() { EXPECT_EQ(snapshot(env_.store_root / "store"), before_); }

  tests::support::TempDir tmp_;
  catalog::tuf::Repository repo_;
  CommitEnv env_;
  fs::path daemon_;
  std::map<std::string, std::string> before_;
};

// (a) The store is root's: the daemon's uid can change nothing in it.
TEST_F(CommitAttackTest, TheDaemonsUidCannotModifyOrReplaceStoreFiles) {
  install_genuine();
  const fs::path version = env_.store_root / "store/test-ep/1.0.0";
  const std::string r = attack([&](int) {
    std::string failures;
    const auto expect_denied = [&](const char* what, int rc) {
      if (rc == 0) failures += std::string(what) + " succeeded; ";
    };
    const std::string lib = (version / "lib/libtest.so").string();
    int fd = ::open(lib.c_str(), O_WRONLY);
    expect_denied("open for writing", fd >= 0 ? 0 : -1);
    expect_denied("unlink", ::unlink(lib.c_str()));
    expect_denied("chmod", ::chmod(lib.c_str(), 0666));
    expect_denied("rename of the version",
                  ::rename(version.c_str(), (version.parent_path() / "x").c_str()));
    expect_denied("rename of store/", ::rename((env_.store_root / "store").c_str(),
                                               (env_.store_root / "store.old").c_str()));
    expect_denied(
        "create in the version",
        ::open((version / "lib/evil.so").c_str(), O_CREAT | O_WRONLY, 0755) >= 0 ? 0 : -1);
    expect_denied("create a store/ beside", ::mkdir((env_.store_root / "store2").c_str(), 0755));
    expect_denied("enter staging/", ::access((env_.store_root / "staging").c_str(), X_OK));
    expect_denied("enter trust/", ::access((env_.store_root / "trust").c_str(), X_OK));
    return failures.empty() ? "all denied" : failures;
  });
  EXPECT_EQ(r, "all denied");
  expect_store_unchanged();
}

// (b) A tampered package: bytes changed after the (honest) download verified.
TEST_F(CommitAttackTest, ATamperedPackageIsRefusedBeforeAnythingParsesIt) {
  install_genuine();
  const auto file = download(target("test-ep", "1.1.0"));
  std::string bytes = tests::support::read_file(file);
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 1);
  tests::support::write_file(file, bytes);
  chown_daemon();
  const auto r = install_with(target("test-ep", "1.1.0"), file);
  EXPECT_TRUE(r.starts_with("hash_mismatch")) << r;
  expect_store_unchanged();
}

// (b) A swapped archive: another (genuinely signed) package's bytes for this target.
TEST_F(CommitAttackTest, ASwappedArchiveIsRefused) {
  install_genuine();
  const auto other = download(target("test-ep", "1.0.0"));
  const auto r = install_with(target("test-ep", "1.1.0"), other);
  EXPECT_TRUE(r.starts_with("length_mismatch") || r.starts_with("hash_mismatch")) << r;
  expect_store_unchanged();
}

// (b) Forged metadata: targets.json edited to vouch for the attacker's package.
TEST_F(CommitAttackTest, ForgedMetadataIsRefused) {
  install_genuine();
  const auto file = download(target("test-ep", "1.1.0"));
  std::string evil = tests::support::read_file(file);
  evil[evil.size() / 2] = static_cast<char>(evil[evil.size() / 2] ^ 1);
  tests::support::write_file(file, evil);
  // Point the signed entry at the evil bytes (the signature no longer matches).
  auto targets =
      nlohmann::json::parse(tests::support::read_file(daemon_ / "metadata/targets.json"));
  targets["signed"]["targets"][target("test-ep", "1.1.0")]["hashes"]["sha256"] =
      catalog::crypto::sha256_hex(evil);
  tests::support::write_file(daemon_ / "metadata/targets.json", targets.dump());
  chown_daemon();
  const auto r = install_with(target("test-ep", "1.1.0"), file);
  EXPECT_FALSE(r == "ok") << r;
  EXPECT_TRUE(r.starts_with("bad_signature") || r.starts_with("hash_mismatch") ||
              r.starts_with("length_mismatch"))
      << r;
  expect_store_unchanged();
}

// (b) A replayed older signed package: 1.0.0 re-published with new content; the
// helper has seen the new metadata; the attacker replays the old metadata and
// the old archive.
TEST_F(CommitAttackTest, ReplayedOlderMetadataAndPackageAreRefused) {
  const auto old_file = download(target("test-ep", "1.1.0"));
  const fs::path old_meta = tmp_ / "old-metadata";
  fs::copy(daemon_ / "metadata", old_meta);
  const fs::path old_pkg = tmp_ / "old.tar.zst";
  fs::copy_file(old_file, old_pkg);
  // The publisher withdraws 1.1.0 (say, vulnerable) and publishes a new state.
  ASSERT_TRUE(repo_.remove_target(target("test-ep", "1.1.0")));
  publish();
  install_genuine();  // the helper now trusts the newer metadata
  fs::remove_all(daemon_ / "metadata");
  fs::copy(old_meta, daemon_ / "metadata");
  fs::copy_file(old_pkg, daemon_ / "old.tar.zst");
  chown_daemon();
  const auto r = install_with(target("test-ep", "1.1.0"), daemon_ / "old.tar.zst");
  EXPECT_TRUE(r.starts_with("rollback") || r.starts_with("not_found")) << r;
  EXPECT_FALSE(fs::exists(env_.store_root / "store/test-ep/1.1.0"));
  expect_store_unchanged();
}

// (b) The handoff itself: a symlink planted for a metadata file (to a file only
// root may read), a FIFO in its place, a FIFO as the package: refused, never
// followed, never blocking.
TEST_F(CommitAttackTest, SymlinksAndFifosInTheHandoffAreNotFollowed) {
  install_genuine();
  const auto file = download(target("test-ep", "1.1.0"));
  tests::support::write_file(tmp_ / "secret.json", "{}");
  ::chmod((tmp_ / "secret.json").c_str(), 0600);
  fs::remove(daemon_ / "metadata/timestamp.json");
  fs::create_symlink(tmp_ / "secret.json", daemon_ / "metadata/timestamp.json");
  chown_daemon();
  auto r = install_with(target("test-ep", "1.1.0"), file);
  EXPECT_TRUE(r.starts_with("not_found")) << r;
  fs::remove(daemon_ / "metadata/timestamp.json");
  ASSERT_EQ(::mkfifo((daemon_ / "metadata/timestamp.json").c_str(), 0666), 0);
  ASSERT_EQ(::mkfifo((daemon_ / "package.fifo").c_str(), 0666), 0);
  chown_daemon();
  r = install_with(target("test-ep", "1.1.0"), file);
  EXPECT_TRUE(r.starts_with("not_found")) << r;
  r = attack([&](int sock) {
    const int meta = ::open((daemon_ / "metadata").c_str(), O_RDONLY | O_DIRECTORY);
    const int pkg = ::open((daemon_ / "package.fifo").c_str(), O_RDWR | O_NONBLOCK);
    return request_install(sock, target("test-ep", "1.1.0"), meta, pkg);
  });
  EXPECT_FALSE(r == "ok") << r;
  expect_store_unchanged();
}

// (b) A race during the handoff: the attacker rewrites the package while the
// helper copies it. Whatever wins, nothing but the signed bytes gets in.
TEST_F(CommitAttackTest, RewritingThePackageDuringTheHandoffGetsNothingUnsignedIn) {
  install_genuine();
  const auto file = download(target("test-ep", "1.1.0"));
  const std::string genuine = tests::support::read_file(file);
  const auto r = attack([&](int sock) {
    const int meta = ::open((daemon_ / "metadata").c_str(), O_RDONLY | O_DIRECTORY);
    const int pkg = ::open(file.c_str(), O_RDONLY);
    const int fds[] = {meta, pkg};
    if (!send_message(
            sock, {{"op", "install"}, {"remote", "main"}, {"target", target("test-ep", "1.1.0")}},
            fds)) {
      return std::string("send failed");
    }
    // Flip bytes in place, over and over, until the helper answers.
    const int w = ::open(file.c_str(), O_WRONLY);
    for (int i = 0;; ++i) {
      const char c =
          static_cast<char>(genuine[static_cast<std::size_t>(i) % genuine.size()] ^ 0x5a);
      (void)!::pwrite(w, &c, 1, static_cast<off_t>(static_cast<std::size_t>(i) % genuine.size()));
      auto m = receive_message(sock, 0);
      if (!m && m.error().code == catalog::Errc::busy) continue;
      if (!m) return "no answer: " + m.error().message;
      if (m->body.contains("progress")) continue;
      return m->body.value("ok", false) ? std::string("ok")
                                        : m->body.value("code", std::string("?"));
    }
  });
  if (r == "ok") {
    // The helper's copy was taken before the first flip: exactly the signed bytes.
    EXPECT_EQ(tests::support::read_file(env_.store_root / "store/test-ep/1.1.0/lib/libtest.so"),
              "genuine 1.1.0");
  } else {
    EXPECT_TRUE(r == "hash_mismatch") << r;
    expect_store_unchanged();
  }
}

// Two commits at once on a helper side that trusts nothing yet (a fresh
// machine): each seeds trust/ and commits, one after the other under the store's
// lock; neither sees the other's half-written trust/.
TEST_F(CommitAttackTest, ConcurrentCommitsOnAFreshStoreBothSucceed) {
  const auto one = download(target("test-ep", "1.0.0"));
  const auto two = download(target("test-ep", "1.1.0"));
  for (int round = 0; round < 3; ++round) {
    std::error_code ec;
    fs::remove_all(env_.store_root, ec);
    std::vector<std::pair<int, pid_t>> helpers;
    for (int i = 0; i < 2; ++i) {
      int pair[2];
      ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair), 0);
      const pid_t pid = ::fork();
      if (pid == 0) {
        ::close(pair[1]);
        _exit(serve_one(pair[0], env_));
      }
      ::close(pair[0]);
      helpers.emplace_back(pair[1], pid);
    }
    const int meta = ::open((daemon_ / "metadata").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    const int pkg1 = ::open(one.c_str(), O_RDONLY | O_CLOEXEC);
    const int pkg2 = ::open(two.c_str(), O_RDONLY | O_CLOEXEC);
    const int fds1[] = {meta, pkg1};
    const int fds2[] = {meta, pkg2};
    ASSERT_TRUE(send_message(
        helpers[0].first,
        {{"op", "install"}, {"remote", "main"}, {"target", target("test-ep", "1.0.0")}}, fds1));
    ASSERT_TRUE(send_message(
        helpers[1].first,
        {{"op", "install"}, {"remote", "main"}, {"target", target("test-ep", "1.1.0")}}, fds2));
    for (auto& [sock, pid] : helpers) {
      for (;;) {
        auto m = receive_message(sock, 60'000);
        ASSERT_TRUE(m) << m.error().message;
        if (m->body.contains("progress")) continue;
        EXPECT_TRUE(m->body.value("ok", false)) << m->body.dump();
        break;
      }
      ::close(sock);
      ::waitpid(pid, nullptr, 0);
    }
    for (int fd : {meta, pkg1, pkg2}) ::close(fd);
    EXPECT_EQ(tests::support::read_file(env_.store_root / "store/test-ep/1.0.0/lib/libtest.so"),
              "genuine 1.0.0");
    EXPECT_EQ(tests::support::read_file(env_.store_root / "store/test-ep/1.1.0/lib/libtest.so"),
              "genuine 1.1.0");
  }
}

// (b) Requests that name what cannot be a package: refused, nothing touched.
TEST_F(CommitAttackTest, RemovalsOutsideTheStoreAreRefused) {
  install_genuine();
  for (const char* name : {"../trust", "..", "index.json", "test-ep/../../x"}) {
    const auto r = attack([&](int sock) {
      if (!send_message(sock, {{"op", "remove"}, {"name", name}, {"version", nullptr}})) {
        return std::string("send failed");
      }
      auto m = receive_message(sock, 60'000);
      if (!m) return "no answer: " + m.error().message;
      return m->body.value("ok", false) ? std::string("ok")
                                        : m->body.value("code", std::string("?"));
    });
    EXPECT_EQ(r, "invalid_argument") << name;
  }
  const auto r = attack([&](int sock) {
    (void)send_message(sock, {{"op", "remove"}, {"name", "test-ep"}, {"version", "../../trust"}});
    auto m = receive_message(sock, 60'000);
    return m ? m->body.value("code", std::string("ok")) : std::string("no answer");
  });
  EXPECT_EQ(r, "invalid_argument");
  expect_store_unchanged();
}

// (b) A package name claimed outside its path namespace (a delegated signer's
// trick, issue 17 item 1) is refused by the helper too.
TEST_F(CommitAttackTest, ANameOutsideItsPathNamespaceIsRefused) {
  add("test-ep", "9.0.0", "evil", "vendor-a/x-9.0.0.tar.zst");
  publish();
  install_genuine();
  const auto file = download("vendor-a/x-9.0.0.tar.zst");
  const auto r = install_with("vendor-a/x-9.0.0.tar.zst", file);
  EXPECT_FALSE(r == "ok") << r;
  EXPECT_FALSE(fs::exists(env_.store_root / "store/test-ep/9.0.0"));
  expect_store_unchanged();
}

}  // namespace
}  // namespace epbrokerd::commit
