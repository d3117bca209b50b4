// Writes the seed corpora of the fuzz targets: make_seeds OUTDIR creates
// OUTDIR/{tuf_metadata,ep_metadata,model_metadata,config,archive}/ with one file per seed.
//
// The seeds are what the tests use, built the way the tests build them: the
// signed TUF repository of fuzz_support (Repository, as tests/unit and
// tests/integration do), the EP metadata examples of tests/unit/ep_metadata_test, the
// model cards of tests/unit/model_metadata_test,
// the config cases of tests/daemon/config_test, and packages made by
// pack_directory() and by libarchive directly (honest, hostile and damaged ones,
// as tests/integration/package_extract_test makes them). Deterministic.
#include <archive.h>
#include <archive_entry.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "catalog/crypto/hash.hpp"
#include "catalog/ep_metadata.hpp"
#include "catalog/model_metadata.hpp"
#include "catalog/package/manifest.hpp"
#include "catalog/package/pack.hpp"
#include "catalog/tuf/metadata.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

namespace fs = std::filesystem;
namespace pkg = catalog::package;
using epbroker_fuzz::finding;
using nlohmann::json;

fs::path g_out;
int g_count = 0;

void seed(const std::string& target, const std::string& name, const std::string& bytes) {
  const fs::path dir = g_out / target;
  fs::create_directories(dir);
  std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) finding("cannot write " + (dir / name).string());
  ++g_count;
}

std::string join_nul(const std::vector<std::string>& parts) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += '\0';
    out += parts[i];
  }
  return out;
}

// ---- tuf_metadata -------------------------------------------------------------------

std::string signed_part(const std::string& envelope) {
  return json::parse(envelope).at("signed").dump();
}

// The chain a client walks for `state`: newer roots, timestamp, snapshot, targets,
// vendor (each named by the version the previous one pins).
std::vector<std::string> chain_of(const epbroker_fuzz::Files& state) {
  std::vector<std::string> chain;
  for (int v = 2; state.contains("metadata/" + std::to_string(v) + ".root.json"); ++v) {
    chain.push_back(state.at("metadata/" + std::to_string(v) + ".root.json"));
  }
  const std::string& ts = state.at("metadata/timestamp.json");
  chain.push_back(ts);
  const auto ts_md = catalog::tuf::parse_metadata<catalog::tuf::Timestamp>(ts);
  if (!ts_md) finding("seed timestamp: " + ts_md.error().message);
  const std::string sn = state.at(
      "metadata/" + std::to_string(ts_md->signed_.snapshot_meta.version) + ".snapshot.json");
  chain.push_back(sn);
  const auto sn_md = catalog::tuf::parse_metadata<catalog::tuf::Snapshot>(sn);
  if (!sn_md) finding("seed snapshot: " + sn_md.error().message);
  for (const char* role : {"targets", "vendor"}) {
    const auto& mf = sn_md->signed_.meta.at(std::string(role) + ".json");
    chain.push_back(state.at("metadata/" + std::to_string(mf.version) + "." + role + ".json"));
  }
  return chain;
}

void tuf_seeds() {
  for (const bool pin : {true, false}) {
    const std::string tag = pin ? "pinned" : "unpinned";
    const auto states = epbroker_fuzz::fuzz_repository(pin);
    for (const auto& [path, bytes] : states.back()) {
      if (!path.starts_with("metadata/")) continue;
      seed("tuf_metadata", "P-" + tag + "-" + path.substr(9), "P" + bytes);
    }
    for (std::size_t i = 0; i < states.size(); ++i) {
      const auto chain = chain_of(states[i]);
      const std::string n = std::to_string(i + 1);
      seed("tuf_metadata", "C-" + tag + "-publish" + n, "C" + join_nul(chain));
      std::vector<std::string> bare;
      for (const auto& doc : chain) bare.push_back(signed_part(doc));
      seed("tuf_metadata", "S-" + tag + "-publish" + n, "S" + join_nul(bare));
    }
    // Rollback: the newest chain, then the first publish's timestamp again.
    auto rollback = chain_of(states.back());
    rollback.insert(rollback.end() - 3, chain_of(states.front())[0]);
    seed("tuf_metadata", "C-" + tag + "-rollback", "C" + join_nul(rollback));
  }
}

// ---- ep_metadata ---------------------------------------------------------------------

