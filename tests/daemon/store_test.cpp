// The package store (daemon/store/store.hpp) on real packages built with the
// packer, in temporary state directories.
//
// Every failure test checks the store's contract: the typed error, staging/
// empty afterwards, and store/ (every entry's type, mode, size and SHA-256,
// index.json included) exactly as before.
#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <stop_token>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "catalog/crypto/hash.hpp"
#include "catalog/ep_metadata.hpp"
#include "catalog/package/manifest.hpp"
#include "catalog/package/pack.hpp"
#include "daemon/store/installed.hpp"
#include "daemon/store/store.hpp"
#include "daemon/store/tree.hpp"
#include "tests/support/temp_dir.hpp"

namespace epbrokerd::store {
namespace {

namespace fs = std::filesystem;
using catalog::EpMetadata;
using catalog::Errc;
using catalog::errc_name;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using tests::support::TempDir;

// ---- packages ------------------------------------------------------------------------

EpMetadata meta(const std::string& name, const std::string& version,
                const std::string& library = "lib/libep.so") {
  auto m = catalog::parse_ep_metadata(nlohmann::json::parse(R"({"epbroker": {
    "schema": 1, "name": "x", "version": "1.0.0", "ep_names": ["TestEp"],
    "vendor": "tests", "arch": "x86_64", "ort_min": "1.23.0", "library": "lib/libep.so",
    "supports": [{"type": "cpu"}]}})"));
  EXPECT_TRUE(m.has_value());
  m->name = name;
  auto v = catalog::parse_version_text(version);
  EXPECT_TRUE(v.has_value()) << version;
  m->version = *v;
  m->library = library;
  return *m;
}

struct SourceFile {
  std::string content;
  bool executable = false;
};
using Files = std::map<std::string, SourceFile>;

// Bytes that do not compress much, so a package has some bulk to stream.
std::string noise(std::size_t n, std::uint32_t seed) {
  std::string s(n, '\0');
  std::uint32_t x = seed * 2654435761u + 1;
  for (char& c : s) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    c = static_cast<char>(x & 0xff);
  }
  return s;
}

Files default_files(const std::string& tag) {
  return {{"LICENSE", {"MIT, say (" + tag + ")\n", false}},
          {"lib/libep.so", {"ELF pretend " + tag + std::string(4000, 'L'), true}},
          {"lib/plugins/helper.so", {noise(70000, 7), true}},
          {"share/doc/readme.txt", {"hello " + tag + "\n", false}}};
}

struct Package {
  fs::path file;
  EpMetadata meta;
};

// Everything under `root` (not following links), relative path -> "type mode
// size sha256". Used to prove that a failed operation changed nothing.
std::map<std::string, std::string> snapshot(const fs::path& root) {
  std::map<std::string, std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0) continue;
    std::string v = S_ISDIR(st.st_mode) ? "d" : S_ISREG(st.st_mode) ? "f" : "o";
    v += " " + std::to_string(st.st_mode & 07777);
    if (S_ISREG(st.st_mode)) {
      v += " " + std::to_string(st.st_size) + " " +
           catalog::crypto::sha256_hex(tests::support::read_file(it->path()));
    }
    out[fs::relative(it->path(), root).string()] = v;
  }
  return out;
}

// A package with a hand-written manifest (for lies the packer would not tell):
// manifest.json, then `files` in order, zstd-compressed pax.
void write_raw_package(const fs::path& out, const std::string& manifest_text,
                       const std::vector<std::pair<std::string, SourceFile>>& files) {
  archive* a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  archive_write_add_filter_zstd(a);
  ASSERT_EQ(archive_write_open_filename(a, out.c_str()), ARCHIVE_OK) << archive_error_string(a);
  auto add = [&](const std::string& path, const std::string& data, unsigned mode) {
    archive_entry* e = archive_entry_new();
    archive_entry_copy_pathname(e, path.c_str());
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, mode);
    archive_entry_set_size(e, static_cast<la_int64_t>(data.size()));
    EXPECT_EQ(archive_write_header(a, e), ARCHIVE_OK) << archive_error_string(a);
    EXPECT_EQ(archive_write_data(a, data.data(), data.size()),
              static_cast<la_ssize_t>(data.size()));
    archive_entry_free(e);
  };
  add("manifest.json", manifest_text, 0644);
  for (const auto& [path, f] : files) add(path, f.content, f.executable ? 0755 : 0644);
  EXPECT_EQ(archive_write_close(a), ARCHIVE_OK);
  archive_write_free(a);
}

using Event = std::tuple<InstallPhase, std::uint64_t, std::uint64_t>;

class StoreTest : public ::testing::Test {
 protected:
  // Packs `files` as package `name` `version` (a fresh file each call).
  Package make(const std::string& name, const std::string& version, Files files = {},
               const std::string& library = "lib/libep.so") {
    if (files.empty()) files = default_files(name + "-" + version);
    const std::string id = std::to_string(++counter_);
    const fs::path src = tmp / ("src-" + id);
    for (const auto& [path, f] : files) {
      tests::support::write_file(src / path, f.content);
      fs::permissions(src / path, f.executable ? fs::perms(0755) : fs::perms(0644));
    }
    Package p{tmp / ("pkgs/" + name + "-" + version + "-" + id + ".tar.zst"),
              meta(name, version, library)};
    fs::create_directories(p.file.parent_path());
    auto ok = catalog::package::pack_directory(src, p.meta, p.file);
    EXPECT_TRUE(ok.has_value()) << ok.error().message;
    return p;
  }

