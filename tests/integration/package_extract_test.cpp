// Hostile EP packages against the safe extractor (catalog/package/extract.hpp).
//
// Every archive is built here with libarchive's writer, one hostile trait at a
// time, inside a per-test directory that also holds a canary file and an empty
// staging directory. Each refusal test checks:
//  - the typed error (catalog::Errc) and that its message names the entry;
//  - that the staging directory is empty afterwards;
//  - that nothing outside staging changed: the whole test directory (every
//    file, directory and link, with modes and contents) is as before, canary
//    included.
// A control case builds the same kind of archive without the hostile trait and
// checks it is accepted, so that a refusal is not an accident of the builder.
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "catalog/crypto/hash.hpp"
#include "catalog/ep_metadata.hpp"
#include "catalog/package/archive_reader.hpp"
#include "catalog/package/extract.hpp"
#include "catalog/package/manifest.hpp"
#include "catalog/package/prefetch_reader.hpp"
#include "tests/support/temp_dir.hpp"

namespace catalog::package {
namespace {

namespace fs = std::filesystem;
using ::nlohmann::json;
using ::testing::HasSubstr;
using tests::support::TempDir;

// ---- building archives -------------------------------------------------------------

enum class Filter { zstd, gzip, none };
enum class Format { pax, ustar, gnutar };

// One entry to write. For regular files `data` is written and the header declares
// `declared` bytes if set (libarchive pads or cuts the data to it).
struct Entry {
  std::string path;
  std::string data;
  unsigned type = AE_IFREG;
  unsigned mode = 0644;
  std::string symlink;
  std::string hardlink;
  std::optional<std::int64_t> declared;
};

Entry file(std::string path, std::string data, unsigned mode = 0644) {
  return Entry{std::move(path), std::move(data), AE_IFREG, mode, "", "", std::nullopt};
}
Entry dir(std::string path, unsigned mode = 0755) {
  return Entry{std::move(path), "", AE_IFDIR, mode, "", "", std::nullopt};
}

class ArchiveWriter {
 public:
  ArchiveWriter(const fs::path& out, Filter filter, Format format = Format::pax, int level = 3)
      : a_(archive_write_new()) {
    switch (format) {
      case Format::pax:
        archive_write_set_format_pax_restricted(a_);
        break;
      case Format::ustar:
        archive_write_set_format_ustar(a_);
        break;
      case Format::gnutar:
        archive_write_set_format_gnutar(a_);
        break;
    }
    const std::string lvl = std::to_string(level);
    if (filter == Filter::zstd) {
      archive_write_add_filter_zstd(a_);
      archive_write_set_filter_option(a_, "zstd", "compression-level", lvl.c_str());
    } else if (filter == Filter::gzip) {
      archive_write_add_filter_gzip(a_);
      archive_write_set_filter_option(a_, "gzip", "compression-level", lvl.c_str());
    }
    archive_write_set_bytes_in_last_block(a_, 1);
    EXPECT_EQ(archive_write_open_filename(a_, out.c_str()), ARCHIVE_OK) << archive_error_string(a_);
  }
  ~ArchiveWriter() {
    EXPECT_EQ(archive_write_close(a_), ARCHIVE_OK) << archive_error_string(a_);
    archive_write_free(a_);
  }
  ArchiveWriter(const ArchiveWriter&) = delete;
  ArchiveWriter& operator=(const ArchiveWriter&) = delete;

  void header(const Entry& e) {
    archive_entry* ae = archive_entry_new();
    archive_entry_copy_pathname(ae, e.path.c_str());
    archive_entry_set_filetype(ae, e.type);
    archive_entry_set_perm(ae, e.mode);
    archive_entry_set_size(
        ae, e.type == AE_IFREG ? e.declared.value_or(static_cast<std::int64_t>(e.data.size())) : 0);
    if (!e.symlink.empty()) archive_entry_copy_symlink(ae, e.symlink.c_str());
    if (!e.hardlink.empty()) archive_entry_copy_hardlink(ae, e.hardlink.c_str());
    if (e.type == AE_IFCHR || e.type == AE_IFBLK) archive_entry_set_rdev(ae, makedev(1, 3));
    const int rc = archive_write_header(a_, ae);
    EXPECT_GE(rc, ARCHIVE_WARN) << e.path << ": " << archive_error_string(a_);
    archive_entry_free(ae);
  }
  void data(const void* bytes, std::size_t n) {
    EXPECT_GE(archive_write_data(a_, bytes, n), 0) << archive_error_string(a_);
  }
  // Streams `n` zero bytes as data.
  void zeros(std::uint64_t n) {
    static const std::vector<char> kZeros(std::size_t{4} << 20);
    for (std::uint64_t done = 0; done < n;) {
      const std::size_t chunk =
          static_cast<std::size_t>(std::min<std::uint64_t>(kZeros.size(), n - done));
      data(kZeros.data(), chunk);
      done += chunk;
    }
  }
  void add(const Entry& e) {
    header(e);
    if (!e.data.empty()) data(e.data.data(), e.data.size());
  }

