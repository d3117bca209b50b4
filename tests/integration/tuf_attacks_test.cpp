// Attacks on the TUF client workflow (spec 1.0, section 5, and the attacks its
// section 1.5.2 names) run through the whole Updater against a repository on
// disk written by catalog::tuf::Repository, one hostile change at a time.
//
// Each attack test checks:
//  - the typed error (catalog::Errc);
//  - that the client's persisted trusted metadata (metadata_dir) is byte for
//    byte what it was, or, where an earlier role of the same update was
//    honest and verified, exactly the honest server's copy of that role:
//    nothing the attacker served ever lands there;
//  - that nothing (no partial target, no temporary file) is left in the
//    target directory;
//  - where it means something, that an honest refresh or download afterwards
//    succeeds.
// Hostile files are built with the repository's own signing code (sign_role,
// publish with tampered state) or re-signed here over the canonical form of
// their `signed` object; where the crafting itself could be what fails, a
// control case shows the same path is accepted once the attack is removed.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "catalog/atomic_file.hpp"
#include "catalog/canonical_json.hpp"
#include "catalog/crypto/hash.hpp"
#include "catalog/tuf/dir_fetcher.hpp"
#include "catalog/tuf/repository.hpp"
#include "catalog/tuf/updater.hpp"
#include "net/curl_fetcher.hpp"
#include "tests/support/fault_fetcher.hpp"
#include "tests/support/http_server.hpp"
#include "tests/support/temp_dir.hpp"

namespace catalog::tuf {
namespace {

using nlohmann::json;
using tests::support::FaultFetcher;
using tests::support::read_tree;
using tests::support::TempDir;
using Tree = std::map<std::string, std::string>;
using std::chrono::days;
using std::chrono::hours;

const std::string kPayload = "the honest package, 32 bytes....";
const std::string kTarget = "pkg/a.tar.zst";
// How the target's URL ends (consistent snapshots: <dir>/<sha256>.<name>).
const std::string kTargetUrlEnd = ".a.tar.zst";

TimePoint wall_now() {
  return std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
}

// Failed with `code` and, if `role` is given, about that role ("role: ...").
template <typename T>
::testing::AssertionResult FailsWith(const Result<T>& r, Errc code, std::string_view role = {}) {
  if (r) return ::testing::AssertionFailure() << "succeeded; expected " << errc_name(code);
  if (r.error().code != code) {
    return ::testing::AssertionFailure() << "failed with " << errc_name(r.error().code) << " ("
                                         << r.error().message << "); expected " << errc_name(code);
  }
  if (!role.empty() && !r.error().message.starts_with(std::string(role) + ":")) {
    return ::testing::AssertionFailure() << "failed with " << errc_name(code) << " but not about "
                                         << role << ": " << r.error().message;
  }
  return ::testing::AssertionSuccess() << errc_name(code) << ": " << r.error().message;
}

template <typename T>
::testing::AssertionResult Succeeds(const Result<T>& r) {
  if (r) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << errc_name(r.error().code) << ": " << r.error().message;
}

// Same files with the same bytes; otherwise names what differs (bytes are
// too long to print usefully).
::testing::AssertionResult SameTree(const Tree& actual, const Tree& expected) {
  std::string diff;
  for (const auto& [name, bytes] : expected) {
    auto it = actual.find(name);
    if (it == actual.end()) {
      diff += " missing:" + name;
    } else if (it->second != bytes) {
      diff += " changed:" + name;
    }
  }
  for (const auto& [name, _] : actual) {
    if (!expected.contains(name)) diff += " unexpected:" + name;
  }
  if (diff.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "files differ:" << diff;
}

std::string keyid_of(const crypto::PrivateKey& k) {
  return Key::from_public(k.public_key()).keyid();
}

crypto::PrivateKey new_key() {
  auto k = crypto::PrivateKey::generate();
  if (!k) throw std::runtime_error(k.error().message);
  return std::move(*k);
}

// A signer for a hand-made envelope: the key, and the keyid written beside
// its signature (its own unless an attacker claims another).
struct Signer {
  const crypto::PrivateKey* key;
  std::optional<std::string> claimed_keyid;
};

// The metadata file {"signatures": [...], "signed": signed_json}, formatted
// like Repository's, signed over the canonical form of `signed_json`.
std::string sign_envelope(const json& signed_json, const std::vector<Signer>& signers) {
  auto canon = canonical_json(signed_json);
  if (!canon) throw std::runtime_error(canon.error().message);
  json sigs = json::array();
  for (const auto& s : signers) {
    auto sig = s.key->sign(*canon);
    if (!sig) throw std::runtime_error(sig.error().message);
    const std::string hex = crypto::to_hex(std::span<const unsigned char>(
        reinterpret_cast<const unsigned char*>(sig->data()), sig->size()));
    sigs.push_back(json{{"keyid", s.claimed_keyid.value_or(keyid_of(*s.key))}, {"sig", hex}});
  }
  return json{{"signatures", sigs}, {"signed", signed_json}}.dump(1) + "\n";
}

json parse(const std::string& bytes) {
  auto j = parse_json(bytes);
  if (!j) throw std::runtime_error(j.error().message);
  return std::move(*j);
}

// The same metadata with its signatures replaced by `signers`' signatures.
std::string resign(const std::string& bytes, const std::vector<Signer>& signers) {
  return sign_envelope(parse(bytes)["signed"], signers);
}

TargetFile target_file(const std::string& path, const std::string& bytes) {
  TargetFile f;
  f.path = path;
  f.length = bytes.size();
  f.hashes["sha256"] = crypto::sha256_hex(bytes);
  return f;
}

class TufAttackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto r = Repository::create(t0_, root_keys_, root_threshold_);
    ASSERT_TRUE(r) << r.error().message;
    repo_.emplace(std::move(*r));
    ASSERT_TRUE(repo_->add_target(kTarget, kPayload));
    publish();
    std::filesystem::create_directories(meta_dir());
    ASSERT_TRUE(atomic_write_file(meta_dir() / "root.json", server_file("metadata/1.root.json")));
  }

  std::filesystem::path meta_dir() const { return client_ / "meta"; }
  std::filesystem::path target_dir() const { return client_ / "targets"; }

  UpdaterConfig config(std::optional<TimePoint> at = {}) const {
    UpdaterConfig c;
    c.metadata_dir = meta_dir();
    c.metadata_base_url = "repo:/metadata/";
    c.target_base_url = "repo:/targets/";
    c.target_dir = target_dir();
    c.now = at ? *at : t0_;
    return c;
  }
  Updater updater(std::optional<TimePoint> at = {}) { return Updater(config(at), fetcher_); }
  Result<void> refresh(std::optional<TimePoint> at = {}) { return updater(at).refresh(); }

