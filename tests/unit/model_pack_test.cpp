#include "catalog/package/model_pack.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "catalog/crypto/hash.hpp"

namespace catalog::package {
namespace {

namespace fs = std::filesystem;
using ::nlohmann::json;
using ::testing::HasSubstr;

class ModelPackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "epbroker-model-pack-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    write("fp32/model.onnx", "FP32 weights");
    write("fp32/labels.txt", "cat\ndog\n");
    write("int8/model.onnx", "int8");
    write("int8/labels.txt", "cat\ndog\n");
    write("int8/extra/notes.txt", "not listed");
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write(const std::string& rel, const std::string& bytes) {
    fs::create_directories((dir_ / rel).parent_path());
    std::ofstream(dir_ / rel, std::ios::binary) << bytes;
  }

  static json card() {
    return json::parse(R"({"epbroker": {
      "schema": 2, "kind": "model", "name": "tiny", "version": "1.0", "publisher": "tests",
      "license": "MIT", "license_url": "https://example.org/MIT", "task": "image-classification",
      "inputs": [{"name": "x", "type": "float", "shape": ["N", 3]}],
      "outputs": [{"name": "y", "type": "float", "shape": ["N", 2]}],
      "variants": [
        {"id": "fp32", "ort_min": "1.20", "opset": 17, "main": "model.onnx"},
        {"id": "int8", "ort_min": "1.22", "opset": 17, "main": "model.onnx",
         "files": ["model.onnx", "labels.txt"]}]}})");
  }

  fs::path dir_;
};

TEST_F(ModelPackTest, FillsSizesAndHashesSortedByPath) {
  auto m = describe_model_directory(dir_, card());
  ASSERT_TRUE(m) << m.error().message;
  ASSERT_EQ(m->variants.size(), 2u);
  const auto& fp32 = m->variants[0].files;
  ASSERT_EQ(fp32.size(), 2u);
  EXPECT_EQ(fp32[0].path, "labels.txt");
  EXPECT_EQ(fp32[0].size, 8u);
  EXPECT_EQ(fp32[0].sha256, crypto::sha256_hex("cat\ndog\n"));
  EXPECT_EQ(fp32[1].path, "model.onnx");
  EXPECT_EQ(fp32[1].sha256, crypto::sha256_hex("FP32 weights"));
}

TEST_F(ModelPackTest, ListedFilesRestrictTheVariant) {
  auto m = describe_model_directory(dir_, card());
  ASSERT_TRUE(m) << m.error().message;
  const auto& int8 = m->variants[1].files;
  ASSERT_EQ(int8.size(), 2u);  // extra/notes.txt is not listed
  EXPECT_EQ(int8[0].path, "labels.txt");
  EXPECT_EQ(int8[1].path, "model.onnx");
}

TEST_F(ModelPackTest, UnlistedVariantTakesEveryFile) {
  json c = card();
  c["epbroker"]["variants"][1].erase("files");
  auto m = describe_model_directory(dir_, c);
  ASSERT_TRUE(m) << m.error().message;
  ASSERT_EQ(m->variants[1].files.size(), 3u);
  EXPECT_EQ(m->variants[1].files[0].path, "extra/notes.txt");
}

TEST_F(ModelPackTest, RefusesAMissingVariantDirectory) {
  json c = card();
  c["epbroker"]["variants"][1]["id"] = "gpu";
  auto m = describe_model_directory(dir_, c);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().code, Errc::invalid_argument);
  EXPECT_THAT(m.error().message, HasSubstr("\"gpu\""));
}

TEST_F(ModelPackTest, RefusesAVariantDirectoryThatIsASymlink) {
  fs::create_directory_symlink(dir_ / "fp32", dir_ / "alias");
  json c = card();
  c["epbroker"]["variants"][1]["id"] = "alias";
  c["epbroker"]["variants"][1].erase("files");
  auto m = describe_model_directory(dir_, c);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().code, Errc::invalid_argument);
}

TEST_F(ModelPackTest, RefusesAMainNotAmongTheFiles) {
  json c = card();
  c["epbroker"]["variants"][0]["main"] = "other.onnx";
  auto m = describe_model_directory(dir_, c);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().code, Errc::invalid_argument);
  EXPECT_THAT(m.error().message, HasSubstr("main \"other.onnx\""));
}

TEST_F(ModelPackTest, RefusesAListedFileNotPresent) {
  json c = card();
  c["epbroker"]["variants"][1]["files"] = {"model.onnx", "missing.txt"};
  auto m = describe_model_directory(dir_, c);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().code, Errc::invalid_argument);
  EXPECT_THAT(m.error().message, HasSubstr("missing.txt"));
}