void ep_metadata_seeds() {
  const std::string full(epbroker_fuzz::sample_ep_custom_text());
  seed("ep_metadata", "full.json", full);
  std::string with_float = full;
  with_float.replace(with_float.find("15"), 2, "1.5e-3");
  seed("ep_metadata", "float-in-other-key.json", with_float);
  seed("ep_metadata", "minimal.json", R"({"epbroker": {
    "schema": 1, "name": "m", "version": "2", "ep_names": ["E"], "vendor": "v",
    "arch": "aarch64", "ort_min": "1.20", "library": "libm.so",
    "supports": [{"type": "npu"}]}})");
  seed("ep_metadata", "runtime.json", R"({"epbroker": {
    "schema": 1, "name": "onnxruntime", "kind": "runtime", "version": "1.30.0-rc1",
    "ep_names": [], "vendor": "Microsoft", "arch": "x86_64", "ort_min": "1.30.0",
    "library": "lib/libonnxruntime.so.1", "supports": [{"type": "cpu"}]}})");
  // Schema 2 is read like 1 (this one stops at "name" missing); 3 is unsupported;
  // a schema 2 model is unsupported here (parse_model_metadata() reads it).
  seed("ep_metadata", "schema2.json", R"({"epbroker": {"schema": 2}})");
  seed("ep_metadata", "schema3.json", R"({"epbroker": {"schema": 3}})");
  seed("ep_metadata", "schema2-model.json", R"({"epbroker": {
    "schema": 2, "kind": "model", "name": "m", "version": "1"}})");
  seed("ep_metadata", "duplicate-key.json",
       R"({"epbroker": {"schema": 1, "name": "a", "name": "b"}})");
  auto meta = catalog::parse_ep_metadata(json::parse(full));
  if (!meta) finding("sample metadata: " + meta.error().message);
  pkg::Manifest m{*meta,
                  {{"LICENSE", 9, catalog::crypto::sha256_hex("MIT, say\n"), false},
                   {"lib/libep.so", 5, catalog::crypto::sha256_hex("LLLLL"), true}}};
  seed("ep_metadata", "manifest.json", pkg::to_text(m));
}

// ---- model_metadata ------------------------------------------------------------------

// Model cards as tests/unit/model_metadata_test writes them: two variants sharing
// a file, one for any device and one for an NPU's EP; and near misses.
void model_metadata_seeds() {
  const std::string sha_a(64, 'a');
  const std::string sha_b(64, 'b');
  const std::string sha_l = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
  json c = json::parse(R"({"other-tool": {"x": 1.5}, "epbroker": {
    "schema": 2, "kind": "model", "name": "resnet50", "version": "1.0.2",
    "publisher": "Example Models", "license": "(Apache-2.0 OR MIT) AND LicenseRef-extra",
    "license_url": "https://example.org/license.txt", "description": "ResNet-50.",
    "task": "image-classification",
    "inputs": [{"name": "data", "type": "float", "shape": ["N", 3, 224, 224]}],
    "outputs": [{"name": "prob", "type": "float", "shape": ["N", 1000]}],
    "variants": [
      {"id": "fp32", "ort_min": "1.20", "opset": 17, "precision": "fp32",
       "main": "model.onnx", "files": []},
      {"id": "int8-qdq", "devices": ["npu"], "eps": ["OpenVINOExecutionProvider"],
       "ort_min": "1.22.0", "opset": 17, "precision": "int8", "main": "int8/model.onnx",
       "files": []}]}})");
  json& v = c["epbroker"]["variants"];
  v[0]["files"] = {{{"path", "model.onnx"}, {"size", 1024}, {"sha256", sha_a}},
                   {{"path", "labels.txt"}, {"size", 21}, {"sha256", sha_l}}};
  v[1]["files"] = {{{"path", "int8/model.onnx"}, {"size", 256}, {"sha256", sha_b}},
                   {{"path", "labels.txt"}, {"size", 21}, {"sha256", sha_l}}};
  const auto full = c.dump(2);
  seed("model_metadata", "full.json", full);
  auto m = catalog::parse_model_metadata(c);
  if (!m) finding("model seed refused: " + m.error().message);
  seed("model_metadata", "to_json.json", catalog::to_json(*m).dump());
  json bad = c;
  bad["epbroker"]["variants"][1]["main"] = "missing.onnx";
  seed("model_metadata", "main-not-listed.json", bad.dump());
  bad = c;
  bad["epbroker"]["ep_names"] = json::array({"X"});
  seed("model_metadata", "ep-key.json", bad.dump());
  bad = c;
  bad["epbroker"]["schema"] = 1;
  seed("model_metadata", "schema1.json", bad.dump());
  bad = c;
  bad["epbroker"]["license"] = "((MIT WITH";
  seed("model_metadata", "bad-license.json", bad.dump());
  seed("model_metadata", "package.json", std::string(epbroker_fuzz::sample_ep_custom_text()));
}

// ---- config -------------------------------------------------------------------------