  Store open(StoreOptions options = {}) {
    auto s = Store::open(state, std::move(options));
    if (!s) {
      ADD_FAILURE() << s.error().message;
      std::abort();
    }
    return std::move(*s);
  }

  InstalledPackage install(Store& s, const Package& p) {
    auto r = s.install(p.file, p.meta);
    EXPECT_TRUE(r.has_value()) << r.error().message;
    return r.value_or(InstalledPackage{});
  }

  std::map<std::string, std::string> store_snapshot() { return snapshot(state / "store"); }

  void expect_staging_empty() {
    EXPECT_TRUE(fs::is_empty(state / "staging")) << "staging not empty";
  }

  // The refusal contract.
  template <typename T>
  void expect_refused(const catalog::Result<T>& r, Errc code, const std::string& mention,
                      const std::map<std::string, std::string>& before) {
    ASSERT_FALSE(r.has_value()) << "accepted";
    EXPECT_EQ(errc_name(r.error().code), errc_name(code)) << r.error().message;
    EXPECT_THAT(r.error().message, HasSubstr(mention));
    expect_staging_empty();
    EXPECT_EQ(store_snapshot(), before) << "store/ changed";
  }

  static std::vector<std::string> keys(const std::vector<InstalledPackage>& list) {
    std::vector<std::string> out;
    for (const auto& p : list) out.push_back(p.name() + " " + p.version());
    return out;
  }

  TempDir tmp;
  fs::path state = tmp / "state";
  int counter_ = 0;
};

// ---- layout and install ----------------------------------------------------------------

TEST_F(StoreTest, OpenCreatesTheLayout) {
  Store s = open();
  EXPECT_EQ(s.state_dir(), state);
  EXPECT_EQ(fs::status(state / "store").permissions(), fs::perms(0755));
  EXPECT_EQ(fs::status(state / "staging").permissions(), fs::perms(0700));
  EXPECT_EQ(tests::support::read_file(state / "store/index.json"),
            "{\n  \"index_version\": 1,\n  \"packages\": []\n}\n");
  EXPECT_TRUE(s.open_report().removed.empty());
  EXPECT_TRUE(s.open_report().index_rewritten);
  EXPECT_TRUE(s.list().empty());
}

TEST_F(StoreTest, SecondStoreOnTheSameDirectoryIsBusy) {
  Store s = open();
  auto again = Store::open(state);
  ASSERT_FALSE(again.has_value());
  EXPECT_EQ(again.error().code, Errc::busy);
}

TEST_F(StoreTest, InstallsReadOnlyTreeAndIndexesIt) {
  Store s = open();
  const Package p = make("test-ep", "1.2.0");
  std::vector<Event> events;
  std::mutex mu;
  auto r = s.install(p.file, p.meta, [&](InstallPhase ph, std::uint64_t d, std::uint64_t t) {
    std::lock_guard lock(mu);
    events.emplace_back(ph, d, t);
  });
  ASSERT_TRUE(r.has_value()) << r.error().message;

  const fs::path root = state / "store/test-ep/1.2.0";
  EXPECT_EQ(r->root, root);
  EXPECT_EQ(r->name(), "test-ep");
  EXPECT_EQ(r->version(), "1.2.0");
  EXPECT_EQ(r->manifest.ep, p.meta);
  EXPECT_EQ(r->manifest.files.size(), 4u);
  for (const auto& [path, f] : default_files("test-ep-1.2.0")) {
    EXPECT_EQ(tests::support::read_file(root / path), f.content) << path;
    EXPECT_EQ(fs::symlink_status(root / path).permissions(),
              f.executable ? fs::perms(0555) : fs::perms(0444))
        << path;
  }
  for (const char* dir : {"", "lib", "lib/plugins", "share", "share/doc"}) {
    EXPECT_EQ(fs::symlink_status(root / dir).permissions(), fs::perms(0755)) << dir;
  }
  EXPECT_EQ(fs::symlink_status(root / ".epbroker-manifest.json").permissions(), fs::perms(0444));
  auto saved = parse_saved_manifest(tests::support::read_file(root / ".epbroker-manifest.json"));
  ASSERT_TRUE(saved.has_value()) << saved.error().message;
  EXPECT_EQ(saved->manifest, r->manifest);
  EXPECT_EQ(saved->installed_at, r->installed_at);
  EXPECT_EQ(snapshot(root).size(), 9u);  // 4 files, 4 directories, saved manifest

  // Lookups.
  EXPECT_THAT(keys(s.list()), ElementsAre("test-ep 1.2.0"));
  ASSERT_TRUE(s.find("test-ep", "1.2.0").has_value());
  EXPECT_EQ(*s.find("test-ep", "1.2.0"), *r);
  EXPECT_FALSE(s.find("test-ep", "1.2").has_value());  // exact version text
  EXPECT_FALSE(s.find("other", "1.2.0").has_value());
  auto lib = s.library_path("test-ep", "1.2.0");
  ASSERT_TRUE(lib.has_value());
  EXPECT_TRUE(lib->is_absolute());
  EXPECT_EQ(*lib, root / "lib/libep.so");
  EXPECT_TRUE(fs::is_regular_file(*lib));
  EXPECT_EQ(s.library_path("test-ep", "9.9").error().code, Errc::not_found);

  // Index.
  const auto index = nlohmann::json::parse(tests::support::read_file(s.index_path()));
  ASSERT_EQ(index["packages"].size(), 1u);
  EXPECT_EQ(index["packages"][0]["name"], "test-ep");
  EXPECT_EQ(index["packages"][0]["version"], "1.2.0");
  EXPECT_EQ(index["packages"][0]["size"], r->size_bytes());
  EXPECT_EQ(index["packages"][0]["installed_at"], r->installed_at.time_since_epoch().count());
  EXPECT_EQ(index["packages"][0]["manifest"]["files"].size(), 4u);
  expect_staging_empty();

  // Progress: extracting from 0 to the total, then verifying, then committing.
  ASSERT_GE(events.size(), 3u);
  const std::uint64_t total = r->size_bytes();
  EXPECT_EQ(events.front(), Event(InstallPhase::extracting, 0, total));
  EXPECT_EQ(events[events.size() - 3], Event(InstallPhase::extracting, total, total));
  EXPECT_EQ(events[events.size() - 2], Event(InstallPhase::verifying, total, total));
  EXPECT_EQ(events.back(), Event(InstallPhase::committing, total, total));
  for (std::size_t i = 1; i < events.size(); ++i) {
    EXPECT_LE(std::get<0>(events[i - 1]), std::get<0>(events[i]));
  }
  auto v = s.verify();
  ASSERT_TRUE(v.has_value());
  EXPECT_TRUE(v->ok());
  EXPECT_EQ(v->packages_checked, 1u);
  EXPECT_EQ(v->bytes_hashed, total);
}