 private:
  archive* a_;
};

void write_archive(const fs::path& out, const std::vector<Entry>& entries,
                   Filter filter = Filter::zstd, Format format = Format::pax) {
  ArchiveWriter w(out, filter, format);
  for (const Entry& e : entries) w.add(e);
}

// ---- manifests -----------------------------------------------------------------------

constexpr const char* kLibrary = "lib/libep.so";

EpMetadata test_meta(const std::string& library = kLibrary) {
  auto m = parse_ep_metadata(json::parse(R"({"epbroker": {
    "schema": 1, "name": "test-ep", "version": "1.0.0", "ep_names": ["TestEp"],
    "vendor": "tests", "arch": "x86_64", "ort_min": "1.23.0", "library": "lib/libep.so",
    "supports": [{"type": "cpu"}]}})"));
  EXPECT_TRUE(m.has_value());
  m->library = library;
  return *m;
}

// manifest.json listing `files` (regular entries) with their true sizes and hashes.
std::string manifest_for(const std::vector<Entry>& files, const std::string& library = kLibrary) {
  Manifest m{test_meta(library), {}};
  for (const Entry& e : files) {
    if (e.type != AE_IFREG) continue;
    m.files.push_back({e.path, e.data.size(), crypto::sha256_hex(e.data), e.mode == 0755});
  }
  std::sort(m.files.begin(), m.files.end(),
            [](const FileEntry& a, const FileEntry& b) { return a.path < b.path; });
  return to_text(m);
}

Entry manifest_entry(const std::string& text) { return file("manifest.json", text); }

// The honest payload most tests start from.
std::vector<Entry> payload() {
  return {file("LICENSE", "MIT, say\n"), file(kLibrary, std::string(5000, 'L'), 0755),
          file("lib/plugins/helper.so", std::string(70000, 'h'), 0755),
          file("share/readme.txt", "hello\n")};
}

// A whole package: manifest of `files`, then `files` in order.
std::vector<Entry> package_of(const std::vector<Entry>& files) {
  std::vector<Entry> out = {manifest_entry(manifest_for(files))};
  out.insert(out.end(), files.begin(), files.end());
  return out;
}

// ---- the directory under test ----------------------------------------------------------

// Everything under `root` (lstat, not following links): path -> "type mode [content]".
std::map<std::string, std::string> snapshot(const fs::path& root) {
  std::map<std::string, std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0) continue;
    std::string v = std::to_string(st.st_mode);
    if (S_ISREG(st.st_mode)) v += " " + tests::support::read_file(it->path());
    if (S_ISLNK(st.st_mode)) v += " -> " + fs::read_symlink(it->path()).string();
    out[fs::relative(it->path(), root).string()] = v;
  }
  return out;
}

class ExtractTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directory(staging);
    tests::support::write_file(canary, "canary: must never change\n");
    fs::create_directory(tmp / "outside");
  }

  // Writes `entries` to `archive`, and snapshots the test directory.
  void build(const std::vector<Entry>& entries, Filter filter = Filter::zstd,
             Format format = Format::pax) {
    write_archive(pkg, entries, filter, format);
    before = snapshot(tmp.path());
  }

  Result<Manifest> extract(const ExtractLimits& limits = {}) {
    if (before.empty()) before = snapshot(tmp.path());
    return extract_package(pkg, staging, limits);
  }

  // The refusal contract: code, message, empty staging, nothing else changed.
  void expect_refused(const Result<Manifest>& r, Errc code, const std::string& mention) {
    ASSERT_FALSE(r.has_value()) << "accepted";
    EXPECT_EQ(errc_name(r.error().code), errc_name(code)) << r.error().message;
    EXPECT_THAT(r.error().message, HasSubstr(mention));
    expect_untouched();
  }

  void expect_untouched() {
    EXPECT_TRUE(fs::is_empty(staging)) << "staging not empty";
    EXPECT_EQ(snapshot(tmp.path()), before) << "something outside staging changed";
    EXPECT_EQ(tests::support::read_file(canary), "canary: must never change\n");
  }

  TempDir tmp;
  fs::path staging = tmp / "staging";
  fs::path canary = tmp / "canary.txt";
  fs::path pkg = tmp / "pkg.tar.zst";
  std::map<std::string, std::string> before;
};

// ---- happy paths ---------------------------------------------------------------------

TEST_F(ExtractTest, ExtractsHonestPackageWithExactModes) {
  std::vector<Entry> files = payload();
  build(package_of(files));
  auto r = extract();
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->files.size(), 4u);
  EXPECT_EQ(r->ep.library, kLibrary);
  for (const Entry& e : files) {
    EXPECT_EQ(tests::support::read_file(staging / e.path), e.data) << e.path;
    EXPECT_EQ(fs::status(staging / e.path).permissions(), static_cast<fs::perms>(e.mode)) << e.path;
  }
  EXPECT_EQ(fs::status(staging / "lib").permissions(), static_cast<fs::perms>(0755));
  EXPECT_FALSE(fs::exists(staging / "manifest.json"));  // returned, not written
  EXPECT_EQ(snapshot(staging).size(), 7u);              // 4 files, 3 directories
}

TEST_F(ExtractTest, AcceptsEveryTarFlavourAndCompression) {
  const std::vector<Entry> entries = package_of(payload());
  for (Filter f : {Filter::zstd, Filter::gzip, Filter::none}) {
    for (Format fmt : {Format::pax, Format::ustar, Format::gnutar}) {
      write_archive(pkg, entries, f, fmt);
      auto r = extract_package(pkg, staging);
      ASSERT_TRUE(r.has_value()) << r.error().message;
      EXPECT_EQ(tests::support::read_file(staging / kLibrary), std::string(5000, 'L'));
      fs::remove_all(staging);
      fs::create_directory(staging);
    }
  }
}

TEST_F(ExtractTest, AcceptsDirectoryEntriesAndUtf8Names) {
  std::vector<Entry> files = payload();
  files.push_back(file("share/d\xC3\xA9j\xC3\xA0 vu.txt", "utf-8\n"));
  std::vector<Entry> entries = {manifest_entry(manifest_for(files)),
                                dir("lib/"),
                                files[0],
                                files[1],
                                dir("lib/plugins/"),
                                files[2],
                                files[4],
                                files[3],
                                dir("share")};
  build(entries);
  auto r = extract();
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(tests::support::read_file(staging / "share/d\xC3\xA9j\xC3\xA0 vu.txt"), "utf-8\n");
}

