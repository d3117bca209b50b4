#include "tests/client-ort/broker_fixture.hpp"

#include <unistd.h>

#include <chrono>
#include <iostream>
#include <stdexcept>

#include "catalog/atomic_file.hpp"
#include "catalog/ep_metadata.hpp"
#include "catalog/package/pack.hpp"
#include "catalog/tuf/repository.hpp"

#if !defined(EPBROKER_TEST_EP_PACKAGE) || !defined(EPBROKER_ORT_RUNTIME_PACKAGE) || \
    !defined(EPBROKER_TEST_EP_STAGE) || !defined(EPBROKER_SOURCE_ROOT)
#error "the packages and the source root must be defined by CMake"
#endif

namespace tests::client_ort {

namespace fs = std::filesystem;

namespace {

template <typename T>
T ok_or_throw(catalog::Result<T> r, const std::string& what) {
  if (!r) throw std::runtime_error("GlueCatalog: " + what + ": " + r.error().message);
  if constexpr (!std::is_void_v<T>) return std::move(*r);
}

catalog::EpMetadata metadata_of(const fs::path& ep_json) {
  return ok_or_throw(catalog::parse_ep_metadata_text(
                         ok_or_throw(catalog::read_file(ep_json, 1 << 20), ep_json.string())),
                     ep_json.string());
}

}  // namespace

GlueCatalog::GlueCatalog() {
  const auto now = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
  auto repo = ok_or_throw(catalog::tuf::Repository::create(now), "create repository");
  auto add = [&](const catalog::EpMetadata& meta, const fs::path& package) {
    auto bytes = ok_or_throw(catalog::read_file(package, std::uint64_t{1} << 30), "read package");
    const std::string path = meta.name + "/" + package.filename().string();
    ok_or_throw(repo.add_target(path, std::move(bytes), catalog::to_json(meta)), "add " + path);
  };
  const fs::path src = EPBROKER_SOURCE_ROOT;
  const auto test_ep = metadata_of(src / "ep-packages/test-ep/ep.json");
  add(test_ep, EPBROKER_TEST_EP_PACKAGE);
  add(metadata_of(src / "ep-packages/onnxruntime/ep.json"), EPBROKER_ORT_RUNTIME_PACKAGE);

  // future-ep: the same library, a minimum ORT no one has.
  nlohmann::json future = catalog::to_json(test_ep);
  future["epbroker"]["name"] = kFutureEp;
  future["epbroker"]["ort_min"] = "99.0.0";
  const auto future_meta = ok_or_throw(catalog::parse_ep_metadata(future), "future-ep metadata");
  const fs::path future_pkg = tmp_ / "future-ep-0.1.0.tar.zst";
  ok_or_throw(catalog::package::pack_directory(EPBROKER_TEST_EP_STAGE, future_meta, future_pkg),
              "pack future-ep");
  add(future_meta, future_pkg);

  ok_or_throw(repo.publish(catalog::tuf::directory_writer(tmp_ / "repo"), now), "publish");
  server_ = std::make_unique<support::HttpServer>(tmp_ / "repo");
}

void GlueCatalog::add_to(tests::daemon::PrivateBus& bus) const {
  bus.add_remote("test", server_->url("metadata/"), server_->url("targets/"),
                 tmp_ / "repo/metadata/1.root.json");
}

void BrokerTest::SetUp() {
  if (geteuid() != 0)
    GTEST_SKIP() << "only root may refresh and install (no polkit on the test bus)";
  catalog_ = std::make_unique<GlueCatalog>();
  bus_ = std::make_unique<tests::daemon::PrivateBus>();
  catalog_->add_to(*bus_);
  client_ = std::make_unique<epbroker::Client>(epbroker::ClientOptions{bus_->address()});
  client_->refresh();
}

void BrokerTest::TearDown() {
  if (HasFailure() && bus_) std::cerr << "---- bus.log ----\n" << bus_->log() << "----\n";
  client_.reset();
  bus_.reset();
  catalog_.reset();
}

void BrokerTest::install(const std::string& name) {
  try {
    client_->ensure_ready(name);
  } catch (const epbroker::Error& e) {
    FAIL() << "installing " << name << ": " << e.what();
  }
}

}  // namespace tests::client_ort
