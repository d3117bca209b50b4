// Installing a ~500 MB EP package through epbrokerd vs the shell pipeline an
// admin would run on the same file: prints figures, asserts nothing.
//
//   bench_install [MB] [RUNS]      (default 500 MB, 2 runs; needs root: without
//                                   polkit only root may install)
//
// The package: MB of incompressible bytes (3 libraries and 200 small files),
// packed by catalog::package::pack_directory() exactly as epbroker-publish packs
// (pax tar, zstd level 9), published in a signed TUF repository and served by
// Debian's nginx on loopback (tests/support/nginx_server.hpp).
//   epbrokerd:  EnsureProvider -> Job1.Finished, on a daemon activated on a
//               private bus (the integration tests' PrivateBus) whose catalog was
//               refreshed first: TUF checks, download with SHA-256 on the fly,
//               streamed meanwhile into the commit helper's own copy (hashed,
//               not parsed); once it verified, the helper's TUF check, safe
//               extraction of its copy with each file's SHA-256 checked against
//               the signed manifest, the whole tree made durable (syncfs) and
//               renamed into the store. The job's State changes give the split.
//   baseline:   curl -sSfo FILE URL; sha256sum FILE; tar --zstd -xf FILE -C DIR
//               (the flags the package format needs), then `sync -f DIR` (the
//               daemon fsyncs; the baseline is printed with and without it).
// Every run starts after a `sync`, and the provider is removed between runs.
// Space: about 5x MB under $TMPDIR (default /tmp), checked first; all removed.
#include <signal.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "catalog/atomic_file.hpp"
#include "catalog/ep_metadata.hpp"
#include "catalog/package/pack.hpp"
#include "catalog/tuf/repository.hpp"
#include "tests/daemon/integration/private_bus.hpp"
#include "tests/support/nginx_server.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
using tests::daemon::PrivateBus;

constexpr const char* kName = "bench-ep";

double secs(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Thrown to main(), so that every temporary file is removed on the way out.
[[noreturn]] void die(const std::string& what) { throw std::runtime_error(what); }

template <typename T>
T ok_or_die(catalog::Result<T> r, const std::string& what) {
  if (!r) die(what + ": " + r.error().message);
  if constexpr (!std::is_void_v<T>) return std::move(*r);
}

// Runs a shell command; dies if it fails.
void sh(const std::string& command) {
  if (std::system(command.c_str()) != 0) die("failed: " + command);
}

std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

// `size` bytes that zstd cannot shrink.
void write_noise(const fs::path& p, std::size_t size, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::string out(size, '\0');
  for (std::size_t i = 0; i + 8 <= size; i += 8) {
    const std::uint64_t v = gen();
    std::memcpy(out.data() + i, &v, 8);
  }
  ok_or_die(catalog::atomic_write_file(p, out), "write " + p.string());
}

catalog::EpMetadata metadata() {
  utsname u{};
  uname(&u);
  nlohmann::json custom = {{"epbroker",
                            {{"schema", 1},
                             {"name", kName},
                             {"version", "1.0.0"},
                             {"ep_names", {"BenchEp"}},
                             {"vendor", "epbroker bench"},
                             {"arch", u.machine},
                             {"ort_min", "1.20.0"},
                             {"library", "lib/libbench-ep.so"},
                             {"supports", {{{"type", "cpu"}}}},
                             {"description", "install benchmark package"}}}};
  return ok_or_die(catalog::parse_ep_metadata(custom), "metadata");
}

// The package's files: 40% + 30% + 20% of `bytes` in three libraries, the rest
// in 200 small files (models, data).
void make_payload(const fs::path& dir, std::uint64_t bytes) {
  fs::create_directories(dir / "lib");
  fs::create_directories(dir / "share");
  write_noise(dir / "lib/libbench-ep.so", bytes * 4 / 10, 1);
  write_noise(dir / "lib/libbench-dep1.so", bytes * 3 / 10, 2);
  write_noise(dir / "lib/libbench-dep2.so", bytes * 2 / 10, 3);
  const std::size_t small = bytes / 10 / 200;
  for (int i = 0; i < 200; ++i) {
    write_noise(dir / "share" / ("data-" + std::to_string(i) + ".bin"), small,
                100 + static_cast<std::uint64_t>(i));
  }
}

// Job1 signals of every job, with the time each was seen.
class JobWatch {
 public:
  explicit JobWatch(sdbus::IConnection& conn) {
    const std::string rule = std::string("type='signal',sender='") + tests::daemon::kBrokerName +
                             "',path_namespace='" + tests::daemon::kBrokerPath + "/job'";
    slot_ = conn.addMatch(rule, [this](sdbus::Message& msg) {
      const auto now = Clock::now();
      std::string state;
      if (std::string(msg.getMemberName()) == "Finished") {
        std::string error;
        std::string message;
        msg >> state >> error >> message;
        std::lock_guard lock(mu_);
        finished_[msg.getPath()] = {now, state, message};
        cv_.notify_all();
        return;
      }
      std::string iface;
      std::map<std::string, sdbus::Variant> changed;
      msg >> iface >> changed;
      auto it = changed.find("State");
      if (it == changed.end()) return;
      std::lock_guard lock(mu_);
      states_[msg.getPath()].emplace(it->second.get<std::string>(), now);  // first time only
    });
  }

  struct Finish {
    Clock::time_point at;
    std::string state;
    std::string message;
  };
  Finish wait(const std::string& path, std::chrono::seconds timeout) {
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, timeout, [&] { return finished_.contains(path); })) {
      die("job " + path + " did not finish within " + std::to_string(timeout.count()) + " s");
    }
    return finished_.at(path);
  }
  std::map<std::string, Clock::time_point> states(const std::string& path) {
    std::lock_guard lock(mu_);
    return states_[path];
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Finish> finished_;
  std::map<std::string, std::map<std::string, Clock::time_point>> states_;
  sdbus::Slot slot_;
};

}  // namespace