TEST_F(ExtractTest, ModesAreExactWhateverTheUmask) {
  build(package_of(payload()));
  const mode_t old = ::umask(077);
  auto r = extract();
  ::umask(old);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(fs::status(staging / kLibrary).permissions(), static_cast<fs::perms>(0755));
  EXPECT_EQ(fs::status(staging / "LICENSE").permissions(), static_cast<fs::perms>(0644));
  EXPECT_EQ(fs::status(staging / "lib/plugins").permissions(), static_cast<fs::perms>(0755));
}

TEST_F(ExtractTest, ReadPackageManifestReadsOnlyTheManifest) {
  std::vector<Entry> files = payload();
  std::vector<Entry> entries = package_of(files);
  entries[2].data = "tampered payload is not read";  // would fail a full extraction
  build(entries);
  auto m = read_package_manifest(pkg);
  ASSERT_TRUE(m.has_value()) << m.error().message;
  EXPECT_EQ(*m, *parse_manifest(manifest_for(files)));
  EXPECT_TRUE(looks_like_package("a/b.tar.zst"));
  EXPECT_TRUE(looks_like_package("b.tar.gz"));
  EXPECT_FALSE(looks_like_package("b.tar"));
  EXPECT_FALSE(looks_like_package("b.zst"));
}

// ---- staging directory ---------------------------------------------------------------

TEST_F(ExtractTest, RefusesStagingThatIsNotEmptyOrIsALink) {
  build(package_of(payload()));
  tests::support::write_file(staging / "left-over", "x");
  auto r = extract_package(pkg, staging);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Errc::invalid_argument);
  EXPECT_EQ(tests::support::read_file(staging / "left-over"), "x");  // not cleaned: not ours
  fs::remove(staging / "left-over");

  fs::create_directory_symlink(tmp / "outside", tmp / "link-staging");
  r = extract_package(pkg, tmp / "link-staging");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Errc::invalid_argument);
  EXPECT_TRUE(fs::is_empty(tmp / "outside"));

  r = extract_package(pkg, tmp / "missing");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Errc::invalid_argument);
}

// ---- unsafe names ----------------------------------------------------------------------

struct NameCase {
  std::string label;
  std::string name;
  std::string mention;
  Format format = Format::pax;
};

class UnsafeNameTest : public ExtractTest, public ::testing::WithParamInterface<NameCase> {};

TEST_P(UnsafeNameTest, RefusesTheEntry) {
  // The hostile entry comes after an honest file, so something was already written.
  std::vector<Entry> files = payload();
  std::vector<Entry> entries = package_of(files);
  entries.push_back(file(GetParam().name, "escaped\n"));
  build(entries, Filter::zstd, GetParam().format);
  expect_refused(extract(), Errc::unsafe_entry, GetParam().mention);
}

INSTANTIATE_TEST_SUITE_P(
    Names, UnsafeNameTest,
    ::testing::Values(
        NameCase{"absolute", "/tmp/epbroker-escape", "absolute path"},
        NameCase{"absolute_into_canary", "/canary.txt", "absolute path"},
        NameCase{"dotdot", "../canary.txt", "'..' path component"},
        NameCase{"inner_dotdot", "lib/../../canary.txt", "'..' path component"},
        NameCase{"dot", "./x", "'.' path component"},
        NameCase{"empty_component", "lib//x", "empty path component"},
        NameCase{"backslash", "lib\\..\\x", "backslash"},
        NameCase{"newline", "x\ny", "control character"},
        NameCase{"escape_sequence", "x\x1b]0;owned\x07", "control character"},
        NameCase{"c1_control", "x\xC2\x9B", "control character"},
        NameCase{"not_utf8_pax", "lib/\xff\xfe.so", "not valid UTF-8"},
        NameCase{"not_utf8_ustar", "lib/\xe9t\xe9.so", "not valid UTF-8", Format::ustar},
        NameCase{"overlong_utf8", "\xC0\xAE\xC0\xAE/x", "not valid UTF-8"},
        NameCase{"name_4096_bytes", std::string(4096, 'n'), "longer than 1024 bytes"},
        NameCase{"name_1025_bytes", "lib/" + std::string(1021, 'n'), "longer than 1024 bytes"}),
    [](const ::testing::TestParamInfo<NameCase>& p) { return p.param.label; });

// ---- unsafe kinds and modes ----------------------------------------------------------------

TEST_F(ExtractTest, RefusesSymlinkAndAFileWrittenThroughIt) {
  // lib -> the test directory (outside staging); then lib/canary.txt "through" it.
  std::vector<Entry> files = {file("LICENSE", "x"), file(kLibrary, "y", 0755)};
  Entry link{"lib", "", AE_IFLNK, 0777, tmp.path().string(), "", std::nullopt};
  std::vector<Entry> entries = {manifest_entry(manifest_for(files)), files[0], link,
                                file("lib/canary.txt", "OVERWRITTEN"), files[1]};
  build(entries);
  expect_refused(extract(), Errc::unsafe_entry, "symlink");
}

TEST_F(ExtractTest, RefusesSymlinkAsTheLibraryItself) {
  std::vector<Entry> files = {file(kLibrary, "y", 0755)};
  Entry link{kLibrary, "", AE_IFLNK, 0777, canary.string(), "", std::nullopt};
  build({manifest_entry(manifest_for(files)), link});
  expect_refused(extract(), Errc::unsafe_entry, "symlink (to \"" + canary.string().substr(0, 20));
}

