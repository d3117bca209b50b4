// Package extraction benchmark. Prints figures; asserts nothing about speed.
//
//   bench_extract [PACKAGE] [--runs N] [--mb M] [--dir D]
//
// 1. Without PACKAGE: writes a synthetic EP-like directory of ~M MB (default 150)
//    of semi-compressible data (a few large "libraries", some medium files, many
//    small ones) and times pack_directory() on it (zstd level kZstdLevel).
// 2. Times extract_package() (decompress, check, SHA-256 every file, write,
//    fsync everything) against `tar --zstd -xf` / `tar -xzf` of the same archive
//    into a fresh directory, page cache warm, best of N (default 3), and prints
//    both and the speed ratio (tar time / ours; goal >= 0.90). tar neither
//    hashes nor fsyncs, so its time plus a `sync -f` of its output is printed too.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "catalog/atomic_file.hpp"
#include "catalog/ep_metadata.hpp"
#include "catalog/package/extract.hpp"
#include "catalog/package/pack.hpp"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double secs_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

[[noreturn]] void die(const std::string& what, const catalog::Error& e) {
  std::cerr << what << ": " << catalog::errc_name(e.code) << ": " << e.message << "\n";
  std::exit(1);
}

void run(const std::string& cmd) {
  if (std::system(cmd.c_str()) != 0) {
    std::cerr << "failed: " << cmd << "\n";
    std::exit(1);
  }
}

std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

// Data that compresses roughly like shared libraries (zstd ~3-4x): a mix of
// copies from a shared "code" pool, low-entropy runs and random bytes.
class DataGen {
 public:
  explicit DataGen(std::uint64_t seed) : state_(seed) {
    pool_.resize(std::size_t{1} << 20);
    for (char& c : pool_) c = static_cast<char>(next() >> 56);
  }
  std::string make(std::size_t n) {
    std::string out;
    out.reserve(n);
    while (out.size() < n) {
      const std::uint64_t r = next();
      const std::size_t len = std::min<std::size_t>(n - out.size(), 64 + (r & 255));
      switch ((r >> 8) % 10) {
        case 0:
        case 1:
        case 2:
        case 3:
        case 4: {  // a copy from the pool (repeated code, tables)
          const std::size_t at = static_cast<std::size_t>((r >> 16) % (pool_.size() - 512));
          out.append(pool_, at, len);
          break;
        }
        case 5:
        case 6:
        case 7:  // low entropy: 4 bits per byte
          for (std::size_t i = 0; i < len; ++i) {
            out.push_back(
                static_cast<char>("\0\1\2\3\x10\x20\x48\x89\x8b\xc3\xe8\xff@AB\n"[next() & 15]));
          }
          break;
        default:  // incompressible
          for (std::size_t i = 0; i < len; ++i) out.push_back(static_cast<char>(next() >> 56));
          break;
      }
    }
    return out;
  }

 private:
  std::uint64_t next() {
    state_ ^= state_ << 13;
    state_ ^= state_ >> 7;
    state_ ^= state_ << 17;
    return state_;
  }
  std::uint64_t state_;
  std::string pool_;
};

catalog::EpMetadata bench_meta() {
  auto m = catalog::parse_ep_metadata_text(R"({"epbroker": {
    "schema": 1, "name": "bench-ep", "version": "1.0.0", "ep_names": ["BenchEp"],
    "vendor": "bench", "arch": "x86_64", "ort_min": "1.23.0",
    "library": "lib/libbench_ep.so", "supports": [{"type": "cpu"}]}})");
  if (!m) die("metadata", m.error());
  return *m;
}

// ~mb MB: 3 large libraries (70%), 10 medium files (25%), 200 small ones (5%).
void make_synthetic(const fs::path& dir, std::size_t mb) {
  DataGen gen(0x9E3779B97F4A7C15ull);
  const std::size_t total = mb << 20;
  auto put = [&](const std::string& rel, std::size_t n, bool exec) {
    fs::create_directories((dir / rel).parent_path());
    auto ok = catalog::atomic_write_file(dir / rel, gen.make(n));
    if (!ok) die("write", ok.error());
    fs::permissions(dir / rel, exec ? fs::perms(0755) : fs::perms(0644));
  };
  put("lib/libbench_ep.so", total * 35 / 100, true);
  put("lib/libruntime.so.2024", total * 25 / 100, true);
  put("lib/plugins/libcpu_plugin.so", total * 10 / 100, true);
  for (int i = 0; i < 10; ++i) {
    put("lib/plugins/libextra_" + std::to_string(i) + ".so", total * 25 / 1000, true);
  }
  for (int i = 0; i < 200; ++i) {
    put("share/data/file_" + std::to_string(i) + ".bin", total * 5 / 100 / 200, false);
  }
}

