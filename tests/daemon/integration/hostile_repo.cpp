#include "tests/daemon/integration/hostile_repo.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include <fstream>
#include <random>
#include <stdexcept>

#include "catalog/atomic_file.hpp"
#include "catalog/crypto/hash.hpp"
#include "catalog/crypto/signing_key.hpp"
#include "catalog/ep_metadata.hpp"
#include "catalog/package/pack.hpp"

namespace tests::daemon {

namespace fs = std::filesystem;

namespace {

template <typename T>
T ok_or_throw(catalog::Result<T> r, const std::string& what) {
  if (!r) throw std::runtime_error("HostileRepo: " + what + ": " + r.error().message);
  if constexpr (!std::is_void_v<T>) return std::move(*r);
}

// Bytes zstd cannot shrink, different per seed.
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

std::string machine_arch() {
  utsname u{};
  uname(&u);
  return u.machine;
}

catalog::EpMetadata metadata(const std::string& name, const std::string& version,
                             const std::string& vendor) {
  nlohmann::json custom = {{"epbroker",
                            {{"schema", 1},
                             {"name", name},
                             {"version", version},
                             {"ep_names", {"EpbrokerHostileTestEp"}},
                             {"vendor", vendor},
                             {"arch", machine_arch()},
                             {"ort_min", "1.20.0"},
                             {"library", "lib/lib" + name + ".so"},
                             {"supports", {{{"type", "cpu"}}}},
                             {"description", "supply-chain test package"}}}};
  return ok_or_throw(catalog::parse_ep_metadata(custom), name + " metadata");
}

}  // namespace

catalog::tuf::TimePoint wall_now() {
  return std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
}

HostileRepo::HostileRepo(const std::vector<Package>& packages, support::HttpServerOptions server)
    : repo(ok_or_throw(catalog::tuf::Repository::create(wall_now()), "create")) {
  for (const auto& p : packages) add_package(p.name, "1.0.0", p.size);
  publish();
  ok_or_throw(catalog::atomic_write_file(trusted_root(), read("metadata/1.root.json")),
              "trusted root");
  server_ = std::make_unique<support::HttpServer>(dir(), std::move(server));
}

void HostileRepo::add_package(const std::string& name, const std::string& version, std::size_t size,
                              const std::optional<std::string>& manifest_vendor) {
  const auto signed_meta = metadata(name, version, "epbroker tests");
  const auto packed_meta =
      manifest_vendor ? metadata(name, version, *manifest_vendor) : signed_meta;
  const fs::path src = tmp_ / "src" / (name + "-" + version);
  fs::remove_all(src);
  fs::create_directories(src / "lib");
  ok_or_throw(catalog::atomic_write_file(src / signed_meta.library,
                                         noise(size, std::hash<std::string>{}(name + version))),
              "library");
  const std::string file = name + "-" + version + ".tar.zst";
  const fs::path package = tmp_ / "packages" / file;
  fs::create_directories(package.parent_path());
  ok_or_throw(catalog::package::pack_directory(src, packed_meta, package), "pack " + name);
  auto bytes = ok_or_throw(catalog::read_file(package, 1 << 30), "read package");
  target_files_[name] = "targets/" + name + "/" + catalog::crypto::sha256_hex(bytes) + "." + file;
  ok_or_throw(repo.add_target(name + "/" + file, std::move(bytes), catalog::to_json(signed_meta)),
              "add " + name);
}

void HostileRepo::delegate(const std::string& role, const std::vector<std::string>& paths,
                           bool terminating) {
  ok_or_throw(
      repo.add_delegation(role, paths, ok_or_throw(catalog::crypto::PrivateKey::generate(), "key"),
                          terminating),
      "delegate " + role);
}

std::string HostileRepo::add_package_as(const std::string& role, const std::string& dir,
                                        const std::string& name, const std::string& version,
                                        std::size_t size, const std::string& file_name) {
  const auto meta = metadata(name, version, "epbroker tests");
  const fs::path src = tmp_ / "src" / (role + "-" + dir + "-" + name + "-" + version);
  fs::remove_all(src);
  fs::create_directories(src / "lib");
  ok_or_throw(catalog::atomic_write_file(
                  src / meta.library, noise(size, std::hash<std::string>{}(dir + name + version))),
              "library");
  const std::string file = file_name.empty() ? name + "-" + version + ".tar.zst" : file_name;
  const fs::path package = tmp_ / "packages" / role / dir / file;
  fs::create_directories(package.parent_path());
  ok_or_throw(catalog::package::pack_directory(src, meta, package), "pack " + name);
  auto bytes = ok_or_throw(catalog::read_file(package, 1 << 30), "read package");
  const std::string served =
      "targets/" + dir + "/" + catalog::crypto::sha256_hex(bytes) + "." + file;
  ok_or_throw(repo.add_target(dir + "/" + file, std::move(bytes), catalog::to_json(meta), role),
              "add " + dir + "/" + file);
  return served;
}

void HostileRepo::publish(std::optional<catalog::tuf::TimePoint> at) {
  ok_or_throw(repo.publish(catalog::tuf::directory_writer(dir()), at.value_or(wall_now())),
              "publish");
}

void HostileRepo::publish_timestamp(std::optional<catalog::tuf::TimePoint> at) {
  ok_or_throw(
      repo.publish_timestamp(catalog::tuf::directory_writer(dir()), at.value_or(wall_now())),
      "publish timestamp");
}

std::string HostileRepo::sign(const std::string& role) const {
  return ok_or_throw(repo.sign_role(role), "sign " + role);
}

std::string HostileRepo::read(const std::string& rel) const {
  return ok_or_throw(catalog::read_file(dir() / rel, 1 << 30), "read " + rel);
}

void HostileRepo::write(const std::string& rel, const std::string& bytes) const {
  fs::create_directories((dir() / rel).parent_path());
  ok_or_throw(catalog::atomic_write_file(dir() / rel, bytes), "write " + rel);
}

std::string HostileRepo::target_file(const std::string& name) const {
  return target_files_.at(name);
}

std::string HostileRepo::metadata_url(const std::string& prefix) const {
  return server_->url(prefix + "metadata/");
}

std::string HostileRepo::targets_url(const std::string& prefix) const {
  return server_->url(prefix + "targets/");
}

// ---- configuration and the daemon ------------------------------------------------

void write_remote(const PrivateBus& bus, const RemoteConf& r) {
  std::string text = "[remote]\nname = " + r.name + "\nmetadata_url = " + r.metadata_url +
                     "\ntargets_url = " + r.targets_url +
                     "\ntrusted_root = " + r.trusted_root.string() +
                     "\nallow_http = " + (r.allow_http ? "true" : "false") +
                     "\npriority = " + std::to_string(r.priority) + "\n";
  if (!r.ca_file.empty()) text += "ca_file = " + r.ca_file + "\n";
  if (!r.mirrors.empty()) text += "mirrors = " + r.mirrors + "\n";
  if (!r.redirect_hosts.empty()) text += "redirect_hosts = " + r.redirect_hosts + "\n";
  ok_or_throw(catalog::atomic_write_file(bus.config_dir() / "remotes.d" / (r.name + ".conf"), text),
              "write remote " + r.name);
}

void remove_remote(const PrivateBus& bus, const std::string& name) {
  fs::remove(bus.config_dir() / "remotes.d" / (name + ".conf"));
}

void add_daemon_settings(const PrivateBus& bus, const std::string& lines) {
  std::ofstream out(bus.config_dir() / "epbroker.conf", std::ios::app);
  out << lines;
  if (!out) throw std::runtime_error("cannot append to epbroker.conf");
}

int wait_exit(pid_t pid, std::chrono::milliseconds timeout) {
  int code = -1;
  wait_until(
      [&] {
        int status = 0;
        const pid_t r = waitpid(pid, &status, WNOHANG);
        if (r < 0) {  // not our child (reaped elsewhere): gone once /proc says so
          return !fs::exists("/proc/" + std::to_string(pid)) && (code = 0, true);
        }
        if (r != pid) return false;
        code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        return true;
      },
      timeout);
  return code;
}

void restart_daemon(const PrivateBus& bus) {
  const auto pid = bus.broker_pid();
  if (!pid) return;  // not running: the next call starts one anyway
  ASSERT_EQ(kill(*pid, SIGTERM), 0);
  EXPECT_EQ(wait_exit(*pid, std::chrono::seconds(20)), 0) << "epbrokerd did not exit 0";
  EXPECT_TRUE(wait_until([&] { return !bus.broker_pid().has_value(); }, std::chrono::seconds(10)));
}

std::map<std::string, std::string> tree_of(const fs::path& dir) {
  std::map<std::string, std::string> out;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return out;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    struct stat st {};
    if (lstat(it->path().c_str(), &st) != 0) continue;
    std::string what = std::to_string(st.st_mode) + " " + std::to_string(st.st_size);
    if (S_ISREG(st.st_mode)) {
      auto bytes = catalog::read_file(it->path(), 1 << 30);
      what += " " + (bytes ? catalog::crypto::sha256_hex(*bytes) : "unreadable");
    } else if (S_ISLNK(st.st_mode)) {
      what += " -> " + fs::read_symlink(it->path(), ec).string();
    }
    out[fs::relative(it->path(), dir).string()] = what;
  }
  return out;
}

std::vector<std::string> entries_of(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) out.push_back(e.path().filename());
  return out;
}

JobEnd finish_job(sdbus::IConnection& conn, const std::string& path,
                  std::chrono::milliseconds timeout) {
  JobEnd end;
  end.state = wait_job(conn, path, nullptr, timeout);
  end.error = job_property(conn, path, "Error").get<std::string>();
  end.message = job_property(conn, path, "ErrorMessage").get<std::string>();
  return end;
}

std::vector<std::string> provider_lines(BrokerProxy& broker) {
  std::vector<std::string> out;
  for (const auto& p : broker.ListProviders()) {
    out.push_back(str(p, "name") + " " + str(p, "version") + " " + str(p, "state") + " " +
                  str(p, "remote"));
  }
  return out;
}

}  // namespace tests::daemon
