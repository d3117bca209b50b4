// The commit path of ML models (issue 21 step 5, daemon/commit/commit_model.hpp),
// attacked as commit_attack_test.cpp attacks packages: the helper runs as root in
// a process of its own (serve_one(), the real protocol and checks) on a
// socketpair; the daemon is a forked process at uid/gid 65534 speaking the
// protocol itself, honestly or not. After every refused attack store/ is what it
// was: paths, types, modes, owners, contents and which entries share an inode.
// Needs root, as commit_attack_test does.
#include <fcntl.h>
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "catalog/crypto/hash.hpp"
#include "catalog/model_metadata.hpp"
#include "catalog/tuf/dir_fetcher.hpp"
#include "catalog/tuf/repository.hpp"
#include "catalog/tuf/updater.hpp"
#include "daemon/commit/commit_model.hpp"
#include "daemon/commit/helper_committer.hpp"
#include "daemon/commit/protocol.hpp"
#include "daemon/commit/server.hpp"
#include "tests/support/temp_dir.hpp"

namespace epbrokerd::commit {
namespace {

namespace fs = std::filesystem;
constexpr const char* kUrl = "http://repo.test/";
constexpr uid_t kAttacker = 65534;
constexpr gid_t kAttackerGroup = 65534;
constexpr const char* kCard = "test-model/test-model-1.0.model.json";

const std::string kFp32 = std::string(3000, 'F') + "fp32 weights";
const std::string kInt8 = std::string(1000, 'I') + "int8 weights";
const std::string kLabels = "cat\ndog\nfish\n";

std::string sha(const std::string& bytes) { return catalog::crypto::sha256_hex(bytes); }

// test-model 1.0: variants fp32 and int8, each a model.onnx and the same labels.txt.
catalog::ModelMetadata model_meta(const std::string& name) {
  nlohmann::json c = nlohmann::json::parse(R"({"epbroker": {
    "schema": 2, "kind": "model", "name": "x", "version": "1.0", "publisher": "tests",
    "license": "MIT", "license_url": "https://example.org/license", "task": "testing",
    "inputs": [{"name": "in", "type": "float", "shape": ["N", 3]}],
    "outputs": [{"name": "out", "type": "float", "shape": ["N"]}], "variants": []}})");
  c["epbroker"]["name"] = name;
  for (const auto& [id, weights] : {std::pair{"fp32", kFp32}, std::pair{"int8", kInt8}}) {
    nlohmann::json files = nlohmann::json::array();
    for (const auto& [path, bytes] : {std::pair{"labels.txt", kLabels}, {"model.onnx", weights}}) {
      files.push_back({{"path", path}, {"size", bytes.size()}, {"sha256", sha(bytes)}});
    }
    c["epbroker"]["variants"].push_back(
        {{"id", id}, {"ort_min", "1.20"}, {"opset", 17}, {"main", "model.onnx"}, {"files", files}});
  }
  auto m = catalog::parse_model_metadata(c);
  EXPECT_TRUE(m.has_value()) << m.error().message;
  return m.value_or(catalog::ModelMetadata{});
}

// Everything under `root`: type, mode, owner, size, SHA-256, and the first path
// of the same inode.
std::map<std::string, std::string> snapshot(const fs::path& root) {
  std::map<std::string, std::string> out;
  std::map<std::pair<dev_t, ino_t>, std::string> first;
  std::map<std::string, std::pair<dev_t, ino_t>> inode;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0) continue;
    const std::string rel = fs::relative(it->path(), root).string();
    std::string v = std::to_string(st.st_mode) + " " + std::to_string(st.st_uid) + ":" +
                    std::to_string(st.st_gid);
    if (S_ISREG(st.st_mode)) {
      v += " " + std::to_string(st.st_size) + " " + sha(tests::support::read_file(it->path()));
      const std::pair<dev_t, ino_t> id{st.st_dev, st.st_ino};
      inode[rel] = id;
      if (!first.contains(id) || rel < first[id]) first[id] = rel;
    }
    out[rel] = v;
  }
  for (const auto& [rel, id] : inode) out[rel] += " shares " + first[id];
  return out;
}