TEST_F(ExtractTest, RefusesSymlinkNamedManifest) {
  Entry link{"manifest.json", "", AE_IFLNK, 0777, "/etc/passwd", "", std::nullopt};
  build({link});
  expect_refused(extract(), Errc::unsafe_entry, "symlink");
}

TEST_F(ExtractTest, RefusesHardlinks) {
  std::vector<Entry> files = {file("LICENSE", "x"), file(kLibrary, "y", 0755)};
  for (const std::string& target : {canary.string(), std::string("LICENSE")}) {
    Entry hard{kLibrary, "", AE_IFREG, 0755, "", target, std::nullopt};
    build({manifest_entry(manifest_for(files)), files[0], hard});
    expect_refused(extract(), Errc::unsafe_entry, "hardlink");
  }
}

TEST_F(ExtractTest, RefusesDevicesAndFifos) {
  std::vector<Entry> files = {file(kLibrary, "y", 0755)};
  for (auto [type, what] : {std::pair{AE_IFCHR, "character device"},
                            std::pair{AE_IFBLK, "block device"}, std::pair{AE_IFIFO, "FIFO"}}) {
    Entry special{"dev/node", "", static_cast<unsigned>(type), 0644, "", "", std::nullopt};
    build({manifest_entry(manifest_for(files)), files[0], special});
    expect_refused(extract(), Errc::unsafe_entry, what);
  }
}

TEST_F(ExtractTest, RefusesSpecialModeBits) {
  for (unsigned mode : {04755u, 02755u, 01644u, 06755u}) {
    std::vector<Entry> files = {file(kLibrary, "y", 0755)};
    std::vector<Entry> entries = package_of(files);
    entries[1].mode = mode;
    build(entries);
    expect_refused(extract(), Errc::unsafe_entry, "setuid/setgid/sticky");
  }
  build({manifest_entry(manifest_for({file(kLibrary, "y", 0755)})), dir("lib", 02755),
         file(kLibrary, "y", 0755)});
  expect_refused(extract(), Errc::unsafe_entry, "setuid/setgid/sticky");
}

TEST_F(ExtractTest, RefusesOtherModes) {
  for (unsigned mode : {0777u, 0600u, 0666u, 0700u, 0444u}) {
    std::vector<Entry> entries = package_of({file(kLibrary, "y", 0755)});
    entries[1].mode = mode;
    build(entries);
    expect_refused(extract(), Errc::unsafe_entry, "refused (must be 0644 or 0755)");
  }
  build({manifest_entry(manifest_for({file(kLibrary, "y", 0755)})), dir("lib", 0777),
         file(kLibrary, "y", 0755)});
  expect_refused(extract(), Errc::unsafe_entry, "directory mode 0777");
  // Allowed modes, but not the one listed.
  std::vector<Entry> entries = package_of({file(kLibrary, "y", 0755)});
  entries[1].mode = 0644;
  build(entries);
  expect_refused(extract(), Errc::unsafe_entry, "but manifest.json lists 0755");
}

// ---- entries against the manifest ------------------------------------------------------

TEST_F(ExtractTest, RefusesDuplicates) {
  std::vector<Entry> files = payload();
  std::vector<Entry> entries = package_of(files);
  const Entry again = entries[2];
  entries.insert(entries.begin() + 3, again);  // the library twice
  build(entries);
  expect_refused(extract(), Errc::unsafe_entry, "duplicate entry");

  entries = package_of(files);
  entries.insert(entries.begin() + 1, dir("lib"));
  entries.insert(entries.begin() + 2, dir("lib/"));
  build(entries);
  expect_refused(extract(), Errc::unsafe_entry, "duplicate entry");

  entries = package_of(files);
  entries.push_back(manifest_entry(manifest_for(files)));
  build(entries);
  expect_refused(extract(), Errc::unsafe_entry, "duplicate entry");
}

TEST_F(ExtractTest, RefusesManifestMissingOrNotFirst) {
  std::vector<Entry> files = payload();
  build(files);
  expect_refused(extract(), Errc::malformed, "manifest.json must be the first entry");

  std::vector<Entry> entries = files;
  entries.insert(entries.begin() + 1, manifest_entry(manifest_for(files)));
  build(entries);
  expect_refused(extract(), Errc::malformed, "manifest.json must be the first entry");

  build({dir("manifest.json")});
  expect_refused(extract(), Errc::malformed, "manifest.json must be the first entry");

  build({});
  expect_refused(extract(), Errc::malformed, "no manifest.json");
}

TEST_F(ExtractTest, RefusesBadManifests) {
  std::vector<Entry> files = payload();
  std::vector<Entry> entries = package_of(files);
  entries[0].data = "{not json";
  build(entries);
  expect_refused(extract(), Errc::malformed, "not valid JSON");

  json j = json::parse(manifest_for(files));
  j["files"][1]["mode"] = 511;
  entries[0].data = j.dump();
  build(entries);
  expect_refused(extract(), Errc::bad_field, "files[1].mode");

  entries[0].data = std::string(kMaxManifestBytes + 1, ' ');
  build(entries);
  expect_refused(extract(), Errc::too_large, "manifest.json");

  entries[0].mode = 0600;
  entries[0].data = manifest_for(files);
  build(entries);
  expect_refused(extract(), Errc::unsafe_entry, "manifest.json");
}

