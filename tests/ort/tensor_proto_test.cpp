// The onnx.TensorProto decoder on real backend-test .pb files and on crafted buffers,
// well-formed and malformed.
#include "tests/ort/support/tensor_proto.hpp"

#include <bit>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/ort/support/model_writer.hpp"
#include "tests/ort/support/node_test.hpp"
#include "tests/ort/support/protobuf_wire.hpp"
#include "tests/support/temp_dir.hpp"

namespace tests::ort {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using wire::Writer;

Tensor load(const std::string& rel) {
  auto t = load_tensor_proto(onnx_testdata_root() / rel);
  EXPECT_TRUE(t.has_value()) << rel << ": " << (t ? "" : t.error());
  return t.value_or(Tensor{});
}

std::string error_of(const std::string& bytes) {
  auto t = parse_tensor_proto(bytes);
  EXPECT_FALSE(t.has_value()) << "decoded a malformed buffer";
  return t ? "" : t.error();
}

Tensor decode(const std::string& bytes) {
  auto t = parse_tensor_proto(bytes);
  EXPECT_TRUE(t.has_value()) << (t ? "" : t.error());
  return t.value_or(Tensor{});
}

// Packed varints as one length-delimited field.
void packed_varints(Writer& w, std::uint32_t field, const std::vector<std::int64_t>& values) {
  std::string run;
  for (std::int64_t v : values) {
    auto u = static_cast<std::uint64_t>(v);
    while (u >= 0x80) {
      run.push_back(static_cast<char>((u & 0x7f) | 0x80));
      u >>= 7;
    }
    run.push_back(static_cast<char>(u));
  }
  w.bytes_field(field, run);
}

// ---- Real files from the ONNX backend test data.

TEST(TensorProtoFileTest, FloatRawData) {
  const Tensor a = load("node/test_add/test_data_set_0/input_0.pb");
  const Tensor b = load("node/test_add/test_data_set_0/input_1.pb");
  const Tensor sum = load("node/test_add/test_data_set_0/output_0.pb");
  EXPECT_EQ(a.name, "x");
  EXPECT_EQ(b.name, "y");
  EXPECT_EQ(a.type, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);
  EXPECT_THAT(a.dims, ElementsAre(3, 4, 5));
  ASSERT_EQ(a.element_count(), 60U);
  ASSERT_EQ(a.bytes.size(), 240U);
  const auto x = a.values<float>();
  const auto y = b.values<float>();
  const auto z = sum.values<float>();
  ASSERT_EQ(z.size(), 60U);
  for (std::size_t i = 0; i < z.size(); ++i) EXPECT_EQ(z[i], x[i] + y[i]) << i;
}

TEST(TensorProtoFileTest, Bool) {
  const Tensor a = load("node/test_and2d/test_data_set_0/input_0.pb");
  const Tensor b = load("node/test_and2d/test_data_set_0/input_1.pb");
  const Tensor out = load("node/test_and2d/test_data_set_0/output_0.pb");
  EXPECT_EQ(a.type, ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL);
  EXPECT_THAT(a.dims, ElementsAre(3, 4));
  const auto x = a.values<std::uint8_t>();
  const auto y = b.values<std::uint8_t>();
  const auto z = out.values<std::uint8_t>();
  ASSERT_EQ(z.size(), 12U);
  for (std::size_t i = 0; i < z.size(); ++i) {
    EXPECT_LE(x[i], 1);
    EXPECT_EQ(z[i], x[i] & y[i]) << i;
  }
}

TEST(TensorProtoFileTest, Uint8) {
  const Tensor a = load("node/test_add_uint8/test_data_set_0/input_0.pb");
  const Tensor b = load("node/test_add_uint8/test_data_set_0/input_1.pb");
  const Tensor out = load("node/test_add_uint8/test_data_set_0/output_0.pb");
  EXPECT_EQ(a.type, ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8);
  const auto x = a.values<std::uint8_t>();
  const auto y = b.values<std::uint8_t>();
  const auto z = out.values<std::uint8_t>();
  ASSERT_EQ(z.size(), 60U);
  for (std::size_t i = 0; i < z.size(); ++i) {
    EXPECT_EQ(z[i], static_cast<std::uint8_t>(x[i] + y[i])) << i;
  }
}

TEST(TensorProtoFileTest, Int64) {
  // ArgMax of [[2, 1], [3, 10]] over axis 0, keepdims.
  const Tensor in = load("node/test_argmax_default_axis_example/test_data_set_0/input_0.pb");
  const Tensor out = load("node/test_argmax_default_axis_example/test_data_set_0/output_0.pb");
  EXPECT_THAT(in.values<float>(), ElementsAre(2.0f, 1.0f, 3.0f, 10.0f));
  EXPECT_EQ(out.type, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64);
  EXPECT_THAT(out.dims, ElementsAre(1, 2));
  EXPECT_THAT(out.values<std::int64_t>(), ElementsAre(1, 1));
}

TEST(TensorProtoFileTest, Double) {
  const Tensor in = load("node/test_cast_FLOAT_to_DOUBLE/test_data_set_0/input_0.pb");
  const Tensor out = load("node/test_cast_FLOAT_to_DOUBLE/test_data_set_0/output_0.pb");
  EXPECT_EQ(out.type, ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE);
  EXPECT_EQ(in.dims, out.dims);
  const auto f = in.values<float>();
  const auto d = out.values<double>();
  ASSERT_EQ(f.size(), d.size());
  ASSERT_FALSE(d.empty());
  for (std::size_t i = 0; i < d.size(); ++i) EXPECT_EQ(d[i], static_cast<double>(f[i]));
}

TEST(TensorProtoFileTest, Int8) {
  const Tensor in = load("node/test_clip_default_int8_inbounds/test_data_set_0/input_0.pb");
  const Tensor out = load("node/test_clip_default_int8_inbounds/test_data_set_0/output_0.pb");
  EXPECT_EQ(in.type, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8);
  EXPECT_EQ(in.values<std::int8_t>(), out.values<std::int8_t>());
}

TEST(TensorProtoFileTest, Int32) {
  const Tensor out = load("node/test_basic_convinteger/test_data_set_0/output_0.pb");
  EXPECT_EQ(out.type, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32);
  EXPECT_EQ(out.bytes.size(), out.element_count() * 4);
}

TEST(TensorProtoFileTest, UnsignedWide) {
  for (const char* t : {"uint16", "uint32", "uint64"}) {
    const std::string dir = std::string("node/test_bitshift_left_") + t + "/test_data_set_0/";
    const Tensor a = load(dir + "input_0.pb");
    const Tensor s = load(dir + "input_1.pb");
    const Tensor out = load(dir + "output_0.pb");
    EXPECT_EQ(type_name(a.type), t);
    EXPECT_EQ(a.bytes.size(), a.element_count() * element_size(a.type));
    if (a.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64) {
      const auto x = a.values<std::uint64_t>();
      const auto y = s.values<std::uint64_t>();
      const auto z = out.values<std::uint64_t>();
      ASSERT_EQ(z.size(), x.size());
      for (std::size_t i = 0; i < z.size(); ++i) EXPECT_EQ(z[i], x[i] << y[i]);
    }
  }
}

TEST(TensorProtoFileTest, Float16) {
  const Tensor out = load("node/test_cast_DOUBLE_to_FLOAT16/test_data_set_0/output_0.pb");
  EXPECT_EQ(out.type, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16);
  EXPECT_EQ(out.bytes.size(), out.element_count() * 2);
}

TEST(TensorProtoFileTest, StringTensorsAreRefused) {
  auto t = load_tensor_proto(onnx_testdata_root() /
                             "node/test_cast_FLOAT_to_STRING/test_data_set_0/output_0.pb");
  ASSERT_FALSE(t.has_value());
  EXPECT_THAT(t.error(), HasSubstr("unsupported data_type string"));
}

TEST(TensorProtoFileTest, MissingFileIsAnError) {
  auto t = load_tensor_proto(onnx_testdata_root() / "node/no_such_test/input_0.pb");
  ASSERT_FALSE(t.has_value());
  EXPECT_THAT(t.error(), HasSubstr("no_such_test"));
}

// ---- Crafted, well-formed.

TEST(TensorProtoTest, RoundTripsTheWriter) {
  const Tensor t = Tensor::from_values<std::int64_t>("v", ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64,
                                                     {2, 2}, {-1, 0, 1, 1LL << 40});
  const Tensor back = decode(onnx::serialize_tensor(t));
  EXPECT_EQ(back.name, "v");
  EXPECT_EQ(back.type, t.type);
  EXPECT_EQ(back.dims, t.dims);
  EXPECT_EQ(back.bytes, t.bytes);
}

TEST(TensorProtoTest, ScalarAndEmpty) {
  const Tensor scalar = decode(onnx::serialize_tensor(
      Tensor::from_values<float>("s", ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, {}, {2.5f})));
  EXPECT_TRUE(scalar.dims.empty());
  EXPECT_THAT(scalar.values<float>(), ElementsAre(2.5f));

  const Tensor empty = decode(onnx::serialize_tensor(
      Tensor::from_values<float>("e", ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, {3, 0}, {})));
  EXPECT_THAT(empty.dims, ElementsAre(3, 0));
  EXPECT_EQ(empty.element_count(), 0U);
  EXPECT_TRUE(empty.bytes.empty());
}

TEST(TensorProtoTest, PackedDimsAndFloatData) {
  Writer w;
  packed_varints(w, 1, {2, 3});
  w.int_field(2, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);
  std::string floats;
  for (float f : {1.f, -2.f, 3.5f, 0.f, 1e30f, -0.5f}) {
    const auto bits = std::bit_cast<std::uint32_t>(f);
    for (int i = 0; i < 4; ++i) floats.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
  }
  w.bytes_field(4, floats);
  w.bytes_field(8, "packed");
  const Tensor t = decode(w.bytes());
  EXPECT_EQ(t.name, "packed");
  EXPECT_THAT(t.dims, ElementsAre(2, 3));
  EXPECT_THAT(t.values<float>(), ElementsAre(1.f, -2.f, 3.5f, 0.f, 1e30f, -0.5f));
}

TEST(TensorProtoTest, UnpackedFloatAndDoubleData) {
  Writer w;
  w.int_field(1, 2);
  w.int_field(2, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);
  w.fixed32_field(4, std::bit_cast<std::uint32_t>(1.25f));
  w.fixed32_field(4, std::bit_cast<std::uint32_t>(-8.f));
  EXPECT_THAT(decode(w.bytes()).values<float>(), ElementsAre(1.25f, -8.f));

  Writer d;
  d.int_field(1, 2);
  d.int_field(2, ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE);
  d.fixed64_field(10, std::bit_cast<std::uint64_t>(0.1));
  d.fixed64_field(10, std::bit_cast<std::uint64_t>(-1e300));
  EXPECT_THAT(decode(d.bytes()).values<double>(), ElementsAre(0.1, -1e300));
}

TEST(TensorProtoTest, Int32DataCarriesSmallTypes) {
  const auto with_int32 = [](ONNXTensorElementDataType type, std::vector<std::int64_t> v,
                             bool packed) {
    Writer w;
    w.int_field(1, static_cast<std::int64_t>(v.size()));
    w.int_field(2, type);
    if (packed) {
      packed_varints(w, 5, v);
    } else {
      for (std::int64_t x : v) w.int_field(5, x);
    }
    return w.take();
  };
  EXPECT_THAT(decode(with_int32(ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32,
                                {-2147483648LL, -1, 0, 2147483647}, true))
                  .values<std::int32_t>(),
              ElementsAre(std::numeric_limits<std::int32_t>::min(), -1, 0,
                          std::numeric_limits<std::int32_t>::max()));
  EXPECT_THAT(decode(with_int32(ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8, {-128, 5, 127}, false))
                  .values<std::int8_t>(),
              ElementsAre(-128, 5, 127));
  EXPECT_THAT(decode(with_int32(ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8, {0, 200, 255}, true))
                  .values<std::uint8_t>(),
              ElementsAre(0, 200, 255));
  EXPECT_THAT(decode(with_int32(ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL, {1, 0, 1}, false))
                  .values<std::uint8_t>(),
              ElementsAre(1, 0, 1));
  EXPECT_THAT(decode(with_int32(ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16, {-300, 300}, true))
                  .values<std::int16_t>(),
              ElementsAre(-300, 300));
  // Out of range for the element type.
  EXPECT_THAT(error_of(with_int32(ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8, {256}, true)),
              HasSubstr("out of range for uint8"));
  EXPECT_THAT(error_of(with_int32(ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL, {2}, false)),
              HasSubstr("out of range for bool"));
  EXPECT_THAT(error_of(with_int32(ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8, {-129}, false)),
              HasSubstr("out of range for int8"));
}

TEST(TensorProtoTest, Int64AndUint64Data) {
  Writer w;
  packed_varints(w, 1, {3});
  w.int_field(2, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64);
  packed_varints(w, 7, {std::numeric_limits<std::int64_t>::min(), -1, 7});
  EXPECT_THAT(decode(w.bytes()).values<std::int64_t>(),
              ElementsAre(std::numeric_limits<std::int64_t>::min(), -1, 7));

  Writer u;
  u.int_field(1, 2);
  u.int_field(2, ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64);
  u.varint_field(11, std::numeric_limits<std::uint64_t>::max());
  u.varint_field(11, 3);
  EXPECT_THAT(decode(u.bytes()).values<std::uint64_t>(),
              ElementsAre(std::numeric_limits<std::uint64_t>::max(), 3U));

  Writer u32;
  u32.int_field(1, 1);
  u32.int_field(2, ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32);
  u32.varint_field(11, 1ULL << 32);
  EXPECT_THAT(error_of(u32.bytes()), HasSubstr("out of range for uint32"));
}

TEST(TensorProtoTest, UnknownFieldsAreSkipped) {
  Writer w;
  w.bytes_field(12, "a doc string");        // doc_string
  w.fixed64_field(99, 0x0123456789abcdef);  // unknown fixed64
  w.fixed32_field(98, 7);                   // unknown fixed32
  w.varint_field(97, 1000000);              // unknown varint
  w.int_field(1, 1);
  w.int_field(2, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32);
  w.int_field(5, 42);
  EXPECT_THAT(decode(w.bytes()).values<std::int32_t>(), ElementsAre(42));
}

TEST(TensorProtoTest, ElementSizesAndNames) {
  EXPECT_EQ(element_size(ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT), 4U);
  EXPECT_EQ(element_size(ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE), 8U);
  EXPECT_EQ(element_size(ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL), 1U);
  EXPECT_EQ(element_size(ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING), 0U);
  EXPECT_EQ(type_name(ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64), "int64");
  EXPECT_EQ(dims_string({2, 3}), "[2,3]");
  const Tensor t = Tensor::from_values<float>("f", ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, {1}, {1});
  EXPECT_THROW((void)t.values<double>(), std::logic_error);
}

// ---- Crafted, malformed: every one is an error, none is UB (the ASan/UBSan build
// runs these too).

std::string valid_float_tensor() {
  return onnx::serialize_tensor(Tensor::from_values<float>("x", ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT,
                                                           {2, 2}, {1.f, 2.f, 3.f, 4.f}));
}

TEST(TensorProtoMalformedTest, EmptyBufferHasNoType) {
  EXPECT_THAT(error_of(""), HasSubstr("data_type is missing"));
}

TEST(TensorProtoMalformedTest, TruncatedVarint) {
  EXPECT_THAT(error_of(std::string("\x08\x80", 2)), HasSubstr("truncated varint"));
}

TEST(TensorProtoMalformedTest, OverlongVarint) {
  EXPECT_THAT(error_of(std::string("\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 11)),
              HasSubstr("varint overflows"));
  EXPECT_THAT(error_of(std::string("\x08\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x00", 12)),
              HasSubstr("varint"));
}

TEST(TensorProtoMalformedTest, LengthPastTheEnd) {
  // raw_data claiming 100 bytes with 2 present.
  EXPECT_THAT(error_of(std::string("\x10\x01\x4a\x64\x00\x00", 6)),
              HasSubstr("exceeds the 2 bytes left"));
  // A huge length (2^63) must not wrap.
  EXPECT_THAT(error_of(std::string("\x4a\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01", 11)),
              HasSubstr("exceeds"));
}

TEST(TensorProtoMalformedTest, TruncatedFixed) {
  EXPECT_THAT(error_of(std::string("\x25\x00\x00", 3)), HasSubstr("truncated"));      // float_data
  EXPECT_THAT(error_of(std::string("\x51\x00\x00\x00", 4)), HasSubstr("truncated"));  // double
}

TEST(TensorProtoMalformedTest, PackedRunWithPartialElement) {
  Writer w;
  w.int_field(1, 1);
  w.int_field(2, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);
  w.bytes_field(4, std::string("\x00\x00\x80\x3f\x00", 5));  // 1.0f plus one stray byte
  EXPECT_THAT(error_of(w.bytes()), HasSubstr("truncated"));
}

TEST(TensorProtoMalformedTest, BadKeys) {
  EXPECT_THAT(error_of(std::string("\x00\x01", 2)), HasSubstr("bad field number 0"));
  EXPECT_THAT(error_of(std::string("\x0b", 1)), HasSubstr("groups are not supported"));
  EXPECT_THAT(error_of(std::string("\x0e", 1)), HasSubstr("bad wire type 6"));
}

TEST(TensorProtoMalformedTest, WrongWireTypes) {
  EXPECT_THAT(error_of(std::string("\x15\x01\x00\x00\x00", 5)),
              HasSubstr("wrong wire type for data_type"));
  EXPECT_THAT(error_of(std::string("\x48\x01", 2)), HasSubstr("wrong wire type for raw_data"));
  EXPECT_THAT(error_of(std::string("\x20\x01", 2)), HasSubstr("wrong wire type for float_data"));
  EXPECT_THAT(error_of(std::string("\x0d\x01\x00\x00\x00", 5)),
              HasSubstr("wrong wire type for dims"));
}

TEST(TensorProtoMalformedTest, CountsMustMatchDims) {
  Writer raw;
  raw.int_field(1, 2);
  raw.int_field(1, 3);
  raw.int_field(2, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);
  raw.bytes_field(9, std::string(20, '\0'));
  EXPECT_THAT(error_of(raw.bytes()),
              HasSubstr("raw_data has 20 bytes, dims [2,3] of float need 24"));

  Writer typed;
  typed.int_field(1, 3);
  typed.int_field(2, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64);
  typed.int_field(7, 1);
  EXPECT_THAT(error_of(typed.bytes()), HasSubstr("int64_data has 1 elements, dims [3] need 3"));
}

TEST(TensorProtoMalformedTest, BadDims) {
  Writer neg;
  neg.int_field(1, -1);
  neg.int_field(2, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);
  EXPECT_THAT(error_of(neg.bytes()), HasSubstr("dims[0] is negative"));

  Writer huge;
  for (int i = 0; i < 4; ++i) huge.int_field(1, 1LL << 40);
  huge.int_field(2, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);
  EXPECT_THAT(error_of(huge.bytes()), HasSubstr("overflow"));
}

TEST(TensorProtoMalformedTest, UnsupportedTypes) {
  for (std::int64_t type : {0LL, -1LL, 8LL, 14LL, 17LL, 1000LL, 1LL << 40}) {
    Writer w;
    w.int_field(2, type);
    EXPECT_THAT(error_of(w.bytes()), HasSubstr("unsupported data_type")) << type;
  }
}

TEST(TensorProtoMalformedTest, MixedStorage) {
  Writer both;
  both.int_field(1, 1);
  both.int_field(2, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);
  both.fixed32_field(4, 0);
  both.bytes_field(9, std::string(4, '\0'));
  EXPECT_THAT(error_of(both.bytes()), HasSubstr("both raw_data and typed"));

  Writer other;
  other.int_field(1, 1);
  other.int_field(2, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);
  other.int_field(7, 5);  // int64_data in a float tensor
  EXPECT_THAT(error_of(other.bytes()), HasSubstr("other than float_data"));

  Writer strings;
  strings.int_field(2, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);
  strings.bytes_field(6, "s");
  strings.bytes_field(9, std::string(4, '\0'));
  EXPECT_THAT(error_of(strings.bytes()), HasSubstr("string_data"));
}

TEST(TensorProtoMalformedTest, ExternalDataIsRefused) {
  Writer w;
  w.int_field(2, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);
  w.int_field(14, 1);  // data_location = EXTERNAL
  EXPECT_THAT(error_of(w.bytes()), HasSubstr("external data"));
}

// Every prefix and many random corruptions of real and crafted tensors: decoding
// returns a value or an error, never crashes or reads out of bounds.
TEST(TensorProtoMalformedTest, TruncationsAndCorruptionsNeverCrash) {
  std::vector<std::string> seeds = {valid_float_tensor()};
  for (const char* f :
       {"node/test_add/test_data_set_0/input_0.pb", "node/test_and2d/test_data_set_0/input_0.pb",
        "node/test_argmax_default_axis_example/test_data_set_0/output_0.pb"}) {
    seeds.push_back(tests::support::read_file(onnx_testdata_root() / f));
  }
  std::mt19937 rng(1234);
  std::size_t decoded = 0;
  std::size_t refused = 0;
  for (const std::string& seed : seeds) {
    ASSERT_FALSE(seed.empty());
    ASSERT_TRUE(parse_tensor_proto(seed).has_value());
    for (std::size_t n = 0; n < seed.size(); ++n) {
      (parse_tensor_proto(seed.substr(0, n)).has_value() ? decoded : refused)++;
    }
    for (int round = 0; round < 2000; ++round) {
      std::string bytes = seed;
      const int flips = 1 + static_cast<int>(rng() % 4);
      for (int i = 0; i < flips; ++i) {
        bytes[rng() % bytes.size()] = static_cast<char>(rng() & 0xff);
      }
      auto t = parse_tensor_proto(bytes);
      if (t) {
        ++decoded;
        EXPECT_EQ(t->bytes.size(), t->element_count() * element_size(t->type));
      } else {
        ++refused;
      }
    }
  }
  EXPECT_GT(refused, 0U);
  EXPECT_GT(decoded, 0U);
}

}  // namespace
}  // namespace tests::ort