// What the daemon sends for each needed blob: (sha256 it claims, file), or a
// different list altogether.
using BlobPlan =
    std::function<std::vector<std::pair<std::string, fs::path>>(const std::vector<std::string>&)>;

class CommitModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: the store is root's, the attacker is not";
    ::chmod(tmp_.path().c_str(), 0755);
    auto repo = catalog::tuf::Repository::create(now());
    ASSERT_TRUE(repo) << repo.error().message;
    repo_ = std::move(*repo);
    add_model("test-model", kCard);
    publish();
    env_.store_root = tmp_ / "root";
    env_.stream_idle = std::chrono::seconds(1);
    config::Remote remote;
    remote.name = "main";
    remote.trusted_root = tmp_ / "anchor.json";
    fs::copy_file(tmp_ / "repo/metadata/1.root.json", remote.trusted_root);
    env_.remotes.push_back(remote);
    daemon_ = tmp_ / "daemon";
    fs::create_directories(daemon_ / "metadata");
    fs::create_directories(daemon_ / "blobs");
    fs::copy_file(remote.trusted_root, daemon_ / "metadata/root.json");
    for (const auto* bytes : {&kFp32, &kInt8, &kLabels}) {
      tests::support::write_file(daemon_ / "blobs" / sha(*bytes), *bytes);
    }
    refresh_daemon();
  }

  static catalog::tuf::TimePoint now() {
    return std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
  }
  void add_model(const std::string& name, const std::string& card_path) {
    const auto meta = model_meta(name);
    for (const auto* bytes : {&kFp32, &kInt8, &kLabels}) {
      ASSERT_TRUE(repo_.add_target(catalog::model_blob_path(name, sha(*bytes)), *bytes));
    }
    auto added = repo_.add_target(card_path, catalog::to_json(meta).dump(), catalog::to_json(meta));
    ASSERT_TRUE(added) << added.error().message;
  }
  void publish() {
    auto ok = repo_.publish(catalog::tuf::directory_writer(tmp_ / "repo"), now());
    ASSERT_TRUE(ok) << ok.error().message;
  }
  // What an honest daemon does: refresh its metadata; all its files its uid's.
  void refresh_daemon() {
    catalog::tuf::DirFetcher fetcher(kUrl, tmp_ / "repo");
    catalog::tuf::UpdaterConfig u;
    u.metadata_dir = daemon_ / "metadata";
    u.metadata_base_url = std::string(kUrl) + "metadata/";
    u.target_base_url = std::string(kUrl) + "targets/";
    catalog::tuf::Updater updater(u, fetcher);
    auto ok = updater.refresh();
    ASSERT_TRUE(ok) << ok.error().message;
    chown_daemon();
  }
  void chown_daemon() {
    for (auto& e : fs::recursive_directory_iterator(daemon_)) {
      (void)::lchown(e.path().c_str(), kAttacker, kAttackerGroup);
    }
    (void)::lchown(daemon_.c_str(), kAttacker, kAttackerGroup);
  }

  // Runs the helper (root) and `attacker` (uid 65534) in processes of their
  // own; returns what the attacker reports.
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

  // The final answer: "ok" or "<code>: <message>".
  static std::string final_answer(int sock) {
    for (;;) {
      auto m = receive_message(sock, 60'000);
      if (!m) return "no answer: " + m.error().message;
      if (m->body.contains("progress")) continue;
      if (m->body.value("ok", false)) return "ok";
      return m->body.value("code", std::string("?")) + ": " +
             m->body.value("message", std::string());
    }
  }

  // The install_model conversation as the daemon holds it, sending what `plan`
  // says for the helper's need (every needed blob from daemon_/blobs when
  // unset). Returns "need=<count> " and the final answer.
  std::string install(const std::string& target, const std::string& variant,
                      const BlobPlan& plan = {}, bool commit = true, bool repair = false) {
    return attack([&](int sock) {
      const int meta = ::open((daemon_ / "metadata").c_str(), O_RDONLY | O_DIRECTORY);
      const int fds[] = {meta};
      if (!send_message(sock,
                        {{"op", "install_model"},
                         {"remote", "main"},
                         {"target", target},
                         {"variant", variant},
                         {"repair", repair}},
                        fds)) {
        return std::string("send failed");
      }
      std::vector<std::string> need;
      for (;;) {
        auto m = receive_message(sock, 60'000);
        if (!m) return "no answer: " + m.error().message;
        if (!m->body.contains("need")) {
          return m->body.value("code", std::string("?")) + ": " +
                 m->body.value("message", std::string());
        }
        for (const auto& s : m->body["need"]) need.push_back(s.get<std::string>());
        if (!m->body.value("more", false)) break;
      }
      std::vector<std::pair<std::string, fs::path>> sends;
      if (plan) {
        sends = plan(need);
      } else {
        for (const auto& s : need) sends.emplace_back(s, daemon_ / "blobs" / s);
      }
      for (const auto& [s, path] : sends) {
        const int fd = ::open(path.c_str(), O_RDONLY);
        const int blob[] = {fd};
        (void)send_message(sock, {{"op", "blob"}, {"sha256", s}}, blob);
        ::close(fd);
      }
      if (commit) (void)send_message(sock, {{"op", "commit"}});
      return "need=" + std::to_string(need.size()) + " " + final_answer(sock);
    });
  }

  fs::path store() const { return env_.store_root / "store"; }
  void install_fp32() {
    ASSERT_EQ(install(kCard, "fp32"), "need=2 ok");
    before_ = snapshot(store());
  }
  void expect_store_unchanged() { EXPECT_EQ(snapshot(store()), before_); }

  tests::support::TempDir tmp_;
  catalog::tuf::Repository repo_;
  CommitEnv env_;
  fs::path daemon_;
  std::map<std::string, std::string> before_;
};

struct stat stat_of(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  return st;
}

TEST_F(CommitModelTest, TwoVariantsSharingAFileShareOneInode) {
  install_fp32();
  // The second variant needs only its own weights: labels.txt is stored.
  EXPECT_EQ(install(kCard, "int8"), "need=1 ok");
  const fs::path v = store() / "_models/test-model/1.0";
  EXPECT_EQ(tests::support::read_file(v / "fp32/model.onnx"), kFp32);
  EXPECT_EQ(tests::support::read_file(v / "int8/model.onnx"), kInt8);
  const auto a = stat_of(v / "fp32/labels.txt");
  const auto b = stat_of(v / "int8/labels.txt");
  const auto blob = stat_of(store() / "_blobs/sha256" / sha(kLabels));
  EXPECT_EQ(a.st_ino, b.st_ino);
  EXPECT_EQ(a.st_ino, blob.st_ino);
  EXPECT_EQ(blob.st_nlink, 3u);
  EXPECT_EQ(blob.st_uid, 0u);
  EXPECT_EQ(blob.st_mode & 07777, 0444u);
  // Again: installed and intact, nothing needed but the metadata.
  const auto installed = snapshot(store());
  EXPECT_EQ(install(kCard, "int8"), "need=0 ok");
  EXPECT_EQ(snapshot(store()), installed);
}

TEST_F(CommitModelTest, ABlobWithWrongBytesOfTheSameSizeIsRefused) {
  install_fp32();
  std::string evil = kInt8;
  evil[10] = static_cast<char>(evil[10] ^ 0xFF);
  tests::support::write_file(daemon_ / "evil", evil);
  ::chown((daemon_ / "evil").c_str(), kAttacker, kAttackerGroup);
  const auto r = install(kCard, "int8", [&](const std::vector<std::string>& need) {
    return std::vector<std::pair<std::string, fs::path>>{{need.at(0), daemon_ / "evil"}};
  });
  EXPECT_TRUE(r.starts_with("need=1 hash_mismatch")) << r;
  expect_store_unchanged();
}

TEST_F(CommitModelTest, ABlobNotAskedForIsRefused) {
  install_fp32();
  // labels.txt is stored, so not asked for; and a content no variant lists.
  tests::support::write_file(daemon_ / "other", "other");
  ::chown((daemon_ / "other").c_str(), kAttacker, kAttackerGroup);
  for (const auto& [claim, file] : {std::pair{sha(kLabels), daemon_ / "blobs" / sha(kLabels)},
                                    std::pair{sha("other"), daemon_ / "other"}}) {
    const auto r = install(kCard, "int8", [&](const std::vector<std::string>&) {
      return std::vector<std::pair<std::string, fs::path>>{{claim, file}};
    });
    EXPECT_TRUE(r.starts_with("need=1 invalid_argument")) << r;
    expect_store_unchanged();
  }
}

TEST_F(CommitModelTest, ACommitBeforeEveryNeededBlobIsRefused) {
  install_fp32();
  const auto r = install(kCard, "int8", [](const std::vector<std::string>&) {
    return std::vector<std::pair<std::string, fs::path>>{};
  });
  EXPECT_TRUE(r.starts_with("need=1 invalid_argument")) << r;
  expect_store_unchanged();
}

TEST_F(CommitModelTest, AVariantTheSignedMetadataLacksIsRefused) {
  install_fp32();
  for (const char* variant : {"fp16", "../fp32", "FP32"}) {
    const auto r = install(kCard, variant);
    EXPECT_TRUE(r.starts_with("not_found")) << variant << ": " << r;
  }
  expect_store_unchanged();
}

TEST_F(CommitModelTest, AModelOutsideItsSignersNamespaceIsRefused) {
  add_model("test-model", "vendor-a/evil-1.0.model.json");
  publish();
  refresh_daemon();
  install_fp32();
  const auto r = install("vendor-a/evil-1.0.model.json", "int8");
  EXPECT_TRUE(r.starts_with("bad_field")) << r;
  expect_store_unchanged();
}

TEST_F(CommitModelTest, MetadataTheAnchorDoesNotSignIsRefused) {
  install_fp32();
  // A newer targets version (the helper trusts the one it saw).
  ASSERT_TRUE(repo_.add_target("other/readme", "x"));
  publish();
  refresh_daemon();
  // The daemon edits the signed card: int8's weights become its own bytes.
  const std::string evil = std::string(1000, 'E') + "evil weights";
  tests::support::write_file(daemon_ / "blobs" / sha(evil), evil);
  auto targets =
      nlohmann::json::parse(tests::support::read_file(daemon_ / "metadata/targets.json"));
  auto& custom = targets["signed"]["targets"][kCard]["custom"]["epbroker"];
  custom["variants"][1]["files"][1]["sha256"] = sha(evil);
  targets["signed"]["targets"][catalog::model_blob_path("test-model", sha(evil))] = {
      {"length", evil.size()}, {"hashes", {{"sha256", sha(evil)}}}};
  tests::support::write_file(daemon_ / "metadata/targets.json", targets.dump());
  chown_daemon();
  const auto r = install(kCard, "int8");
  EXPECT_TRUE(r.starts_with("bad_signature") || r.starts_with("hash_mismatch") ||
              r.starts_with("length_mismatch"))
      << r;
  expect_store_unchanged();
}

// A shared blob damaged in place: only a repair hashes it; then it is asked for,
// and the helper's verified copy replaces it in both variants and in _blobs,
// the damaged inode untouched (an open descriptor still reads its bytes). Wrong
// bytes sent for it change nothing.
TEST_F(CommitModelTest, ARepairReplacesADamagedSharedBlobEverywhere) {
  install_fp32();
  ASSERT_EQ(install(kCard, "int8"), "need=1 ok");
  const fs::path v = store() / "_models/test-model/1.0";
  const fs::path blob = store() / "_blobs/sha256" / sha(kLabels);
  std::string damaged = kLabels;
  damaged[0] = static_cast<char>(damaged[0] ^ 0xFF);
  ::chmod(blob.c_str(), 0644);
  const int w = ::open(blob.c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(w, 0);
  ASSERT_EQ(::pwrite(w, damaged.data(), 1, 0), 1);
  ::close(w);
  ::chmod(blob.c_str(), 0444);
  const auto old = stat_of(blob);
  const int held = ::open((v / "int8/labels.txt").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(held, 0);

  // Not a repair: the stored blob has its size, nothing is asked for.
  EXPECT_EQ(install(kCard, "int8"), "need=0 ok");
  EXPECT_EQ(stat_of(blob).st_ino, old.st_ino);
  // A repair with other bytes for it: refused, nothing changed.
  before_ = snapshot(store());
  std::string evil = kLabels;
  evil[1] = static_cast<char>(evil[1] ^ 0xFF);
  tests::support::write_file(daemon_ / "evil", evil);
  ::chown((daemon_ / "evil").c_str(), kAttacker, kAttackerGroup);
  auto r = install(
      kCard, "int8",
      [&](const std::vector<std::string>& need) {
        return std::vector<std::pair<std::string, fs::path>>{{need.at(0), daemon_ / "evil"}};
      },
      true, true);
  EXPECT_TRUE(r.starts_with("need=1 hash_mismatch")) << r;
  expect_store_unchanged();
  // The repair: the damaged blob is asked for and replaced everywhere.
  EXPECT_EQ(install(kCard, "int8", {}, true, true), "need=1 ok");
  const auto fresh = stat_of(blob);
  EXPECT_NE(fresh.st_ino, old.st_ino);
  EXPECT_EQ(fresh.st_nlink, 3u);
  EXPECT_EQ(fresh.st_uid, 0u);
  EXPECT_EQ(fresh.st_mode & 07777, 0444u);
  EXPECT_EQ(tests::support::read_file(blob), kLabels);
  for (const char* variant : {"fp32", "int8"}) {
    EXPECT_EQ(stat_of(v / variant / "labels.txt").st_ino, fresh.st_ino) << variant;
  }
  std::string bytes(64, '\0');
  bytes.resize(static_cast<std::size_t>(::pread(held, bytes.data(), bytes.size(), 0)));
  ::close(held);
  EXPECT_EQ(bytes, damaged) << "the damaged inode was written";
  // Intact now: a repair asks for nothing.
  EXPECT_EQ(install(kCard, "fp32", {}, true, true), "need=0 ok");
  EXPECT_TRUE(fs::is_empty(env_.store_root / "staging"));
}

TEST_F(CommitModelTest, RemovalsAreCheckedAndKeepSharedBlobs) {
  install_fp32();
  ASSERT_EQ(install(kCard, "int8"), "need=1 ok");
  const auto remove = [&](const nlohmann::json& body) {
    return attack([&](int sock) {
      (void)send_message(sock, body);
      return final_answer(sock);
    });
  };
  const auto installed = snapshot(store());
  for (const auto& [name, version, variant] : {std::tuple{"../trust", "1.0", "fp32"},
                                               {"test-model", "../..", "fp32"},
                                               {"test-model", "1.0", "../../trust"},
                                               {"_blobs", "1.0", "fp32"}}) {
    const auto r = remove({{"op", "remove_model"},
                           {"name", name},
                           {"version", version},
                           {"variant", variant},
                           {"even_if_leased", false}});
    EXPECT_TRUE(r.starts_with("invalid_argument")) << name << " " << version << " " << variant;
  }
  EXPECT_EQ(snapshot(store()), installed);
  EXPECT_EQ(remove({{"op", "remove_model"},
                    {"name", "test-model"},
                    {"version", "1.0"},
                    {"variant", "fp32"},
                    {"even_if_leased", false}}),
            "ok");
  EXPECT_FALSE(fs::exists(store() / "_models/test-model/1.0/fp32"));
  EXPECT_FALSE(fs::exists(store() / "_blobs/sha256" / sha(kFp32)));
  EXPECT_EQ(stat_of(store() / "_blobs/sha256" / sha(kLabels)).st_nlink, 2u);
}

// In-process (LocalCommitter): a blob stored when the need was computed is
// removed before the commit (a concurrent removal of the other variant); the
// commit is busy, and the committer's second attempt asks for it.
TEST_F(CommitModelTest, AVanishedBlobIsAskedForAgain) {
  LocalCommitter committer(env_);
  const int meta = ::open((daemon_ / "metadata").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  const auto from_daemon = [&](const std::string& s) -> catalog::Result<catalog::UniqueFd> {
    return catalog::UniqueFd(::open((daemon_ / "blobs" / s).c_str(), O_RDONLY | O_CLOEXEC));
  };
  store::CommitModelInstall request{"main", kCard, "fp32", false, meta};
  auto fp32 = committer.install_model(request, from_daemon, {}, {});
  ASSERT_TRUE(fp32) << fp32.error().message;
  std::vector<std::string> asked;
  request.variant = "int8";
  auto int8 = committer.install_model(
      request,
      [&](const std::string& s) {
        asked.push_back(s);
        if (asked.size() == 1) {
          EXPECT_TRUE(committer.remove_model("test-model", "1.0", "fp32", false));
        }
        return from_daemon(s);
      },
      {}, {});
  ::close(meta);
  ASSERT_TRUE(int8) << int8.error().message;
  EXPECT_EQ(asked.size(), 3u);  // int8's weights, then labels and the weights again
  EXPECT_EQ(int8->variant, "int8");
  EXPECT_EQ(tests::support::read_file(store() / "_models/test-model/1.0/int8/labels.txt"), kLabels);
  EXPECT_EQ(stat_of(store() / "_blobs/sha256" / sha(kLabels)).st_nlink, 2u);
}

// The daemon's side (HelperCommitter) over a socket, a helper per connection as
// systemd's Accept=yes gives: installs, a refusal it reports, a removal.
TEST_F(CommitModelTest, TheHelperCommitterHoldsTheConversation) {
  const fs::path path = tmp_ / "commit.sock";
  const int listener = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path.c_str());
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(listener, 4), 0);
  constexpr int kConnections = 4;
  const pid_t server = ::fork();
  if (server == 0) {
    for (int i = 0; i < kConnections; ++i) {
      const int c = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) _exit(2);
      (void)serve_one(c, env_);
      ::close(c);
    }
    _exit(0);
  }
  ::close(listener);
  auto committer = HelperCommitter::over_socket(path);
  const int meta = ::open((daemon_ / "metadata").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  std::vector<std::string> asked;
  const auto from = [&](const fs::path& dir) {
    return [&asked, dir](const std::string& s) -> catalog::Result<catalog::UniqueFd> {
      asked.push_back(s);
      return catalog::UniqueFd(::open((dir / s).c_str(), O_RDONLY | O_CLOEXEC));
    };
  };
  store::CommitModelInstall request{"main", kCard, "fp32", false, meta};
  auto fp32 = committer.install_model(request, from(daemon_ / "blobs"), {}, {});
  ASSERT_TRUE(fp32) << fp32.error().message;
  EXPECT_EQ(fp32->name, "test-model");
  EXPECT_EQ(fp32->version, "1.0");
  EXPECT_EQ(fp32->variant, "fp32");
  EXPECT_EQ(asked.size(), 2u);
  // int8's weights swapped for other bytes of the same size: the helper's error.
  fs::create_directories(tmp_ / "evil");
  std::string evil = kInt8;
  evil[0] = static_cast<char>(evil[0] ^ 0xFF);
  tests::support::write_file(tmp_ / "evil" / sha(kInt8), evil);
  request.variant = "int8";
  before_ = snapshot(store());
  auto refused = committer.install_model(request, from(tmp_ / "evil"), {}, {});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, catalog::Errc::hash_mismatch) << refused.error().message;
  expect_store_unchanged();
  asked.clear();
  auto int8 = committer.install_model(request, from(daemon_ / "blobs"), {}, {});
  ASSERT_TRUE(int8) << int8.error().message;
  EXPECT_EQ(asked, std::vector<std::string>{sha(kInt8)});
  ASSERT_TRUE(committer.remove_model("test-model", "1.0", "fp32", false));
  ::close(meta);
  int status = 0;
  ::waitpid(server, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_FALSE(fs::exists(store() / "_models/test-model/1.0/fp32"));
  EXPECT_EQ(tests::support::read_file(store() / "_models/test-model/1.0/int8/model.onnx"), kInt8);
}

}  // namespace
}  // namespace epbrokerd::commit