TEST_F(ExtractTest, RefusesUnlistedAndMissingFiles) {
  std::vector<Entry> files = payload();
  std::vector<Entry> entries = package_of(files);
  entries.push_back(file("zzz/extra", "not listed"));
  build(entries);
  expect_refused(extract(), Errc::unsafe_entry, "not listed in manifest.json");

  entries = package_of(files);
  entries.pop_back();  // share/readme.txt listed, not present
  build(entries);
  expect_refused(extract(), Errc::malformed,
                 "share/readme.txt\" listed in manifest.json is missing");

  entries = package_of(files);
  entries.erase(entries.begin() + 2);  // the library, in the middle
  build(entries);
  expect_refused(extract(), Errc::malformed, "out of order");

  entries = package_of(files);
  std::swap(entries[3], entries[4]);
  build(entries);
  expect_refused(extract(), Errc::malformed, "out of order");
}

TEST_F(ExtractTest, RefusesDirectoriesNotNeededOrInPlaceOfFiles) {
  std::vector<Entry> files = payload();
  std::vector<Entry> entries = package_of(files);
  entries.push_back(dir("empty"));
  build(entries);
  expect_refused(extract(), Errc::unsafe_entry, "directory not needed");

  entries = package_of(files);
  entries.insert(entries.begin() + 1, dir(kLibrary));
  build(entries);
  expect_refused(extract(), Errc::unsafe_entry, "directory not needed");
}

TEST_F(ExtractTest, RefusesSizeAndHashMismatch) {
  std::vector<Entry> files = payload();
  std::vector<Entry> entries = package_of(files);
  entries[3].data += "x";  // helper.so one byte longer than listed
  build(entries);
  expect_refused(extract(), Errc::length_mismatch, "lib/plugins/helper.so");

  entries = package_of(files);
  entries[3].data[40000] =
      static_cast<char>(entries[3].data[40000] ^ 0xFF);  // same size, other bytes
  build(entries);
  expect_refused(extract(), Errc::hash_mismatch, "lib/plugins/helper.so");
}

// ---- counts and sizes ----------------------------------------------------------------------