TEST_F(ModelPackTest, RefusesBadFileLists) {
  json c = card();
  c["epbroker"]["variants"][1]["files"] = {"model.onnx", "model.onnx"};
  EXPECT_EQ(describe_model_directory(dir_, c).error().code, Errc::bad_field);
  c["epbroker"]["variants"][1]["files"] = {{{"path", "model.onnx"}}};
  EXPECT_EQ(describe_model_directory(dir_, c).error().code, Errc::bad_field);
  c["epbroker"]["variants"][1]["files"] = "model.onnx";
  EXPECT_EQ(describe_model_directory(dir_, c).error().code, Errc::bad_field);
}

TEST_F(ModelPackTest, RefusesBadCards) {
  EXPECT_EQ(describe_model_directory(dir_, json::array()).error().code, Errc::bad_field);
  EXPECT_EQ(describe_model_directory(dir_, json{{"epbroker", 1}}).error().code, Errc::bad_field);
  json c = card();
  c["epbroker"]["variants"] = json::array();
  EXPECT_EQ(describe_model_directory(dir_, c).error().code, Errc::bad_field);
  for (const char* id : {"..", "a/b", ""}) {
    c = card();
    c["epbroker"]["variants"][0]["id"] = id;
    auto m = describe_model_directory(dir_, c);
    ASSERT_FALSE(m) << id;
    EXPECT_EQ(m.error().code, Errc::bad_field) << id;
  }
  c = card();
  c["epbroker"]["variants"][0]["opset"] = 0;  // the rest is parse_model_metadata()'s
  auto m = describe_model_directory(dir_, c);
  ASSERT_FALSE(m);
  EXPECT_THAT(m.error().message, HasSubstr("epbroker.variants[0].opset"));
}

TEST_F(ModelPackTest, RefusesSymlinksAndSpecialFiles) {
  fs::create_symlink("model.onnx", dir_ / "fp32/link.onnx");
  auto m = describe_model_directory(dir_, card());
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().code, Errc::invalid_argument);
  EXPECT_THAT(m.error().message, HasSubstr("symlink"));
  fs::remove(dir_ / "fp32/link.onnx");
  ASSERT_EQ(::mkfifo((dir_ / "fp32/fifo").c_str(), 0600), 0);
  m = describe_model_directory(dir_, card());
  ASSERT_FALSE(m);
  EXPECT_THAT(m.error().message, HasSubstr("special file"));
}

TEST_F(ModelPackTest, CheckReturnsEachDistinctContentOnce) {
  auto m = describe_model_directory(dir_, card());
  ASSERT_TRUE(m) << m.error().message;
  auto blobs = check_model_directory(dir_, *m);
  ASSERT_TRUE(blobs) << blobs.error().message;
  ASSERT_EQ(blobs->size(), 3u);
  EXPECT_EQ((*blobs)[0].sha256, crypto::sha256_hex("cat\ndog\n"));
  EXPECT_EQ((*blobs)[0].source, dir_ / "fp32/labels.txt");
  EXPECT_EQ((*blobs)[1].sha256, crypto::sha256_hex("FP32 weights"));
  EXPECT_EQ((*blobs)[2].sha256, crypto::sha256_hex("int8"));
  EXPECT_EQ((*blobs)[2].size, 4u);
}

TEST_F(ModelPackTest, CheckRefusesChangedFiles) {
  auto m = describe_model_directory(dir_, card());
  ASSERT_TRUE(m) << m.error().message;
  write("int8/model.onnx", "INT8");
  auto r = check_model_directory(dir_, *m);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::hash_mismatch);
  EXPECT_THAT(r.error().message, HasSubstr("variant \"int8\", file \"model.onnx\""));
  write("int8/model.onnx", "int8!");
  EXPECT_EQ(check_model_directory(dir_, *m).error().code, Errc::length_mismatch);
  fs::remove(dir_ / "int8/model.onnx");
  EXPECT_EQ(check_model_directory(dir_, *m).error().code, Errc::not_found);
}

TEST_F(ModelPackTest, CheckRefusesSymlinks) {
  auto m = describe_model_directory(dir_, card());
  ASSERT_TRUE(m) << m.error().message;
  fs::remove(dir_ / "int8/labels.txt");
  fs::create_symlink("../fp32/labels.txt", dir_ / "int8/labels.txt");
  auto r = check_model_directory(dir_, *m);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::invalid_argument);
  EXPECT_THAT(r.error().message, HasSubstr("symlink"));
}

TEST_F(ModelPackTest, CheckRefusesASymlinkedDirectoryOnTheWay) {
  json c = card();
  c["epbroker"]["variants"][1]["files"] = {"model.onnx", "extra/notes.txt"};
  auto m = describe_model_directory(dir_, c);
  ASSERT_TRUE(m) << m.error().message;
  fs::rename(dir_ / "int8/extra", dir_ / "elsewhere");
  fs::create_directory_symlink(dir_ / "elsewhere", dir_ / "int8/extra");
  auto r = check_model_directory(dir_, *m);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::invalid_argument);
}

}  // namespace
}  // namespace catalog::package
