// libFuzzer target: epbrokerd's configuration files (daemon/config), read by
// the same load_config() the daemon calls at start.
//
// The input is NUL-separated: the first part becomes <config_dir>/epbroker.conf,
// each further part (at most 8) <config_dir>/remotes.d/NN.conf. The files live
// in one directory per process and are rewritten for every input. On success
// the documented shape of the result is checked: every remote named, URLs
// ending in '/', trusted_root absolute, remotes ordered by priority then name,
// names unique.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <string_view>

#include "daemon/config/config.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

namespace fs = std::filesystem;
using epbroker_fuzz::finding;

constexpr std::size_t kMaxParts = 9;

void write(const fs::path& p, std::string_view bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) finding("cannot write " + p.string());
}

void check(const epbrokerd::config::Config& c) {
  std::set<std::string> names;
  for (std::size_t i = 0; i < c.remotes.size(); ++i) {
    const auto& r = c.remotes[i];
    if (r.name.empty() || !names.insert(r.name).second) finding("remote name empty or twice");
    if (!r.primary.metadata_url.ends_with('/') || !r.primary.targets_url.ends_with('/')) {
      finding("remote " + r.name + ": a URL without its trailing '/'");
    }
    for (const auto& m : r.mirrors) {
      if (!m.metadata_url.ends_with('/') || !m.targets_url.ends_with('/')) {
        finding("remote " + r.name + ": a mirror URL without its trailing '/'");
      }
    }
    if (r.mirrors.size() > epbrokerd::config::kMaxMirrors) finding("too many mirrors kept");
    if (!r.trusted_root.is_absolute()) finding("remote " + r.name + ": relative trusted_root");
    if (i > 0) {
      const auto& p = c.remotes[i - 1];
      if (p.priority < r.priority || (p.priority == r.priority && p.name > r.name)) {
        finding("remotes out of order: " + p.name + " before " + r.name);
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const fs::path dir = epbroker_fuzz::process_temp_dir() / "config";
  static const fs::path remotes = dir / epbrokerd::config::kRemotesDirName;
  fs::create_directories(remotes);
  for (const auto& entry : fs::directory_iterator(remotes)) fs::remove_all(entry.path());

  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto parts = epbroker_fuzz::split_parts(input, kMaxParts);
  write(dir / epbrokerd::config::kConfigFileName, parts[0]);
  for (std::size_t i = 1; i < parts.size(); ++i) {
    char name[16];
    std::snprintf(name, sizeof name, "%02zu.conf", i);
    write(remotes / name, parts[i]);
  }

  epbrokerd::config::Paths paths;
  paths.config_dir = dir;
  auto config = epbrokerd::config::load_config(paths);
  if (epbroker_fuzz::verbose()) {
    std::fprintf(stderr, "load_config: %s\n",
                 config ? ("ok, " + std::to_string(config->remotes.size()) + " remotes").c_str()
                        : config.error().message.c_str());
  }
  if (config) check(*config);
  return 0;
}
