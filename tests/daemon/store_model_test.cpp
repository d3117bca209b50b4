// Models in the package store (daemon/store/model_store.hpp, Store::install_model()
// and friends), in temporary state directories.
//
// Every failure test checks the contract: the typed error, staging/ empty, and
// store/ (every entry's type, mode, size, SHA-256 and which entries share an
// inode) exactly as before.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "catalog/crypto/hash.hpp"
#include "catalog/model_metadata.hpp"
#include "daemon/store/model_store.hpp"
#include "daemon/store/store.hpp"
#include "tests/support/temp_dir.hpp"

namespace epbrokerd::store {
namespace {

namespace fs = std::filesystem;
using catalog::Errc;
using catalog::errc_name;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using tests::support::TempDir;

using Contents = std::map<std::string, std::string>;  // path -> bytes
struct VariantSpec {
  std::string id;
  std::string main;
  Contents files;
};

std::string sha(const std::string& bytes) { return catalog::crypto::sha256_hex(bytes); }

// Signed-looking metadata of model `name` `version` with `variants`.
catalog::ModelMetadata model_meta(const std::string& name, const std::string& version,
                                  const std::vector<VariantSpec>& variants) {
  nlohmann::json c = nlohmann::json::parse(R"({"epbroker": {
    "schema": 2, "kind": "model", "name": "x", "version": "1.0", "publisher": "tests",
    "license": "MIT", "license_url": "https://example.org/license", "task": "testing",
    "inputs": [{"name": "in", "type": "float", "shape": ["N", 3]}],
    "outputs": [{"name": "out", "type": "float", "shape": ["N"]}], "variants": []}})");
  c["epbroker"]["name"] = name;
  c["epbroker"]["version"] = version;
  for (const auto& v : variants) {
    nlohmann::json files = nlohmann::json::array();
    for (const auto& [path, bytes] : v.files) {
      files.push_back({{"path", path}, {"size", bytes.size()}, {"sha256", sha(bytes)}});
    }
    c["epbroker"]["variants"].push_back(
        {{"id", v.id}, {"ort_min", "1.20"}, {"opset", 17}, {"main", v.main}, {"files", files}});
  }
  auto m = catalog::parse_model_metadata(c);
  EXPECT_TRUE(m.has_value()) << m.error().message;
  return m.value_or(catalog::ModelMetadata{});
}

SignedModel signed_model(const catalog::ModelMetadata& m, const std::string& variant) {
  return {m, variant, "test-remote", m.name + "/" + m.name + "-" + m.version.text + ".model.json"};
}

// Everything under `root` (not following links), relative path -> "type mode
// size sha256 [shares <first path of that inode>]".
std::map<std::string, std::string> snapshot(const fs::path& root) {
  std::map<std::string, std::string> out;
  std::map<std::pair<dev_t, ino_t>, std::string> first;  // inode -> smallest path
  std::map<std::string, std::pair<dev_t, ino_t>> inode;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0) continue;
    const std::string rel = fs::relative(it->path(), root).string();
    std::string v = S_ISDIR(st.st_mode) ? "d" : S_ISREG(st.st_mode) ? "f" : "o";
    v += " " + std::to_string(st.st_mode & 07777);
    if (S_ISREG(st.st_mode)) {
      v += " " + std::to_string(st.st_size) + " " + sha(tests::support::read_file(it->path()));
      const std::pair<dev_t, ino_t> id{st.st_dev, st.st_ino};
      inode[rel] = id;
      if (!first.contains(id) || rel < first[id]) first[id] = rel;
    }
    out[rel] = v;
  }
  for (const auto& [rel, id] : inode) out[rel] += " shares " + first[id];
  return out;
}

struct stat stat_of(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  return st;
}

const std::string kA = std::string(3000, 'A') + "model a";
const std::string kB = std::string(2000, 'B') + "model b";
const std::string kC = std::string(1000, 'C') + "model c";
const std::string kLabels = "cat\ndog\nfish\n";

class ModelStoreTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (int fd : fds_) ::close(fd);
  }

  Store open(StoreOptions options = {}) {
    auto s = Store::open(state, std::move(options));
    if (!s) {
      ADD_FAILURE() << s.error().message;
      std::abort();
    }
    return std::move(*s);
  }

  // An anonymous file on the store's filesystem holding `bytes` (what the
  // commit helper hands over once it verified a download).
  int blob_fd(const std::string& bytes) {
    fs::create_directories(tmp / "blobs-in");
    const int fd = ::open((tmp / "blobs-in").c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    EXPECT_GE(fd, 0) << std::strerror(errno);
    EXPECT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    fds_.push_back(fd);
    return fd;
  }
  std::map<std::string, int> given(const std::vector<std::string>& contents) {
    std::map<std::string, int> out;
    for (const auto& c : contents) out[sha(c)] = blob_fd(c);
    return out;
  }

  InstalledModel install(Store& s, const catalog::ModelMetadata& m, const std::string& variant,
                         const std::vector<std::string>& contents) {
    auto r = s.install_model(signed_model(m, variant), given(contents));
    EXPECT_TRUE(r.has_value()) << r.error().message;
    return r.value_or(InstalledModel{});
  }

  std::map<std::string, std::string> store_snapshot() { return snapshot(state / "store"); }

  void expect_staging_empty() {
    EXPECT_TRUE(fs::is_empty(state / "staging")) << "staging not empty";
  }

  template <typename T>
  void expect_refused(const catalog::Result<T>& r, Errc code, const std::string& mention,
                      const std::map<std::string, std::string>& before) {
    ASSERT_FALSE(r.has_value()) << "accepted";
    EXPECT_EQ(errc_name(r.error().code), errc_name(code)) << r.error().message;
    EXPECT_THAT(r.error().message, HasSubstr(mention));
    expect_staging_empty();
    EXPECT_EQ(store_snapshot(), before) << "store/ changed";
  }

  fs::path blob(const std::string& bytes) { return state / "store/_blobs/sha256" / sha(bytes); }
  fs::path tree(const std::string& rel) { return state / "store/_models" / rel; }

  static std::vector<std::string> keys(const std::vector<InstalledModel>& list) {
    std::vector<std::string> out;
    for (const auto& m : list) out.push_back(m.name + " " + m.version + " " + m.variant);
    return out;
  }

  // Model "alpha" 1.0: fp32 {model.onnx A, labels.txt}, int8 {int8/model.onnx B,
  // labels.txt}; model "beta" 2.0: v {m.onnx C, labels.txt}.
  const catalog::ModelMetadata alpha =
      model_meta("alpha", "1.0",
                 {{"fp32", "model.onnx", {{"model.onnx", kA}, {"labels.txt", kLabels}}},
                  {"int8", "int8/model.onnx", {{"int8/model.onnx", kB}, {"labels.txt", kLabels}}}});
  const catalog::ModelMetadata beta =
      model_meta("beta", "2.0", {{"v", "m.onnx", {{"m.onnx", kC}, {"labels.txt", kLabels}}}});

  TempDir tmp;
  fs::path state = tmp / "state";
  std::vector<int> fds_;
};

