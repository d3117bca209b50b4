// epbroker-run's .npy reader and writer on files numpy wrote (tests/client-ort/data,
// made with numpy 2: np.save and np.lib.format.write_array(version=(2, 0))), and on
// damaged bytes; plus top-K and labels.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "client/epbroker-run/npy.hpp"
#include "client/epbroker-run/tensors.hpp"
#include "tests/support/temp_dir.hpp"

namespace epbroker_run {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

fs::path data(const std::string& name) { return fs::path(EPBROKER_CLIENT_ORT_DATA) / name; }

template <typename T>
std::vector<T> values(const Array& a) {
  std::vector<T> out(a.data.size() / sizeof(T));
  std::memcpy(out.data(), a.data.data(), a.data.size());
  return out;
}

std::string file_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(NpyTest, ReadsWhatNumpyWrote) {
  auto f = read_npy(data("f32_2x3.npy"));
  ASSERT_TRUE(f.has_value()) << f.error();
  EXPECT_EQ(f->dtype, DType::float32);
  EXPECT_EQ(f->shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(values<float>(*f), (std::vector<float>{0, 0.25F, 0.5F, 0.75F, 1, 1.25F}));

  auto i = read_npy(data("i32_1x4.npy"));
  ASSERT_TRUE(i.has_value()) << i.error();
  EXPECT_EQ(i->dtype, DType::int32);
  EXPECT_EQ(values<std::int32_t>(*i), (std::vector<std::int32_t>{0, 255, 256, -7}));

  auto l = read_npy(data("i64_3.npy"));
  ASSERT_TRUE(l.has_value()) << l.error();
  EXPECT_EQ(l->shape, std::vector<std::int64_t>{3});
  EXPECT_EQ(values<std::int64_t>(*l), (std::vector<std::int64_t>{1, 2, 3}));

  auto u = read_npy(data("u8_scalar.npy"));
  ASSERT_TRUE(u.has_value()) << u.error();
  EXPECT_TRUE(u->shape.empty());
  EXPECT_EQ(u->data, std::vector<unsigned char>{200});

  auto v2 = read_npy(data("f32_v2.npy"));
  ASSERT_TRUE(v2.has_value()) << v2.error();
  EXPECT_EQ(v2->shape, (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(values<float>(*v2), (std::vector<float>{1.5F, -2.0F}));
}

TEST(NpyTest, WritesWhatNumpyWrites) {
  for (const char* name : {"f32_2x3.npy", "i32_1x4.npy", "i64_3.npy", "u8_scalar.npy"}) {
    auto a = read_npy(data(name));
    ASSERT_TRUE(a.has_value()) << a.error();
    EXPECT_EQ(to_npy(*a), file_bytes(data(name))) << name;
  }
  tests::support::TempDir tmp;
  const Array a{DType::int32, {2, 2}, {1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0}};
  ASSERT_TRUE(write_npy(tmp / "x.npy", a).has_value());
  auto back = read_npy(tmp / "x.npy");
  ASSERT_TRUE(back.has_value()) << back.error();
  EXPECT_EQ(back->shape, a.shape);
  EXPECT_EQ(back->data, a.data);
}

TEST(NpyTest, RefusesWhatItCannotFeedAndSaysHowToConvert) {
  auto fortran = read_npy(data("fortran.npy"));
  ASSERT_FALSE(fortran.has_value());
  EXPECT_THAT(fortran.error(), HasSubstr("ascontiguousarray"));
  auto big = read_npy(data("big_endian.npy"));
  ASSERT_FALSE(big.has_value());
  EXPECT_THAT(big.error(), HasSubstr("big-endian"));
  auto f64 = read_npy(data("f64.npy"));
  ASSERT_FALSE(f64.has_value());
  EXPECT_THAT(f64.error(), HasSubstr("'<f8' is not supported"));
  EXPECT_THAT(f64.error(), HasSubstr("np.save"));
  auto missing = read_npy(data("no-such.npy"));
  ASSERT_FALSE(missing.has_value());
  EXPECT_THAT(missing.error(), HasSubstr("cannot open"));
}

TEST(NpyTest, RefusesDamagedBytes) {
  const std::string good = file_bytes(data("f32_2x3.npy"));
  EXPECT_THAT(parse_npy("hello", "x").error(), HasSubstr("not a NumPy .npy file"));
  EXPECT_THAT(parse_npy(good.substr(0, good.size() - 1), "x").error(), HasSubstr("truncated"));
  EXPECT_THAT(parse_npy(good + "extra", "x").error(), HasSubstr("needs 24"));
  EXPECT_THAT(parse_npy(good.substr(0, 40), "x").error(), HasSubstr("truncated header"));
  std::string v9 = good;
  v9[6] = 9;
  EXPECT_THAT(parse_npy(v9, "x").error(), HasSubstr("version 9"));
  std::string bad_shape = good;
  bad_shape.replace(bad_shape.find("(2, 3)"), 6, "(2, x)");
  EXPECT_THAT(parse_npy(bad_shape, "x").error(), HasSubstr("bad dimension"));
}

TEST(TopKTest, SoftmaxOnlyWhenNotProbabilities) {
  bool softmax = true;
  auto probs = top_k({0.1, 0.7, 0.2, /* second row */ 1, 0, 0}, 3, 2, {"a", "b", "c"}, softmax);
  EXPECT_FALSE(softmax);
  ASSERT_EQ(probs.size(), 2U);
  EXPECT_EQ(probs[0].label, "b");
  EXPECT_DOUBLE_EQ(probs[0].score, 0.7);
  EXPECT_EQ(probs[1].label, "c");

  auto logits = top_k({2.0, -1.0, 0.0, 5.0}, 4, 3, {"a", "b"}, softmax);
  EXPECT_TRUE(softmax);
  ASSERT_EQ(logits.size(), 3U);
  EXPECT_EQ(logits[0].label, "#3");  // no label for index 3
  EXPECT_EQ(logits[1].label, "a");
  double sum = 0;
  for (const auto& s : top_k({2.0, -1.0, 0.0, 5.0}, 4, 4, {}, softmax)) sum += s.score;
  EXPECT_NEAR(sum, 1.0, 1e-12);
}

TEST(LabelsTest, OnePerLine) {
  tests::support::TempDir tmp;
  std::ofstream(tmp / "l.txt") << "cat\r\ndog\n\n";
  auto l = read_labels(tmp / "l.txt");
  ASSERT_TRUE(l.has_value()) << l.error();
  EXPECT_EQ(*l, (std::vector<std::string>{"cat", "dog"}));
  std::ofstream(tmp / "empty.txt") << "\n";
  EXPECT_THAT(read_labels(tmp / "empty.txt").error(), HasSubstr("no labels"));
}

}  // namespace
}  // namespace epbroker_run
