#include "tests/fuzz/fuzz_support.hpp"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <nlohmann/json.hpp>
#include <utility>

#include "catalog/tuf/repository.hpp"

namespace epbroker_fuzz {

namespace fs = std::filesystem;
using catalog::tuf::Key;
using catalog::tuf::Repository;

namespace {

// Generated once with `openssl genpkey -algorithm ed25519`; test keys only.
struct FixedKey {
  std::string_view role;
  std::string_view pem;
};
constexpr FixedKey kKeys[] = {
    {"root",
     "-----BEGIN PRIVATE KEY-----\n"
     "MC4CAQAwBQYDK2VwBCIEIPe2WuIhAXpJ1h00OB5EZ1hy0MdXKSywrHwaNFKH3R5y\n"
     "-----END PRIVATE KEY-----\n"},
    {"root2",
     "-----BEGIN PRIVATE KEY-----\n"
     "MC4CAQAwBQYDK2VwBCIEIGUdj7gPvjiOrVEeAXun9VFRntI2W9zefpad92EmGmrv\n"
     "-----END PRIVATE KEY-----\n"},
    {"timestamp",
     "-----BEGIN PRIVATE KEY-----\n"
     "MC4CAQAwBQYDK2VwBCIEICd8XloeWc7wH5vPtJtTRWQnYhiWJQta21f1MlFWpprq\n"
     "-----END PRIVATE KEY-----\n"},
    {"snapshot",
     "-----BEGIN PRIVATE KEY-----\n"
     "MC4CAQAwBQYDK2VwBCIEIGUQaWuO9pYrMx6d2ykEFDu3i83VLXxn4+1pLsQ585ft\n"
     "-----END PRIVATE KEY-----\n"},
    {"targets",
     "-----BEGIN PRIVATE KEY-----\n"
     "MC4CAQAwBQYDK2VwBCIEILBD6pEljQTuVS+lWUuaC6D9b8BjJDNmom9n7mpu6dAp\n"
     "-----END PRIVATE KEY-----\n"},
    {"vendor",
     "-----BEGIN PRIVATE KEY-----\n"
     "MC4CAQAwBQYDK2VwBCIEIN+uVj87PaHRmKdMX4hGrP7am7Cqclk7+hfuxBGn4ILk\n"
     "-----END PRIVATE KEY-----\n"},
};

constexpr std::string_view kEpCustom = R"({
  "other-tool": {"weight": 15, "anything": [null, true]},
  "epbroker": {
    "schema": 1,
    "name": "test-ep",
    "version": "1.0.0",
    "ep_names": ["EpbrokerTestEp", "EpbrokerTestEp.Debug"],
    "vendor": "epbroker",
    "arch": "x86_64",
    "ort_min": "1.23.0",
    "library": "lib/libep.so",
    "supports": [
      {"type": "cpu"},
      {"type": "gpu", "vendor_ids": [4318], "device_ids": [8995, 8996], "driver": "nvidia",
       "driver_min": "550.54.14"},
      {"type": "npu", "vendor_ids": [], "driver": "amdxdna"}
    ],
    "requires": ["libvulkan.so.1", "libstdc++.so.6"],
    "description": "A test EP.\nIt does nothing useful."
  }
})";

template <typename T>
T must(catalog::Result<T> r, std::string_view what) {
  if (!r) finding(std::string(what) + ": " + r.error().message);
  if constexpr (!std::is_void_v<T>) return std::move(*r);
}

}  // namespace

bool verbose() {
  static const bool on = std::getenv("EPBROKER_FUZZ_VERBOSE") != nullptr;
  return on;
}

void finding(std::string_view what) {
  std::fprintf(stderr, "epbroker fuzz: %.*s\n", static_cast<int>(what.size()), what.data());
  std::abort();
}

catalog::crypto::PrivateKey fixed_key(std::string_view role) {
  for (const FixedKey& k : kKeys) {
    if (k.role == role) return must(catalog::crypto::PrivateKey::from_pem(k.pem), k.role);
  }
  finding("no fixed key for role " + std::string(role));
}

std::vector<std::string> fixed_key_roles() {
  std::vector<std::string> out;
  for (const FixedKey& k : kKeys) out.emplace_back(k.role);
  return out;
}

std::string_view sample_ep_custom_text() { return kEpCustom; }

std::vector<Files> fuzz_repository(bool pin_hashes) {
  Repository repo = must(Repository::create(kNow), "create repository");
  // create() made random keys; the fixed ones replace them in every top role.
  repo.root.keys.clear();
  for (auto& [role, r] : repo.root.roles) {
    catalog::crypto::PrivateKey key = fixed_key(role);
    const Key pub = Key::from_public(key.public_key());
    r.keyids = {pub.keyid()};
    r.threshold = 1;
    repo.root.keys.insert_or_assign(pub.keyid(), pub);
    repo.add_signing_key(std::move(key));
  }
  repo.pin_hashes = pin_hashes;
  const nlohmann::json custom = nlohmann::json::parse(kEpCustom);

  std::vector<Files> states;
  Files files;
  const catalog::tuf::FileWriter writer = [&files](const std::string& rel,
                                                   const std::string& bytes) {
    files[rel] = bytes;
    return catalog::Result<void>{};
  };
  must(repo.add_target("pkgs/test-ep-1.0.0.tar.zst", "package 1.0.0", custom), "add target");
  must(repo.add_delegation("vendor", {"vendor/*", "extra/*.tar.zst"}, fixed_key("vendor")),
       "delegate");
  must(repo.add_target("vendor/ep-2.0.0.tar.zst", "vendor package", custom, "vendor"),
       "add vendor target");
  must(repo.publish(writer, kNow), "publish 1");
  states.push_back(files);
  must(repo.add_target("pkgs/test-ep-1.1.0.tar.zst", "package 1.1.0", custom), "add target 2");
  must(repo.publish(writer, kNow), "publish 2");
  states.push_back(files);
  must(repo.rotate("root", fixed_key("root2")), "rotate root");
  must(repo.publish(writer, kNow), "publish 3");
  states.push_back(files);
  return states;
}

const std::string& trusted_root() {
  static const std::string root = fuzz_repository(true).front().at("metadata/1.root.json");
  return root;
}

std::vector<std::string_view> split_parts(std::string_view data, std::size_t max_parts) {
  std::vector<std::string_view> parts;
  while (parts.size() + 1 < max_parts) {
    const auto nul = data.find('\0');
    if (nul == std::string_view::npos) break;
    parts.push_back(data.substr(0, nul));
    data.remove_prefix(nul + 1);
  }
  parts.push_back(data);
  return parts;
}

namespace {
fs::path g_temp_dir;
void remove_temp_dir() {
  std::error_code ec;
  fs::remove_all(g_temp_dir, ec);
}
}  // namespace

const fs::path& process_temp_dir() {
  static std::once_flag once;
  std::call_once(once, [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/epbroker-fuzz.XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) finding("mkdtemp " + tmpl + " failed");
    g_temp_dir = tmpl;
    std::atexit(remove_temp_dir);
  });
  return g_temp_dir;
}

}  // namespace epbroker_fuzz