TEST_F(StoreTest, ProgressIsReportedPerMebibyte) {
  Store s = open();
  Files files = default_files("big");
  files["lib/big.bin"] = {noise(std::size_t{5} << 20, 3), false};
  const Package p = make("big", "1.0.0", files);
  std::vector<Event> events;
  auto r = s.install(p.file, p.meta, [&](InstallPhase ph, std::uint64_t d, std::uint64_t t) {
    events.emplace_back(ph, d, t);
  });
  ASSERT_TRUE(r.has_value()) << r.error().message;
  std::size_t extracting = 0;
  std::uint64_t last = 0;
  for (const auto& [ph, d, t] : events) {
    if (ph != InstallPhase::extracting) continue;
    ++extracting;
    EXPECT_GE(d, last);
    EXPECT_EQ(t, r->size_bytes());
    last = d;
  }
  EXPECT_GE(extracting, 5u);
  EXPECT_EQ(last, r->size_bytes());
  EXPECT_EQ(install_phase_name(InstallPhase::extracting), "extracting");
  EXPECT_EQ(install_phase_name(InstallPhase::verifying), "verifying");
  EXPECT_EQ(install_phase_name(InstallPhase::committing), "committing");
}

TEST_F(StoreTest, ReinstallOfAnIntactVersionIsIdempotent) {
  Store s = open();
  const Package p = make("test-ep", "1.0.0");
  const InstalledPackage first = install(s, p);
  const auto before = store_snapshot();
  std::vector<InstallPhase> phases;
  auto again = s.install(
      p.file, p.meta, [&](InstallPhase ph, std::uint64_t, std::uint64_t) { phases.push_back(ph); });
  ASSERT_TRUE(again.has_value()) << again.error().message;
  EXPECT_EQ(*again, first);  // same install time: nothing was replaced
  EXPECT_THAT(phases, ElementsAre(InstallPhase::verifying));  // nothing extracted
  EXPECT_EQ(store_snapshot(), before);
  // The same bytes packed again (another file) count as the same package.
  const Package repacked = make("test-ep", "1.0.0");
  auto third = s.install(repacked.file, repacked.meta);
  ASSERT_TRUE(third.has_value()) << third.error().message;
  EXPECT_EQ(*third, first);
  EXPECT_EQ(store_snapshot(), before);
  expect_staging_empty();
}

TEST_F(StoreTest, SeveralVersionsAndPackagesSideBySide) {
  Store s = open();
  install(s, make("alpha", "1.0.0"));
  install(s, make("alpha", "1.10.0"));
  install(s, make("alpha", "1.9.0-rc1"));
  install(s, make("beta", "2.0"));
  EXPECT_THAT(keys(s.list()),
              ElementsAre("alpha 1.0.0", "alpha 1.10.0", "alpha 1.9.0-rc1", "beta 2.0"));
  EXPECT_THAT(keys(s.versions("alpha")),
              ElementsAre("alpha 1.10.0", "alpha 1.9.0-rc1", "alpha 1.0.0"));
  EXPECT_TRUE(s.versions("gamma").empty());
  EXPECT_EQ(tests::support::read_file(state / "store/alpha/1.10.0/LICENSE"),
            "MIT, say (alpha-1.10.0)\n");
}

// ---- refusals leave everything as it was -------------------------------------------------

TEST_F(StoreTest, ManifestDisagreeingWithSignedMetadataChangesNothing) {
  Store s = open();
  install(s, make("other", "1.0.0"));
  const Package p = make("test-ep", "1.0.0");
  const auto before = store_snapshot();
  EpMetadata signed_meta = p.meta;
  signed_meta.vendor = "someone else";
  expect_refused(s.install(p.file, signed_meta), Errc::manifest_mismatch, "vendor", before);
  signed_meta = p.meta;
  signed_meta.version = *catalog::parse_version_text("1.0.1");
  expect_refused(s.install(p.file, signed_meta), Errc::manifest_mismatch, "version", before);
  EXPECT_THAT(keys(s.list()), ElementsAre("other 1.0.0"));
}

