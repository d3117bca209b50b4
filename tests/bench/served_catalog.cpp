#include "tests/bench/served_catalog.hpp"

#include <chrono>
#include <stdexcept>

#include "catalog/atomic_file.hpp"
#include "catalog/ep_metadata.hpp"
#include "catalog/tuf/repository.hpp"

namespace tests::bench {

namespace fs = std::filesystem;

namespace {

template <typename T>
T ok_or_throw(catalog::Result<T> r, const std::string& what) {
  if (!r) throw std::runtime_error("ServedCatalog: " + what + ": " + r.error().message);
  if constexpr (!std::is_void_v<T>) return std::move(*r);
}

}  // namespace

ServedCatalog::ServedCatalog(const std::vector<ServedPackage>& packages) {
  const auto now = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
  auto repo = ok_or_throw(catalog::tuf::Repository::create(now), "create repository");
  for (const auto& p : packages) {
    const auto meta =
        ok_or_throw(catalog::parse_ep_metadata_text(
                        ok_or_throw(catalog::read_file(p.metadata, 1 << 20), p.metadata.string())),
                    p.metadata.string());
    auto bytes =
        ok_or_throw(catalog::read_file(p.package, std::uint64_t{4} << 30), p.package.string());
    const std::string path = meta.name + "/" + p.package.filename().string();
    ok_or_throw(repo.add_target(path, std::move(bytes), catalog::to_json(meta)), "add " + path);
  }
  ok_or_throw(repo.publish(catalog::tuf::directory_writer(tmp_ / "repo"), now), "publish");
  server_ = std::make_unique<support::NginxServer>(tmp_ / "repo");
}

void ServedCatalog::add_to(daemon::PrivateBus& bus, const std::string& remote) const {
  bus.add_remote(remote, server_->url("metadata/"), server_->url("targets/"),
                 tmp_ / "repo/metadata/1.root.json");
}

}  // namespace tests::bench
