// TrustedSet: the rules (TUF 1.0 section 5) under which new metadata joins the
// trusted set, driven directly with bytes that catalog::tuf::Repository signs.
#include "catalog/tuf/trusted_set.hpp"

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "catalog/canonical_json.hpp"
#include "catalog/crypto/hash.hpp"
#include "catalog/tuf/repository.hpp"

namespace catalog::tuf {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

// A fixed "now" keeps expiry arithmetic exact. Lifetimes (Repository defaults):
// root 365 days, targets 90, snapshot 7, timestamp 1.
const TimePoint kNow{std::chrono::sys_days{std::chrono::year{2030} / 1 / 1}};
const TimePoint kSoon = kNow + 1h;  // the client's reference time

#define EXPECT_ERRC(expr, errc)                                                                   \
  do {                                                                                            \
    const auto& r_ = (expr);                                                                      \
    ASSERT_FALSE(r_.has_value()) << #expr << " succeeded";                                        \
    EXPECT_EQ(r_.error().code, errc) << errc_name(r_.error().code) << ": " << r_.error().message; \
  } while (0)

#define ASSERT_OK(expr)                                                 \
  do {                                                                  \
    const auto& r_ = (expr);                                            \
    ASSERT_TRUE(r_.has_value()) << #expr << ": " << r_.error().message; \
  } while (0)

std::string hex(std::string_view raw) {
  return crypto::to_hex(std::span<const unsigned char>(
      reinterpret_cast<const unsigned char*>(raw.data()), raw.size()));
}

class TrustedSetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto r = Repository::create(kNow);
    ASSERT_TRUE(r.has_value()) << r.error().message;
    repo_.emplace(std::move(*r));
    ASSERT_OK(repo_->publish(writer(), kNow));
    root1_ = files_.at("metadata/1.root.json");
  }

  FileWriter writer() {
    return [this](const std::string& rel, const std::string& bytes) -> Result<void> {
      files_[rel] = bytes;
      return {};
    };
  }

  // Signed envelope of `role` in the repository's current state.
  std::string sign(const std::string& role) {
    auto b = repo_->sign_role(role);
    EXPECT_TRUE(b.has_value()) << role << ": " << b.error().message;
    return b.value_or("");
  }

  MetaFile pin(std::uint64_t version, const std::string& bytes) const {
    MetaFile m;
    m.version = version;
    if (repo_->pin_hashes) {
      m.length = bytes.size();
      m.hashes["sha256"] = crypto::sha256_hex(bytes);
    }
    return m;
  }

  // Signs targets and records it in snapshot (no version bump).
  std::string sign_targets() {
    std::string b = sign("targets");
    repo_->snapshot.meta["targets.json"] = pin(repo_->targets.version, b);
    return b;
  }
  // Signs snapshot and records it in timestamp (no version bump).
  std::string sign_snapshot() {
    std::string b = sign("snapshot");
    repo_->timestamp.snapshot_meta = pin(repo_->snapshot.version, b);
    return b;
  }

  struct Chain {
    std::string timestamp, snapshot, targets;
  };
  // targets -> snapshot -> timestamp, each pinning the previous.
  Chain chain() {
    Chain c;
    c.targets = sign_targets();
    c.snapshot = sign_snapshot();
    c.timestamp = sign("timestamp");
    return c;
  }

  // `bytes` with its signatures replaced by one of each key in `keyids`.
  std::string signed_by(const std::string& bytes, const std::vector<std::string>& keyids) {
    auto doc = parse_json(bytes);
    EXPECT_TRUE(doc.has_value());
    if (!doc) return "";
    const std::string canon = canonical_json((*doc)["signed"]).value_or("");
    json sigs = json::array();
    for (const auto& id : keyids) {
      auto sig = repo_->signing_keys().at(id).sign(canon);
      EXPECT_TRUE(sig.has_value());
      sigs.push_back({{"keyid", id}, {"sig", hex(sig.value_or(""))}});
    }
    (*doc)["signatures"] = sigs;
    return doc->dump(1);
  }

  std::string key_of(const std::string& role) const { return repo_->root.roles.at(role).keyids[0]; }

  Result<TrustedSet> trusted(TimePoint at = kSoon) const { return TrustedSet::create(root1_, at); }

  std::optional<Repository> repo_;
  std::map<std::string, std::string> files_;
  std::string root1_;
};