TEST_F(ExtractTest, RefusesHundredThousandEntries) {
  // 1. A manifest honestly listing 100,000 files is over the manifest cap.
  std::vector<Entry> files;
  files.reserve(100'000);
  for (int i = 0; i < 100'000; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "f/%06d", i);
    files.push_back(file(name, ""));
  }
  files.push_back(file(kLibrary, "y", 0755));
  std::sort(files.begin(), files.end(),
            [](const Entry& a, const Entry& b) { return a.path < b.path; });
  build(package_of(files));
  expect_refused(extract(), Errc::too_large, "manifest.json");
  // 2. A small manifest followed by 100,000 entries stops at the first unlisted one.
  std::vector<Entry> small = {file(kLibrary, "y", 0755)};
  std::vector<Entry> entries = package_of(small);
  entries.insert(entries.end(), files.begin(), files.end() - 1);
  build(entries);
  expect_refused(extract(), Errc::unsafe_entry, "not listed");
}

TEST_F(ExtractTest, RefusesMoreEntriesThanTheLimit) {
  ExtractLimits limits;
  limits.max_entries = 5;
  // 1. Known from the manifest: 5 files + manifest.json.
  std::vector<Entry> files = {file("a", "1"), file("b", "2"), file("c", "3"), file("d", "4"),
                              file(kLibrary, "y", 0755)};
  build(package_of(files));
  expect_refused(extract(limits), Errc::too_many, "more than 5 entries");
  // 2. Counted as entries stream: directory entries push it over.
  files = {file("a/x", "1"), file("b/y", "2"), file(kLibrary, "y", 0755)};
  build({manifest_entry(manifest_for(files)), dir("a"), files[0], dir("b"), files[1], dir("lib"),
         files[2]});
  expect_refused(extract(limits), Errc::too_many, "more than 5 entries");
  limits.max_entries = 7;
  auto ok = extract(limits);
  ASSERT_TRUE(ok.has_value()) << ok.error().message;
}

TEST_F(ExtractTest, RefusesFilesAndTotalsOverTheCaps) {
  std::vector<Entry> files = payload();  // largest file 70,000 bytes; total 75,016
  ExtractLimits limits;
  limits.max_file_bytes = 69'999;
  build(package_of(files));
  expect_refused(extract(limits), Errc::too_large, "lib/plugins/helper.so");
  limits = {};
  limits.max_total_bytes = 75'000;
  expect_refused(extract(limits), Errc::too_large, "total cap");
  limits = {};
  limits.max_ratio = 1;
  limits.ratio_floor_bytes = 0;  // the archive is a few KB: 1x is far exceeded
  expect_refused(extract(limits), Errc::too_large, "expansion ratio");
  // The manifest lists 3 GiB for the library (over the default 2 GiB cap).
  json j = json::parse(manifest_for(files));
  j["files"][1]["size"] = std::uint64_t{3} << 30;
  std::vector<Entry> entries = package_of(files);
  entries[0].data = j.dump();
  build(entries);
  expect_refused(extract(), Errc::too_large, "per-file cap");
}

TEST_F(ExtractTest, RefusesHeaderDeclaringMoreThanTheRatioAllows) {
  // The manifest lies (1 byte); the header declares 300 MB of zeros that zstd
  // squeezes into a few KB. Refused at the header, before any byte is written.
  std::vector<Entry> files = {file(kLibrary, "y", 0755)};
  std::vector<Entry> listed = {file("big", "z"), files[0]};
  {
    ArchiveWriter w(pkg, Filter::zstd);
    w.add(manifest_entry(manifest_for(listed)));
    Entry big = file("big", "");
    big.declared = 300'000'000;
    w.header(big);
    w.zeros(static_cast<std::uint64_t>(*big.declared));
    w.add(files[0]);
  }
  EXPECT_GT(fs::file_size(pkg), 5'000u);
  EXPECT_LT(fs::file_size(pkg), 1u << 20);
  expect_refused(extract(), Errc::too_large, "entries declare 300000000 bytes");
}

// A small archive that expands past 10 GB: six files of 1,800 MiB of zeros
// (each under the 2 GiB file cap), ~350 KB of zstd. Built once for the suite by
// streaming zeros through the writer (~2 s); refused from the manifest's sizes
// before anything is written.
class BombTest : public ExtractTest {
 protected:
  static constexpr std::int64_t kFileBytes = std::int64_t{1800} << 20;
  static constexpr int kFiles = 6;

  static void SetUpTestSuite() {
    bomb_dir_ = new TempDir();
    Manifest m{test_meta("f5"), {}};
    for (int i = 0; i < kFiles; ++i) {
      m.files.push_back({"f" + std::to_string(i), static_cast<std::uint64_t>(kFileBytes),
                         std::string(64, '0'), false});
    }
    ArchiveWriter w(bomb_path(), Filter::zstd, Format::pax, 1);
    w.add(manifest_entry(to_text(m)));
    for (int i = 0; i < kFiles; ++i) {
      Entry e = file("f" + std::to_string(i), "", 0644);
      e.declared = kFileBytes;
      w.header(e);
      w.zeros(static_cast<std::uint64_t>(kFileBytes));
    }
  }
  static void TearDownTestSuite() {
    delete bomb_dir_;
    bomb_dir_ = nullptr;
  }
  static fs::path bomb_path() { return bomb_dir_->path() / "bomb.tar.zst"; }

  static TempDir* bomb_dir_;
};
TempDir* BombTest::bomb_dir_ = nullptr;

TEST_F(BombTest, TenGigabytesOfZerosIsRefusedByTheRatioCap) {
  // ~80,000 zstd blocks of zeros, 4 bytes each: the data really is in there.
  ASSERT_GT(fs::file_size(bomb_path()), 250'000u);
  ASSERT_LT(fs::file_size(bomb_path()), 2u << 20);
  fs::copy_file(bomb_path(), pkg);
  before = snapshot(tmp.path());
  expect_refused(extract(), Errc::too_large,
                 "manifest.json: listed files total 11324620800 bytes, more than 200 times");
}

TEST_F(BombTest, TenGigabytesOfZerosIsRefusedByTheTotalCap) {
  fs::copy_file(bomb_path(), pkg);
  before = snapshot(tmp.path());
  ExtractLimits limits;
  limits.max_ratio = 1'000'000;
  expect_refused(extract(limits), Errc::too_large, "total cap");
}

TEST_F(ExtractTest, GzipBombIsRefusedByTheRatioCap) {
  // 400 MB of zeros in one file (under the file and total caps): ~400 KB of gzip.
  pkg = tmp / "pkg.tar.gz";
  constexpr std::int64_t kBytes = 400'000'000;
  Manifest m{test_meta("zeros"), {{"zeros", kBytes, std::string(64, '0'), true}}};
  {
    ArchiveWriter w(pkg, Filter::gzip, Format::pax, 6);
    w.add(manifest_entry(to_text(m)));
    Entry e = file("zeros", "", 0755);
    e.declared = kBytes;
    w.header(e);
    w.zeros(static_cast<std::uint64_t>(kBytes));
  }
  EXPECT_GT(fs::file_size(pkg), 200'000u);  // deflate tops out near 1:1000
  EXPECT_LT(fs::file_size(pkg), 1u << 20);
  expect_refused(extract(), Errc::too_large, "expansion ratio");
}

// ---- damaged streams and other formats ------------------------------------------------------

class DamagedStreamTest : public ExtractTest, public ::testing::WithParamInterface<Filter> {
 protected:
  // An honest package with incompressible payload, so that damage lands in data.
  void build_honest() {
    std::string noise(300'000, '\0');
    std::uint32_t x = 12345;
    for (char& c : noise) {
      x = x * 1664525u + 1013904223u;
      c = static_cast<char>(x >> 24);
    }
    files = {file("a.bin", noise), file(kLibrary, noise.substr(0, 100'000), 0755)};
    pkg = tmp / (GetParam() == Filter::zstd ? "pkg.tar.zst" : "pkg.tar.gz");
    build(package_of(files), GetParam());
    bytes = tests::support::read_file(pkg);
  }
  void rewrite(const std::string& b) {
    tests::support::write_file(pkg, b);
    before = snapshot(tmp.path());
  }
  std::vector<Entry> files;
  std::string bytes;
};

TEST_P(DamagedStreamTest, RefusesTruncatedStreams) {
  build_honest();
  for (double at : {0.1, 0.5, 0.9, 0.999}) {
    rewrite(bytes.substr(0, static_cast<std::size_t>(static_cast<double>(bytes.size()) * at)));
    expect_refused(extract(), Errc::malformed, "truncated");
  }
}

TEST_P(DamagedStreamTest, RefusesCorruptStreams) {
  build_honest();
  // Flipped bytes in the compressed data: refused by the decompressor, the tar
  // header checksum, or the manifest's SHA-256, never accepted.
  for (std::size_t at : {bytes.size() / 3, bytes.size() / 2, bytes.size() - 100}) {
    std::string bad = bytes;
    for (std::size_t i = at; i < at + 16; ++i) bad[i] = static_cast<char>(bad[i] ^ 0x5A);
    rewrite(bad);
    auto r = extract();
    ASSERT_FALSE(r.has_value()) << "corruption at " << at << " accepted";
    EXPECT_TRUE(r.error().code == Errc::malformed || r.error().code == Errc::hash_mismatch)
        << errc_name(r.error().code) << ": " << r.error().message;
    expect_untouched();
  }
  // A damaged header of the compressed stream.
  std::string bad = bytes;
  bad[1] = static_cast<char>(bad[1] ^ 0xFF);
  rewrite(bad);
  expect_refused(extract(), Errc::malformed, "");
}

INSTANTIATE_TEST_SUITE_P(Filters, DamagedStreamTest, ::testing::Values(Filter::zstd, Filter::gzip),
                         [](const ::testing::TestParamInfo<Filter>& p) {
                           return p.param == Filter::zstd ? std::string("zstd")
                                                          : std::string("gzip");
                         });

TEST_F(ExtractTest, RefusesOtherArchiveFormatsAndCompressions) {
  const std::vector<Entry> entries = package_of(payload());
  auto refuse = [&](auto configure) {
    ::archive* a = archive_write_new();
    configure(a);
    ASSERT_EQ(archive_write_open_filename(a, pkg.c_str()), ARCHIVE_OK) << archive_error_string(a);
    for (const Entry& e : entries) {
      archive_entry* ae = archive_entry_new();
      archive_entry_copy_pathname(ae, e.path.c_str());
      archive_entry_set_filetype(ae, AE_IFREG);
      archive_entry_set_perm(ae, e.mode);
      archive_entry_set_size(ae, static_cast<la_int64_t>(e.data.size()));
      archive_write_header(a, ae);
      archive_write_data(a, e.data.data(), e.data.size());
      archive_entry_free(ae);
    }
    archive_write_close(a);
    archive_write_free(a);
    before = snapshot(tmp.path());
    expect_refused(extract(), Errc::malformed, "");
  };
  refuse([](::archive* a) { archive_write_set_format_zip(a); });
  refuse([](::archive* a) { archive_write_set_format_cpio_newc(a); });
  refuse([](::archive* a) {
    archive_write_set_format_pax_restricted(a);
    archive_write_add_filter_xz(a);
  });
  refuse([](::archive* a) {
    archive_write_set_format_pax_restricted(a);
    archive_write_add_filter_bzip2(a);
  });
  refuse([](::archive* a) { archive_write_set_format_7zip(a); });
}

// ---- fault injection through a fake reader ----------------------------------------------

// Serves scripted entries; read() can fail at a given offset of an entry.
class FakeReader : public ArchiveReader {
 public:
  struct Item {
    EntryInfo info;
    std::string data;
    std::size_t fail_at = std::string::npos;  // read() fails once this offset is reached
    std::size_t chunk = 4096;                 // bytes per read()
  };

  explicit FakeReader(std::vector<Item> items) : items_(std::move(items)) {}

  Result<std::optional<EntryInfo>> next() override {
    if (nexts++ == fail_next_at) return fail(Errc::malformed, "injected header error");
    if (++current_ >= items_.size()) return std::optional<EntryInfo>();
    pos_ = 0;
    return std::optional<EntryInfo>(items_[current_].info);
  }

  Result<std::size_t> read(std::span<std::byte> buf) override {
    const Item& it = items_[current_];
    if (pos_ >= it.fail_at) return fail(Errc::io, "injected read error");
    const std::size_t n =
        std::min({buf.size(), it.data.size() - pos_, it.chunk, it.fail_at - pos_});
    std::memcpy(buf.data(), it.data.data() + pos_, n);
    pos_ += n;
    ++reads;
    return n;
  }

  int reads = 0;
  std::size_t nexts = 0;
  std::size_t fail_next_at = std::string::npos;  // this next() call (0-based) fails

 private:
  std::vector<Item> items_;
  std::size_t current_ = static_cast<std::size_t>(-1);
  std::size_t pos_ = 0;
};

FakeReader::Item item(const std::string& path, const std::string& data, unsigned mode = 0644,
                      EntryType type = EntryType::regular) {
  EntryInfo info;
  info.pathname = path;
  info.type = type;
  info.size = data.size();
  info.mode = mode;
  return {info, data};
}

std::vector<FakeReader::Item> honest_items() {
  std::vector<Entry> files = payload();
  std::vector<FakeReader::Item> out = {item("manifest.json", manifest_for(files))};
  for (const Entry& e : files) out.push_back(item(e.path, e.data, e.mode));
  return out;
}

TEST_F(ExtractTest, FakeReaderHonestPackageIsAccepted) {
  FakeReader reader(honest_items());
  auto r = extract_package(reader, 100'000, staging);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(tests::support::read_file(staging / "lib/plugins/helper.so"), std::string(70000, 'h'));
}

TEST_F(ExtractTest, ReadErrorMidFileLeavesStagingEmpty) {
  auto items = honest_items();
  items[3].fail_at = 30'000;  // lib/plugins/helper.so, after LICENSE and the library
  FakeReader reader(items);
  before = snapshot(tmp.path());
  auto r = extract_package(reader, 100'000, staging);
  EXPECT_GT(reader.reads, 8);  // it really was mid-file
  expect_refused(r, Errc::io, "lib/plugins/helper.so\": injected read error");
}

TEST_F(ExtractTest, ReadErrorInManifestOrHeaderIsPropagated) {
  auto items = honest_items();
  items[0].fail_at = 10;
  FakeReader reader(items);
  before = snapshot(tmp.path());
  expect_refused(extract_package(reader, 100'000, staging), Errc::io, "injected");
}

TEST_F(ExtractTest, FakeReaderEntriesTarCannotHold) {
  before = snapshot(tmp.path());
  const std::vector<std::pair<FakeReader::Item, std::string>> cases = {
      {item("sock", "", 0644, EntryType::socket), "socket refused"},
      {item("thing", "", 0644, EntryType::other), "unknown entry type refused"},
      {item(std::string("lib/a\0b", 7), "", 0644), "NUL byte"},
      {item("", "", 0644), "empty path"},
  };
  for (const auto& [bad, mention] : cases) {
    auto items = honest_items();
    items.insert(items.begin() + 2, bad);
    FakeReader reader(items);
    expect_refused(extract_package(reader, 100'000, staging), Errc::unsafe_entry, mention);
  }
  auto items = honest_items();
  items[2].info.is_sparse = true;
  FakeReader sparse(items);
  expect_refused(extract_package(sparse, 100'000, staging), Errc::unsafe_entry, "sparse");
  items = honest_items();
  items[2].info.is_hardlink = true;
  items[2].info.type = EntryType::regular;
  FakeReader hard(items);
  expect_refused(extract_package(hard, 100'000, staging), Errc::unsafe_entry, "hardlink");
}

TEST_F(ExtractTest, FakeReaderDataDisagreeingWithItsHeader) {
  before = snapshot(tmp.path());
  auto items = honest_items();
  items[3].info.size = 60'000;  // header and manifest disagree
  FakeReader r1(items);
  expect_refused(extract_package(r1, 100'000, staging), Errc::length_mismatch, "header declares");
  items = honest_items();
  items[3].data += "more";  // more data than declared
  FakeReader r2(items);
  expect_refused(extract_package(r2, 100'000, staging), Errc::length_mismatch,
                 "more data than its header declares");
  items = honest_items();
  items[3].data.resize(100);  // stream ends early
  FakeReader r3(items);
  expect_refused(extract_package(r3, 100'000, staging), Errc::length_mismatch, "truncated");
}

// ---- the read-ahead reader the extractor runs on ------------------------------------------

// What a caller sees: per entry its name, the first `take[i]` bytes of its data
// (all when absent), then how it ended; an error ends the transcript.
std::string transcript(ArchiveReader& r, const std::vector<std::size_t>& take = {}) {
  std::string log;
  std::vector<std::byte> buf(64);
  for (std::size_t i = 0;; ++i) {
    auto e = r.next();
    if (!e) return log + "next error: " + e.error().message + "\n";
    if (!*e) break;
    log += "entry " + (*e)->pathname + " [";
    const std::size_t limit = i < take.size() ? take[i] : std::string::npos;
    std::size_t got = 0;
    while (got < limit) {
      auto n = r.read(std::span(buf).first(std::min(buf.size(), limit - got)));
      if (!n) return log + "] read error: " + n.error().message + "\n";
      if (*n == 0) break;
      log.append(reinterpret_cast<const char*>(buf.data()), *n);
      got += *n;
    }
    log += "]\n";
  }
  auto again = r.next();  // the end stays the end
  return log + (again && !*again ? "end\n" : "not the end\n");
}

std::vector<FakeReader::Item> varied_items() {
  std::string big(10'000, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>('a' + i % 26);
  std::vector<FakeReader::Item> items = {item("empty", ""), item("big", big), item("small", "xyz"),
                                         item("dir", "", 0755, EntryType::directory)};
  items[1].chunk = 333;
  return items;
}

TEST(PrefetchReaderTest, MatchesItsInnerReader) {
  const std::vector<std::vector<std::size_t>> scripts = {{}, {0, 5, 1}, {9, 0, 0, 0}, {0, 9999}};
  for (const auto& take : scripts) {
    FakeReader direct(varied_items());
    const std::string want = transcript(direct, take);
    for (std::size_t chunk : {std::size_t{1}, std::size_t{100}, std::size_t{1} << 20}) {
      FakeReader inner(varied_items());
      auto prefetch = PrefetchReader::start(inner, chunk, /*max_queued_bytes=*/250);
      ASSERT_TRUE(prefetch.has_value()) << prefetch.error().message;
      EXPECT_EQ(transcript(**prefetch, take), want) << "chunk " << chunk;
    }
  }
}

TEST(PrefetchReaderTest, DeliversErrorsWhereTheInnerReaderDoes) {
  for (int variant = 0; variant < 3; ++variant) {
    auto make = [variant] {
      auto items = varied_items();
      if (variant == 0) items[1].fail_at = 5'000;  // mid-data
      auto r = std::make_unique<FakeReader>(std::move(items));
      if (variant == 1) r->fail_next_at = 2;  // a later header
      if (variant == 2) r->fail_next_at = 0;  // the first header
      return r;
    };
    auto direct = make();
    const std::string want = transcript(*direct);
    EXPECT_THAT(want, HasSubstr("error")) << variant;
    auto inner = make();
    auto prefetch = PrefetchReader::start(*inner, 100, 1000);
    ASSERT_TRUE(prefetch.has_value());
    EXPECT_EQ(transcript(**prefetch), want) << variant;
    // After an error, the error stays.
    auto again = (*prefetch)->next();
    EXPECT_FALSE(again.has_value());
  }
}

TEST(PrefetchReaderTest, StopsEarlyWithoutReadingEverything) {
  std::vector<FakeReader::Item> items;
  for (int i = 0; i < 100; ++i)
    items.push_back(item("f" + std::to_string(i), std::string(1 << 20, 'x')));
  FakeReader inner(items);
  {
    auto prefetch = PrefetchReader::start(inner, 64 * 1024, 256 * 1024);
    ASSERT_TRUE(prefetch.has_value());
    auto e = (*prefetch)->next();
    ASSERT_TRUE(e.has_value() && e->has_value());
    std::vector<std::byte> buf(10);
    ASSERT_EQ(*(*prefetch)->read(buf), 10u);
  }  // destroyed mid-stream: stops and joins
  // It read ahead a bounded amount, not the 100 MiB.
  EXPECT_LT(inner.reads * 4096, 2 << 20);
}

}  // namespace
}  // namespace catalog::package