  void publish(std::optional<TimePoint> at = {}) {
    auto ok = repo_->publish(directory_writer(server_.path()), at ? *at : t0_);
    ASSERT_TRUE(ok) << ok.error().message;
  }
  void publish_timestamp(std::optional<TimePoint> at = {}) {
    auto ok = repo_->publish_timestamp(directory_writer(server_.path()), at ? *at : t0_);
    ASSERT_TRUE(ok) << ok.error().message;
  }
  // The repository's current signed bytes of `role`, unpublished.
  std::string signed_role(const std::string& role) {
    auto b = repo_->sign_role(role);
    if (!b) throw std::runtime_error(b.error().message);
    return *b;
  }

  std::string server_file(const std::string& rel) const {
    return tests::support::read_file(server_ / rel);
  }
  // What a hostile mirror does: replace a file it serves.
  void serve(const std::string& rel, const std::string& bytes) {
    std::filesystem::create_directories((server_ / rel).parent_path());
    ASSERT_TRUE(atomic_write_file(server_ / rel, bytes));
  }

  // The bytes of `role` an honest client persists from the server as it is
  // now (consistent snapshots), following timestamp -> snapshot -> role.
  std::string server_role(const std::string& role) const {
    if (role == "root" || role == "timestamp") return server_file("metadata/" + role + ".json");
    auto ts = parse_metadata<Timestamp>(server_file("metadata/timestamp.json"));
    if (!ts) throw std::runtime_error(ts.error().message);
    const std::string sn = server_file(
        "metadata/" + std::to_string(ts->signed_.snapshot_meta.version) + ".snapshot.json");
    if (role == "snapshot") return sn;
    auto snap = parse_metadata<Snapshot>(sn);
    if (!snap) throw std::runtime_error(snap.error().message);
    return server_file("metadata/" + std::to_string(snap->signed_.meta.at(role + ".json").version) +
                       "." + role + ".json");
  }

  Tree client_meta() const { return read_tree(meta_dir()); }
  Tree left_in_target_dir() const { return read_tree(target_dir()); }

  const crypto::PrivateKey& key_of(const std::string& role) const {
    return repo_->signing_keys().at(repo_->root.roles.at(role).keyids.front());
  }