// ---- the honest path --------------------------------------------------------

TEST_F(TrustedSetTest, SigningIsDeterministicAndMatchesPublish) {
  const Chain c = chain();
  EXPECT_EQ(c.timestamp, files_.at("metadata/timestamp.json"));
  EXPECT_EQ(c.snapshot, files_.at("metadata/1.snapshot.json"));
  EXPECT_EQ(c.targets, files_.at("metadata/1.targets.json"));
}

TEST_F(TrustedSetTest, HonestChainIsAccepted) {
  auto ts = trusted();
  ASSERT_OK(ts);
  EXPECT_EQ(ts->root().signed_.version, 1u);
  EXPECT_EQ(ts->reference_time(), kSoon);
  ASSERT_OK(ts->check_final_root());
  const Chain c = chain();
  bool unchanged = true;
  ASSERT_OK(ts->update_timestamp(c.timestamp, &unchanged));
  EXPECT_FALSE(unchanged);
  ASSERT_OK(ts->update_snapshot(c.snapshot));
  ASSERT_OK(ts->update_delegated_targets(c.targets, "targets", "root"));
  ASSERT_TRUE(ts->timestamp().has_value());
  EXPECT_EQ(ts->timestamp()->signed_.version, 1u);
  ASSERT_TRUE(ts->snapshot().has_value());
  EXPECT_EQ(ts->snapshot()->signed_.version, 1u);
  ASSERT_NE(ts->targets("targets"), nullptr);
  EXPECT_EQ(ts->targets("targets")->signed_.version, 1u);
  EXPECT_EQ(ts->targets("pkgs"), nullptr);
}

TEST_F(TrustedSetTest, DelegatedTargetsAccepted) {
  auto key = crypto::PrivateKey::generate();
  ASSERT_OK(key);
  ASSERT_OK(repo_->add_delegation("pkgs", {"pkg/*"}, std::move(*key)));
  ASSERT_OK(repo_->add_target("pkg/a", "aaa", nullptr, "pkgs"));
  ASSERT_OK(repo_->publish(writer(), kNow));  // targets v2, pkgs v1, snapshot/timestamp v2
  auto ts = trusted();
  ASSERT_OK(ts);
  ASSERT_OK(ts->update_timestamp(files_.at("metadata/timestamp.json")));
  ASSERT_OK(ts->update_snapshot(files_.at("metadata/2.snapshot.json")));
  const std::string pkgs = files_.at("metadata/1.pkgs.json");
  // The delegator must be loaded first.
  EXPECT_ERRC(ts->update_delegated_targets(pkgs, "pkgs", "targets"), Errc::not_found);
  ASSERT_OK(ts->update_delegated_targets(files_.at("metadata/2.targets.json"), "targets", "root"));
  EXPECT_ERRC(ts->update_delegated_targets(pkgs, "pkgs", "root"), Errc::not_found);
  EXPECT_ERRC(ts->update_delegated_targets(pkgs, "other", "targets"), Errc::not_found);
  ASSERT_OK(ts->update_delegated_targets(pkgs, "pkgs", "targets"));
  ASSERT_NE(ts->targets("pkgs"), nullptr);
  EXPECT_TRUE(ts->targets("pkgs")->signed_.targets.contains("pkg/a"));
}

// ---- root -------------------------------------------------------------------

TEST_F(TrustedSetTest, RootMustBeSelfSigned) {
  EXPECT_ERRC(TrustedSet::create(signed_by(root1_, {}), kSoon), Errc::bad_signature);
  EXPECT_ERRC(TrustedSet::create(signed_by(root1_, {key_of("timestamp")}), kSoon),
              Errc::bad_signature);
  EXPECT_ERRC(TrustedSet::create("{}", kSoon), Errc::bad_field);
  EXPECT_ERRC(TrustedSet::create("not json", kSoon), Errc::malformed);
}