void config_seeds() {
  const std::string daemon =
      "# epbroker daemon settings\n; another comment style\n\n  [daemon]  \n"
      "idle_timeout_sec=0\n\trefresh_interval_sec  =  3600\t\nmax_sessions_per_client = 4096\n"
      "max_jobs_per_client = 1\ninstall_group = epbroker-admins\nlog_level = debug";
  const std::string vendor =
      "# a vendor catalog\n[remote]\nname = vendor\n"
      "metadata_url = https://vendor.example.com:8443/ep/metadata\n"
      "targets_url = https://vendor.example.com:8443/ep/targets/\n"
      "mirrors = https://mirror1.example.net/vendor   https://[2001:db8::1]:443/v/\n"
      "trusted_root = /usr/share/epbroker/roots/vendor.json\npriority = 10\nenabled = no\n";
  const std::string distro =
      "[remote]\nname = distro\nmetadata_url = http://distro.example.org/metadata\n"
      "targets_url = http://distro.example.org/targets/\ntrusted_root = roots/distro.json\n"
      "priority = -5\nallow_http = true\n";
  seed("config", "daemon-only", daemon);
  seed("config", "daemon-and-remotes", join_nul({daemon, vendor, distro}));
  seed("config", "remotes-only", join_nul({"", vendor, distro, vendor}));
  seed("config", "bad-key", "[daemon]\nidle_timeout = 5\n");
  seed("config", "crlf", "[daemon]\r\nlog_level = info\r\n");
  seed("config", "remote-missing-name",
       join_nul({"[daemon]\n",
                 "# c\n[remote]\nmetadata_url = https://a/m\n"
                 "targets_url = https://a/t\ntrusted_root = r\n"}));
}

// ---- archive ------------------------------------------------------------------------

enum class Filter { none, zstd, gzip };

struct Entry {
  Entry(std::string p, std::string d = "", unsigned t = AE_IFREG, unsigned m = 0644,
        std::string l = "", bool h = false)
      : path(std::move(p)), data(std::move(d)), type(t), mode(m), link(std::move(l)), hard(h) {}
  std::string path;
  std::string data;
  unsigned type;
  unsigned mode;
  std::string link;  // symlink target, or the hardlink's target when `hard`
  bool hard;
};

std::string write_archive(const std::vector<Entry>& entries, Filter filter, bool ustar = false) {
  archive* a = archive_write_new();
  ustar ? archive_write_set_format_ustar(a) : archive_write_set_format_pax_restricted(a);
  if (filter == Filter::zstd) archive_write_add_filter_zstd(a);
  if (filter == Filter::gzip) archive_write_add_filter_gzip(a);
  archive_write_set_bytes_in_last_block(a, 1);
  std::vector<char> buf(1 << 20);
  std::size_t used = 0;
  if (archive_write_open_memory(a, buf.data(), buf.size(), &used) != ARCHIVE_OK) {
    finding(std::string("archive_write_open_memory: ") + archive_error_string(a));
  }
  for (const Entry& e : entries) {
    archive_entry* ae = archive_entry_new();
    archive_entry_copy_pathname(ae, e.path.c_str());
    archive_entry_set_filetype(ae, e.type);
    archive_entry_set_perm(ae, e.mode);
    archive_entry_set_size(ae, e.type == AE_IFREG ? static_cast<la_int64_t>(e.data.size()) : 0);
    if (!e.link.empty() && e.hard) archive_entry_copy_hardlink(ae, e.link.c_str());
    if (!e.link.empty() && !e.hard) archive_entry_copy_symlink(ae, e.link.c_str());
    if (e.type == AE_IFCHR) archive_entry_set_rdev(ae, makedev(1, 3));
    archive_write_header(a, ae);
    if (!e.data.empty()) archive_write_data(a, e.data.data(), e.data.size());
    archive_entry_free(ae);
  }
  archive_write_close(a);
  archive_write_free(a);
  return std::string(buf.data(), used);
}

catalog::EpMetadata package_meta() {
  auto m = catalog::parse_ep_metadata(json::parse(epbroker_fuzz::sample_ep_custom_text()));
  if (!m) finding("sample metadata: " + m.error().message);
  return *m;
}

std::vector<Entry> payload() {
  return {{"LICENSE", "MIT, say\n"},
          {"lib/libep.so", std::string(300, 'L'), AE_IFREG, 0755},
          {"share/readme.txt", "hello\n"}};
}

Entry manifest_of(const std::vector<Entry>& files) {
  pkg::Manifest m{package_meta(), {}};
  for (const Entry& e : files) {
    if (e.type == AE_IFREG && !e.hard) {
      m.files.push_back(
          {e.path, e.data.size(), catalog::crypto::sha256_hex(e.data), e.mode == 0755});
    }
  }
  std::sort(m.files.begin(), m.files.end(),
            [](const pkg::FileEntry& a, const pkg::FileEntry& b) { return a.path < b.path; });
  return {"manifest.json", pkg::to_text(m)};
}