TEST_F(ModelStoreTest, SharedFilesAreOneInode) {
  Store s = open();
  const InstalledModel fp32 = install(s, alpha, "fp32", {kA, kLabels});
  EXPECT_EQ(fp32.root, tree("alpha/1.0/fp32"));
  EXPECT_EQ(fp32.main, tree("alpha/1.0/fp32/model.onnx"));
  EXPECT_EQ(fp32.remote, "test-remote");
  EXPECT_EQ(fp32.target, "alpha/alpha-1.0.model.json");
  EXPECT_EQ(tests::support::read_file(fp32.main), kA);
  install(s, alpha, "int8", {kB});  // labels.txt from the store
  ModelUsage u = s.usage();
  EXPECT_EQ(u.logical_bytes, kA.size() + kB.size() + 2 * kLabels.size());
  EXPECT_EQ(u.logical_bytes - u.physical_bytes, kLabels.size());
  install(s, beta, "v", {kC, kLabels});  // labels.txt given again: the stored one is used

  const struct stat b = stat_of(blob(kLabels));
  for (const char* rel :
       {"alpha/1.0/fp32/labels.txt", "alpha/1.0/int8/labels.txt", "beta/2.0/v/labels.txt"}) {
    const struct stat t = stat_of(tree(rel));
    EXPECT_EQ(t.st_ino, b.st_ino) << rel;
    EXPECT_EQ(t.st_mode & 07777, 0444u) << rel;
  }
  EXPECT_EQ(b.st_nlink, 4u);  // the blob and three trees
  EXPECT_EQ(stat_of(blob(kA)).st_nlink, 2u);
  EXPECT_EQ(stat_of(tree("alpha/1.0/int8/int8")).st_mode & 07777, 0755u);
  EXPECT_EQ(stat_of(tree("alpha/1.0/int8/.epbroker-model.json")).st_mode & 07777, 0444u);
  u = s.usage();
  EXPECT_EQ(u.physical_bytes, kA.size() + kB.size() + kC.size() + kLabels.size());
  EXPECT_EQ(u.logical_bytes - u.physical_bytes, 2 * kLabels.size());

  EXPECT_THAT(keys(s.models()), ElementsAre("alpha 1.0 fp32", "alpha 1.0 int8", "beta 2.0 v"));
  EXPECT_TRUE(s.list().empty());  // not packages
  ASSERT_TRUE(s.find_model("alpha", "1.0", "int8").has_value());
  EXPECT_FALSE(s.find_model("alpha", "1.0", "fp16").has_value());
  const auto index = nlohmann::json::parse(tests::support::read_file(s.index_path()));
  ASSERT_EQ(index["models"].size(), 3u);
  EXPECT_EQ(index["models"][2]["name"], "beta");
  EXPECT_TRUE(index["packages"].empty());
  auto marker = parse_model_marker(tests::support::read_file(fp32.root / kModelMarkerName));
  ASSERT_TRUE(marker.has_value()) << marker.error().message;
  EXPECT_EQ(marker->model, signed_model(alpha, "fp32"));
  expect_staging_empty();

  auto v = s.verify();
  ASSERT_TRUE(v.has_value());
  EXPECT_TRUE(v->ok());
  EXPECT_EQ(v->models_checked, 3u);
  EXPECT_EQ(v->bytes_hashed, u.physical_bytes);  // each blob once

  // The same again: nothing to do; a reopened store agrees.
  const auto before = store_snapshot();
  auto again = s.install_model(signed_model(alpha, "fp32"), {});
  ASSERT_TRUE(again.has_value()) << again.error().message;
  EXPECT_EQ(*again, fp32);
  EXPECT_EQ(store_snapshot(), before);
  const auto listed = s.models();
  { Store closing = std::move(s); }
  Store reopened = open();
  EXPECT_EQ(reopened.models(), listed);
  EXPECT_TRUE(reopened.open_report().removed.empty());
  EXPECT_FALSE(reopened.open_report().index_rewritten);
  EXPECT_EQ(store_snapshot(), before);
}

