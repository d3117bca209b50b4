// Supply-chain attacks through the daemon that need a second remote or https
// (issue 6, section 1): a package from a second remote that the first remote's
// keys do not cover, a remote's server serving another remote's signed
// metadata, an https server whose certificate nobody trusts, an https target
// redirected to http, and an http URL where https is required. Each: refused,
// visible in the job's Error/ErrorMessage or ListProviders, the store as before,
// staging/ empty, and the honest operation works afterwards.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/daemon/integration/attack_fixture.hpp"
#include "tests/support/tls_cert.hpp"

namespace tests::daemon {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class RemotesAttackTest : public AttackFixture {
 protected:
  // A second remote, "extra" (priority 0, its own keys), beside "vendor" (priority 10).
  void add_extra_remote(const std::vector<HostileRepo::Package>& packages) {
    remote_.priority = 10;
    write_remote(*bus_, remote_);
    extra_ = std::make_unique<HostileRepo>(packages);
    write_remote(*bus_, {.name = "extra",
                         .metadata_url = extra_->metadata_url(),
                         .targets_url = extra_->targets_url(),
                         .trusted_root = extra_->trusted_root()});
  }
  std::unique_ptr<HostileRepo> extra_;
};

// "extra" signs an sc-ep 9.0.0 with its own keys; "vendor", of higher priority,
// lists sc-ep 1.0.0. The name is vendor's: only its sc-ep is listed and installed,
// and extra's package is never even downloaded; extra's own packages still work.
TEST_F(RemotesAttackTest, ALowerPriorityRemoteCannotTakeOverAPackageName) {
  start_repo();
  add_extra_remote({{"extra-ep"}});
  extra_->add_package(kScEp, "9.0.0");
  extra_->publish();
  refresh();

  const auto lines = provider_lines(*broker_);
  EXPECT_THAT(lines, ::testing::Contains("sc-ep 1.0.0 available vendor"));
  EXPECT_THAT(lines, ::testing::Not(::testing::Contains(HasSubstr("sc-ep 9.0.0"))));
  EXPECT_THAT(lines, ::testing::Contains("extra-ep 1.0.0 available extra"));

  install(kScEp);
  EXPECT_EQ(str(provider(kScEp), "version"), "1.0.0");
  EXPECT_EQ(entries_of(bus_->store_dir() / kScEp), std::vector<std::string>{"1.0.0"});
  EXPECT_TRUE(extra_->server().requests(fs::path(extra_->target_file(kScEp)).filename()).empty())
      << "the lower-priority remote's sc-ep was downloaded";
  install("extra-ep");  // what extra's keys do cover
  EXPECT_EQ(str(provider("extra-ep"), "remote"), "extra");
}

// vendor's server starts serving extra's metadata (signed by extra's keys, which
// the attacker holds). vendor's trusted root does not cover them: the refresh
// fails naming vendor, vendor's catalog stays as it was, extra is refreshed.
TEST_F(RemotesAttackTest, ARemoteServingAnotherRemotesSignedMetadataIsRefused) {
  start_repo();
  add_extra_remote({{"extra-ep"}});
  refresh();
  install(kBaseEp);
  const Before before = capture();

  const support::TempDir saved;
  fs::copy(repo_->dir() / "metadata", saved.path() / "metadata", fs::copy_options::recursive);
  fs::remove_all(repo_->dir() / "metadata");
  fs::copy(extra_->dir() / "metadata", repo_->dir() / "metadata", fs::copy_options::recursive);

  expect_failed(broker_->RefreshCatalog(), "VerificationFailed",
                "remote vendor: timestamp: 0 of 1 required signatures are valid");
  expect_unchanged(before);
  expect_failed(broker_->EnsureProvider(kScEp), "VerificationFailed", "signatures are valid");
  expect_unchanged(before);

  fs::remove_all(repo_->dir() / "metadata");
  fs::copy(saved.path() / "metadata", repo_->dir() / "metadata", fs::copy_options::recursive);
  expect_honest_install_works();
}

class HttpsRemoteTest : public AttackFixture {
 protected:
  void SetUp() override {
    AttackFixture::SetUp();
    if (IsSkipped()) return;
    cert_ = support::make_self_signed_certificate(certs_.path(), "repo");
    // A generous connect timeout: the tests assert how TLS fails, and under
    // ASan on 2 loaded cores the Python server's handshake once took over 5 s
    // ("SSL connection timeout" instead of the certificate refusal).
    start_repo({.tls_cert = cert_.cert, .tls_key = cert_.key}, /*connect_timeout_sec=*/60);
    remote_.allow_http = false;
    write_remote(*bus_, remote_);
  }
  support::TempDir certs_;
  support::TlsCertificate cert_;
};

// Nobody trusts the server's certificate: Network, not a single request made, no
// metadata taken. Trusting its CA (ca_file) makes the same remote work.
TEST_F(HttpsRemoteTest, UntrustedCertificateIsANetworkError) {
  ASSERT_TRUE(remote_.metadata_url.starts_with("https://"));
  EXPECT_TRUE(broker_->ListProviders().empty());  // starts the daemon, which opens the store
  const auto store = tree_of(bus_->store_dir());
  expect_failed(broker_->RefreshCatalog(), "Network", "SSL certificate problem");
  EXPECT_TRUE(repo_->server().requests().empty());
  EXPECT_TRUE(broker_->ListProviders().empty());
  EXPECT_EQ(tree_of(bus_->store_dir()), store);
  EXPECT_EQ(entries_of(bus_->state_dir() / "remotes" / kRemote / "metadata"),
            std::vector<std::string>{"root.json"});  // the configured root, copied

  remote_.ca_file = cert_.cert.string();
  reconfigure();
  expect_honest_install_works();
}

// The https server redirects sc-ep's download to plain http: refused before any
// request reaches the http server.
TEST_F(HttpsRemoteTest, TargetRedirectedFromHttpsToHttpIsRefused) {
  remote_.ca_file = cert_.cert.string();
  reconfigure();
  refresh();
  install(kBaseEp);
  support::HttpServer plain(repo_->dir());
  remote_.targets_url =
      repo_->server().url("__redirect__/" + support::url_encode(plain.url("targets/")));
  reconfigure();
  const Before before = capture();

  expect_failed(broker_->EnsureProvider(kScEp), "Network", "\"http\" not supported");
  EXPECT_TRUE(plain.requests().empty());
  expect_unchanged(before);

  remote_.targets_url = repo_->targets_url();
  reconfigure();
  expect_honest_install_works();
}

// An http:// URL in a remote without allow_http: the configuration is refused as a
// whole, so the daemon does not start (the bus reports the failed activation) and
// touches nothing; the log says why. Corrected, it starts.
TEST_F(RemotesAttackTest, HttpUrlWhereHttpsIsRequiredStopsTheDaemonFromStarting) {
  start_repo();
  remote_.allow_http = false;  // the URLs are http://
  write_remote(*bus_, remote_);

  const std::string error = error_name_of([&] { (void)broker_->ListProviders(); });
  EXPECT_THAT(error, ::testing::StartsWith("org.freedesktop.DBus.Error.Spawn")) << error;
  EXPECT_THAT(bus_->log(), HasSubstr("http:// URL needs allow_http = true"));
  EXPECT_TRUE(entries_of(bus_->state_dir()).empty());
  EXPECT_TRUE(repo_->server().requests().empty());

  remote_.allow_http = true;
  write_remote(*bus_, remote_);
  expect_honest_install_works();
}

}  // namespace
}  // namespace tests::daemon
