// bench_model [--repeat N] [--model-dir DIR]: a model from the catalog, as a user
// meets it. Prints figures; asserts no speed.
//
// Google's Magika (the demo's model, scripts/demo/fetch-model.sh) is packed and
// signed with the real epbroker-publish (pack-model, add-model; two variants that
// share both files, scripts/demo/magika.model.json) and served by nginx on
// loopback. Then, N times, each on a fresh daemon with an empty store (its catalog
// refreshed first, as the daemon's timer does):
//   1. `epbroker-run --model magika --iterations 1` spawned and timed to its exit:
//      the model installed (download, verify, store), leased, loaded by ORT and run
//      once; with its own split (--json: catalog_model.ms, session_ms, first run);
//   2. the other variant installed too (Client::ensure_model): the store's disk
//      use counted by inode (physical) and by path (as copies would take).
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "epbroker/client.hpp"
#include "tests/daemon/integration/private_bus.hpp"
#include "tests/support/nginx_server.hpp"
#include "tests/support/temp_dir.hpp"

#if !defined(EPBROKER_BENCH_SOURCE_DIR) || !defined(EPBROKER_PUBLISH_PATH) || \
    !defined(EPBROKER_RUN_PATH)
#error "paths come from CMake"
#endif

namespace {

namespace fs = std::filesystem;
using tests::daemon::run_command;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

void must(const tests::daemon::CommandResult& r, const std::string& what) {
  if (r.exit_code != 0) {
    throw std::runtime_error(what + " failed (exit " + std::to_string(r.exit_code) + "):\n" +
                             r.out + r.err);
  }
}

// Bytes of the model files under `dir` (the store's markers left out): each inode
// once, and each path.
std::pair<std::uint64_t, std::uint64_t> usage(const fs::path& dir) {
  std::set<std::pair<dev_t, ino_t>> seen;
  std::uint64_t physical = 0, logical = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    struct stat st {};
    // Only the variants' files: not the store's marker of each variant.
    if (e.path().filename() == ".epbroker-model.json") continue;
    if (lstat(e.path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    logical += static_cast<std::uint64_t>(st.st_size);
    if (seen.insert({st.st_dev, st.st_ino}).second) {
      physical += static_cast<std::uint64_t>(st.st_size);
    }
  }
  return {physical, logical};
}

// ModelOptions for one variant.
epbroker::ModelOptions variant(const std::string& id) {
  epbroker::ModelOptions o;
  o.variant = id;
  return o;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 5;
  fs::path model_dir = fs::path(std::getenv("HOME") ? std::getenv("HOME") : "/root") /
                       ".cache/epbroker/models/magika";
  if (const char* c = std::getenv("EPBROKER_CACHE")) model_dir = fs::path(c) / "models/magika";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--repeat" && i + 1 < argc) {
      repeat = std::stoi(argv[++i]);
    } else if (a == "--model-dir" && i + 1 < argc) {
      model_dir = argv[++i];
    } else {
      std::cerr << "usage: bench_model [--repeat N] [--model-dir DIR]\n";
      return 2;
    }
  }
  try {
    // The publisher's side, with the real CLI.
    tests::support::TempDir pub;
    const fs::path src = EPBROKER_BENCH_SOURCE_DIR;
    for (const char* v : {"fp32", "fp32-cpu"}) {
      fs::create_directories(pub / "magika" / v);
      for (const char* f : {"model.onnx", "config.min.json"}) {
        fs::copy_file(model_dir / f, pub / "magika" / v / f);
      }
    }
    const std::string publish = EPBROKER_PUBLISH_PATH;
    must(run_command({publish, "init", "--repo", pub / "repo", "--keys", pub / "keys"}), "init");
    must(run_command({publish, "pack-model", "--dir", pub / "magika", "--metadata",
                      src / "scripts/demo/magika.model.json", "--output", pub / "magika.json"}),
         "pack-model");
    must(run_command({publish, "add-model", "--repo", pub / "repo", "--keys", pub / "keys",
                      "--model", pub / "magika.json", "--dir", pub / "magika"}),
         "add-model");
    tests::support::NginxServer nginx(pub / "repo");

    std::vector<double> spawn_to_exit, fetch, session, first;
    std::pair<std::uint64_t, std::uint64_t> disk{};
    for (int i = 0; i < repeat; ++i) {
      tests::daemon::PrivateBus bus;
      bus.add_remote("bench", nginx.url("metadata/"), nginx.url("targets/"),
                     pub / "repo/metadata/1.root.json");
      epbroker::Client client(epbroker::ClientOptions{bus.address()});
      client.refresh();
      const auto t = Clock::now();
      const auto r = run_command({EPBROKER_RUN_PATH, "--model", "magika", "--iterations", "1",
                                  "--warmup", "1", "--json", "--bus-address", bus.address()},
                                 std::chrono::seconds(120));
      spawn_to_exit.push_back(ms_since(t));
      must(r, "epbroker-run --model magika");
      const auto j = nlohmann::json::parse(r.out);
      fetch.push_back(j.at("catalog_model").at("ms").get<double>());
      session.push_back(j.at("session_ms").get<double>());
      first.push_back(j.at("latency").at("first_ms").get<double>());
      const auto other = client.ensure_model("magika", variant("fp32"));
      disk = usage(bus.store_dir() / "_models");
    }
    std::printf("magika 1.0.3 (model.onnx %ju bytes), %d runs, each on an empty store:\n",
                static_cast<std::uintmax_t>(fs::file_size(model_dir / "model.onnx")), repeat);
    std::printf("  epbroker-run --model magika, spawn to exit:   median %.0f ms\n",
                median(spawn_to_exit));
    std::printf("    of which install + lease (catalog_model.ms): median %.0f ms\n", median(fetch));
    std::printf("    ORT session creation:                       median %.0f ms\n",
                median(session));
    std::printf("    first inference:                            median %.1f ms\n", median(first));
    std::printf("  runs (spawn to exit, ms):");
    for (double v : spawn_to_exit) std::printf(" %.0f", v);
    std::printf(
        "\n  disk, both variants installed (2 files each, shared): %ju bytes stored, "
        "%ju bytes as copies (%.2fx)\n",
        static_cast<std::uintmax_t>(disk.first), static_cast<std::uintmax_t>(disk.second),
        disk.first ? static_cast<double>(disk.second) / static_cast<double>(disk.first) : 0);
  } catch (const std::exception& e) {
    std::cerr << "bench_model: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