// manifest (listing `listed`) followed by `entries`.
std::string package(const std::vector<Entry>& listed, std::vector<Entry> entries, Filter filter) {
  entries.insert(entries.begin(), manifest_of(listed));
  return write_archive(entries, filter);
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void archive_seeds() {
  // Honest packages as epbroker-publish makes them.
  const fs::path work = epbroker_fuzz::process_temp_dir() / "pack";
  fs::create_directories(work / "tree/lib");
  fs::create_directories(work / "tree/share");
  for (const Entry& e : payload()) {
    std::ofstream(work / "tree" / e.path, std::ios::binary) << e.data;
    fs::permissions(work / "tree" / e.path, e.mode == 0755 ? fs::perms(0755) : fs::perms(0644));
  }
  for (const auto& [name, c] : {std::pair{"packed.tar.zst", pkg::Compression::zstd},
                                std::pair{"packed.tar.gz", pkg::Compression::gzip}}) {
    if (auto r = pkg::pack_directory(work / "tree", package_meta(), work / name, c); !r) {
      finding("pack_directory: " + r.error().message);
    }
    const std::string bytes = read_all(work / name);
    seed("archive", name, bytes);
    seed("archive", std::string("truncated-") + name, bytes.substr(0, bytes.size() / 2));
    std::string flipped = bytes;
    flipped[flipped.size() / 2] = static_cast<char>(flipped[flipped.size() / 2] ^ 0x20);
    seed("archive", std::string("flipped-") + name, flipped);
  }

  // Uncompressed tar (the reader accepts it), so that mutations reach the headers.
  const auto files = payload();
  seed("archive", "honest.tar", package(files, files, Filter::none));
  {
    std::vector<Entry> e = files;
    e.insert(e.begin(), manifest_of(files));
    seed("archive", "honest-ustar.tar", write_archive(e, Filter::none, true));
  }
  std::vector<Entry> with_dirs = {{"lib", "", AE_IFDIR, 0755}};
  with_dirs.insert(with_dirs.end(), files.begin(), files.end());
  seed("archive", "directories.tar", package(files, with_dirs, Filter::none));
  const std::string tar = package(files, files, Filter::none);
  seed("archive", "truncated.tar", tar.substr(0, tar.size() - 700));

  // Hostile entries (each refused by the extractor).
  auto hostile = [&](const std::string& name, const Entry& extra) {
    std::vector<Entry> entries = files;
    entries.push_back(extra);
    seed("archive", "hostile-" + name + ".tar", package(files, entries, Filter::none));
  };
  hostile("dotdot", {"../evil", "x"});
  hostile("absolute", {"/tmp/evil", "x"});
  hostile("symlink", {"lib/link", "", AE_IFLNK, 0777, "/etc/passwd"});
  hostile("hardlink", {"lib/hard", "", AE_IFREG, 0644, "lib/libep.so", true});
  hostile("device", {"dev", "", AE_IFCHR, 0644});
  hostile("fifo", {"fifo", "", AE_IFIFO, 0644});
  hostile("setuid", {"lib/suid", "x", AE_IFREG, 04755});
  hostile("duplicate", files[0]);
  hostile("unlisted", {"share/extra.txt", "extra"});
  hostile("utf8-invalid", {"share/caf\xe9", "x"});
  // Symlink first, then a file through it (the classic escape).
  seed("archive", "hostile-through-symlink.tar",
       package(files, {{"share", "", AE_IFLNK, 0777, "/tmp"}, files[0], files[1], files[2]},
               Filter::none));
  // Manifest missing, or not first.
  seed("archive", "no-manifest.tar", write_archive(files, Filter::none));
  {
    std::vector<Entry> e = files;
    e.insert(e.begin() + 1, manifest_of(files));
    seed("archive", "manifest-second.tar", write_archive(e, Filter::none));
  }
  // Sizes or contents that disagree with the manifest.
  {
    std::vector<Entry> e = files;
    e[0].data = "MIT, said\n";
    seed("archive", "size-mismatch.tar", package(files, e, Filter::none));
    e[0].data = "MIT, sax\n";
    seed("archive", "hash-mismatch.tar", package(files, e, Filter::none));
  }
  seed("archive", "hostile-dotdot.tar.zst",
       package(files, {files[0], files[1], files[2], {"../evil", "x"}}, Filter::zstd));
  seed("archive", "hostile-symlink.tar.gz",
       package(files, {{"share", "", AE_IFLNK, 0777, "/tmp"}, files[0]}, Filter::gzip));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_seeds OUTDIR\n";
    return 2;
  }
  g_out = argv[1];
  tuf_seeds();
  ep_metadata_seeds();
  model_metadata_seeds();
  config_seeds();
  archive_seeds();
  std::cout << "make_seeds: " << g_count << " seeds in " << g_out.string() << "\n";
  return 0;
}