TEST_F(ModelStoreTest, MissingOrWrongBlobChangesNothing) {
  Store s = open();
  install(s, alpha, "fp32", {kA, kLabels});
  const auto before = store_snapshot();
  expect_refused(s.install_model(signed_model(alpha, "int8"), {}), Errc::not_found, sha(kB),
                 before);
  const std::string wrong = kB + "!";
  expect_refused(s.install_model(signed_model(alpha, "int8"), {{sha(kB), blob_fd(wrong)}}),
                 Errc::length_mismatch, "has 2008 bytes, not 2007", before);
  expect_refused(s.install_model(signed_model(alpha, "fp16"), {}), Errc::invalid_argument,
                 "no such variant", before);
  catalog::ModelMetadata bad = alpha;
  bad.variants[0].files[0].sha256 = "nothex";
  expect_refused(s.install_model(signed_model(bad, "fp32"), {}), Errc::invalid_argument,
                 "invalid metadata", before);
  const auto marker_named = model_meta(
      "gamma", "1.0", {{"v", "m.onnx", {{"m.onnx", kC}, {".epbroker-model.json", "x"}}}});
  expect_refused(s.install_model(signed_model(marker_named, "v"), given({kC, "x"})),
                 Errc::invalid_argument, ".epbroker-model.json", before);
  EXPECT_THAT(keys(s.models()), ElementsAre("alpha 1.0 fp32"));
}

// Each step of install_model() failing, for a fresh variant (with a new blob) and
// for a replacement of an installed one with other contents.
class ModelFaultTest : public ModelStoreTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(ModelFaultTest, FailureLeavesTheStoreAsItWas) {
  const std::string step = GetParam();
  std::set<std::string, std::less<>> armed;
  StoreOptions options;
  options.inject_fault = [&](std::string_view at) { return armed.contains(at); };
  Store s = open(std::move(options));
  install(s, alpha, "fp32", {kA, kLabels});
  const auto republished =
      model_meta("alpha", "1.0", {{"fp32", "model.onnx", {{"model.onnx", kC}}}});
  const auto before = store_snapshot();
  const auto listed = s.models();
  armed = {step};
  if (step == "model.no_exchange") armed.insert("model.rename");
  const std::string mention =
      "injected fault at " + (step == "model.no_exchange" ? std::string("model.rename") : step);
  if (step != "model.no_exchange") {
    expect_refused(s.install_model(signed_model(alpha, "int8"), given({kB})), Errc::io, mention,
                   before);
  }
  expect_refused(s.install_model(signed_model(republished, "fp32"), given({kC})), Errc::io, mention,
                 before);
  EXPECT_EQ(s.models(), listed);
  EXPECT_TRUE(s.verify()->ok());
  { Store closing = std::move(s); }
  {
    Store reopened = open();  // nothing for recovery to do
    EXPECT_TRUE(reopened.open_report().removed.empty());
    EXPECT_FALSE(reopened.open_report().index_rewritten);
    EXPECT_EQ(reopened.models(), listed);
    // With the fault gone both succeed; the replaced tree's blob A goes.
    install(reopened, alpha, "int8", {kB});
    install(reopened, republished, "fp32", {kC});
    EXPECT_FALSE(fs::exists(blob(kA)));
    EXPECT_TRUE(fs::exists(blob(kLabels)));  // int8 lists it
    EXPECT_TRUE(reopened.verify()->ok());
  }
  Store again = open();
  EXPECT_TRUE(again.open_report().removed.empty());
}

INSTANTIATE_TEST_SUITE_P(Steps, ModelFaultTest,
                         ::testing::Values("model.staging", "model.marker", "model.seal",
                                           "model.blob_link", "model.rename", "model.index",
                                           "model.no_exchange"),
                         [](const auto& param_info) {
                           std::string n = param_info.param;
                           return n.substr(n.find('.') + 1);
                         });