TEST_F(StoreTest, PayloadNotMatchingItsManifestChangesNothing) {
  Store s = open();
  install(s, make("other", "1.0.0"));
  const auto before = store_snapshot();
  // The manifest promises one library, the archive carries another of the same
  // size: caught while hashing, after part of the tree was written.
  const std::string good = "ELF good" + std::string(3000, 'g');
  const std::string evil = "ELF evil" + std::string(3000, 'g');
  catalog::package::Manifest m{meta("test-ep", "1.0.0"), {}};
  m.files = {{"LICENSE", 4, catalog::crypto::sha256_hex("MIT\n"), false},
             {"lib/libep.so", good.size(), catalog::crypto::sha256_hex(good), true}};
  const fs::path file = tmp / "evil.tar.zst";
  write_raw_package(file, catalog::package::to_text(m),
                    {{"LICENSE", {"MIT\n", false}}, {"lib/libep.so", {evil, true}}});
  expect_refused(s.install(file, m.ep), Errc::hash_mismatch, "lib/libep.so", before);
  // Control: the honest payload installs.
  write_raw_package(file, catalog::package::to_text(m),
                    {{"LICENSE", {"MIT\n", false}}, {"lib/libep.so", {good, true}}});
  EXPECT_TRUE(s.install(file, m.ep).has_value());
}

TEST_F(StoreTest, TruncatedOrMissingPackageChangesNothing) {
  Store s = open();
  install(s, make("other", "1.0.0"));
  const auto before = store_snapshot();
  const Package p = make("test-ep", "1.0.0");
  const std::string bytes = tests::support::read_file(p.file);
  tests::support::write_file(p.file, bytes.substr(0, bytes.size() / 2));
  auto r = s.install(p.file, p.meta);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(errc_name(r.error().code), "malformed") << r.error().message;
  expect_refused(r, r.error().code, "", before);
  expect_refused(s.install(tmp / "nope.tar.zst", p.meta), Errc::not_found, "nope", before);
}

TEST_F(StoreTest, ReservedNamesAreRefused) {
  Store s = open();
  const auto before = store_snapshot();
  const Package index_pkg = make("index.json", "1.0.0");
  expect_refused(s.install(index_pkg.file, index_pkg.meta), Errc::invalid_argument, "index.json",
                 before);
  Files files = default_files("x");
  files[".epbroker-manifest.json"] = {"{}", false};
  const Package sneaky = make("sneaky", "1.0.0", files);
  expect_refused(s.install(sneaky.file, sneaky.meta), Errc::invalid_argument,
                 ".epbroker-manifest.json", before);
  EXPECT_FALSE(is_storable_name("Upper"));
  EXPECT_FALSE(is_storable_name(".hidden"));
  EXPECT_FALSE(is_storable_name(""));
  EXPECT_TRUE(is_storable_name("openvino-ep"));
}

TEST_F(StoreTest, CancelledInstallChangesNothing) {
  Store s = open();
  install(s, make("other", "1.0.0"));
  const auto before = store_snapshot();
  const Package p = make("test-ep", "1.0.0");
  std::stop_source stop;
  stop.request_stop();
  expect_refused(s.install(p.file, p.meta, {}, stop.get_token()), Errc::cancelled, "cancelled",
                 before);
  // Cancelled while extracting (from the progress callback).
  std::stop_source mid;
  expect_refused(s.install(
                     p.file, p.meta,
                     [&](InstallPhase ph, std::uint64_t, std::uint64_t) {
                       if (ph == InstallPhase::extracting) mid.request_stop();
                     },
                     mid.get_token()),
                 Errc::cancelled, "cancelled", before);
}

// Each step of install() failing, for a fresh name (the name directory is
// created, and must go again) and for a replacement of an installed version
// (exchanged, or on the fallback path moved aside, and must come back).
struct FaultCase {
  const char* name;
  std::vector<std::string> fresh;    // faults armed for the fresh install; {}: skipped
  std::vector<std::string> replace;  // faults armed for the replacement; {}: skipped
  std::string failing;               // the step named in the error
};

void PrintTo(const FaultCase& c, std::ostream* os) { *os << c.name; }

class InstallFaultTest : public StoreTest, public ::testing::WithParamInterface<FaultCase> {};

TEST_P(InstallFaultTest, FailureAtEveryStepLeavesTheStoreAsItWas) {
  const FaultCase& c = GetParam();
  std::set<std::string, std::less<>> armed;
  StoreOptions options;
  options.inject_fault = [&](std::string_view at) { return armed.contains(at); };
  Store s = open(std::move(options));
  install(s, make("kept", "1.0.0"));
  install(s, make("test-ep", "1.0.0"));
  const Package fresh = make("fresh", "1.0.0");
  const Package republished = make("test-ep", "1.0.0", default_files("republished"));

  const auto before = store_snapshot();
  const auto listed = s.list();
  const std::string mention = "injected fault at install." + c.failing;
  if (!c.fresh.empty()) {
    armed = {c.fresh.begin(), c.fresh.end()};
    expect_refused(s.install(fresh.file, fresh.meta), Errc::io, mention, before);
  }
  if (!c.replace.empty()) {
    armed = {c.replace.begin(), c.replace.end()};
    expect_refused(s.install(republished.file, republished.meta), Errc::io, mention, before);
  }
  EXPECT_EQ(s.list(), listed);
  EXPECT_TRUE(s.verify()->ok());

  // Nothing sticks: with the faults gone both succeed, and a reopened store
  // agrees.
  armed.clear();
  EXPECT_TRUE(s.install(fresh.file, fresh.meta).has_value());
  auto replaced = s.install(republished.file, republished.meta);
  ASSERT_TRUE(replaced.has_value()) << replaced.error().message;
  EXPECT_EQ(tests::support::read_file(state / "store/test-ep/1.0.0/LICENSE"),
            "MIT, say (republished)\n");
  const auto after = s.list();
  { Store closing = std::move(s); }  // releases the lock
  Store reopened = open();
  EXPECT_EQ(reopened.list(), after);
  EXPECT_FALSE(reopened.open_report().index_rewritten);
  EXPECT_TRUE(reopened.open_report().removed.empty());
}