  std::size_t root_keys_ = 1;
  std::uint64_t root_threshold_ = 1;
  const TimePoint t0_ = wall_now();
  TempDir server_;
  TempDir client_;
  DirFetcher dir_fetcher_{"repo:/", server_.path()};
  FaultFetcher fetcher_{dir_fetcher_};
  std::optional<Repository> repo_;
};

// ---- 1. arbitrary package ---------------------------------------------------

TEST_F(TufAttackTest, TargetWithOtherBytesOfTheSignedLengthIsHashMismatch) {
  auto u = updater();
  ASSERT_TRUE(Succeeds(u.refresh()));
  auto info = u.get_targetinfo(kTarget);
  ASSERT_TRUE(Succeeds(info));
  const Tree meta = client_meta();

  std::string evil = kPayload;
  evil.back() = static_cast<char>(evil.back() ^ 1);
  fetcher_.serve(kTargetUrlEnd, evil);
  EXPECT_TRUE(FailsWith(u.download_target(*info), Errc::hash_mismatch));
  EXPECT_EQ(fetcher_.requests(kTargetUrlEnd), 1u);  // the hostile bytes were served
  EXPECT_TRUE(SameTree(left_in_target_dir(), {}));
  EXPECT_FALSE(u.find_cached_target(*info));
  EXPECT_TRUE(SameTree(client_meta(), meta));

  fetcher_.clear_faults();
  auto path = u.download_target(*info);
  ASSERT_TRUE(Succeeds(path));
  EXPECT_TRUE(SameTree(left_in_target_dir(), {{path->filename().string(), kPayload}}));
}

TEST_F(TufAttackTest, TargetLongerThanItsSignedLengthIsLengthMismatch) {
  auto u = updater();
  ASSERT_TRUE(Succeeds(u.refresh()));
  auto info = u.get_targetinfo(kTarget);
  ASSERT_TRUE(Succeeds(info));
  const Tree meta = client_meta();

  // Capped by the transport (as libcurl does), and by the Updater's own
  // bound when the transport ignores the cap.
  for (bool transport_caps : {true, false}) {
    SCOPED_TRACE(transport_caps ? "transport enforces the cap" : "transport ignores the cap");
    fetcher_.reset_log();
    fetcher_.set_enforce_cap(transport_caps);
    fetcher_.append(kTargetUrlEnd, "!");
    EXPECT_TRUE(FailsWith(u.download_target(*info), Errc::length_mismatch));
    EXPECT_EQ(fetcher_.requests(kTargetUrlEnd), 1u);
    EXPECT_TRUE(SameTree(left_in_target_dir(), {}));
    EXPECT_TRUE(SameTree(client_meta(), meta));
  }
  fetcher_.set_enforce_cap(true);
  fetcher_.clear_faults();
  EXPECT_TRUE(Succeeds(u.download_target(*info)));
}

TEST_F(TufAttackTest, TargetShorterThanItsSignedLengthIsLengthMismatch) {
  auto u = updater();
  ASSERT_TRUE(Succeeds(u.refresh()));
  auto info = u.get_targetinfo(kTarget);
  ASSERT_TRUE(Succeeds(info));
  const Tree meta = client_meta();

  // A good copy already in place must survive a failed download over it.
  auto good = u.download_target(*info);
  ASSERT_TRUE(Succeeds(good));
  const Tree targets_before = left_in_target_dir();
  ASSERT_EQ(targets_before.size(), 1u);

  fetcher_.truncate(kTargetUrlEnd, kPayload.size() - 1);
  EXPECT_TRUE(FailsWith(u.download_target(*info), Errc::length_mismatch));
  fetcher_.serve(kTargetUrlEnd, "");
  EXPECT_TRUE(FailsWith(u.download_target(*info), Errc::length_mismatch));
  EXPECT_EQ(fetcher_.requests(kTargetUrlEnd), 3u);
  EXPECT_TRUE(SameTree(left_in_target_dir(), targets_before));
  EXPECT_TRUE(u.find_cached_target(*info));
  EXPECT_TRUE(SameTree(client_meta(), meta));

  fetcher_.clear_faults();
  EXPECT_TRUE(Succeeds(u.download_target(*info)));
  EXPECT_TRUE(SameTree(left_in_target_dir(), targets_before));
}

// ---- 2. endless data ----------------------------------------------------------

TEST_F(TufAttackTest, EndlessTargetStopsAtTheSignedLength) {
  auto u = updater();
  ASSERT_TRUE(Succeeds(u.refresh()));
  auto info = u.get_targetinfo(kTarget);
  ASSERT_TRUE(Succeeds(info));
  const Tree meta = client_meta();

  for (bool transport_caps : {true, false}) {
    SCOPED_TRACE(transport_caps ? "transport enforces the cap" : "transport ignores the cap");
    fetcher_.reset_log();
    fetcher_.set_enforce_cap(transport_caps);
    fetcher_.endless(kTargetUrlEnd);  // the honest bytes, then filler forever
    EXPECT_TRUE(FailsWith(u.download_target(*info), Errc::length_mismatch));
    EXPECT_FALSE(fetcher_.endless_limit_reached());
    // Refused at the first chunk past the signed length.
    EXPECT_LE(fetcher_.delivered(kTargetUrlEnd),
              info->length + (transport_caps ? 0 : FaultFetcher::kChunk));
    EXPECT_TRUE(SameTree(left_in_target_dir(), {}));
    EXPECT_TRUE(SameTree(client_meta(), meta));
  }
  fetcher_.set_enforce_cap(true);
  fetcher_.clear_faults();
  EXPECT_TRUE(Succeeds(u.download_target(*info)));
}

TEST_F(TufAttackTest, EndlessTargetOverRealHttpStopsAtTheSignedLength) {
  // Loopback only: a proxy from the environment must not get in the way.
  for (const char* name : {"http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"}) {
    unsetenv(name);
  }
  tests::support::HttpServer server(server_.path());
  net::CurlFetcherOptions options;
  options.allow_http = true;
  options.total_timeout_ms = 60000;  // a failed defence shows as a wrong error, not a hang
  net::CurlFetcher curl(options);

  // Honest metadata over HTTP; targets from the server's endless path.
  UpdaterConfig c = config();
  c.metadata_base_url = server.url("metadata/");
  c.target_base_url = server.url("__endless__/targets/");
  Updater u(c, curl);
  ASSERT_TRUE(Succeeds(u.refresh()));
  const Tree meta = client_meta();
  auto info = u.get_targetinfo(kTarget);
  ASSERT_TRUE(Succeeds(info));
  EXPECT_TRUE(FailsWith(u.download_target(*info), Errc::length_mismatch));
  EXPECT_TRUE(SameTree(left_in_target_dir(), {}));

  // A hand-made entry with a larger length: still stopped at that length.
  TargetFile big = target_file("blob/big.bin", std::string(1 << 20, '\xa5'));
  EXPECT_TRUE(FailsWith(u.download_target(big), Errc::length_mismatch));
  EXPECT_TRUE(SameTree(left_in_target_dir(), {}));
  EXPECT_TRUE(SameTree(client_meta(), meta));

  // The same target from the honest path.
  c.target_base_url = server.url("targets/");
  Updater honest(c, curl);
  ASSERT_TRUE(Succeeds(honest.refresh()));
  auto path = honest.download_target(*info);
  ASSERT_TRUE(Succeeds(path));
  EXPECT_EQ(tests::support::read_file(*path), kPayload);
}

TEST_F(TufAttackTest, EndlessTimestampStopsAtMaxTimestampLength) {
  ASSERT_TRUE(Succeeds(refresh()));
  const Tree meta = client_meta();
  const std::uint64_t cap = config().max_timestamp_length;

  for (bool transport_caps : {true, false}) {
    SCOPED_TRACE(transport_caps ? "transport enforces the cap" : "transport ignores the cap");
    fetcher_.reset_log();
    fetcher_.set_enforce_cap(transport_caps);
    fetcher_.endless("/timestamp.json");
    EXPECT_TRUE(FailsWith(refresh(), Errc::length_mismatch));
    EXPECT_EQ(fetcher_.requests("/timestamp.json"), 1u);
    EXPECT_FALSE(fetcher_.endless_limit_reached());
    EXPECT_LE(fetcher_.delivered("/timestamp.json"),
              cap + (transport_caps ? 0 : FaultFetcher::kChunk));
    EXPECT_TRUE(SameTree(client_meta(), meta));
  }
  fetcher_.set_enforce_cap(true);
  fetcher_.clear_faults();
  EXPECT_TRUE(Succeeds(refresh()));
}

TEST_F(TufAttackTest, EndlessMetadataOfEveryRoleIsCapped) {
  ASSERT_TRUE(Succeeds(refresh()));
  ASSERT_TRUE(repo_->add_target("pkg/b", "bbb"));
  publish();  // timestamp 2 -> snapshot 2 -> targets 2 (no new root)
  const Tree meta = client_meta();

  // URL end, cap the client must apply, roles verified (and persisted) before it.
  struct Case {
    std::string url_end;
    std::uint64_t cap;
    std::vector<std::string> honest_before;
  };
  const auto pinned = [&](const std::string& role) -> std::uint64_t {
    auto ts = parse_metadata<Timestamp>(server_file("metadata/timestamp.json"));
    if (role == "snapshot") return ts->signed_.snapshot_meta.length.value();
    auto sn = parse_metadata<Snapshot>(server_role("snapshot"));
    return sn->signed_.meta.at(role + ".json").length.value();
  };
  const std::vector<Case> cases = {
      {"/2.root.json", config().max_root_length, {}},  // not published: 404 ends the chain
      {"/timestamp.json", config().max_timestamp_length, {}},
      {"/2.snapshot.json", pinned("snapshot"), {"timestamp"}},
      {"/2.targets.json", pinned("targets"), {"timestamp", "snapshot"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.url_end);
    fetcher_.reset_log();
    fetcher_.clear_faults();
    fetcher_.endless(c.url_end);
    EXPECT_TRUE(FailsWith(refresh(), Errc::length_mismatch));
    EXPECT_EQ(fetcher_.requests(c.url_end), 1u);
    EXPECT_LE(fetcher_.delivered(c.url_end), c.cap);
    EXPECT_FALSE(fetcher_.endless_limit_reached());
    // Roles before the attacked one are the honest server's; the rest as before.
    Tree expected = meta;
    for (const auto& role : c.honest_before) expected[role + ".json"] = server_role(role);
    EXPECT_TRUE(SameTree(client_meta(), expected));
  }
  fetcher_.clear_faults();
  ASSERT_TRUE(Succeeds(refresh()));
  EXPECT_EQ(client_meta()["targets.json"], server_role("targets"));
}

// ---- 3. rollback ------------------------------------------------------------

TEST_F(TufAttackTest, OlderTimestampIsRollback) {
  // Timestamps 1 and 2 name the same snapshot, so only their own versions
  // tell them apart.
  const std::string ts1 = server_file("metadata/timestamp.json");
  ++repo_->timestamp.version;
  serve("metadata/timestamp.json", signed_role("timestamp"));
  ASSERT_TRUE(Succeeds(refresh()));  // trusts timestamp 2
  const Tree meta = client_meta();

  serve("metadata/timestamp.json", ts1);  // validly signed, but older
  EXPECT_TRUE(FailsWith(refresh(), Errc::rollback, "timestamp"));
  EXPECT_TRUE(SameTree(client_meta(), meta));

  publish_timestamp();  // timestamp 3
  ASSERT_TRUE(Succeeds(refresh()));
  EXPECT_EQ(client_meta()["timestamp.json"], server_file("metadata/timestamp.json"));
}

TEST_F(TufAttackTest, TimestampNamingAnOlderSnapshotIsRollback) {
  const MetaFile snapshot1 = repo_->timestamp.snapshot_meta;
  ASSERT_TRUE(repo_->add_target("pkg/b", "bbb"));
  publish();
  ASSERT_TRUE(Succeeds(refresh()));  // trusts timestamp 2 -> snapshot 2
  const Tree meta = client_meta();

  // An attacker with the timestamp key: a newer timestamp naming snapshot 1.
  const Timestamp honest = repo_->timestamp;
  repo_->timestamp.version = honest.version + 1;
  repo_->timestamp.snapshot_meta = snapshot1;
  serve("metadata/timestamp.json", signed_role("timestamp"));
  EXPECT_TRUE(FailsWith(refresh(), Errc::rollback, "timestamp"));
  EXPECT_TRUE(SameTree(client_meta(), meta));

  repo_->timestamp = honest;
  publish_timestamp();
  ASSERT_TRUE(Succeeds(refresh()));
  EXPECT_EQ(client_meta()["snapshot.json"], server_role("snapshot"));
}

TEST_F(TufAttackTest, SnapshotListingAnOlderTargetsIsRollback) {
  const MetaFile targets1 = repo_->snapshot.meta.at("targets.json");
  ASSERT_TRUE(repo_->add_target("pkg/b", "bbb"));
  publish();
  ASSERT_TRUE(Succeeds(refresh()));  // trusts snapshot 2 -> targets 2
  const Tree meta = client_meta();

  // An attacker with the timestamp and snapshot keys publishes snapshot 3
  // (and timestamp 3) listing targets 1 again.
  const MetaFile targets2 = repo_->snapshot.meta.at("targets.json");
  repo_->snapshot.meta["targets.json"] = targets1;
  publish_timestamp();
  EXPECT_TRUE(FailsWith(refresh(), Errc::rollback, "snapshot"));
  // The new timestamp was validly signed and names a snapshot that exists, so
  // it was trusted and persisted (spec 5.4.5) before the snapshot failed.
  Tree expected = meta;
  expected["timestamp.json"] = server_role("timestamp");
  EXPECT_TRUE(SameTree(client_meta(), expected));
  EXPECT_EQ(client_meta()["snapshot.json"], meta.at("snapshot.json"));
  EXPECT_EQ(client_meta()["targets.json"], meta.at("targets.json"));

  repo_->snapshot.meta["targets.json"] = targets2;
  publish_timestamp();
  ASSERT_TRUE(Succeeds(refresh()));
  EXPECT_EQ(client_meta()["snapshot.json"], server_role("snapshot"));
}

TEST_F(TufAttackTest, RootWhoseVersionFieldIsNotItsFileNumberIsRefused) {
  ASSERT_TRUE(Succeeds(refresh()));
  const Tree meta = client_meta();

  // 2.root.json validly signed by the root key, claiming version 3 ...
  repo_->root.version = 3;
  serve("metadata/2.root.json", signed_role("root"));
  EXPECT_TRUE(FailsWith(refresh(), Errc::version_mismatch, "root"));
  EXPECT_TRUE(SameTree(client_meta(), meta));
  // ... or replaying version 1 under the name 2.root.json.
  serve("metadata/2.root.json", server_file("metadata/1.root.json"));
  EXPECT_TRUE(FailsWith(refresh(), Errc::rollback, "root"));
  EXPECT_TRUE(SameTree(client_meta(), meta));

  // An honest root 2.
  repo_->root.version = 1;
  ASSERT_TRUE(repo_->rotate("snapshot", new_key()));
  publish();
  auto u = updater();
  ASSERT_TRUE(Succeeds(u.refresh()));
  EXPECT_EQ(u.trusted()->root().signed_.version, 2u);
  EXPECT_EQ(client_meta()["root.json"], server_file("metadata/2.root.json"));
}

// ---- 4. freeze ----------------------------------------------------------------
//
// The repository stops changing (or a mirror keeps serving one state) while
// the client's clock moves on: each role in turn is the first to expire.

TEST_F(TufAttackTest, ExpiredRootIsFreeze) {
  ASSERT_TRUE(Succeeds(refresh()));
  const Tree meta = client_meta();
  const TimePoint later = t0_ + repo_->root_lifetime + days{1};  // every role expired; root first

  auto r = refresh(later);
  EXPECT_TRUE(FailsWith(r, Errc::expired, "root"));
  EXPECT_TRUE(SameTree(client_meta(), meta));

  // An expired trusted root still starts a rotation chain to a fresh one.
  ASSERT_TRUE(repo_->rotate("snapshot", new_key()));
  ASSERT_TRUE(repo_->add_target("pkg/b", "bbb"));
  publish(later);
  auto u = updater(later);
  ASSERT_TRUE(Succeeds(u.refresh()));
  EXPECT_EQ(u.trusted()->root().signed_.version, 2u);
}

TEST_F(TufAttackTest, ExpiredTimestampIsFreeze) {
  ASSERT_TRUE(Succeeds(refresh()));
  const Tree meta = client_meta();
  const TimePoint later = t0_ + repo_->timestamp_lifetime + hours{1};  // snapshot: 7 days

  auto r = refresh(later);
  EXPECT_TRUE(FailsWith(r, Errc::expired, "timestamp"));
  EXPECT_TRUE(SameTree(client_meta(), meta));

  // A new timestamp, but published with a clock that lags: expired on arrival.
  publish_timestamp(later - repo_->timestamp_lifetime - hours{1});
  EXPECT_TRUE(FailsWith(refresh(later), Errc::expired, "timestamp"));
  EXPECT_TRUE(SameTree(client_meta(), meta));

  publish_timestamp(later);
  EXPECT_TRUE(Succeeds(refresh(later)));
}

TEST_F(TufAttackTest, ExpiredSnapshotIsFreeze) {
  repo_->snapshot_lifetime = hours{1};  // shorter than timestamp's day
  publish_timestamp();
  ASSERT_TRUE(Succeeds(refresh()));
  const Tree meta = client_meta();
  const TimePoint later = t0_ + hours{2};

  auto r = refresh(later);
  EXPECT_TRUE(FailsWith(r, Errc::expired, "snapshot"));
  EXPECT_TRUE(SameTree(client_meta(), meta));

  repo_->snapshot_lifetime = days{7};
  publish_timestamp(later);
  EXPECT_TRUE(Succeeds(refresh(later)));
}

TEST_F(TufAttackTest, ExpiredTargetsIsFreeze) {
  repo_->targets_lifetime = hours{1};
  ASSERT_TRUE(repo_->add_target("pkg/b", "bbb"));
  publish();
  ASSERT_TRUE(Succeeds(refresh()));
  const Tree meta = client_meta();
  const TimePoint later = t0_ + hours{2};

  auto r = refresh(later);
  EXPECT_TRUE(FailsWith(r, Errc::expired, "targets"));
  EXPECT_TRUE(SameTree(client_meta(), meta));

  repo_->targets_lifetime = days{90};
  ASSERT_TRUE(repo_->add_target("pkg/c", "ccc"));
  publish(later);
  EXPECT_TRUE(Succeeds(refresh(later)));
}

// ---- 5. mix-and-match -----------------------------------------------------------

TEST_F(TufAttackTest, TargetsVersionOtherThanSnapshotNamesIsVersionMismatch) {
  // Without length/hash pins only the version check can catch it.
  repo_->pin_hashes = false;
  ASSERT_TRUE(repo_->add_target("pkg/b", "bbb"));
  publish();  // targets 2
  ASSERT_TRUE(Succeeds(refresh()));
  const Tree meta = client_meta();
  ASSERT_TRUE(repo_->add_target("pkg/c", "ccc"));
  publish();  // targets 3
  ASSERT_TRUE(repo_->add_target("pkg/d", "ddd"));
  publish();  // targets 4, named by snapshot 4

  // Validly signed targets 3 served under the name 4.targets.json.
  const std::string targets4 = server_file("metadata/4.targets.json");
  serve("metadata/4.targets.json", server_file("metadata/3.targets.json"));
  EXPECT_TRUE(FailsWith(refresh(), Errc::version_mismatch, "targets"));
  Tree expected = meta;  // timestamp and snapshot 4 are honest and were verified
  expected["timestamp.json"] = server_role("timestamp");
  expected["snapshot.json"] = server_role("snapshot");
  EXPECT_TRUE(SameTree(client_meta(), expected));
  EXPECT_EQ(client_meta()["targets.json"], meta.at("targets.json"));  // still targets 2

  serve("metadata/4.targets.json", targets4);
  auto u = updater();
  ASSERT_TRUE(Succeeds(u.refresh()));
  EXPECT_TRUE(Succeeds(u.get_targetinfo("pkg/d")));
  EXPECT_EQ(client_meta()["targets.json"], targets4);
}

TEST_F(TufAttackTest, TargetsOtherThanSnapshotPinsIsLengthMismatch) {
  // The same swap with pins on (the default) fails earlier, on the length
  // snapshot pins (targets 1 lists fewer targets than targets 2).
  ASSERT_TRUE(Succeeds(refresh()));
  const Tree meta = client_meta();
  ASSERT_TRUE(repo_->add_target("pkg/b", "bbb"));
  publish();
  const std::string targets2 = server_file("metadata/2.targets.json");
  serve("metadata/2.targets.json", server_file("metadata/1.targets.json"));
  EXPECT_TRUE(FailsWith(refresh(), Errc::length_mismatch));
  Tree expected = meta;
  expected["timestamp.json"] = server_role("timestamp");
  expected["snapshot.json"] = server_role("snapshot");
  EXPECT_TRUE(SameTree(client_meta(), expected));

  serve("metadata/2.targets.json", targets2);
  EXPECT_TRUE(Succeeds(refresh()));
}

TEST_F(TufAttackTest, SnapshotOtherThanTimestampPinsIsHashMismatch) {
  // An attacker with the snapshot key (not the timestamp key) serves another
  // validly signed snapshot 2 of the same length: only the hash the
  // timestamp pins tells it apart.
  ASSERT_TRUE(Succeeds(refresh()));
  const Tree meta = client_meta();
  ASSERT_TRUE(repo_->add_target("pkg/b", "bbb"));
  publish();
  const std::string snapshot2 = server_file("metadata/2.snapshot.json");
  json signed_json = parse(snapshot2)["signed"];
  auto expires = parse_expires(signed_json["expires"].get<std::string>());
  ASSERT_TRUE(expires);
  signed_json["expires"] = format_expires(*expires + std::chrono::seconds{1});
  const std::string evil = sign_envelope(signed_json, {{&key_of("snapshot"), std::nullopt}});
  ASSERT_EQ(evil.size(), snapshot2.size());
  serve("metadata/2.snapshot.json", evil);
  EXPECT_TRUE(FailsWith(refresh(), Errc::hash_mismatch));
  Tree expected = meta;
  expected["timestamp.json"] = server_role("timestamp");
  EXPECT_TRUE(SameTree(client_meta(), expected));

  serve("metadata/2.snapshot.json", snapshot2);
  ASSERT_TRUE(Succeeds(refresh()));
  EXPECT_EQ(client_meta()["snapshot.json"], snapshot2);
}

// ---- 6. threshold ---------------------------------------------------------------

class TufThresholdTest : public TufAttackTest {
 protected:
  TufThresholdTest() {
    root_keys_ = 3;
    root_threshold_ = 2;
  }
};

TEST_F(TufThresholdTest, NewRootBelowThresholdIsBadSignature) {
  ASSERT_TRUE(Succeeds(refresh()));
  const Tree meta = client_meta();
  ASSERT_TRUE(repo_->rotate("timestamp", new_key()));
  publish();  // 2.root.json signed by all three root keys
  const std::string full = server_file("metadata/2.root.json");
  const json sigs = parse(full)["signatures"];
  ASSERT_EQ(sigs.size(), 3u);

  // Signatures of 2.root.json -> what the client must say.
  auto with_signatures = [&](const json& list) {
    json doc = parse(full);
    doc["signatures"] = list;
    return doc.dump(1) + "\n";
  };
  const json b_keyid_a_sig = {{"keyid", sigs[1]["keyid"]}, {"sig", sigs[0]["sig"]}};
  const std::vector<std::pair<std::string, json>> attacks = {
      {"one valid signature", json::array({sigs[0]})},
      {"one signature twice", json::array({sigs[0], sigs[0]})},
      {"one signature under two keyids", json::array({sigs[0], b_keyid_a_sig})},
      {"no signature", json::array()},
  };
  for (const auto& [what, list] : attacks) {
    SCOPED_TRACE(what);
    serve("metadata/2.root.json", with_signatures(list));
    // One key id twice in `signatures` is refused as a field error before any
    // signature is counted (tests/unit/tuf_duplicates_test.cpp).
    EXPECT_TRUE(FailsWith(refresh(),
                          what == "one signature twice" ? Errc::bad_field : Errc::bad_signature));
    EXPECT_TRUE(SameTree(client_meta(), meta));
  }

  // Control: two distinct valid signatures meet threshold 2.
  serve("metadata/2.root.json", with_signatures(json::array({sigs[0], sigs[2]})));
  auto u = updater();
  ASSERT_TRUE(Succeeds(u.refresh()));
  EXPECT_EQ(u.trusted()->root().signed_.version, 2u);
}

// ---- 7. wrong key type ------------------------------------------------------------

TEST_F(TufAttackTest, TimestampKeyDeclaredRsaIsBadSignature) {
  // The client's trusted root declares the timestamp key (same keyid, same
  // public bytes) as "rsa": the Ed25519 signature over the timestamp must not
  // verify under it.
  const std::string ts_id = repo_->root.roles.at("timestamp").keyids.front();
  repo_->root.keys.at(ts_id).keytype = "rsa";
  const std::string root1 = signed_role("root");
  serve("metadata/1.root.json", root1);
  serve("metadata/root.json", root1);
  ASSERT_TRUE(atomic_write_file(meta_dir() / "root.json", root1));
  const Tree meta = client_meta();

  auto r = refresh();
  EXPECT_TRUE(FailsWith(r, Errc::bad_signature, "timestamp"));
  EXPECT_TRUE(SameTree(client_meta(), meta));

  // Root 2 declares it as ed25519 again: the same timestamp now verifies.
  repo_->root.keys.at(ts_id).keytype = "ed25519";
  ASSERT_TRUE(repo_->rotate("snapshot", new_key()));
  publish();
  EXPECT_TRUE(Succeeds(refresh()));
}

// ---- 8. root rotation chains ------------------------------------------------------

class TufRootChainTest : public TufAttackTest {
 protected:
  // Roots 2, 3 and 4, each with a new root key and a new timestamp key.
  void publish_chain() {
    for (int i = 2; i <= 4; ++i) {
      ASSERT_TRUE(repo_->rotate("root", new_key()));
      ASSERT_TRUE(repo_->rotate("timestamp", new_key()));
      publish();
    }
  }
};

TEST_F(TufRootChainTest, ChainOfSeveralRotationsIsFollowed) {
  publish_chain();
  auto u = updater();
  ASSERT_TRUE(Succeeds(u.refresh()));
  EXPECT_EQ(u.trusted()->root().signed_.version, 4u);
  EXPECT_EQ(client_meta()["root.json"], server_file("metadata/4.root.json"));
  for (const char* f : {"/2.root.json", "/3.root.json", "/4.root.json", "/5.root.json"}) {
    EXPECT_EQ(fetcher_.requests(f), 1u) << f;  // 5: the not-found that ends the chain
  }
  EXPECT_TRUE(Succeeds(u.download_target(*u.get_targetinfo(kTarget))));
}

TEST_F(TufRootChainTest, ChainWithAGapStopsBeforeIt) {
  publish_chain();
  const std::string root3 = server_file("metadata/3.root.json");
  std::filesystem::remove(server_ / "metadata/3.root.json");

  // Spec 5.3.3: the client asks for N+1 until the first not-found, so the
  // chain ends at root 2 and 4.root.json is never asked for (root 4 cannot
  // be verified without root 3 anyway). Root 2 is honest and was persisted
  // (5.3.8), but its timestamp key is not the one root 4 rotated in and
  // that signs the timestamp now served: the timestamp fails verification.
  auto u = updater();
  auto r = u.refresh();
  EXPECT_TRUE(FailsWith(r, Errc::bad_signature, "timestamp"));
  EXPECT_EQ(u.trusted()->root().signed_.version, 2u);
  EXPECT_EQ(fetcher_.requests("/3.root.json"), 1u);
  EXPECT_EQ(fetcher_.requests("/4.root.json"), 0u);
  // (Each accepted root also stays as <N>.root.json: the commit helper walks the chain.)
  EXPECT_TRUE(SameTree(client_meta(), {{"root.json", server_file("metadata/2.root.json")},
                                       {"2.root.json", server_file("metadata/2.root.json")}}));

  serve("metadata/3.root.json", root3);
  auto honest = updater();
  ASSERT_TRUE(Succeeds(honest.refresh()));
  EXPECT_EQ(honest.trusted()->root().signed_.version, 4u);
}

// ---- 9. fast-forward recovery -------------------------------------------------------

TEST_F(TufAttackTest, TimestampKeyRotationRecoversFromFastForward) {
  ASSERT_TRUE(Succeeds(refresh()));

  // An attacker with the (old) timestamp key pushes the timestamp far ahead.
  repo_->timestamp.version = 1'000'000;
  serve("metadata/timestamp.json", signed_role("timestamp"));
  ASSERT_TRUE(Succeeds(refresh()));
  ASSERT_EQ(client_meta()["timestamp.json"], server_file("metadata/timestamp.json"));

  // Control: honest timestamps are rollbacks now, until the key is rotated.
  repo_->timestamp.version = 1;
  publish_timestamp();  // timestamp 2
  const Tree meta = client_meta();
  EXPECT_TRUE(FailsWith(refresh(), Errc::rollback));
  EXPECT_TRUE(SameTree(client_meta(), meta));

  // Recovery: root 2 rotates the timestamp key; the client drops its
  // fast-forwarded timestamp (and snapshot) and accepts timestamp 3.
  ASSERT_TRUE(repo_->rotate("timestamp", new_key()));
  publish();
  auto u = updater();
  ASSERT_TRUE(Succeeds(u.refresh()));
  EXPECT_EQ(u.trusted()->timestamp()->signed_.version, 3u);
  EXPECT_EQ(client_meta()["timestamp.json"], server_file("metadata/timestamp.json"));
  EXPECT_EQ(client_meta()["snapshot.json"], server_role("snapshot"));
}

TEST_F(TufAttackTest, SnapshotKeyRotationRecoversFromSnapshotFastForward) {
  ASSERT_TRUE(Succeeds(refresh()));

  // An attacker with the timestamp and snapshot keys pushes the snapshot
  // version the timestamp names far ahead.
  repo_->snapshot.version = 999'999;
  publish_timestamp();  // snapshot 1'000'000, timestamp 2
  ASSERT_TRUE(Succeeds(refresh()));

  // Control: an honest timestamp naming a low snapshot version is a rollback.
  repo_->snapshot.version = 1;
  publish_timestamp();  // snapshot 2, timestamp 3
  const Tree meta = client_meta();
  EXPECT_TRUE(FailsWith(refresh(), Errc::rollback, "timestamp"));
  EXPECT_TRUE(SameTree(client_meta(), meta));

  // Recovery: root 2 rotates only the snapshot key. The timestamp key is
  // unchanged, so the persisted timestamp 2 would still verify; only its
  // deletion after the rotation (spec 5.3.11: timestamp "and/or" snapshot
  // keys) lets the client accept snapshot 3.
  ASSERT_TRUE(repo_->rotate("snapshot", new_key()));
  publish();
  auto u = updater();
  ASSERT_TRUE(Succeeds(u.refresh()));
  EXPECT_EQ(u.trusted()->snapshot()->signed_.version, 3u);
  EXPECT_EQ(client_meta()["timestamp.json"], server_file("metadata/timestamp.json"));
  EXPECT_EQ(client_meta()["snapshot.json"], server_role("snapshot"));
}

TEST_F(TufAttackTest, FastForwardRecoveryAlsoWhenTheRotatingRootHadExpired) {
  ASSERT_TRUE(Succeeds(refresh()));
  repo_->snapshot.version = 999'999;
  publish_timestamp();  // the attacker's: snapshot 1'000'000, timestamp 2
  ASSERT_TRUE(Succeeds(refresh()));

  // Root 2 rotates the snapshot key but has expired by the time the client
  // sees it: the update fails as a freeze, root 2 already persisted (5.3.8).
  repo_->snapshot.version = 1;
  repo_->root_lifetime = hours{1};
  ASSERT_TRUE(repo_->rotate("snapshot", new_key()));
  publish();  // root 2, snapshot 2, timestamp 3
  const TimePoint later = t0_ + hours{2};
  EXPECT_TRUE(FailsWith(refresh(later), Errc::expired, "root"));
  EXPECT_EQ(client_meta()["root.json"], server_file("metadata/2.root.json"));

  // Root 3 is fresh and rotates no timestamp or snapshot key. The timestamp
  // the attacker pushed ahead under the old snapshot key must not block the
  // honest one now: the rotation in root 2 still counts.
  repo_->root_lifetime = days{365};
  ASSERT_TRUE(repo_->rotate("targets", new_key()));
  publish(later);  // root 3, targets 2, snapshot 3, timestamp 4
  auto u = updater(later);
  ASSERT_TRUE(Succeeds(u.refresh()));
  EXPECT_EQ(u.trusted()->root().signed_.version, 3u);
  EXPECT_EQ(u.trusted()->snapshot()->signed_.version, 3u);
}

// ---- 10. delegations ----------------------------------------------------------------

class TufDelegationTest : public TufAttackTest {
 protected:
  void delegate_vendor() {
    vendor_keyid_ = keyid_of(vendor_key_holder_);
    ASSERT_TRUE(repo_->add_delegation("vendor", {"vendor/*"}, std::move(vendor_key_holder_)));
    ASSERT_TRUE(repo_->add_target("vendor/x", "vendor x", nullptr, "vendor"));
    // Listed by vendor, but outside the paths vendor is trusted for (which
    // add_target refuses: put in by hand, as a vendor key holder could).
    repo_->delegated.at("vendor").targets["other/y"] = target_file("other/y", "other y");
    serve("targets/other/" + crypto::sha256_hex("other y") + ".y", "other y");
    publish();
  }
  const crypto::PrivateKey& vendor_key() const { return repo_->signing_keys().at(vendor_keyid_); }

  crypto::PrivateKey vendor_key_holder_ = new_key();
  std::string vendor_keyid_;
};

TEST_F(TufDelegationTest, DelegatedRoleIsTrustedOnlyForItsPaths) {
  delegate_vendor();
  auto u = updater();
  ASSERT_TRUE(Succeeds(u.refresh()));
  const Tree meta = client_meta();

  EXPECT_TRUE(FailsWith(u.get_targetinfo("other/y"), Errc::not_found));
  EXPECT_EQ(fetcher_.requests(".vendor.json"), 0u);  // no delegation covers it
  EXPECT_TRUE(SameTree(client_meta(), meta));

  auto x = u.get_targetinfo("vendor/x");
  ASSERT_TRUE(Succeeds(x));
  auto path = u.download_target(*x);
  ASSERT_TRUE(Succeeds(path));
  EXPECT_EQ(tests::support::read_file(*path), "vendor x");
  EXPECT_TRUE(FailsWith(u.get_targetinfo("other/y"), Errc::not_found));  // vendor loaded now

  auto all = u.all_targets();
  ASSERT_TRUE(Succeeds(all));
  std::set<std::string> paths;
  for (const auto& t : *all) paths.insert(t.path);
  EXPECT_EQ(paths, (std::set<std::string>{kTarget, "vendor/x"}));
}

TEST_F(TufDelegationTest, NestedDelegationCannotWidenItsParentsPaths) {
  // vendor (trusted for vendor/*) delegates "sub" for */*: sub is trusted for
  // vendor/... through vendor, and for nothing else, whatever it lists.
  delegate_vendor();
  crypto::PrivateKey sub_key = new_key();
  Targets sub;
  sub.expires = t0_ + days{30};
  sub.targets["vendor/ok"] = target_file("vendor/ok", "ok");
  sub.targets["other/z"] = target_file("other/z", "zz");
  serve("targets/vendor/" + crypto::sha256_hex("ok") + ".ok", "ok");
  serve("targets/other/" + crypto::sha256_hex("zz") + ".z", "zz");
  const std::string sub_bytes = sign_envelope(to_json(sub), {{&sub_key, std::nullopt}});
  serve("metadata/1.sub.json", sub_bytes);
  Delegations d;
  d.keys.emplace(keyid_of(sub_key), Key::from_public(sub_key.public_key()));
  DelegatedRole role;
  role.name = "sub";
  role.keyids = {keyid_of(sub_key)};
  role.paths = std::vector<std::string>{"*/*"};
  d.roles.push_back(role);
  repo_->delegated.at("vendor").delegations = d;
  repo_->snapshot.meta["sub.json"] =
      MetaFile{1, sub_bytes.size(), {{"sha256", crypto::sha256_hex(sub_bytes)}}};
  ASSERT_TRUE(repo_->add_target("vendor/w", "vendor w", nullptr, "vendor"));
  publish();

  auto u = updater();
  ASSERT_TRUE(Succeeds(u.refresh()));
  EXPECT_TRUE(Succeeds(u.get_targetinfo("vendor/ok")));
  EXPECT_TRUE(FailsWith(u.get_targetinfo("other/z"), Errc::not_found));
  auto all = u.all_targets();
  ASSERT_TRUE(Succeeds(all));
  std::set<std::string> paths;
  for (const auto& t : *all) paths.insert(t.path);
  EXPECT_EQ(paths, (std::set<std::string>{kTarget, "vendor/x", "vendor/w", "vendor/ok"}));
}

TEST_F(TufDelegationTest, DelegatedRoleSignedByAnotherKeyIsBadSignature) {
  // Unpinned, so the substituted file reaches the signature check.
  repo_->pin_hashes = false;
  delegate_vendor();
  auto u = updater();
  ASSERT_TRUE(Succeeds(u.refresh()));
  const Tree meta = client_meta();
  const std::string vendor1 = server_file("metadata/1.vendor.json");

  crypto::PrivateKey attacker = new_key();
  const std::vector<std::pair<std::string, std::vector<Signer>>> attacks = {
      {"attacker's key under its own keyid", {{&attacker, std::nullopt}}},
      {"attacker's key claiming vendor's keyid", {{&attacker, vendor_keyid_}}},
      {"targets key (trusted, but not for vendor)", {{&key_of("targets"), std::nullopt}}},
  };
  for (const auto& [what, signers] : attacks) {
    SCOPED_TRACE(what);
    serve("metadata/1.vendor.json", resign(vendor1, signers));
    auto fresh = updater();
    ASSERT_TRUE(Succeeds(fresh.refresh()));
    EXPECT_TRUE(FailsWith(fresh.get_targetinfo("vendor/x"), Errc::bad_signature));
    EXPECT_TRUE(SameTree(client_meta(), meta));
  }

  // Control: re-signed with the vendor key, the same bytes are accepted.
  serve("metadata/1.vendor.json", resign(vendor1, {{&vendor_key(), std::nullopt}}));
  auto honest = updater();
  ASSERT_TRUE(Succeeds(honest.refresh()));
  EXPECT_TRUE(Succeeds(honest.get_targetinfo("vendor/x")));
}

class TufTerminatingTest : public TufAttackTest, public ::testing::WithParamInterface<bool> {};

TEST_P(TufTerminatingTest, TerminatingDelegationStopsTheSearch) {
  const bool terminating = GetParam();
  ASSERT_TRUE(repo_->add_delegation("first", {"shared/*"}, new_key(), terminating));
  ASSERT_TRUE(repo_->add_delegation("second", {"shared/*"}, new_key()));
  ASSERT_TRUE(repo_->add_target("shared/other", "o", nullptr, "first"));
  ASSERT_TRUE(repo_->add_target("shared/z", "z", nullptr, "second"));
  publish();
  auto u = updater();
  ASSERT_TRUE(Succeeds(u.refresh()));

  auto z = u.get_targetinfo("shared/z");
  EXPECT_EQ(fetcher_.requests(".first.json"), 1u);  // higher priority: always asked
  if (terminating) {
    EXPECT_TRUE(FailsWith(z, Errc::not_found));
    EXPECT_EQ(fetcher_.requests(".second.json"), 0u);
  } else {
    EXPECT_TRUE(Succeeds(z));
    EXPECT_EQ(fetcher_.requests(".second.json"), 1u);
  }
  // The listing agrees with the search.
  auto all = u.all_targets();
  ASSERT_TRUE(Succeeds(all));
  std::set<std::string> paths;
  for (const auto& t : *all) paths.insert(t.path);
  std::set<std::string> expected{kTarget, "shared/other"};
  if (!terminating) expected.insert("shared/z");
  EXPECT_EQ(paths, expected);
}

INSTANTIATE_TEST_SUITE_P(Terminating, TufTerminatingTest, ::testing::Bool(),
                         [](const auto& param_info) { return param_info.param ? "Yes" : "No"; });

// ---- 11. wrong signer, malformed ----------------------------------------------------

TEST_F(TufAttackTest, TimestampSignedByAKeyNotInItsRoleIsBadSignature) {
  ASSERT_TRUE(Succeeds(refresh()));
  const Tree meta = client_meta();
  ++repo_->timestamp.version;
  const std::string ts2 = signed_role("timestamp");

  crypto::PrivateKey attacker = new_key();
  const std::string ts_keyid = keyid_of(key_of("timestamp"));
  const std::vector<std::pair<std::string, std::vector<Signer>>> attacks = {
      {"snapshot key (in root, other role)", {{&key_of("snapshot"), std::nullopt}}},
      {"snapshot key claiming timestamp's keyid", {{&key_of("snapshot"), ts_keyid}}},
      {"root key", {{&key_of("root"), std::nullopt}}},
      {"unknown key claiming timestamp's keyid", {{&attacker, ts_keyid}}},
  };
  for (const auto& [what, signers] : attacks) {
    SCOPED_TRACE(what);
    serve("metadata/timestamp.json", resign(ts2, signers));
    EXPECT_TRUE(FailsWith(refresh(), Errc::bad_signature));
    EXPECT_TRUE(SameTree(client_meta(), meta));
  }

  // Control: the same re-signing with the timestamp key is accepted.
  const std::string good = resign(ts2, {{&key_of("timestamp"), std::nullopt}});
  serve("metadata/timestamp.json", good);
  ASSERT_TRUE(Succeeds(refresh()));
  EXPECT_EQ(client_meta()["timestamp.json"], good);
}

TEST_F(TufAttackTest, RootSignedOnlyByItsOwnNewKeyIsBadSignature) {
  // An attacker's root 2 that makes its own key the root key: it satisfies
  // itself but not the trusted root 1.
  ASSERT_TRUE(Succeeds(refresh()));
  const Tree meta = client_meta();
  crypto::PrivateKey attacker = new_key();
  const std::string attacker_id = keyid_of(attacker);
  ASSERT_TRUE(repo_->rotate("root", std::move(attacker)));
  publish();  // signed by the old and the new root key
  const std::string full = server_file("metadata/2.root.json");
  json doc = parse(full);
  json only_new = json::array();
  for (const auto& s : doc["signatures"]) {
    if (s["keyid"] == attacker_id) only_new.push_back(s);
  }
  ASSERT_EQ(only_new.size(), 1u);
  doc["signatures"] = only_new;
  serve("metadata/2.root.json", doc.dump(1) + "\n");
  EXPECT_TRUE(FailsWith(refresh(), Errc::bad_signature));
  EXPECT_TRUE(SameTree(client_meta(), meta));

  serve("metadata/2.root.json", full);  // control: both signatures
  EXPECT_TRUE(Succeeds(refresh()));
}

TEST_F(TufAttackTest, MalformedMetadataIsMalformed) {
  ASSERT_TRUE(Succeeds(refresh()));
  const Tree meta = client_meta();
  const std::string ts = server_file("metadata/timestamp.json");

  const std::vector<std::pair<std::string, std::string>> attacks = {
      {"metadata/timestamp.json", ts.substr(0, ts.size() / 2)},  // cut mid-document
      {"metadata/timestamp.json", "not json at all"},
      {"metadata/timestamp.json", "[]"},
      {"metadata/2.root.json", "{\"signatures\": [], \"signed\": "},
  };
  for (const auto& [file, bytes] : attacks) {
    SCOPED_TRACE(file + ": " + bytes.substr(0, 40));
    serve(file, bytes);
    EXPECT_TRUE(FailsWith(refresh(), Errc::malformed));
    EXPECT_TRUE(SameTree(client_meta(), meta));
    if (file == "metadata/timestamp.json") {
      serve(file, ts);
    } else {
      std::filesystem::remove(server_ / file);
    }
  }
  EXPECT_TRUE(Succeeds(refresh()));
  EXPECT_TRUE(SameTree(client_meta(), meta));
}

}  // namespace
}  // namespace catalog::tuf