int run(int argc, char** argv) {
  const std::uint64_t mb = argc > 1 ? std::stoull(argv[1]) : 500;
  const int runs = argc > 2 ? std::stoi(argv[2]) : 2;
  const std::uint64_t bytes = mb << 20;
  setenv("EPBROKER_SOURCE_DIR", EPBROKER_BENCH_SOURCE_DIR, 0);
  if (geteuid() != 0) {
    std::printf("install: skipped (not root: without polkit only root may install)\n");
    return 0;
  }
  if (tests::support::find_nginx().empty()) {
    std::printf("install: skipped (nginx is not installed)\n");
    return 0;
  }

  // 0. Space: package, served copy, daemon download + store, baseline file + tree.
  const fs::path tmp_root = fs::temp_directory_path();
  struct statvfs vfs {};
  if (statvfs(tmp_root.c_str(), &vfs) != 0) die("statvfs " + tmp_root.string());
  const std::uint64_t free_bytes = static_cast<std::uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  if (free_bytes < bytes * 6) {
    die("needs " + std::to_string(bytes * 6 >> 20) + " MB free under " + tmp_root.string() +
        ", has " + std::to_string(free_bytes >> 20) + " MB (set TMPDIR elsewhere)");
  }

  // 1. The package, then a signed repository serving it.
  tests::support::TempDir work;
  const auto meta = metadata();
  fs::path package = work / "bench-ep-1.0.0.tar.zst";
  {
    auto t0 = Clock::now();
    make_payload(work / "payload", bytes);
    ok_or_die(catalog::package::pack_directory(work / "payload", meta, package), "pack");
    std::printf("package: %.0f MB of files -> %.0f MB %s (pack_directory, zstd %d) in %.1f s\n",
                static_cast<double>(bytes) / 1e6, static_cast<double>(fs::file_size(package)) / 1e6,
                package.filename().c_str(), catalog::package::kZstdLevel, secs(Clock::now() - t0));
    fs::remove_all(work / "payload");
  }
  const auto now = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
  {
    auto repo = ok_or_die(catalog::tuf::Repository::create(now), "create repository");
    auto data = ok_or_die(catalog::read_file(package, bytes * 2), "read package");
    ok_or_die(repo.add_target(std::string(kName) + "/" + package.filename().string(),
                              std::move(data), catalog::to_json(meta)),
              "add target");
    ok_or_die(repo.publish(catalog::tuf::directory_writer(work / "repo"), now), "publish");
    fs::remove(package);
  }
  // The published target (consistent snapshots: targets/bench-ep/<sha256>.<name>).
  fs::path served;
  for (const auto& e : fs::directory_iterator(work / "repo/targets" / kName)) served = e.path();
  const std::string rel = "targets/" + std::string(kName) + "/" + served.filename().string();
  const double size_mb = static_cast<double>(fs::file_size(served)) / 1e6;
  tests::support::NginxServer nginx(work / "repo");
  const std::string url = nginx.url(rel);

  // 2. The daemon: private bus, refreshed catalog.
  PrivateBus bus;
  bus.add_remote("bench", nginx.url("metadata/"), nginx.url("targets/"),
                 work / "repo/metadata/1.root.json");
  auto conn = bus.connect();
  JobWatch watch(*conn);
  auto broker = sdbus::createProxy(*conn, tests::daemon::kBrokerName, tests::daemon::kBrokerPath);
  broker->finishRegistration();
  auto start_job = [&](const char* method, const std::vector<std::string>& args) {
    sdbus::ObjectPath job;
    auto call = broker->createMethodCall(tests::daemon::kBrokerInterface, method);
    for (const auto& a : args) call << a;
    broker->callMethod(call) >> job;
    return std::string(job);
  };
  {
    const auto job = start_job("RefreshCatalog", {});
    if (auto f = watch.wait(job, 120s); f.state != "done") die("refresh: " + f.message);
  }

  // 3. Runs, alternating.
  std::vector<double> daemon_s;
  std::vector<double> curl_s;
  std::vector<double> sha_s;
  std::vector<double> tar_s;
  std::vector<double> sync_s;
  std::vector<std::string> splits;
  for (int r = 0; r < runs; ++r) {
    sh("sync");
    auto t0 = Clock::now();
    const auto job = start_job("EnsureProvider", {kName});
    const auto f = watch.wait(job, 600s);
    if (f.state != "done") die("install: " + f.message + "\n" + bus.log());
    daemon_s.push_back(secs(f.at - t0));
    const auto states = watch.states(job);
    // State changes: verifying once the download (streamed meanwhile into the
    // commit helper's own copy) is over; installing once the helper verified its
    // copy, extracted and sealed it (Store::install's verifying phase); then the
    // rename, the index and the daemon's re-read of it.
    char split[200];
    auto at = [&](const char* s) {
      auto it = states.find(s);
      return it == states.end() ? -1.0 : secs(it->second - t0);
    };
    std::snprintf(
        split, sizeof split,
        "download + copy to the helper %.2f, helper verify+extract+seal %.2f, commit %.2f",
        at("verifying"), at("installing") - at("verifying"), secs(f.at - t0) - at("installing"));
    splits.push_back(split);
    broker->callMethod("RemoveProvider")
        .onInterface(tests::daemon::kBrokerInterface)
        .withArguments(std::string(kName));

    sh("sync");
    const fs::path file = work / "curl.tar.zst";
    const fs::path tree = work / "tar-tree";
    fs::create_directories(tree);
    t0 = Clock::now();
    sh("curl -sSf -o " + quoted(file) + " '" + url + "'");
    auto t1 = Clock::now();
    sh("sha256sum " + quoted(file) + " > /dev/null");
    auto t2 = Clock::now();
    sh("tar --zstd -xf " + quoted(file) + " -C " + quoted(tree));
    auto t3 = Clock::now();
    sh("sync -f " + quoted(tree));
    auto t4 = Clock::now();
    curl_s.push_back(secs(t1 - t0));
    sha_s.push_back(secs(t2 - t1));
    tar_s.push_back(secs(t3 - t2));
    sync_s.push_back(secs(t4 - t3));
    fs::remove(file);
    fs::remove_all(tree);
  }

  // 4. Figures (best run of each; every run listed).
  const auto best = [](const std::vector<double>& v) {
    return *std::min_element(v.begin(), v.end());
  };
  std::vector<double> base;
  std::vector<double> base_sync;
  for (std::size_t r = 0; r < daemon_s.size(); ++r) {
    base.push_back(curl_s[r] + sha_s[r] + tar_s[r]);
    base_sync.push_back(base.back() + sync_s[r]);
  }
  std::printf("install of %.0f MB over loopback (nginx), best of %d:\n", size_mb, runs);
  for (std::size_t r = 0; r < daemon_s.size(); ++r) {
    std::printf(
        "  run %zu: epbrokerd %.2f s (%s); curl %.2f + sha256sum %.2f + tar %.2f "
        "(+ sync %.2f) s\n",
        r + 1, daemon_s[r], splits[r].c_str(), curl_s[r], sha_s[r], tar_s[r], sync_s[r]);
  }
  const double d = best(daemon_s);
  std::printf(
      "epbrokerd EnsureProvider -> Finished:           %.2f s = %.0f MB/s\n"
      "curl -o + sha256sum + tar --zstd -xf:           %.2f s = %.0f MB/s  (ratio %.2f)\n"
      "curl -o + sha256sum + tar --zstd -xf + sync -f: %.2f s = %.0f MB/s  (ratio %.2f)  "
      "[goal: epbrokerd faster, ratio > 1]\n",
      d, size_mb / d, best(base), size_mb / best(base), best(base) / d, best(base_sync),
      size_mb / best(base_sync), best(base_sync) / d);
  return 0;
}

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_install: %s\n", e.what());
    return 1;
  }
}