INSTANTIATE_TEST_SUITE_P(
    Steps, InstallFaultTest,
    ::testing::Values(
        FaultCase{"staging", {"install.staging"}, {"install.staging"}, "staging"},
        FaultCase{"saved_manifest",
                  {"install.saved_manifest"},
                  {"install.saved_manifest"},
                  "saved_manifest"},
        FaultCase{"seal", {"install.seal"}, {"install.seal"}, "seal"},
        FaultCase{"mkdir", {"install.mkdir"}, {"install.mkdir"}, "mkdir"},
        FaultCase{"exchange", {}, {"install.exchange"}, "exchange"},
        FaultCase{"aside", {}, {"install.no_exchange", "install.aside"}, "aside"},
        FaultCase{
            "rename", {"install.rename"}, {"install.no_exchange", "install.rename"}, "rename"},
        FaultCase{"index", {"install.index"}, {"install.index"}, "index"},
        FaultCase{"index_after_fallback", {}, {"install.no_exchange", "install.index"}, "index"}),
    [](const ::testing::TestParamInfo<FaultCase>& param_info) { return param_info.param.name; });

TEST_F(StoreTest, ReplacementWithoutRenameExchangeFallsBack) {
  StoreOptions options;
  options.inject_fault = [](std::string_view at) { return at == "install.no_exchange"; };
  Store s = open(std::move(options));
  install(s, make("test-ep", "1.0.0"));
  const Package republished = make("test-ep", "1.0.0", default_files("republished"));
  auto r = s.install(republished.file, republished.meta);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(tests::support::read_file(r->root / "LICENSE"), "MIT, say (republished)\n");
  EXPECT_TRUE(s.verify()->ok());
  expect_staging_empty();
}

TEST_F(StoreTest, RenameFailureFromTheFilesystemChangesNothing) {
  Store s = open();
  install(s, make("kept", "1.0.0"));
  const Package p = make("test-ep", "1.0.0");
  // store/test-ep is a file, so the tree cannot go there.
  tests::support::write_file(state / "store/test-ep", "in the way");
  const auto before = store_snapshot();
  expect_refused(s.install(p.file, p.meta), Errc::io, "test-ep", before);
}

TEST_F(StoreTest, IndexWriteFailureFromTheFilesystemRollsBack) {
  Store s = open();
  install(s, make("kept", "1.0.0"));
  install(s, make("test-ep", "1.0.0"));
  const Package republished = make("test-ep", "1.0.0", default_files("republished"));
  const Package fresh = make("fresh", "1.0.0");
  // index.json replaced by a non-empty directory: rename() over it fails.
  fs::remove(state / "store/index.json");
  tests::support::write_file(state / "store/index.json/blocker", "x");
  const auto before = store_snapshot();
  const auto listed = s.list();
  expect_refused(s.install(fresh.file, fresh.meta), Errc::io, "index.json", before);
  expect_refused(s.install(republished.file, republished.meta), Errc::io, "index.json", before);
  expect_refused(s.remove("kept"), Errc::io, "index.json", before);
  EXPECT_EQ(s.list(), listed);
  EXPECT_EQ(tests::support::read_file(state / "store/test-ep/1.0.0/LICENSE"),
            "MIT, say (test-ep-1.0.0)\n");
}

// ---- repair and verify ---------------------------------------------------------------------

TEST_F(StoreTest, VerifyReportsEveryKindOfDamage) {
  Store s = open();
  install(s, make("intact", "1.0.0"));
  const fs::path root = state / "store/test-ep/1.0.0";
  auto tamper = [&](auto&& change) {
    if (s.find("test-ep", "1.0.0")) {
      ASSERT_TRUE(s.remove("test-ep").has_value());
    }
    install(s, make("test-ep", "1.0.0"));
    ASSERT_TRUE(s.verify()->ok());
    change();
  };
  auto damage = [&]() -> std::vector<std::string> {
    auto v = s.verify();
    EXPECT_TRUE(v.has_value());
    EXPECT_EQ(v->packages_checked, 2u);
    if (v->damaged.size() != 1) {
      ADD_FAILURE() << v->damaged.size() << " damaged";
      return {};
    }
    EXPECT_EQ(v->damaged[0].package.name(), "test-ep");
    return v->damaged[0].problems;
  };

  tamper([&] {  // same size, other bytes
    fs::permissions(root / "LICENSE", fs::perms::owner_write, fs::perm_options::add);
    std::string text = tests::support::read_file(root / "LICENSE");
    text[0] = static_cast<char>(text[0] ^ 0xFF);
    tests::support::write_file(root / "LICENSE", text);
    fs::permissions(root / "LICENSE", fs::perms(0444));
  });
  EXPECT_THAT(damage(), ElementsAre(AllOf(HasSubstr("LICENSE: sha256"), HasSubstr("want"))));

  tamper([&] { fs::remove(root / "lib/plugins/helper.so"); });
  EXPECT_THAT(damage(), ElementsAre("lib/plugins/helper.so: missing"));

  tamper([&] { tests::support::write_file(root / "lib/extra.so", "x"); });
  EXPECT_THAT(damage(), ElementsAre("lib/extra.so: unexpected file"));

  tamper([&] { fs::create_directories(root / "share/new/deeper"); });
  EXPECT_THAT(damage(), ElementsAre("share/new: unexpected directory"));

  tamper([&] { fs::create_symlink("/etc/passwd", root / "share/link"); });
  EXPECT_THAT(damage(), ElementsAre("share/link: unexpected symlink"));

  tamper([&] { fs::permissions(root / "lib/libep.so", fs::perms(0755)); });
  EXPECT_THAT(damage(), ElementsAre("lib/libep.so: mode 0755, want 0555"));

  tamper([&] {
    fs::permissions(root / "LICENSE", fs::perms(0644));
    std::ofstream(root / "LICENSE", std::ios::app) << "more";
    fs::permissions(root / "LICENSE", fs::perms(0444));
  });
  EXPECT_THAT(damage(), ElementsAre(HasSubstr("LICENSE: size")));

  tamper([&] {
    fs::remove(root / ".epbroker-manifest.json");
    tests::support::write_file(root / ".epbroker-manifest.json", "{}");
    fs::permissions(root / ".epbroker-manifest.json", fs::perms(0444));
  });
  EXPECT_THAT(damage(), ElementsAre(HasSubstr(".epbroker-manifest.json: ")));
}