TEST_F(TrustedSetTest, RootThresholdCountsDistinctKeys) {
  auto r = Repository::create(kNow, /*root_keys=*/3, /*root_threshold=*/2);
  ASSERT_OK(r);
  const auto ids = r->root.roles.at("root").keyids;
  ASSERT_EQ(ids.size(), 3u);
  repo_.emplace(std::move(*r));
  const std::string root = sign("root");
  ASSERT_OK(TrustedSet::create(root, kSoon));
  ASSERT_OK(TrustedSet::create(signed_by(root, {ids[0], ids[2]}), kSoon));
  EXPECT_ERRC(TrustedSet::create(signed_by(root, {ids[1]}), kSoon), Errc::bad_signature);
  // One key id twice in `signatures` refuses the file before any signature
  // counts (tests/unit/tuf_duplicates_test.cpp).
  EXPECT_ERRC(TrustedSet::create(signed_by(root, {ids[1], ids[1]}), kSoon), Errc::bad_field);
}

TEST_F(TrustedSetTest, RootNextVersionAccepted) {
  auto ts = trusted();
  ASSERT_OK(ts);
  repo_->root.version = 2;
  ASSERT_OK(ts->update_root(sign("root")));
  EXPECT_EQ(ts->root().signed_.version, 2u);
  repo_->root.version = 3;
  ASSERT_OK(ts->update_root(sign("root")));
  EXPECT_EQ(ts->root().signed_.version, 3u);
  ASSERT_OK(ts->check_final_root());
}

TEST_F(TrustedSetTest, RootSkippingAVersionIsVersionMismatch) {
  auto ts = trusted();
  ASSERT_OK(ts);
  repo_->root.version = 3;
  EXPECT_ERRC(ts->update_root(sign("root")), Errc::version_mismatch);
  EXPECT_EQ(ts->root().signed_.version, 1u);
}

TEST_F(TrustedSetTest, RootSameVersionIsRollback) {
  auto ts = trusted();
  ASSERT_OK(ts);
  EXPECT_ERRC(ts->update_root(root1_), Errc::rollback);
  // Also when the content differs but the version does not.
  repo_->root.expires = kNow + 100 * 24h;
  EXPECT_ERRC(ts->update_root(sign("root")), Errc::rollback);
  EXPECT_EQ(ts->root().canonical_signed, parse_metadata<Root>(root1_)->canonical_signed);
}

TEST_F(TrustedSetTest, RootOlderVersionIsRollback) {
  repo_->root.version = 2;
  auto ts = TrustedSet::create(sign("root"), kSoon);
  ASSERT_OK(ts);
  EXPECT_ERRC(ts->update_root(root1_), Errc::rollback);
  EXPECT_EQ(ts->root().signed_.version, 2u);
}

class RootRotationTest : public TrustedSetTest {
 protected:
  void SetUp() override {
    TrustedSetTest::SetUp();
    if (HasFatalFailure()) return;
    old_id_ = key_of("root");
    auto key = crypto::PrivateKey::generate();
    ASSERT_OK(key);
    new_id_ = Key::from_public(key->public_key()).keyid();
    ASSERT_OK(repo_->rotate("root", std::move(*key)));
    repo_->root.version = 2;
    root2_ = sign("root");
  }

  std::string old_id_, new_id_, root2_;
};

TEST_F(RootRotationTest, SignedByOldAndNewKeysIsAccepted) {
  auto doc = parse_json(root2_);
  ASSERT_OK(doc);
  ASSERT_EQ((*doc)["signatures"].size(), 2u);  // rotate() makes both sign
  auto ts = trusted();
  ASSERT_OK(ts);
  ASSERT_OK(ts->update_root(root2_));
  EXPECT_EQ(ts->root().signed_.roles.at("root").keyids, std::vector<std::string>{new_id_});
  // The next root needs only the new key.
  repo_->root.version = 3;
  ASSERT_OK(ts->update_root(signed_by(sign("root"), {new_id_})));
  EXPECT_EQ(ts->root().signed_.version, 3u);
}

TEST_F(RootRotationTest, SignedOnlyByOldKeysIsBadSignature) {
  auto ts = trusted();
  ASSERT_OK(ts);
  auto r = ts->update_root(signed_by(root2_, {old_id_}));
  EXPECT_ERRC(r, Errc::bad_signature);
  EXPECT_THAT(r.error().message, HasSubstr("by new root"));
  EXPECT_EQ(ts->root().signed_.version, 1u);
}

TEST_F(RootRotationTest, SignedOnlyByNewKeysIsBadSignature) {
  auto ts = trusted();
  ASSERT_OK(ts);
  auto r = ts->update_root(signed_by(root2_, {new_id_}));
  EXPECT_ERRC(r, Errc::bad_signature);
  EXPECT_THAT(r.error().message, HasSubstr("by trusted root"));
  EXPECT_EQ(ts->root().signed_.version, 1u);
}