TEST_F(ModelStoreTest, OpenRemovesOrphanBlobsAndTreesWithoutMarker) {
  std::map<std::string, std::string> before;
  {
    Store s = open();
    install(s, alpha, "fp32", {kA, kLabels});
    before = store_snapshot();
    install(s, alpha, "int8", {kB});
    install(s, beta, "v", {kC});
  }
  // A torn int8 tree (no marker: its blob B is referenced by nothing then), a
  // beta tree whose marker names another variant, an orphan blob, junk.
  fs::permissions(tree("alpha/1.0/int8"), fs::perms(0755));
  fs::remove(tree("alpha/1.0/int8/.epbroker-model.json"));
  fs::rename(tree("beta/2.0/v"), tree("beta/2.0/w"));
  tests::support::write_file(state / "store/_blobs/sha256" / sha("orphan"), "orphan");
  tests::support::write_file(state / "store/_blobs/sha256/not-a-hash", "x");
  tests::support::write_file(state / "store/_blobs/md5/x", "x");
  fs::create_directories(tree("Bad Name/1.0"));

  Store s = open();
  EXPECT_EQ(store_snapshot(), before);
  EXPECT_THAT(keys(s.models()), ElementsAre("alpha 1.0 fp32"));
  std::map<std::string, std::string> removed;
  for (const auto& r : s.open_report().removed) {
    removed[r.path.lexically_relative(state / "store").string()] = r.reason;
  }
  auto reason = [&](const std::string& rel) {
    return removed.contains(rel) ? removed[rel] : std::string("<not removed>");
  };
  const std::string b = "_blobs/sha256/";
  EXPECT_EQ(removed.size(), 10u);
  EXPECT_EQ(reason("_blobs/md5"), "not a blob directory");
  EXPECT_EQ(reason(b + "not-a-hash"), "not a blob");
  for (const auto& content : {std::string("orphan"), kB, kC}) {
    EXPECT_EQ(reason(b + sha(content)), "blob no model references");
  }
  EXPECT_EQ(reason("_models/Bad Name"), "not a model directory");
  EXPECT_THAT(reason("_models/alpha/1.0/int8"), HasSubstr("no model marker"));
  EXPECT_THAT(reason("_models/beta/2.0/w"), HasSubstr("marker names beta 2.0 v, not beta 2.0 w"));
  EXPECT_EQ(reason("_models/beta/2.0"), "empty model version directory");
  EXPECT_EQ(reason("_models/beta"), "empty model directory");
  expect_staging_empty();
  EXPECT_TRUE(s.verify()->ok());
}

TEST_F(ModelStoreTest, LeasedVariantIsRemovedOnlyOnceReleased) {
  Store s = open();
  install(s, alpha, "fp32", {kA, kLabels});
  install(s, alpha, "int8", {kB});
  EXPECT_EQ(s.acquire_model_lease("alpha", "1.0", "fp16", ":1.1").error().code, Errc::not_found);
  auto a = s.acquire_model_lease("alpha", "1.0", "fp32", ":1.1");
  auto b = s.acquire_model_lease("alpha", "1.0", "fp32", ":1.2");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(s.model_lease_count("alpha", "1.0", "fp32"), 2u);
  const auto before = store_snapshot();
  expect_refused(s.remove_model("alpha", "1.0", "fp32"), Errc::busy, "2 lease(s)", before);
  expect_refused(s.remove_model("alpha"), Errc::busy, "2 lease(s)", before);  // all or nothing
  // Another model's lease does not hold this one, and replacing it is refused.
  const auto other = model_meta("alpha", "1.0", {{"fp32", "model.onnx", {{"model.onnx", kC}}}});
  expect_refused(s.install_model(signed_model(other, "fp32"), given({kC})), Errc::busy,
                 "2 lease(s)", before);
  EXPECT_EQ(s.release_owner(":1.1"), 1u);
  expect_refused(s.remove_model("alpha", "1.0", "fp32"), Errc::busy, "1 lease(s)", before);
  s.release_lease(*b);
  EXPECT_EQ(s.model_lease_count("alpha", "1.0", "fp32"), 0u);
  auto removed = s.remove_model("alpha", "1.0", "fp32");
  ASSERT_TRUE(removed.has_value()) << removed.error().message;
  EXPECT_THAT(keys(*removed), ElementsAre("alpha 1.0 fp32"));
  EXPECT_FALSE(fs::exists(blob(kA)));
  EXPECT_TRUE(fs::exists(blob(kLabels)));
  // An admin's remove --now goes through a lease.
  ASSERT_TRUE(s.acquire_model_lease("alpha", "1.0", "int8", ":1.3").has_value());
  EXPECT_TRUE(s.remove_model("alpha", "1.0", "int8", /*even_if_leased=*/true).has_value());
  EXPECT_FALSE(fs::exists(state / "store/_models/alpha"));
  expect_staging_empty();
}