TEST_F(StoreTest, ReinstallRepairsADamagedTreeEvenWhileLeased) {
  Store s = open();
  const Package p = make("test-ep", "1.0.0");
  const InstalledPackage first = install(s, p);
  auto lease = s.acquire_lease("test-ep", "1.0.0", ":1.7");
  ASSERT_TRUE(lease.has_value());
  fs::remove(first.root / "LICENSE");
  ASSERT_FALSE(s.verify()->ok());
  std::vector<InstallPhase> phases;
  auto repaired = s.install(
      p.file, p.meta, [&](InstallPhase ph, std::uint64_t, std::uint64_t) { phases.push_back(ph); });
  ASSERT_TRUE(repaired.has_value()) << repaired.error().message;
  EXPECT_EQ(phases.front(), InstallPhase::verifying);  // the check that found the damage
  EXPECT_EQ(phases.back(), InstallPhase::committing);
  EXPECT_TRUE(s.verify()->ok());
  EXPECT_EQ(s.lease_count("test-ep", "1.0.0"), 1u);  // the lease survives the repair
  expect_staging_empty();
}

TEST_F(StoreTest, RepublishedContentsReplaceUnlessLeased) {
  Store s = open();
  install(s, make("test-ep", "1.0.0"));
  const Package republished = make("test-ep", "1.0.0", default_files("v2"));
  auto lease = s.acquire_lease("test-ep", "1.0.0", ":1.7");
  ASSERT_TRUE(lease.has_value());
  const auto before = store_snapshot();
  expect_refused(s.install(republished.file, republished.meta), Errc::busy, "1 lease", before);
  s.release_lease(*lease);
  auto r = s.install(republished.file, republished.meta);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(tests::support::read_file(r->root / "LICENSE"), "MIT, say (v2)\n");
  EXPECT_TRUE(s.verify()->ok());
}

// ---- crash recovery ------------------------------------------------------------------------

TEST_F(StoreTest, ReopenCleansLeftoversAndRebuildsTheIndexFromDisk) {
  std::map<std::string, std::string> before;
  std::string index_before;
  std::vector<InstalledPackage> listed;
  {
    Store s = open();
    install(s, make("alpha", "1.0.0"));
    install(s, make("alpha", "2.0.0"));
    install(s, make("beta", "0.1"));
    before = store_snapshot();
    index_before = tests::support::read_file(s.index_path());
    listed = s.list();
    // An interrupted install (a tree in staging) and an interrupted removal (a
    // tree in trash), with read-only files.
    fs::create_directories(state / "staging/install-abc123");
    fs::create_directories(state / "staging/trash-xyz789");
    fs::copy(state / "store/alpha/1.0.0", state / "staging/install-abc123/tree",
             fs::copy_options::recursive);
    fs::copy(state / "store/beta/0.1", state / "staging/trash-xyz789/0",
             fs::copy_options::recursive);
  }
  // A tree that never got its saved manifest (copied in by hand, or torn), one
  // whose saved manifest names another version, junk of every kind, and a
  // stale index.json.
  fs::copy(state / "store/alpha/1.0.0", state / "store/alpha/3.0.0", fs::copy_options::recursive);
  fs::remove(state / "store/alpha/3.0.0/.epbroker-manifest.json");
  fs::copy(state / "store/beta/0.1", state / "store/beta/0.2", fs::copy_options::recursive);
  fs::create_directories(state / "store/gamma");  // empty package directory
  fs::create_directories(state / "store/Not A Name/1.0");
  tests::support::write_file(state / "store/.index.json.tmp-Ab12Cd", "torn");
  tests::support::write_file(state / "store/beta/notes.txt", "x");
  tests::support::write_file(state / "store/index.json", "{\"stale\": true}\n");

  Store s = open();
  EXPECT_EQ(store_snapshot(), before);
  EXPECT_EQ(tests::support::read_file(s.index_path()), index_before);
  EXPECT_EQ(s.list(), listed);
  expect_staging_empty();
  const OpenReport& report = s.open_report();
  EXPECT_TRUE(report.index_rewritten);
  std::map<std::string, std::string> removed;
  for (const auto& r : report.removed)
    removed[r.path.lexically_relative(state).string()] = r.reason;
  EXPECT_THAT(removed, ElementsAre(Pair("staging/install-abc123", "leftover in staging"),
                                   Pair("staging/trash-xyz789", "leftover in staging"),
                                   Pair("store/.index.json.tmp-Ab12Cd", "not a package directory"),
                                   Pair("store/Not A Name", "not a package directory"),
                                   Pair("store/alpha/3.0.0", HasSubstr("no saved manifest")),
                                   Pair("store/beta/0.2",
                                        HasSubstr("saved manifest names beta 0.1, not beta 0.2")),
                                   Pair("store/beta/notes.txt", "not a directory"),
                                   Pair("store/gamma", "empty package directory")));
  EXPECT_TRUE(s.verify()->ok());
}