TEST_F(RootRotationTest, OtherRolesFollowTheNewRoot) {
  // Rotate the timestamp key in root v3; a timestamp signed by the old key is
  // then refused, one by the new key accepted.
  auto ts = trusted();
  ASSERT_OK(ts);
  ASSERT_OK(ts->update_root(root2_));
  const std::string old_ts = key_of("timestamp");
  auto key = crypto::PrivateKey::generate();
  ASSERT_OK(key);
  const std::string new_ts = Key::from_public(key->public_key()).keyid();
  ASSERT_OK(repo_->rotate("timestamp", std::move(*key)));
  repo_->root.version = 3;
  ASSERT_OK(ts->update_root(sign("root")));
  const Chain c = chain();
  EXPECT_ERRC(ts->update_timestamp(signed_by(c.timestamp, {old_ts})), Errc::bad_signature);
  ASSERT_OK(ts->update_timestamp(c.timestamp));
}

// ---- timestamp --------------------------------------------------------------

TEST_F(TrustedSetTest, TimestampSignedByWrongRoleIsBadSignature) {
  auto ts = trusted();
  ASSERT_OK(ts);
  const Chain c = chain();
  EXPECT_ERRC(ts->update_timestamp(signed_by(c.timestamp, {key_of("snapshot")})),
              Errc::bad_signature);
  EXPECT_FALSE(ts->timestamp().has_value());
}

TEST_F(TrustedSetTest, TimestampRollback) {
  const std::string ts1 = chain().timestamp;
  repo_->timestamp.version = 2;
  const std::string ts2 = sign("timestamp");
  auto ts = trusted();
  ASSERT_OK(ts);
  ASSERT_OK(ts->update_timestamp(ts2));
  EXPECT_ERRC(ts->update_timestamp(ts1), Errc::rollback);
  EXPECT_EQ(ts->timestamp()->signed_.version, 2u);
}

TEST_F(TrustedSetTest, TimestampEqualVersionKeepsTrustedCopy) {
  const std::string ts1 = chain().timestamp;
  repo_->timestamp.expires = kNow + 48h;  // same version, other content
  const std::string ts1b = sign("timestamp");
  ASSERT_NE(ts1, ts1b);
  auto ts = trusted();
  ASSERT_OK(ts);
  bool unchanged = true;
  ASSERT_OK(ts->update_timestamp(ts1, &unchanged));
  EXPECT_FALSE(unchanged);
  ASSERT_OK(ts->update_timestamp(ts1b, &unchanged));
  EXPECT_TRUE(unchanged);
  EXPECT_EQ(ts->timestamp()->canonical_signed, parse_metadata<Timestamp>(ts1)->canonical_signed);
  EXPECT_EQ(ts->timestamp()->signed_.expires, kNow + 24h);
  // A newer one clears the flag again.
  repo_->timestamp.version = 2;
  ASSERT_OK(ts->update_timestamp(sign("timestamp"), &unchanged));
  EXPECT_FALSE(unchanged);
  EXPECT_EQ(ts->timestamp()->signed_.version, 2u);
}

TEST_F(TrustedSetTest, TimestampSnapshotVersionRollback) {
  repo_->timestamp.version = 2;
  repo_->timestamp.snapshot_meta.version = 5;
  const std::string ts2 = sign("timestamp");
  repo_->timestamp.version = 3;
  repo_->timestamp.snapshot_meta.version = 4;
  const std::string ts3 = sign("timestamp");
  auto ts = trusted();
  ASSERT_OK(ts);
  ASSERT_OK(ts->update_timestamp(ts2));
  auto r = ts->update_timestamp(ts3);
  EXPECT_ERRC(r, Errc::rollback);
  EXPECT_THAT(r.error().message, HasSubstr("snapshot version 4"));
  EXPECT_EQ(ts->timestamp()->signed_.version, 2u);
}

// ---- snapshot ---------------------------------------------------------------

