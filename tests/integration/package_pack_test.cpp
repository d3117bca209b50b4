// pack_directory() (catalog/package/pack.hpp): round trips through the extractor
// for zstd and gzip, byte-identical output across runs and source trees,
// interoperability with GNU tar, and the refusals of the packer.
#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#include <utime.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "catalog/ep_metadata.hpp"
#include "catalog/package/extract.hpp"
#include "catalog/package/manifest.hpp"
#include "catalog/package/pack.hpp"
#include "tests/support/temp_dir.hpp"

namespace catalog::package {
namespace {

namespace fs = std::filesystem;
using ::nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using tests::support::read_file;
using tests::support::TempDir;
using tests::support::write_file;

EpMetadata test_meta(const std::string& library = "lib/libep.so") {
  auto m = parse_ep_metadata(json::parse(R"({"epbroker": {
    "schema": 1, "name": "test-ep", "version": "1.0.0", "ep_names": ["TestEp"],
    "vendor": "tests", "arch": "x86_64", "ort_min": "1.23.0", "library": "lib/libep.so",
    "supports": [{"type": "cpu"}], "description": "pack test"}})"));
  EXPECT_TRUE(m.has_value());
  m->library = library;
  return *m;
}

// Semi-compressible bytes: a repeating text with a pseudo-random byte mixed in.
std::string semi_random(std::size_t n, std::uint32_t seed) {
  std::string s(n, '\0');
  const std::string text = "the quick brown fox jumps over the lazy dog 0123456789 ";
  for (std::size_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    s[i] = (i % 7 == 0) ? static_cast<char>(seed >> 24) : text[i % text.size()];
  }
  return s;
}

struct SourceFile {
  std::string path;
  std::string data;
  fs::perms mode;
  fs::perms packed;  // the mode the package must carry
};

const std::vector<SourceFile>& source_files() {
  using P = fs::perms;
  static const std::vector<SourceFile> files = {
      {"lib/libep.so", semi_random(3 << 20, 1), P(0755), P(0755)},
      {"lib/libhelper.so.1", semi_random(200'000, 2), P(0700), P(0755)},
      {"bin/tool", "#!/bin/sh\n", P(0744), P(0755)},
      {"share/empty", "", P(0644), P(0644)},
      {"share/private.txt", "secret-ish\n", P(0600), P(0644)},
      {"share/d\xC3\xA9j\xC3\xA0 vu.txt", "utf-8\n", P(0664), P(0644)},
      {"B", "upper\n", P(0644), P(0644)},
      {"a-b", "dash\n", P(0644), P(0644)},
      {"a.b", "dot\n", P(0644), P(0644)},
      {"a/b", "slash\n", P(0644), P(0644)},
      {"deep/" + std::string(120, 'd') + "/" + std::string(150, 'e') + ".txt", "long\n", P(0644),
       P(0644)},
  };
  return files;
}

void make_source(const fs::path& dir) {
  for (const SourceFile& f : source_files()) {
    write_file(dir / f.path, f.data);
    fs::permissions(dir / f.path, f.mode);
  }
  fs::create_directories(dir / "empty-dir/inside");  // dropped: no files
}

std::vector<std::string> entry_names(const fs::path& package) {
  std::vector<std::string> out;
  archive* a = archive_read_new();
  archive_read_support_format_tar(a);
  archive_read_support_filter_all(a);
  EXPECT_EQ(archive_read_open_filename(a, package.c_str(), 65536), ARCHIVE_OK);
  archive_entry* e = nullptr;
  // (ARCHIVE_WARN: this process runs in the C locale, where a UTF-8 name
  // cannot be converted; the name is still there.)
  for (int rc; (rc = archive_read_next_header(a, &e)) == ARCHIVE_OK || rc == ARCHIVE_WARN;) {
    out.push_back(archive_entry_pathname(e));
    EXPECT_EQ(archive_entry_mtime(e), 0) << out.back();
    EXPECT_EQ(archive_entry_mtime_nsec(e), 0) << out.back();
    EXPECT_FALSE(archive_entry_atime_is_set(e)) << out.back();
    EXPECT_FALSE(archive_entry_ctime_is_set(e)) << out.back();
    EXPECT_EQ(archive_entry_uid(e), 0) << out.back();
    EXPECT_EQ(archive_entry_gid(e), 0) << out.back();
    for (const char* name : {archive_entry_uname(e), archive_entry_gname(e)}) {
      EXPECT_TRUE(name == nullptr || *name == '\0') << out.back() << ": " << name;
    }
    EXPECT_EQ(archive_entry_xattr_count(e), 0) << out.back();
    EXPECT_EQ(archive_entry_filetype(e), AE_IFREG) << out.back();
  }
  archive_read_free(a);
  return out;
}

class PackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    make_source(src);
    fs::create_directory(out);
  }

  TempDir tmp;
  fs::path src = tmp / "src";
  fs::path out = tmp / "out";
};

TEST_F(PackTest, RoundTripsThroughTheExtractor) {
  for (Compression c : {Compression::zstd, Compression::gzip}) {
    const fs::path pkg = out / (c == Compression::zstd ? "p.tar.zst" : "p.tar.gz");
    auto ok = pack_directory(src, test_meta(), pkg, c);
    ASSERT_TRUE(ok.has_value()) << ok.error().message;
    const fs::path staging = tmp / ("staging-" + pkg.extension().string());
    fs::create_directory(staging);
    auto m = extract_package(pkg, staging);
    ASSERT_TRUE(m.has_value()) << m.error().message;
    EXPECT_EQ(m->ep, test_meta());
    EXPECT_EQ(m->files.size(), source_files().size());
    for (const SourceFile& f : source_files()) {
      EXPECT_EQ(read_file(staging / f.path), f.data) << f.path;
      EXPECT_EQ(fs::status(staging / f.path).permissions(), f.packed) << f.path;
    }
    EXPECT_FALSE(fs::exists(staging / "empty-dir"));
    auto again = read_package_manifest(pkg);
    ASSERT_TRUE(again.has_value()) << again.error().message;
    EXPECT_EQ(*again, *m);
    EXPECT_TRUE(check_manifest_matches(*m, test_meta()).has_value());
  }
}

TEST_F(PackTest, EntriesAreManifestFirstThenSortedWithFixedMetadata) {
  ASSERT_TRUE(pack_directory(src, test_meta(), out / "p.tar.zst").has_value());
  const std::vector<std::string> names = entry_names(out / "p.tar.zst");
  ASSERT_EQ(names.size(), source_files().size() + 1);
  EXPECT_EQ(names[0], "manifest.json");
  EXPECT_THAT(std::vector<std::string>(names.begin() + 1, names.begin() + 6),
              ElementsAre("B", "a-b", "a.b", "a/b", "bin/tool"));  // byte order
  EXPECT_TRUE(std::is_sorted(names.begin() + 1, names.end()));
}

TEST_F(PackTest, OutputIsByteIdenticalAcrossRunsAndTrees) {
  for (Compression c : {Compression::zstd, Compression::gzip}) {
    const std::string ext = c == Compression::zstd ? ".tar.zst" : ".tar.gz";
    ASSERT_TRUE(pack_directory(src, test_meta(), out / ("1" + ext), c).has_value());
    // The same files elsewhere, written later, other mtimes, other group/other bits.
    const fs::path copy = tmp / ("copy" + ext);
    fs::copy(src, copy, fs::copy_options::recursive);
    for (const SourceFile& f : source_files()) {
      struct utimbuf t {
        1'000'000'000, 1'000'000'000
      };
      ASSERT_EQ(::utime((copy / f.path).c_str(), &t), 0);
    }
    fs::permissions(copy / "share/empty", fs::perms(0600));
    fs::permissions(copy / "lib/libep.so", fs::perms(0711));
    ::sleep(1);  // a timestamp anywhere in the output would now differ
    ASSERT_TRUE(pack_directory(src, test_meta(), out / ("2" + ext), c).has_value());
    ASSERT_TRUE(pack_directory(copy, test_meta(), out / ("3" + ext), c).has_value());
    const std::string first = read_file(out / ("1" + ext));
    EXPECT_EQ(first, read_file(out / ("2" + ext))) << ext;
    EXPECT_EQ(first, read_file(out / ("3" + ext))) << ext;
    if (c == Compression::gzip) {
      ASSERT_GT(first.size(), 8u);
      EXPECT_EQ(first.substr(4, 4), std::string(4, '\0'));  // gzip MTIME field
    }
  }
}

TEST_F(PackTest, ChangedMetadataOrContentChangesTheOutput) {
  ASSERT_TRUE(pack_directory(src, test_meta(), out / "1.tar.zst").has_value());
  EpMetadata other = test_meta();
  other.version = *parse_version_text("1.0.1");
  ASSERT_TRUE(pack_directory(src, other, out / "2.tar.zst").has_value());
  EXPECT_NE(read_file(out / "1.tar.zst"), read_file(out / "2.tar.zst"));
  fs::permissions(src / "B", fs::perms(0755));
  ASSERT_TRUE(pack_directory(src, test_meta(), out / "3.tar.zst").has_value());
  EXPECT_NE(read_file(out / "1.tar.zst"), read_file(out / "3.tar.zst"));
}

TEST_F(PackTest, GnuTarExtractsTheSameFiles) {
  for (const char* ext : {".tar.zst", ".tar.gz"}) {
    const fs::path pkg = out / (std::string("p") + ext);
    ASSERT_TRUE(
        pack_directory(src, test_meta(), pkg,
                       std::string(ext) == ".tar.zst" ? Compression::zstd : Compression::gzip)
            .has_value());
    const fs::path x = tmp / (std::string("tar") + ext);
    fs::create_directory(x);
    const std::string cmd = std::string("tar ") +
                            (std::string(ext) == ".tar.zst" ? "--zstd" : "-z") + " -xf '" +
                            pkg.string() + "' -C '" + x.string() + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    for (const SourceFile& f : source_files()) EXPECT_EQ(read_file(x / f.path), f.data) << f.path;
    auto m = parse_manifest(read_file(x / "manifest.json"));
    ASSERT_TRUE(m.has_value()) << m.error().message;
    EXPECT_EQ(m->ep, test_meta());
  }
}

// ---- refusals ----------------------------------------------------------------------

class PackRefusalTest : public PackTest {
 protected:
  void expect_refused(Errc code, const std::string& mention, const EpMetadata& meta = test_meta()) {
    auto r = pack_directory(src, meta, out / "p.tar.zst");
    ASSERT_FALSE(r.has_value()) << "packed";
    EXPECT_EQ(errc_name(r.error().code), errc_name(code)) << r.error().message;
    EXPECT_THAT(r.error().message, HasSubstr(mention));
    EXPECT_TRUE(fs::is_empty(out)) << "output or temporary left behind";
  }
};

TEST_F(PackRefusalTest, RefusesSymlinks) {
  fs::create_symlink("libep.so", src / "lib/libep.so.1");
  expect_refused(Errc::invalid_argument, "symlink refused");
  fs::remove(src / "lib/libep.so.1");
  fs::create_directory_symlink("/etc", src / "etc");
  expect_refused(Errc::invalid_argument, "symlink refused");
}

TEST_F(PackRefusalTest, RefusesSpecialFiles) {
  ASSERT_EQ(::mkfifo((src / "share/fifo").c_str(), 0644), 0);
  expect_refused(Errc::invalid_argument, "special file refused");
}

TEST_F(PackRefusalTest, RefusesAManifestInTheDirectory) {
  write_file(src / "manifest.json", "{}");
  expect_refused(Errc::invalid_argument, "must not hold manifest.json");
}

TEST_F(PackRefusalTest, RefusesALibraryNotPresent) {
  expect_refused(Errc::invalid_argument, "epbroker.library \"lib/missing.so\" is not a file",
                 test_meta("lib/missing.so"));
  fs::create_directory(src / "lib/dir.so");
  expect_refused(Errc::invalid_argument, "is not a file", test_meta("lib/dir.so"));
}

TEST_F(PackRefusalTest, RefusesUnsafeNames) {
  write_file(src / "back\\slash", "x");
  expect_refused(Errc::invalid_argument, "backslash");
  fs::remove(src / "back\\slash");
  write_file(src / "bad\xff.txt", "x");
  expect_refused(Errc::invalid_argument, "not valid UTF-8");
  fs::remove(src / "bad\xff.txt");
  write_file(src / "ctl\x1b.txt", "x");
  expect_refused(Errc::invalid_argument, "control character");
}

TEST_F(PackRefusalTest, RefusesInvalidMetadata) {
  EpMetadata bad = test_meta();
  bad.name = "Not Valid";
  expect_refused(Errc::bad_field, "epbroker.name", bad);
}

TEST_F(PackRefusalTest, RefusesOutputInsideTheDirectoryAndMissingDirectory) {
  auto r = pack_directory(src, test_meta(), src / "lib/p.tar.zst");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Errc::invalid_argument);
  EXPECT_FALSE(fs::exists(src / "lib/p.tar.zst"));
  r = pack_directory(tmp / "nope", test_meta(), out / "p.tar.zst");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Errc::invalid_argument);
  EXPECT_TRUE(fs::is_empty(out));
}

TEST_F(PackTest, ReplacesAnExistingOutputAtomically) {
  write_file(out / "p.tar.zst", "old bytes");
  ASSERT_TRUE(pack_directory(src, test_meta(), out / "p.tar.zst").has_value());
  EXPECT_TRUE(read_package_manifest(out / "p.tar.zst").has_value());
  EXPECT_EQ(std::distance(fs::directory_iterator(out), fs::directory_iterator()), 1);
  EXPECT_EQ(fs::status(out / "p.tar.zst").permissions(), fs::perms(0644));
}

}  // namespace
}  // namespace catalog::package
