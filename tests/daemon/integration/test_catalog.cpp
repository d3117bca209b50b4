#include "tests/daemon/integration/test_catalog.hpp"

#include <sys/utsname.h>

#include <chrono>
#include <random>
#include <stdexcept>

#include "catalog/atomic_file.hpp"
#include "catalog/canonical_json.hpp"
#include "catalog/crypto/hash.hpp"
#include "catalog/ep_metadata.hpp"
#include "catalog/model_metadata.hpp"
#include "catalog/package/extract.hpp"
#include "catalog/package/pack.hpp"
#include "catalog/tuf/repository.hpp"

namespace tests::daemon {

namespace fs = std::filesystem;

namespace {

template <typename T>
T ok_or_throw(catalog::Result<T> r, const std::string& what) {
  if (!r) throw std::runtime_error("TestCatalog: " + what + ": " + r.error().message);
  if constexpr (!std::is_void_v<T>) return std::move(*r);
}

std::string machine_arch() {
  utsname u{};
  uname(&u);
  return u.machine;
}

// Deterministic bytes that zstd cannot shrink.
std::string noise(std::size_t size, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::string out(size, '\0');
  for (std::size_t i = 0; i < size; i += 8) {
    const std::uint64_t v = gen();
    for (std::size_t j = 0; j < 8 && i + j < size; ++j) {
      out[i + j] = static_cast<char>((v >> (8 * j)) & 0xFF);
    }
  }
  return out;
}

catalog::EpMetadata metadata(const std::string& name, const std::string& version,
                             const std::string& arch, const std::string& library) {
  nlohmann::json custom = {
      {"epbroker",
       {{"schema", 1},
        {"name", name},
        {"version", version},
        {"ep_names", {"Epbroker" + std::string(name == kBulkEp ? "Bulk" : "Foreign") + "Ep"}},
        {"vendor", "epbroker tests"},
        {"arch", arch},
        {"ort_min", "1.20.0"},
        {"library", library},
        {"supports", {{{"type", "cpu"}}}},
        {"description", "daemon integration test package"}}}};
  return ok_or_throw(catalog::parse_ep_metadata(custom), name + " metadata");
}

fs::path source_dir() { return EPBROKER_INTEGRATION_SOURCE_DIR; }

}  // namespace

TestCatalog::TestCatalog(catalog::crypto::KeyType keys) {
  using std::chrono::floor;
  using std::chrono::seconds;
  using std::chrono::system_clock;
  const auto now = floor<seconds>(system_clock::now());
  const fs::path work = tmp_ / "work";
  fs::create_directories(work);

  repo_ = ok_or_throw(catalog::tuf::Repository::create(now, 1, 1, true, keys), "create repository");
  auto add = [&](const catalog::EpMetadata& meta, const fs::path& package, const fs::path& dir) {
    add_target(meta, package);
    targets_[meta.name] = versions_.at({meta.name, meta.version.text});
    sources_[meta.name] = {dir, package, meta};
  };

  // 1. test-ep: the built package, else a stand-in with its metadata.
  const fs::path ep_json = source_dir() / "ep-packages/test-ep/ep.json";
  auto test_meta = ok_or_throw(
      catalog::parse_ep_metadata_text(ok_or_throw(catalog::read_file(ep_json, 1 << 20), "ep.json")),
      "ep.json");
  fs::path test_package;
  const fs::path test_dir = work / "test-ep";  // the real package's files: extracted when needed
#ifdef EPBROKER_TEST_EP_PACKAGE
  if (fs::exists(EPBROKER_TEST_EP_PACKAGE)) {
    test_package = EPBROKER_TEST_EP_PACKAGE;
    real_test_ep_ = true;
  }
#endif
  if (test_package.empty()) {
    fs::create_directories((test_dir / test_meta.library).parent_path());
    ok_or_throw(catalog::atomic_write_file(test_dir / test_meta.library, noise(256 * 1024, 1)),
                "stand-in library");
    test_package = work / "test-ep-0.1.0.tar.zst";
    ok_or_throw(catalog::package::pack_directory(test_dir, test_meta, test_package),
                "pack test-ep");
  }
  add(test_meta, test_package, test_dir);

  // 2. bulk-ep and foreign-ep, packed here.
  const std::string arch = machine_arch();
  const std::string other_arch = arch == "aarch64" ? "x86_64" : "aarch64";
  for (const auto& [name, pkg_arch, size] :
       {std::tuple{std::string(kBulkEp), arch, std::size_t{4} << 20},
        std::tuple{std::string(kForeignEp), other_arch, std::size_t{64} << 10}}) {
    const std::string library = "lib/lib" + name + ".so";
    const fs::path dir = work / name;
    fs::create_directories(dir / "lib");
    ok_or_throw(catalog::atomic_write_file(dir / library, noise(size, name.size())), "library");
    const auto meta = metadata(name, "1.0.0", pkg_arch, library);
    const fs::path package = work / (name + "-1.0.0.tar.zst");
    ok_or_throw(catalog::package::pack_directory(dir, meta, package), "pack " + name);
    add(meta, package, dir);
  }

  // 3. Sign, publish, serve.
  ok_or_throw(repo_.publish(catalog::tuf::directory_writer(repo_dir()), now), "publish");
  faults_ = std::make_unique<support::HttpServer>(repo_dir());
  server_ = std::make_unique<support::NginxServer>(repo_dir(), faults_->port());
}

void TestCatalog::add_target(const catalog::EpMetadata& meta, const fs::path& package) {
  auto bytes = ok_or_throw(catalog::read_file(package, std::uint64_t{1} << 30), "read package");
  const std::string path = meta.name + "/" + package.filename().string();
  versions_[{meta.name, meta.version.text}] = {
      meta.name,   meta.version.text, path, bytes.size(), catalog::crypto::sha256_hex(bytes),
      meta.library};
  ok_or_throw(repo_.add_target(path, std::move(bytes), catalog::to_json(meta)), "add " + path);
}

void TestCatalog::publish() {
  const auto now = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
  ok_or_throw(repo_.publish(catalog::tuf::directory_writer(repo_dir()), now), "publish");
}

void TestCatalog::publish_model(const catalog::ModelMetadata& meta,
                                const std::vector<std::string>& files) {
  for (const auto& bytes : files) {
    const std::string path =
        catalog::model_blob_path(meta.name, catalog::crypto::sha256_hex(bytes));
    ok_or_throw(repo_.add_target(path, bytes, nullptr), "add " + path);
  }
  const std::string card = meta.name + "/" + meta.name + "-" + meta.version.text + ".model.json";
  ok_or_throw(repo_.add_target(card, catalog::to_json(meta).dump(), catalog::to_json(meta)),
              "add " + card);
  publish();
}

void TestCatalog::publish_package(const catalog::EpMetadata& meta) {
  const fs::path dir = tmp_ / "work" / (meta.name + "-" + meta.version.text);
  fs::create_directories((dir / meta.library).parent_path());
  ok_or_throw(catalog::atomic_write_file(dir / meta.library, noise(16 * 1024, meta.name.size())),
              "stand-in library");
  const fs::path package = tmp_ / "work" / (meta.name + "-" + meta.version.text + ".tar.zst");
  ok_or_throw(catalog::package::pack_directory(dir, meta, package), "pack " + meta.name);
  add_target(meta, package);
  targets_.try_emplace(meta.name, versions_.at({meta.name, meta.version.text}));
  publish();
}

void TestCatalog::publish_version(const std::string& name, const std::string& version,
                                  const std::string& ort_min) {
  const auto it = sources_.find(name);
  if (it == sources_.end()) throw std::runtime_error("TestCatalog: no package " + name);
  Source& src = it->second;
  if (!fs::exists(src.dir)) {
    // The real test-ep: its files as packed (modes included) from its package.
    fs::create_directories(src.dir);
    ok_or_throw(catalog::package::extract_package(src.package, src.dir), "extract " + name);
  }
  nlohmann::json custom = catalog::to_json(src.meta);
  custom["epbroker"]["version"] = version;
  if (!ort_min.empty()) custom["epbroker"]["ort_min"] = ort_min;
  const auto meta = ok_or_throw(catalog::parse_ep_metadata(custom), name + " " + version);
  const fs::path package = tmp_ / "work" / (name + "-" + version + ".tar.zst");
  ok_or_throw(catalog::package::pack_directory(src.dir, meta, package), "pack " + name);
  add_target(meta, package);
  publish();
}

void TestCatalog::withdraw(const std::string& name, const std::string& version) {
  const std::string path = name + "/" + name + "-" + version + ".tar.zst";
  ok_or_throw(repo_.remove_target(path), "remove " + path);
  versions_.erase({name, version});
  publish();
}

void TestCatalog::add_to(PrivateBus& bus, const std::string& remote) const {
  bus.add_remote(remote, metadata_url(), targets_url(), trusted_root());
}

void TestCatalog::add_as_mirror(PrivateBus& bus, const std::string& primary_base,
                                const std::string& remote) const {
  ok_or_throw(
      catalog::atomic_write_file(
          bus.config_dir() / "remotes.d" / (remote + ".conf"),
          "[remote]\nname = " + remote + "\nmetadata_url = " + primary_base +
              "metadata/\ntargets_url = " + primary_base + "targets/\nmirrors = " + base_url() +
              "\ntrusted_root = " + trusted_root().string() + "\nallow_http = true\n"),
      "write " + remote + ".conf");
}

}  // namespace tests::daemon