TEST_F(TrustedSetTest, SnapshotVersionMismatch) {
  sign_targets();
  const std::string snap = sign("snapshot");      // version 1
  repo_->timestamp.snapshot_meta = pin(2, snap);  // bytes match, version does not
  const std::string stamp = sign("timestamp");
  auto ts = trusted();
  ASSERT_OK(ts);
  ASSERT_OK(ts->update_timestamp(stamp));
  auto r = ts->update_snapshot(snap);
  EXPECT_ERRC(r, Errc::version_mismatch);
  EXPECT_THAT(r.error().message, HasSubstr("timestamp names 2"));
}

TEST_F(TrustedSetTest, SnapshotVersionMismatchWithoutHashes) {
  repo_->pin_hashes = false;
  const std::string snap = chain().snapshot;
  repo_->timestamp.snapshot_meta.version = 2;
  const std::string stamp = sign("timestamp");
  auto ts = trusted();
  ASSERT_OK(ts);
  ASSERT_OK(ts->update_timestamp(stamp));
  EXPECT_ERRC(ts->update_snapshot(snap), Errc::version_mismatch);
}

TEST_F(TrustedSetTest, SnapshotHashMismatch) {
  const Chain c = chain();
  // Validly signed, same length, other content: the pinned hash catches it.
  repo_->snapshot.expires = kNow + 6 * 24h;
  const std::string other = sign("snapshot");
  ASSERT_EQ(other.size(), c.snapshot.size());
  ASSERT_NE(other, c.snapshot);
  auto ts = trusted();
  ASSERT_OK(ts);
  ASSERT_OK(ts->update_timestamp(c.timestamp));
  EXPECT_ERRC(ts->update_snapshot(other), Errc::hash_mismatch);
  // Same document with extra whitespace: still validly signed, but not the
  // bytes the timestamp pins.
  EXPECT_ERRC(ts->update_snapshot(c.snapshot + " "), Errc::length_mismatch);
  EXPECT_FALSE(ts->snapshot().has_value());
  ASSERT_OK(ts->update_snapshot(c.snapshot));
}

TEST_F(TrustedSetTest, SnapshotSignedByWrongRoleIsBadSignature) {
  repo_->pin_hashes = false;
  const Chain c = chain();
  auto ts = trusted();
  ASSERT_OK(ts);
  ASSERT_OK(ts->update_timestamp(c.timestamp));
  EXPECT_ERRC(ts->update_snapshot(signed_by(c.snapshot, {key_of("timestamp")})),
              Errc::bad_signature);
  EXPECT_FALSE(ts->snapshot().has_value());
}

class SnapshotRollbackTest : public TrustedSetTest {
 protected:
  // The client holds snapshot v1 (from disk, listing targets.json v2 and
  // pkgs.json v1); the repository now serves `mutate`d snapshot v2.
  void load(const std::function<void(Snapshot&)>& mutate) {
    repo_->snapshot.meta["targets.json"] = MetaFile{2, std::nullopt, {}};
    repo_->snapshot.meta["pkgs.json"] = MetaFile{1, std::nullopt, {}};
    const std::string v1 = sign("snapshot");
    repo_->snapshot.version = 2;
    mutate(repo_->snapshot);
    v2_ = sign_snapshot();
    repo_->timestamp.version = 2;
    auto ts = trusted();
    ASSERT_OK(ts);
    ts_.emplace(std::move(*ts));
    ASSERT_OK(ts_->update_timestamp(sign("timestamp")));
    // Stored (as the trusted local copy), though no longer what timestamp names.
    EXPECT_ERRC(ts_->update_snapshot(v1, /*trusted_local=*/true), Errc::version_mismatch);
    ASSERT_TRUE(ts_->snapshot().has_value());
    ASSERT_EQ(ts_->snapshot()->signed_.version, 1u);
  }

  std::optional<TrustedSet> ts_;
  std::string v2_;
};

TEST_F(SnapshotRollbackTest, HonestSuccessorAccepted) {
  load([](Snapshot& s) {
    s.meta["targets.json"].version = 3;
    s.meta["new.json"] = MetaFile{1, std::nullopt, {}};
  });
  ASSERT_OK(ts_->update_snapshot(v2_));
  EXPECT_EQ(ts_->snapshot()->signed_.version, 2u);
}

TEST_F(SnapshotRollbackTest, DroppingARoleIsRollback) {
  load([](Snapshot& s) { s.meta.erase("pkgs.json"); });
  auto r = ts_->update_snapshot(v2_);
  EXPECT_ERRC(r, Errc::rollback);
  EXPECT_THAT(r.error().message, HasSubstr("pkgs.json removed"));
  EXPECT_EQ(ts_->snapshot()->signed_.version, 1u);
}