TEST_F(ModelStoreTest, RemovalKeepsBlobsOtherModelsReference) {
  Store s = open();
  install(s, alpha, "fp32", {kA, kLabels});
  install(s, alpha, "int8", {kB});
  install(s, beta, "v", {kC});
  const auto before = store_snapshot();
  expect_refused(s.remove_model("alpha", "2.0"), Errc::not_found, "alpha 2.0", before);
  expect_refused(s.remove_model("gamma"), Errc::not_found, "gamma", before);
  auto removed = s.remove_model("alpha");
  ASSERT_TRUE(removed.has_value()) << removed.error().message;
  EXPECT_THAT(keys(*removed), ElementsAre("alpha 1.0 fp32", "alpha 1.0 int8"));
  EXPECT_FALSE(fs::exists(state / "store/_models/alpha"));
  EXPECT_FALSE(fs::exists(blob(kA)));
  EXPECT_FALSE(fs::exists(blob(kB)));
  EXPECT_TRUE(fs::exists(blob(kLabels)));
  EXPECT_TRUE(fs::exists(blob(kC)));
  EXPECT_EQ(stat_of(blob(kLabels)).st_nlink, 2u);
  EXPECT_TRUE(s.verify()->ok());
  EXPECT_THAT(keys(s.models()), ElementsAre("beta 2.0 v"));
  expect_staging_empty();
  ASSERT_TRUE(s.remove_model("beta", "2.0", "v").has_value());
  EXPECT_TRUE(fs::is_empty(state / "store/_blobs/sha256"));
  EXPECT_EQ(s.usage().physical_bytes, 0u);
  const auto index = nlohmann::json::parse(tests::support::read_file(s.index_path()));
  EXPECT_FALSE(index.contains("models"));
}

TEST_F(ModelStoreTest, RemoveFaultsLeaveTheStoreAsItWas) {
  for (const char* step : {"model.remove.rename", "model.remove.index"}) {
    SCOPED_TRACE(step);
    fs::remove_all(state);
    std::string armed;
    StoreOptions options;
    options.inject_fault = [&](std::string_view at) { return at == armed; };
    Store s = open(std::move(options));
    install(s, alpha, "fp32", {kA, kLabels});
    install(s, alpha, "int8", {kB});
    armed = step;
    const auto before = store_snapshot();
    expect_refused(s.remove_model("alpha"), Errc::io, step, before);
    EXPECT_EQ(s.models().size(), 2u);
    armed.clear();
    EXPECT_TRUE(s.remove_model("alpha").has_value());
  }
}