TEST_F(StoreTest, DeletedIndexIsRebuiltIdentically) {
  std::string index_before;
  {
    Store s = open();
    install(s, make("alpha", "1.0.0"));
    install(s, make("beta", "2.0.0"));
    index_before = tests::support::read_file(s.index_path());
  }
  fs::remove(state / "store/index.json");
  {
    Store s = open();
    EXPECT_TRUE(s.open_report().index_rewritten);
    EXPECT_TRUE(s.open_report().removed.empty());
    EXPECT_EQ(tests::support::read_file(s.index_path()), index_before);
  }
  Store s = open();
  EXPECT_FALSE(s.open_report().index_rewritten);  // already right: not rewritten
}

TEST_F(StoreTest, DamagedTreeSurvivesReopenForVerifyToReport) {
  {
    Store s = open();
    install(s, make("test-ep", "1.0.0"));
  }
  fs::remove(state / "store/test-ep/1.0.0/LICENSE");
  Store s = open();
  EXPECT_THAT(keys(s.list()), ElementsAre("test-ep 1.0.0"));  // open() does not hash
  auto v = s.verify();
  ASSERT_TRUE(v.has_value());
  ASSERT_EQ(v->damaged.size(), 1u);
  EXPECT_THAT(v->damaged[0].problems, ElementsAre("LICENSE: missing"));
}

// ---- leases, removal, GC -------------------------------------------------------------------

TEST_F(StoreTest, LeasesBlockRemovalUntilReleased) {
  Store s = open();
  install(s, make("test-ep", "1.0.0"));
  install(s, make("test-ep", "2.0.0"));
  EXPECT_EQ(s.acquire_lease("test-ep", "3.0.0", ":1.1").error().code, Errc::not_found);
  auto a = s.acquire_lease("test-ep", "1.0.0", ":1.1");
  auto b = s.acquire_lease("test-ep", "1.0.0", ":1.1");
  auto c = s.acquire_lease("test-ep", "1.0.0", ":1.2");
  ASSERT_TRUE(a && b && c);
  EXPECT_NE(*a, 0u);
  EXPECT_NE(*a, *b);
  EXPECT_EQ(s.lease_count("test-ep", "1.0.0"), 3u);
  const auto before = store_snapshot();
  expect_refused(s.remove("test-ep", "1.0.0"), Errc::busy, "3 lease(s)", before);
  expect_refused(s.remove("test-ep"), Errc::busy, "3 lease(s)", before);  // all or nothing
  EXPECT_EQ(s.release_owner(":1.1"), 2u);
  EXPECT_EQ(s.release_owner(":1.1"), 0u);
  expect_refused(s.remove("test-ep", "1.0.0"), Errc::busy, "1 lease(s)", before);
  s.release_lease(*c);
  s.release_lease(*c);      // twice: ignored
  s.release_lease(123456);  // unknown: ignored
  EXPECT_EQ(s.lease_count("test-ep", "1.0.0"), 0u);
  auto removed = s.remove("test-ep", "1.0.0");
  ASSERT_TRUE(removed.has_value()) << removed.error().message;
  EXPECT_THAT(keys(*removed), ElementsAre("test-ep 1.0.0"));
  EXPECT_FALSE(fs::exists(state / "store/test-ep/1.0.0"));
  EXPECT_THAT(keys(s.list()), ElementsAre("test-ep 2.0.0"));
  expect_staging_empty();
}

TEST_F(StoreTest, RemoveOneOrAllVersions) {
  Store s = open();
  install(s, make("test-ep", "1.0.0"));
  install(s, make("test-ep", "2.0.0"));
  install(s, make("other", "1.0.0"));
  const auto before = store_snapshot();
  expect_refused(s.remove("test-ep", "9.0.0"), Errc::not_found, "test-ep 9.0.0", before);
  expect_refused(s.remove("nothing"), Errc::not_found, "nothing", before);
  auto removed = s.remove("test-ep");
  ASSERT_TRUE(removed.has_value()) << removed.error().message;
  EXPECT_THAT(keys(*removed), ElementsAre("test-ep 1.0.0", "test-ep 2.0.0"));
  EXPECT_FALSE(fs::exists(state / "store/test-ep"));  // the name directory too
  EXPECT_THAT(keys(s.list()), ElementsAre("other 1.0.0"));
  const auto index = nlohmann::json::parse(tests::support::read_file(s.index_path()));
  ASSERT_EQ(index["packages"].size(), 1u);
  EXPECT_EQ(index["packages"][0]["name"], "other");
  expect_staging_empty();
  // Installing after removal works (the name directory comes back).
  install(s, make("test-ep", "1.0.0"));
  EXPECT_TRUE(s.verify()->ok());
}

TEST_F(StoreTest, RemoveFaultsLeaveTheStoreAsItWas) {
  for (const char* step : {"remove.rename", "remove.index"}) {
    SCOPED_TRACE(step);
    fs::remove_all(state);
    std::string armed;
    StoreOptions options;
    options.inject_fault = [&](std::string_view at) { return at == armed; };
    Store s = open(std::move(options));
    install(s, make("test-ep", "1.0.0"));
    install(s, make("test-ep", "2.0.0"));
    armed = step;
    const auto before = store_snapshot();
    expect_refused(s.remove("test-ep"), Errc::io, step, before);
    EXPECT_EQ(s.list().size(), 2u);
    armed.clear();
    EXPECT_TRUE(s.remove("test-ep").has_value());
  }
}