TEST_F(SnapshotRollbackTest, TargetsVersionGoingBackIsRollback) {
  load([](Snapshot& s) { s.meta["targets.json"].version = 1; });
  auto r = ts_->update_snapshot(v2_);
  EXPECT_ERRC(r, Errc::rollback);
  EXPECT_THAT(r.error().message, HasSubstr("targets.json version 1 < trusted 2"));
}

TEST_F(SnapshotRollbackTest, DroppingTargetsJsonIsRejected) {
  // A snapshot without targets.json cannot even be parsed, so it never
  // reaches the rollback check; it is refused all the same.
  load([](Snapshot& s) { s.meta.erase("targets.json"); });
  EXPECT_ERRC(ts_->update_snapshot(v2_), Errc::bad_field);
  EXPECT_EQ(ts_->snapshot()->signed_.version, 1u);
}

// ---- targets ----------------------------------------------------------------

TEST_F(TrustedSetTest, TargetsVersionMismatch) {
  repo_->pin_hashes = false;
  const std::string targets = sign("targets");  // version 1
  repo_->snapshot.meta["targets.json"] = MetaFile{2, std::nullopt, {}};
  const std::string snap = sign_snapshot();
  const std::string stamp = sign("timestamp");
  auto ts = trusted();
  ASSERT_OK(ts);
  ASSERT_OK(ts->update_timestamp(stamp));
  ASSERT_OK(ts->update_snapshot(snap));
  auto r = ts->update_delegated_targets(targets, "targets", "root");
  EXPECT_ERRC(r, Errc::version_mismatch);
  EXPECT_THAT(r.error().message, HasSubstr("snapshot names 2"));
  EXPECT_EQ(ts->targets("targets"), nullptr);
}

TEST_F(TrustedSetTest, TargetsHashAndLengthMismatch) {
  const Chain c = chain();
  repo_->targets.expires = kNow + 80 * 24h;  // same length, other content
  const std::string other = sign("targets");
  ASSERT_EQ(other.size(), c.targets.size());
  auto ts = trusted();
  ASSERT_OK(ts);
  ASSERT_OK(ts->update_timestamp(c.timestamp));
  ASSERT_OK(ts->update_snapshot(c.snapshot));
  EXPECT_ERRC(ts->update_delegated_targets(other, "targets", "root"), Errc::hash_mismatch);
  EXPECT_ERRC(ts->update_delegated_targets(c.targets + "\n", "targets", "root"),
              Errc::length_mismatch);
  EXPECT_EQ(ts->targets("targets"), nullptr);
  ASSERT_OK(ts->update_delegated_targets(c.targets, "targets", "root"));
}

TEST_F(TrustedSetTest, TargetsSignedByWrongRoleIsBadSignature) {
  repo_->pin_hashes = false;
  const Chain c = chain();
  auto ts = trusted();
  ASSERT_OK(ts);
  ASSERT_OK(ts->update_timestamp(c.timestamp));
  ASSERT_OK(ts->update_snapshot(c.snapshot));
  EXPECT_ERRC(
      ts->update_delegated_targets(signed_by(c.targets, {key_of("snapshot")}), "targets", "root"),
      Errc::bad_signature);
}

// ---- expiry (freeze attacks) ------------------------------------------------

TEST_F(TrustedSetTest, ExpiredRoot) {
  auto ts = trusted(kNow + 366 * 24h);  // create() does not check expiry...
  ASSERT_OK(ts);
  EXPECT_ERRC(ts->check_final_root(), Errc::expired);  // ...the end of the chain does
  EXPECT_ERRC(ts->update_timestamp(chain().timestamp), Errc::expired);
  EXPECT_FALSE(ts->timestamp().has_value());
}

TEST_F(TrustedSetTest, ExpiredRootMayStartARotationChain) {
  auto ts = trusted(kNow + 366 * 24h);
  ASSERT_OK(ts);
  repo_->root.version = 2;
  repo_->root.expires = kNow + 2 * 365 * 24h;
  ASSERT_OK(ts->update_root(sign("root")));
  ASSERT_OK(ts->check_final_root());
}