TEST_F(ModelStoreTest, VerifyReportsDamagedBlobsAndSplitLinks) {
  Store s = open();
  install(s, alpha, "fp32", {kA, kLabels});
  install(s, alpha, "int8", {kB});
  // A blob changed in place (every variant listing it is damaged).
  const fs::path labels = blob(kLabels);
  fs::permissions(labels, fs::perms(0644));
  tests::support::write_file(labels, "cat\ndog\nfisH\n");
  fs::permissions(labels, fs::perms(0444));
  // A tree file replaced by a copy: right bytes, but no longer the blob.
  const fs::path split = tree("alpha/1.0/int8/int8/model.onnx");
  fs::remove(split);
  tests::support::write_file(split, kB);
  fs::permissions(split, fs::perms(0444));

  auto v = s.verify();
  ASSERT_TRUE(v.has_value());
  EXPECT_FALSE(v->ok());
  EXPECT_EQ(v->models_checked, 2u);
  ASSERT_EQ(v->damaged_models.size(), 2u);
  EXPECT_EQ(v->damaged_models[0].model.variant, "fp32");
  const std::string bad_labels = "labels.txt: blob " + sha(kLabels) + ": sha256 ";
  EXPECT_THAT(v->damaged_models[0].problems, ElementsAre(HasSubstr(bad_labels)));
  EXPECT_THAT(v->damaged_models[1].problems,
              ElementsAre("int8/model.onnx: not shared with its blob", HasSubstr(bad_labels)));
  EXPECT_EQ(v->bytes_hashed, kA.size() + kB.size() + kLabels.size());

  // Installing again repairs the split variant (even while leased); the blob
  // itself is the store's to repair (left for the repair step).
  ASSERT_TRUE(s.acquire_model_lease("alpha", "1.0", "int8", ":1.1").has_value());
  auto repaired = s.install_model(signed_model(alpha, "int8"), {});
  ASSERT_TRUE(repaired.has_value()) << repaired.error().message;
  EXPECT_EQ(stat_of(split).st_ino, stat_of(blob(kB)).st_ino);
  expect_staging_empty();
}

// Changes the first byte of `file` in place (the same inode, other bytes), as
// damage on disk would; its mode is 0444 again after.
void flip_first_byte(const fs::path& file) {
  fs::permissions(file, fs::perms(0644));
  std::string bytes = tests::support::read_file(file);
  bytes[0] = static_cast<char>(bytes[0] ^ 1);
  const int fd = ::open(file.c_str(), O_WRONLY | O_CLOEXEC);  // no O_TRUNC: in place
  ASSERT_GE(fd, 0);
  EXPECT_EQ(::pwrite(fd, bytes.data(), 1, 0), 1);
  ::close(fd);
  fs::permissions(file, fs::perms(0444));
}

std::string read_fd(int fd) {
  std::string out(4096, '\0');
  const ssize_t n = ::pread(fd, out.data(), out.size(), 0);
  out.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  return out;
}

