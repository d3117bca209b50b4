// Supply-chain attacks through the daemon (issue 6, section 1): a repository the
// test controls (HostileRepo) serves one hostile change at a time to epbrokerd on
// a private bus. Every attack must be refused by the job it hits (RefreshCatalog
// or EnsureProvider) with the right org.epbroker.Error and a message naming the
// cause, leave the store tree, staging/, ListProviders and the trusted metadata
// as they were, and the next honest refresh + install must succeed.
//
// Each case: the honest start (refresh, install base-ep), configure (remote or
// daemon settings, then a restart so the daemon reads them), prepare (honest
// history the attack needs), snapshot, attack, the refused job, checks, restore,
// honest refresh + install of sc-ep.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "catalog/canonical_json.hpp"
#include "catalog/crypto/hash.hpp"
#include "catalog/crypto/signing_key.hpp"
#include "tests/daemon/integration/attack_fixture.hpp"

namespace tests::daemon {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using catalog::tuf::TimePoint;

class SupplyChainTest;
using Step = std::function<void(SupplyChainTest&)>;

struct Attack {
  std::string name{};
  bool on_refresh = false;  // the refused job: RefreshCatalog, else EnsureProvider(sc-ep)
  Step configure{}, prepare{}, attack{}, restore{};
  std::string error{};                    // org.epbroker.Error.<error>
  std::string says{};                     // in the job's ErrorMessage
  std::vector<std::string> may_change{};  // trusted files an honest part may update
};

void PrintTo(const Attack& a, std::ostream* os) { *os << a.name; }

class SupplyChainTest : public AttackFixture, public ::testing::WithParamInterface<Attack> {
 public:
  HostileRepo& r() { return *repo_; }
  // The served bytes of sc-ep, kept for restore.
  std::string honest_;
  catalog::tuf::Timestamp saved_timestamp_;
  catalog::tuf::MetaFile saved_meta_;
  // Another host (127.0.0.2) serving a copy of the repository.
  support::TempDir other_dir_;
  std::unique_ptr<support::HttpServer> other_;
};

catalog::crypto::PrivateKey new_key() { return catalog::crypto::PrivateKey::generate().value(); }

// The served sc-ep with `edit` applied; restore() puts the honest bytes back.
Step tamper_target(std::function<void(std::string&)> edit) {
  return [edit](SupplyChainTest& t) {
    t.honest_ = t.r().read(t.r().target_file(kScEp));
    std::string bytes = t.honest_;
    edit(bytes);
    t.r().write(t.r().target_file(kScEp), bytes);
  };
}
Step untamper_target() {
  return [](SupplyChainTest& t) { t.r().write(t.r().target_file(kScEp), t.honest_); };
}
// Targets behind one of the python server's fault prefixes (and daemon settings).
Step targets_behind(const std::string& prefix, const std::string& settings = "") {
  return [=](SupplyChainTest& t) {
    t.remote_.targets_url = t.r().targets_url(prefix);
    write_remote(*t.bus_, t.remote_);
    add_daemon_settings(*t.bus_, settings);
  };
}
Step honest_targets() {
  return [](SupplyChainTest& t) {
    t.remote_.targets_url = t.r().targets_url();
    t.reconfigure();
  };
}
// Honest publications, each adding one package (every role's version goes up).
void publish_packages(SupplyChainTest& t, const std::vector<std::string>& names) {
  for (const auto& n : names) {
    t.r().add_package(n);
    t.r().publish();
  }
}

const std::vector<Attack> kAttacks = {
    // ---- the package bytes -------------------------------------------------------
    {.name = "TargetBytesOtherThanItsHash",
     .attack = tamper_target([](std::string& b) { b[b.size() / 2] ^= 1; }),
     .restore = untamper_target(),
     .error = "VerificationFailed",
     .says = "does not match"},
    {.name = "TargetLongerThanItsSignedLength",
     .attack = tamper_target([](std::string& b) { b += "!"; }),
     .restore = untamper_target(),
     .error = "VerificationFailed",
     .says = "exceeds the cap"},
    {.name = "EndlessTarget",
     .configure = targets_behind("__endless__/"),
     .restore = honest_targets(),
     .error = "VerificationFailed",
     .says = "exceeds the cap"},
    {.name = "TargetTrickledAtOneBytePerSecondHitsTheLowSpeedLimit",
     .configure =
         targets_behind("__slow__/", "low_speed_limit_bytes = 100\nlow_speed_time_sec = 1\n"),
     .restore = honest_targets(),
     .error = "Network",
     .says = "too slow"},
    {.name = "TargetTrickledPastTheTransferDeadline",
     .configure = targets_behind("__trickle__/", "transfer_timeout_sec = 1\n"),
     .restore = honest_targets(),
     .error = "Network",
     .says = "timed out"},
    {.name = "ManifestDisagreeingWithTheSignedEntry",
     .attack =
         [](SupplyChainTest& t) {
           t.r().add_package(kScEp, "1.0.0", kScEpSize, "someone else");
           t.r().publish();
         },
     .restore =
         [](SupplyChainTest& t) {
           t.r().add_package(kScEp, "1.0.0", kScEpSize);
           t.r().publish();
         },
     .error = "VerificationFailed",
     .says = "vendor",
     .may_change = {"targets.json", "catalog.json"}},  // honestly signed
    {.name = "RedirectToAFileUrl",
     .configure =
         [](SupplyChainTest& t) {
           t.remote_.targets_url = t.r().server().url(
               "__redirect__/" +
               support::url_encode("file://" + t.r().dir().string() + "/targets/"));
           write_remote(*t.bus_, t.remote_);
         },
     .restore = honest_targets(),
     .error = "Network",
     .says = "file"},
    {.name = "RedirectToAnotherHostServingOtherBytes",
     .configure =
         [](SupplyChainTest& t) {
           fs::copy(t.r().dir(), t.other_dir_.path() / "repo", fs::copy_options::recursive);
           t.other_ = std::make_unique<support::HttpServer>(
               t.other_dir_.path() / "repo", support::HttpServerOptions{"127.0.0.2"});
           t.remote_.targets_url =
               t.r().server().url("__redirect__/" + support::url_encode(t.other_->url("targets/")));
           // Another origin: followed only because the remote lists it.
           t.remote_.redirect_hosts = "127.0.0.2:" + std::to_string(t.other_->port());
           write_remote(*t.bus_, t.remote_);
         },
     .attack =
         [](SupplyChainTest& t) {
           const fs::path file = t.other_dir_.path() / "repo" / t.r().target_file(kScEp);
           t.honest_ = support::read_file(file);
           std::string bytes = t.honest_;
           bytes[100] ^= 1;
           support::write_file(file, bytes);
         },
     // The other host serving the signed bytes: followed and accepted.
     .restore =
         [](SupplyChainTest& t) {
           support::write_file(t.other_dir_.path() / "repo" / t.r().target_file(kScEp), t.honest_);
         },
     .error = "VerificationFailed",
     .says = "does not match"},

    // ---- rollback ------------------------------------------------------------------
    {.name = "TimestampRollback",
     .on_refresh = true,
     .prepare =
         [](SupplyChainTest& t) {
           t.honest_ = t.r().read("metadata/timestamp.json");
           t.r().publish_timestamp();
           t.refresh();  // timestamp 2 trusted
         },
     .attack = [](SupplyChainTest& t) { t.r().write("metadata/timestamp.json", t.honest_); },
     .restore = [](SupplyChainTest& t) { t.r().publish_timestamp(); },
     .error = "VerificationFailed",
     .says = "timestamp: version 1 < trusted 2"},
    {.name = "SnapshotRollbackByATimestampNamingAnOlderSnapshot",
     .on_refresh = true,
     .prepare =
         [](SupplyChainTest& t) {
           t.saved_meta_ = t.r().repo.timestamp.snapshot_meta;
           publish_packages(t, {"two-ep"});
           t.refresh();
         },
     .attack =
         [](SupplyChainTest& t) {  // holds the timestamp key
           t.saved_timestamp_ = t.r().repo.timestamp;
           ++t.r().repo.timestamp.version;
           t.r().repo.timestamp.snapshot_meta = t.saved_meta_;
           t.r().write("metadata/timestamp.json", t.r().sign("timestamp"));
         },
     .restore =
         [](SupplyChainTest& t) {
           t.r().repo.timestamp = t.saved_timestamp_;
           t.r().publish_timestamp();
         },
     .error = "VerificationFailed",
     .says = "timestamp: snapshot version"},
    {.name = "TargetsRollbackByASnapshotListingOlderTargets",
     .on_refresh = true,
     .prepare =
         [](SupplyChainTest& t) {
           t.saved_meta_ = t.r().repo.snapshot.meta.at("targets.json");
           publish_packages(t, {"two-ep"});
           t.refresh();
         },
     .attack =
         [](SupplyChainTest& t) {  // holds the timestamp and snapshot keys
           std::swap(t.r().repo.snapshot.meta["targets.json"], t.saved_meta_);
           t.r().publish_timestamp();
         },
     .restore =
         [](SupplyChainTest& t) {
           std::swap(t.r().repo.snapshot.meta["targets.json"], t.saved_meta_);
           t.r().publish_timestamp();
         },
     .error = "VerificationFailed",
     .says = "snapshot: targets.json version"},
    {.name = "RootRollbackByReplayingVersionOneAsTwo",
     .on_refresh = true,
     .attack =
         [](SupplyChainTest& t) {
           t.r().write("metadata/2.root.json", t.r().read("metadata/1.root.json"));
         },
     .restore = [](SupplyChainTest& t) { fs::remove(t.r().dir() / "metadata/2.root.json"); },
     .error = "VerificationFailed",
     .says = "root: expected version 2, got 1"},

    // ---- freeze: each role the first to have expired -----------------------------------
    {.name = "ExpiredTimestamp",
     .on_refresh = true,
     .attack =
         [](SupplyChainTest& t) { t.r().publish_timestamp(wall_now() - std::chrono::days{2}); },
     .restore = [](SupplyChainTest& t) { t.r().publish_timestamp(); },
     .error = "VerificationFailed",
     .says = "timestamp: version 2 expired"},
    {.name = "ExpiredSnapshot",
     .on_refresh = true,
     .attack =
         [](SupplyChainTest& t) {
           t.r().repo.snapshot_lifetime = std::chrono::hours{1};
           t.r().publish_timestamp(wall_now() - std::chrono::hours{2});
         },
     .restore =
         [](SupplyChainTest& t) {
           t.r().repo.snapshot_lifetime = std::chrono::days{7};
           t.r().publish_timestamp();
         },
     .error = "VerificationFailed",
     .says = "snapshot: version 2 expired"},
    {.name = "ExpiredTargets",
     .on_refresh = true,
     .attack =
         [](SupplyChainTest& t) {
           t.r().repo.targets_lifetime = std::chrono::hours{1};
           t.r().add_package("two-ep");
           t.r().publish(wall_now() - std::chrono::hours{2});
         },
     .restore =
         [](SupplyChainTest& t) {
           t.r().repo.targets_lifetime = std::chrono::days{90};
           publish_packages(t, {"three-ep"});
         },
     .error = "VerificationFailed",
     .says = "targets: version 2 expired"},
    {.name = "ExpiredRoot",
     .on_refresh = true,
     .attack =
         [](SupplyChainTest& t) {
           t.r().repo.root_lifetime = std::chrono::hours{1};
           ASSERT_TRUE(t.r().repo.rotate("snapshot", new_key()));
           t.r().publish(wall_now() - std::chrono::hours{2});
         },
     .restore =
         [](SupplyChainTest& t) {
           t.r().repo.root_lifetime = std::chrono::days{365};
           ASSERT_TRUE(t.r().repo.rotate("snapshot", new_key()));
           t.r().publish();
         },
     .error = "VerificationFailed",
     .says = "root: version 2 expired",
     .may_change = {"root.json"}},  // root 2 is validly signed: the chain takes it

    // ---- mix-and-match and keys ----------------------------------------------------------
    {.name = "TargetsVersionOtherThanSnapshotNames",
     .on_refresh = true,
     .configure = [](SupplyChainTest& t) { t.r().repo.pin_hashes = false; },
     .prepare =
         [](SupplyChainTest& t) {
           publish_packages(t, {"two-ep", "three-ep"});
         },
     .attack =
         [](SupplyChainTest& t) {  // validly signed targets 2 served as targets 3
           t.honest_ = t.r().read("metadata/3.targets.json");
           t.r().write("metadata/3.targets.json", t.r().read("metadata/2.targets.json"));
         },
     .restore = [](SupplyChainTest& t) { t.r().write("metadata/3.targets.json", t.honest_); },
     .error = "VerificationFailed",
     .says = "targets: version 2 but snapshot names 3"},
    {.name = "RootSignedByTheRetiredKeyAndAnAttackersKey",
     .on_refresh = true,
     .prepare =
         [](SupplyChainTest& t) {
           // Root 2 replaces the root key; the client follows the rotation.
           const auto old_id = t.r().repo.root.roles.at("root").keyids.front();
           t.honest_ = t.r().repo.signing_keys().at(old_id).to_pem().value();
           ASSERT_TRUE(t.r().repo.rotate("root", new_key()));
           t.r().publish();
           t.refresh();
         },
     .attack =
         [](SupplyChainTest& t) {
           // Whoever stole the retired key signs root 3 making their own key root.
           const auto retired = catalog::crypto::PrivateKey::from_pem(t.honest_).value();
           const auto mine = new_key();
           catalog::tuf::Root evil = t.r().repo.root;
           evil.version = 3;
           const auto key = catalog::tuf::Key::from_public(mine.public_key());
           evil.keys[key.keyid()] = key;
           evil.roles["root"] = {{key.keyid()}, 1};
           const auto canonical = catalog::canonical_json(catalog::tuf::to_json(evil)).value();
           nlohmann::json sigs = nlohmann::json::array();
           for (const auto* k : {&retired, &mine}) {
             const std::string sig = k->sign(canonical).value();
             sigs.push_back(
                 {{"keyid", catalog::tuf::Key::from_public(k->public_key()).keyid()},
                  {"sig", catalog::crypto::to_hex(std::span<const unsigned char>(
                              reinterpret_cast<const unsigned char*>(sig.data()), sig.size()))}});
           }
           t.r().write(
               "metadata/3.root.json",
               nlohmann::json{{"signatures", sigs}, {"signed", catalog::tuf::to_json(evil)}}.dump(
                   1));
         },
     .restore =
         [](SupplyChainTest& t) {
           fs::remove(t.r().dir() / "metadata/3.root.json");
           t.r().publish_timestamp();
         },
     .error = "VerificationFailed",
     .says = "root (by trusted root): 0 of 1 required signatures are valid"},
};

TEST_P(SupplyChainTest, IsRefusedAndChangesNothing) {
  const Attack& a = GetParam();
  start_repo();
  refresh();
  install(kBaseEp);
  if (a.configure) {
    a.configure(*this);
    restart_daemon(*bus_);
  }
  if (a.prepare) a.prepare(*this);
  ASSERT_FALSE(HasFatalFailure());
  const Before before = capture();

  if (a.attack) a.attack(*this);
  const std::string job = a.on_refresh ? broker_->RefreshCatalog() : broker_->EnsureProvider(kScEp);
  expect_failed(job, a.error, a.says);
  expect_unchanged(before, a.may_change);
  EXPECT_EQ(str(provider(kScEp), "state"), "available");

  a.restore(*this);
  expect_honest_install_works();
}

INSTANTIATE_TEST_SUITE_P(Attacks, SupplyChainTest, ::testing::ValuesIn(kAttacks),
                         [](const auto& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace tests::daemon