TEST_F(TrustedSetTest, ExpiredTimestamp) {
  const Chain c = chain();
  auto ts = trusted(kNow + 25h);  // timestamp lives 1 day
  ASSERT_OK(ts);
  EXPECT_ERRC(ts->update_timestamp(c.timestamp), Errc::expired);
  // Kept anyway, so it still guards against rollback ...
  ASSERT_TRUE(ts->timestamp().has_value());
  EXPECT_EQ(ts->timestamp()->signed_.version, 1u);
  // ... but nothing may be built on it.
  EXPECT_ERRC(ts->update_snapshot(c.snapshot), Errc::expired);
  // A fresh one replaces it.
  repo_->timestamp.version = 2;
  repo_->timestamp.expires = kNow + 48h;
  ASSERT_OK(ts->update_timestamp(sign("timestamp")));
  ASSERT_OK(ts->update_snapshot(c.snapshot));
}

TEST_F(TrustedSetTest, ExpiredSnapshot) {
  sign_targets();
  repo_->snapshot.expires = kNow;  // before the reference time kNow + 1h
  const std::string snap = sign_snapshot();
  const std::string stamp = sign("timestamp");
  auto ts = trusted();
  ASSERT_OK(ts);
  ASSERT_OK(ts->update_timestamp(stamp));
  auto r = ts->update_snapshot(snap);
  EXPECT_ERRC(r, Errc::expired);
  EXPECT_THAT(r.error().message, HasSubstr("expired at 2030-01-01T00:00:00Z"));
}

TEST_F(TrustedSetTest, ExpiredTargets) {
  repo_->targets.expires = kNow + 30min;
  const Chain c = chain();
  auto ts = trusted();
  ASSERT_OK(ts);
  ASSERT_OK(ts->update_timestamp(c.timestamp));
  ASSERT_OK(ts->update_snapshot(c.snapshot));
  EXPECT_ERRC(ts->update_delegated_targets(c.targets, "targets", "root"), Errc::expired);
  EXPECT_EQ(ts->targets("targets"), nullptr);
}

TEST_F(TrustedSetTest, ExpiryIsAtTheInstant) {
  const Chain c = chain();
  auto just_before = trusted(kNow + 24h - 1s);
  ASSERT_OK(just_before);
  ASSERT_OK(just_before->update_timestamp(c.timestamp));
  auto at = trusted(kNow + 24h);
  ASSERT_OK(at);
  EXPECT_ERRC(at->update_timestamp(c.timestamp), Errc::expired);
}

// ---- order of use -----------------------------------------------------------

TEST_F(TrustedSetTest, SnapshotBeforeTimestamp) {
  const Chain c = chain();
  auto ts = trusted();
  ASSERT_OK(ts);
  EXPECT_ERRC(ts->update_snapshot(c.snapshot), Errc::invalid_argument);
  EXPECT_ERRC(ts->update_snapshot(c.snapshot, /*trusted_local=*/true), Errc::invalid_argument);
  EXPECT_FALSE(ts->snapshot().has_value());
}

TEST_F(TrustedSetTest, TargetsBeforeSnapshot) {
  const Chain c = chain();
  auto ts = trusted();
  ASSERT_OK(ts);
  EXPECT_ERRC(ts->update_delegated_targets(c.targets, "targets", "root"), Errc::invalid_argument);
  ASSERT_OK(ts->update_timestamp(c.timestamp));
  EXPECT_ERRC(ts->update_delegated_targets(c.targets, "targets", "root"), Errc::invalid_argument);
}

TEST_F(TrustedSetTest, NoGoingBackInTheOrder) {
  const Chain c = chain();
  auto ts = trusted();
  ASSERT_OK(ts);
  ASSERT_OK(ts->update_timestamp(c.timestamp));
  repo_->root.version = 2;
  EXPECT_ERRC(ts->update_root(sign("root")), Errc::invalid_argument);
  ASSERT_OK(ts->update_snapshot(c.snapshot));
  EXPECT_ERRC(ts->update_timestamp(c.timestamp), Errc::invalid_argument);
  ASSERT_OK(ts->update_delegated_targets(c.targets, "targets", "root"));
  EXPECT_ERRC(ts->update_snapshot(c.snapshot), Errc::invalid_argument);
}

}  // namespace
}  // namespace catalog::tuf
