// The fixture of the supply-chain tests: a private bus whose remote "evil" is a
// HostileRepo (base-ep and sc-ep, 1.0.0 each), quick fetch limits, and the
// checks every refused attack must pass: the store tree as before, nothing in
// staging/, the providers as before, and the trusted metadata as before.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/daemon/integration/fixture.hpp"
#include "tests/daemon/integration/hostile_repo.hpp"

namespace tests::daemon {

inline constexpr const char* kRemote = "vendor";
inline constexpr const char* kBaseEp = "base-ep";  // installed before every attack
inline constexpr const char* kScEp = "sc-ep";      // the package attacked
// sc-ep's library: big enough that 80 KiB/s takes about 4 s.
inline constexpr std::size_t kScEpSize = 320 << 10;

class AttackFixture : public CatalogTest {
 public:
  // Public, so the steps of parameterised cases (free functions) can use them.
  using BrokerTest::broker_;
  using BrokerTest::bus_;
  using BrokerTest::conn_;
  using BrokerTest::install;
  using BrokerTest::provider;
  using BrokerTest::refresh;

  // Bus (daemon not started), repository, remote "evil" pointing at it honestly,
  // fetch settings that let a failure show within seconds (`connect_timeout_sec`
  // bounds name lookup, TCP and TLS handshake).
  void start_repo(support::HttpServerOptions server = {}, int connect_timeout_sec = 5) {
    start({}, /*with_catalog=*/false);
    repo_ = std::make_unique<HostileRepo>(
        std::vector<HostileRepo::Package>{{kBaseEp, 8 << 10}, {kScEp, kScEpSize}},
        std::move(server));
    remote_ = {.name = kRemote,
               .metadata_url = repo_->metadata_url(),
               .targets_url = repo_->targets_url(),
               .trusted_root = repo_->trusted_root()};
    write_remote(*bus_, remote_);
    add_daemon_settings(*bus_, "fetch_attempts = 1\nconnect_timeout_sec = " +
                                   std::to_string(connect_timeout_sec) + "\n");
  }

  // Writes remote_ again and restarts the daemon so it reads it.
  void reconfigure() {
    write_remote(*bus_, remote_);
    restart_daemon(*bus_);
  }

  std::filesystem::path trusted_meta(const std::string& file) const {
    return bus_->state_dir() / "remotes" / kRemote / "metadata" / file;
  }

  struct Before {
    std::map<std::string, std::string> store;
    std::vector<std::string> providers;
    std::map<std::string, std::string> meta;  // trusted metadata files -> bytes
  };
  Before capture() {
    Before b{tree_of(bus_->store_dir()), provider_lines(*broker_), {}};
    for (const char* f : {"root.json", "targets.json"}) {
      b.meta[f] = support::read_file(trusted_meta(f));
    }
    b.meta["catalog.json"] =
        support::read_file(bus_->state_dir() / "remotes" / kRemote / "catalog.json");
    return b;
  }
  // The store, staging/, the providers and (unless `except`) the trusted
  // metadata files are as they were.
  void expect_unchanged(const Before& b, const std::vector<std::string>& except = {}) {
    EXPECT_EQ(tree_of(bus_->store_dir()), b.store) << "the store changed";
    EXPECT_EQ(entries_of(bus_->state_dir() / "staging"), std::vector<std::string>{});
    EXPECT_EQ(provider_lines(*broker_), b.providers);
    for (const auto& [file, bytes] : b.meta) {
      if (std::find(except.begin(), except.end(), file) != except.end()) continue;
      const auto path = file == "catalog.json"
                            ? bus_->state_dir() / "remotes" / kRemote / "catalog.json"
                            : trusted_meta(file);
      EXPECT_EQ(support::read_file(path), bytes) << file << " changed";
    }
  }

  // The job of `start` (a job path), waited for; checks it failed with `error`
  // (the suffix after org.epbroker.Error.) and a message containing `says`.
  void expect_failed(const std::string& job, const std::string& error, const std::string& says) {
    const JobEnd end = finish_job(*conn_, job);
    EXPECT_EQ(end.state, "failed") << end.message;
    EXPECT_EQ(end.error, "org.epbroker.Error." + error) << end.message;
    EXPECT_THAT(end.message, ::testing::HasSubstr(says));
    std::cout << "refused: " << end.error << ": " << end.message << "\n";
  }

  // An honest refresh and install of sc-ep after the attack: ready, every tree verifies.
  void expect_honest_install_works() {
    refresh();
    install(kScEp);
    EXPECT_EQ(str(provider(kScEp), "state"), "ready");
    for (const auto& v : broker_->Verify()) {
      EXPECT_TRUE(v.at("ok").get<bool>()) << str(v, "name") << ": " << str(v, "problem");
    }
    EXPECT_EQ(entries_of(bus_->state_dir() / "staging"), std::vector<std::string>{});
  }

  std::unique_ptr<HostileRepo> repo_;
  RemoteConf remote_;
};

}  // namespace tests::daemon