TEST_F(StoreTest, GcKeepsTheNewestAndLeasedVersions) {
  Store s = open();
  install(s, make("alpha", "1.0.0"));
  install(s, make("alpha", "1.2.0"));
  install(s, make("alpha", "1.10.0"));  // newest (numerically)
  install(s, make("alpha", "1.10.0-rc1"));
  install(s, make("beta", "0.5"));
  auto lease = s.acquire_lease("alpha", "1.0.0", ":1.9");
  ASSERT_TRUE(lease.has_value());

  auto removed = s.gc(2);
  ASSERT_TRUE(removed.has_value()) << removed.error().message;
  EXPECT_THAT(keys(*removed), ElementsAre("alpha 1.2.0"));
  EXPECT_THAT(keys(s.versions("alpha")),
              ElementsAre("alpha 1.10.0", "alpha 1.10.0-rc1", "alpha 1.0.0"));

  removed = s.gc();
  ASSERT_TRUE(removed.has_value()) << removed.error().message;
  EXPECT_THAT(keys(*removed), ElementsAre("alpha 1.10.0-rc1"));
  EXPECT_THAT(keys(s.list()), ElementsAre("alpha 1.0.0", "alpha 1.10.0", "beta 0.5"));

  s.release_lease(*lease);
  removed = s.gc(0);  // 0 counts as 1
  ASSERT_TRUE(removed.has_value());
  EXPECT_THAT(keys(*removed), ElementsAre("alpha 1.0.0"));
  EXPECT_THAT(keys(s.list()), ElementsAre("alpha 1.10.0", "beta 0.5"));
  removed = s.gc();
  ASSERT_TRUE(removed.has_value());
  EXPECT_TRUE(removed->empty());
  EXPECT_TRUE(s.verify()->ok());
  expect_staging_empty();
  const auto index = nlohmann::json::parse(tests::support::read_file(s.index_path()));
  EXPECT_EQ(index["packages"].size(), 2u);
}

// ---- concurrency ---------------------------------------------------------------------------

TEST_F(StoreTest, ConcurrentInstallsOfDifferentPackages) {
  Store s = open();
  std::vector<Package> left;
  std::vector<Package> right;
  for (int i = 0; i < 4; ++i) {
    left.push_back(make("left", std::to_string(i + 1) + ".0"));
    right.push_back(make("right-" + std::to_string(i), "1.0"));
  }
  std::atomic<int> failures{0};
  auto run = [&](const std::vector<Package>& packages) {
    for (const Package& p : packages) {
      if (!s.install(p.file, p.meta).has_value()) ++failures;
      (void)s.list();
    }
  };
  std::thread a(run, std::cref(left));
  std::thread b(run, std::cref(right));
  // Meanwhile, readers and leases from a third thread.
  for (int i = 0; i < 50; ++i) {
    for (const auto& p : s.list()) {
      auto l = s.acquire_lease(p.name(), p.version(), "reader");
      if (l) s.release_lease(*l);
    }
  }
  a.join();
  b.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(s.list().size(), 8u);
  EXPECT_TRUE(s.verify()->ok());
  expect_staging_empty();
  const auto index = nlohmann::json::parse(tests::support::read_file(s.index_path()));
  EXPECT_EQ(index["packages"].size(), 8u);
}

TEST_F(StoreTest, ConcurrentInstallsOfTheSamePackageAgree) {
  Store s = open();
  const Package p = make("test-ep", "1.0.0");
  std::vector<InstalledPackage> results(4);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < results.size(); ++i) {
    threads.emplace_back([&, i] { results[i] = install(s, p); });
  }
  for (auto& t : threads) t.join();
  for (const auto& r : results) EXPECT_EQ(r, results[0]);
  EXPECT_EQ(s.list().size(), 1u);
  EXPECT_TRUE(s.verify()->ok());
  expect_staging_empty();
}

// ---- the saved manifest format --------------------------------------------------------------

TEST(SavedManifestTest, RoundTripsAndRefusesStrangers) {
  SavedManifest saved{
      {meta("test-ep", "1.0.0"), {{"lib/libep.so", 3, catalog::crypto::sha256_hex("abc"), true}}},
      std::chrono::sys_seconds(std::chrono::seconds(1700000000))};
  const std::string text = to_text(saved);
  auto back = parse_saved_manifest(text);
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(*back, saved);

  auto j = nlohmann::json::parse(text);
  j["extra"] = 1;
  EXPECT_EQ(parse_saved_manifest(j.dump()).error().code, Errc::bad_field);
  j = nlohmann::json::parse(text);
  j["store_format"] = 2;
  EXPECT_EQ(parse_saved_manifest(j.dump()).error().code, Errc::unsupported);
  j = nlohmann::json::parse(text);
  j["installed_at"] = "yesterday";
  EXPECT_EQ(parse_saved_manifest(j.dump()).error().code, Errc::bad_field);
  j = nlohmann::json::parse(text);
  j["manifest"]["files"][0]["path"] = "../escape";
  auto bad = parse_saved_manifest(j.dump());
  ASSERT_FALSE(bad.has_value());
  EXPECT_THAT(bad.error().message, HasSubstr("manifest: "));
  EXPECT_EQ(parse_saved_manifest("not json").error().code, Errc::malformed);
  EXPECT_EQ(parse_saved_manifest(std::string(kMaxSavedManifestBytes + 1, ' ')).error().code,
            Errc::too_large);
}

}  // namespace
}  // namespace epbrokerd::store
