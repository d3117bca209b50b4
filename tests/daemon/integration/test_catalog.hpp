// A signed TUF catalog for daemon integration tests, served on loopback.
//
// Built with catalog::tuf::Repository (fresh keys, consistent snapshots) and
// published into a temporary directory that Debian's nginx serves
// (tests/support/nginx_server); paths starting "/__" go through nginx to
// tests/support's python HttpServer, so e.g. "<base>/__slow__/targets/" serves
// the targets with its faults. Its targets, each with custom.epbroker metadata:
//
//   test-ep     0.1.0  the real test-ep package (ep-packages/test-ep, CMake's
//                      EPBROKER_TEST_EP_PACKAGE) when it was built, else a stand-in
//                      packed here with the same metadata; compatible (any CPU)
//   bulk-ep     1.0.0  4 MiB of incompressible bytes: downloads long enough to
//                      watch (progress, two callers sharing one job); compatible
//   foreign-ep  1.0.0  built for the other architecture: listed "incompatible"
//
// publish_version() adds further versions of these (the same files, other EP
// metadata), publish_package() other packages (any EP metadata, a stand-in
// library), publish_model() models, and withdraw() removes one; each publishes a
// new repository state, which a refresh then sees.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "catalog/ep_metadata.hpp"
#include "catalog/model_metadata.hpp"
#include "catalog/tuf/repository.hpp"
#include "tests/daemon/integration/private_bus.hpp"
#include "tests/support/http_server.hpp"
#include "tests/support/nginx_server.hpp"
#include "tests/support/temp_dir.hpp"

namespace tests::daemon {

inline constexpr const char* kTestEp = "test-ep";
inline constexpr const char* kBulkEp = "bulk-ep";
inline constexpr const char* kForeignEp = "foreign-ep";

struct CatalogTarget {
  std::string name;
  std::string version;
  std::string target_path;  // TUF target path, e.g. "test-ep/test-ep-0.1.0.tar.zst"
  std::uint64_t length = 0;
  std::string sha256;   // of the package file (names its partial download)
  std::string library;  // the EP library's path inside the package
};

class TestCatalog {
 public:
  // Packs, signs (every role with keys of `keys`), publishes and serves
  // (throws std::runtime_error on failure).
  explicit TestCatalog(catalog::crypto::KeyType keys = catalog::crypto::KeyType::ed25519);

  std::string metadata_url() const { return server_->url("metadata/"); }
  std::string targets_url() const { return server_->url("targets/"); }
  // The repository's base ("<base>/metadata/", "<base>/targets/"), as a mirror
  // is configured.
  std::string base_url() const { return server_->url(""); }
  const support::NginxServer& server() const { return *server_; }
  const support::HttpServer& fault_server() const { return *faults_; }
  // The root clients trust on first use: metadata/1.root.json.
  std::filesystem::path trusted_root() const { return repo_dir() / "metadata/1.root.json"; }
  std::filesystem::path repo_dir() const { return tmp_ / "repo"; }
  // The version the constructor published of `name`.
  const CatalogTarget& target(const std::string& name) const { return targets_.at(name); }
  // A version of `name` published by the constructor or publish_version().
  const CatalogTarget& target(const std::string& name, const std::string& version) const {
    return versions_.at({name, version});
  }
  // Whether test-ep is the package built from ep-packages/test-ep.
  bool real_test_ep() const { return real_test_ep_; }

  // Writes remotes.d/NAME.conf for this catalog into `bus`'s configuration.
  void add_to(PrivateBus& bus, const std::string& remote = "test") const;
  // The same, but with `primary_base` (e.g. a dead address) as the remote's
  // primary and this catalog as its one mirror.
  void add_as_mirror(PrivateBus& bus, const std::string& primary_base,
                     const std::string& remote = "test") const;

  // Packs version `version` of package `name` (one the constructor published):
  // the same files as that package (test-ep's extracted from its package), its
  // EP metadata with `version`, and `ort_min` when not empty; adds it as target
  // "NAME/NAME-VERSION.tar.zst" (replacing one of that version) and publishes a
  // new signed repository state, served at once. Throws std::runtime_error.
  void publish_version(const std::string& name, const std::string& version,
                       const std::string& ort_min = "");
  // Packs package `meta` (any EP metadata: its name, EP names, vendor,
  // supports; arch and ort_min as given) from a small stand-in library of noise
  // at meta.library: listed and matched like any package, but not a loadable EP.
  // Adds it as target "NAME/NAME-VERSION.tar.zst" (replacing one of that
  // version) and publishes a new state. Throws std::runtime_error.
  void publish_package(const catalog::EpMetadata& meta);
  // Adds model `meta` (catalog/model_metadata.hpp): each of `files` (the bytes
  // of the variants' files) as target NAME/blobs/<sha256>, the card as target
  // "NAME/NAME-VERSION.model.json", and publishes a new state. Throws
  // std::runtime_error.
  void publish_model(const catalog::ModelMetadata& meta, const std::vector<std::string>& files);
  // Removes target "NAME/NAME-VERSION.tar.zst" (any version, the constructor's
  // too) and publishes a new state. Throws std::runtime_error.
  void withdraw(const std::string& name, const std::string& version);

 private:
  // What a package was packed from, for publish_version().
  struct Source {
    std::filesystem::path dir;      // its files; empty until extracted from `package`
    std::filesystem::path package;  // the constructor's package file
    catalog::EpMetadata meta;       // the constructor's metadata
  };

  void add_target(const catalog::EpMetadata& meta, const std::filesystem::path& package);
  void publish();

  support::TempDir tmp_;
  catalog::tuf::Repository repo_;
  std::map<std::string, CatalogTarget> targets_;
  std::map<std::pair<std::string, std::string>, CatalogTarget> versions_;
  std::map<std::string, Source> sources_;
  bool real_test_ep_ = false;
  std::unique_ptr<support::HttpServer> faults_;   // behind nginx for "/__" paths
  std::unique_ptr<support::NginxServer> server_;  // destroyed first
};

}  // namespace tests::daemon