struct Size {
  std::uintmax_t files = 0, bytes = 0;
};

Size tree_size(const fs::path& dir) {
  Size s;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) {
      ++s.files;
      s.bytes += e.file_size();
    }
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  std::string package_arg, dir_arg;
  std::size_t mb = 150;
  int runs = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--runs") {
      runs = std::max(1, std::stoi(next()));
    } else if (a == "--mb") {
      mb = static_cast<std::size_t>(std::stoul(next()));
    } else if (a == "--dir") {
      dir_arg = next();
    } else if (a.starts_with("-")) {
      std::cout << "usage: bench_extract [PACKAGE] [--runs N] [--mb M] [--dir D]\n";
      return a == "--help" || a == "-h" ? 0 : 2;
    } else {
      package_arg = a;
    }
  }
  char tmpl[] = "/tmp/epbroker-bench-extract-XXXXXX";
  const fs::path dir = dir_arg.empty() ? fs::path(::mkdtemp(tmpl)) : fs::path(dir_arg);
  fs::create_directories(dir);

  // 1. The package: given, or packed from a synthetic directory.
  fs::path package = package_arg;
  if (package.empty()) {
    const fs::path src = dir / "src";
    make_synthetic(src, mb);
    const Size s = tree_size(src);
    package = dir / "bench.tar.zst";
    const auto t0 = Clock::now();
    if (auto ok = catalog::package::pack_directory(src, bench_meta(), package); !ok) {
      die("pack", ok.error());
    }
    const double t = secs_since(t0);
    std::printf(
        "pack_directory (zstd level %d): %ju files, %.1f MB -> %.1f MB in %.2f s "
        "(%.0f MB/s)\n",
        catalog::package::kZstdLevel, s.files, static_cast<double>(s.bytes) / 1e6,
        static_cast<double>(fs::file_size(package)) / 1e6, t,
        static_cast<double>(s.bytes) / 1e6 / t);
    fs::remove_all(src);
  }
  const bool gzip = package.filename().string().ends_with(".gz");
  const std::string tar_flag = gzip ? "-z" : "--zstd";

  // 2. Warm the page cache, check the package once, measure its payload.
  run("cat " + quoted(package) + " > /dev/null");
  std::uintmax_t payload = 0, files = 0;
  {
    auto m = catalog::package::read_package_manifest(package);
    if (!m) die("manifest", m.error());
    files = m->files.size();
    for (const auto& f : m->files) payload += f.size;
  }
  std::printf("package %s: %.1f MB, %ju files, %.1f MB payload\n", package.c_str(),
              static_cast<double>(fs::file_size(package)) / 1e6, files,
              static_cast<double>(payload) / 1e6);

  // 3. Best of N each, alternating, fresh output directory every time.
  double ours = 1e18, tar = 1e18, tar_sync = 1e18;
  for (int r = 0; r < runs; ++r) {
    const fs::path a = dir / ("ours-" + std::to_string(r));
    fs::create_directories(a);
    auto t0 = Clock::now();
    auto m = catalog::package::extract_package(package, a);
    ours = std::min(ours, secs_since(t0));
    if (!m) die("extract_package", m.error());
    fs::remove_all(a);

    const fs::path b = dir / ("tar-" + std::to_string(r));
    fs::create_directories(b);
    t0 = Clock::now();
    run("tar " + tar_flag + " -xf " + quoted(package) + " -C " + quoted(b));
    tar = std::min(tar, secs_since(t0));
    run("sync -f " + quoted(b));
    tar_sync = std::min(tar_sync, secs_since(t0));
    fs::remove_all(b);
    run("sync -f " + quoted(dir));  // start every run with clean page cache writeback
  }
  const double mbs = static_cast<double>(payload) / 1e6;
  std::printf("extract_package (check, SHA-256, write, fsync): best of %d %.3f s = %.0f MB/s\n",
              runs, ours, mbs / ours);
  std::printf(
      "tar %s -xf:                                   best of %d %.3f s = %.0f MB/s "
      "(+ sync -f: %.3f s)\n",
      tar_flag.c_str(), runs, tar, mbs / tar, tar_sync);
  std::printf(
      "ratio (tar time / extract_package time): %.2fx  [goal >= 0.90]; "
      "vs tar + sync: %.2fx\n",
      tar / ours, tar_sync / ours);
  if (dir_arg.empty()) fs::remove_all(dir);
  return 0;
}