TEST_F(ModelStoreTest, ReplacedBlobsAreNewInodesEverywhereTheOldOneUntouched) {
  Store s = open();
  install(s, alpha, "fp32", {kA, kLabels});
  install(s, alpha, "int8", {kB});
  install(s, beta, "v", {kC});
  const auto old_inode = stat_of(blob(kLabels)).st_ino;
  flip_first_byte(blob(kLabels));
  // Someone reads the damaged file meanwhile (a process that mapped it).
  const int held = ::open(tree("alpha/1.0/fp32/labels.txt").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(held, 0);
  const std::string damaged = read_fd(held);
  ASSERT_NE(damaged, kLabels);
  ASSERT_EQ(s.verify()->damaged_models.size(), 3u);
  auto problems = s.model_problems("beta", "2.0", "v");
  ASSERT_TRUE(problems.has_value()) << problems.error().message;
  EXPECT_THAT(*problems, ElementsAre(HasSubstr("labels.txt: blob " + sha(kLabels) + ": sha256")));
  EXPECT_EQ(s.model_problems("beta", "2.0", "w").error().code, Errc::not_found);

  // A copy of another size is refused before anything changes.
  const auto before = store_snapshot();
  expect_refused(s.replace_model_blobs({{sha(kLabels), blob_fd(kLabels + "x")}}),
                 Errc::length_mismatch, "has 14 bytes, not 13", before);

  // Contents no marker lists are left alone; the damaged one is replaced in the
  // three trees and in _blobs.
  auto replaced = s.replace_model_blobs(given({kLabels, "not listed"}));
  ASSERT_TRUE(replaced.has_value()) << replaced.error().message;
  EXPECT_THAT(*replaced, ElementsAre(sha(kLabels)));
  EXPECT_FALSE(fs::exists(blob("not listed")));
  const struct stat b = stat_of(blob(kLabels));
  EXPECT_NE(b.st_ino, old_inode);
  EXPECT_EQ(b.st_nlink, 4u);
  EXPECT_EQ(b.st_mode & 07777, 0444u);
  for (const char* rel :
       {"alpha/1.0/fp32/labels.txt", "alpha/1.0/int8/labels.txt", "beta/2.0/v/labels.txt"}) {
    EXPECT_EQ(stat_of(tree(rel)).st_ino, b.st_ino) << rel;
    EXPECT_EQ(tests::support::read_file(tree(rel)), kLabels) << rel;
  }
  // The old inode was never written: what was open reads what it read.
  struct stat h {};
  ASSERT_EQ(::fstat(held, &h), 0);
  EXPECT_EQ(h.st_ino, old_inode);
  EXPECT_EQ(h.st_nlink, 0u);
  EXPECT_EQ(read_fd(held), damaged);
  ::close(held);
  EXPECT_TRUE(s.verify()->ok());
  EXPECT_TRUE(s.model_problems("alpha", "1.0", "int8")->empty());
  expect_staging_empty();
}

// A failure (a crash) half-way: each path is the old inode or the new one; the
// store reopens and the next replacement finishes.
class ModelReplaceFaultTest : public ModelStoreTest,
                              public ::testing::WithParamInterface<const char*> {};

TEST_P(ModelReplaceFaultTest, HalfWayLeavesOldOrNewAndTheNextRepairFinishes) {
  const std::string step = GetParam();
  int calls = 0;
  StoreOptions options;
  options.inject_fault = [&](std::string_view at) {
    // model.replace_link: the second tree path fails (the first was renamed).
    return at == step && (step != "model.replace_link" || ++calls == 2);
  };
  {
    Store s = open(std::move(options));
    install(s, alpha, "fp32", {kA, kLabels});
    install(s, alpha, "int8", {kB});
    flip_first_byte(blob(kLabels));
    const auto damaged = stat_of(blob(kLabels)).st_ino;
    auto r = s.replace_model_blobs(given({kLabels}));
    ASSERT_FALSE(r.has_value());
    EXPECT_THAT(r.error().message, HasSubstr("injected fault at " + step));
    expect_staging_empty();
    EXPECT_EQ(stat_of(blob(kLabels)).st_ino, damaged) << "the blob goes last";
    const auto fp32 = stat_of(tree("alpha/1.0/fp32/labels.txt")).st_ino;
    const auto int8 = stat_of(tree("alpha/1.0/int8/labels.txt")).st_ino;
    if (step == "model.replace_link") {
      EXPECT_NE(fp32, int8) << "one path new, the other old";
      EXPECT_TRUE(fp32 == damaged || int8 == damaged);
    } else if (step == "model.replace_blob") {
      EXPECT_EQ(fp32, int8);
      EXPECT_NE(fp32, damaged);
    }
    EXPECT_EQ(s.verify()->damaged_models.size(), 2u);
  }
  Store reopened = open();
  EXPECT_EQ(reopened.models().size(), 2u);
  expect_staging_empty();
  ASSERT_TRUE(reopened.replace_model_blobs(given({kLabels})).has_value());
  EXPECT_TRUE(reopened.verify()->ok());
  EXPECT_EQ(stat_of(blob(kLabels)).st_nlink, 3u);
}

INSTANTIATE_TEST_SUITE_P(Steps, ModelReplaceFaultTest,
                         ::testing::Values("model.replace_staging", "model.replace_link",
                                           "model.replace_blob"),
                         [](const auto& param_info) {
                           std::string n = param_info.param;
                           return n.substr(n.find('.') + 1);
                         });

}  // namespace
}  // namespace epbrokerd::store
