#include "tests/ort/support/tensor_proto.hpp"

#include <bit>
#include <cstdint>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include "tests/ort/support/protobuf_wire.hpp"

namespace tests::ort {

namespace {

using wire::DecodeError;
using wire::Reader;
using wire::WireType;

// onnx.TensorProto field numbers.
constexpr std::uint32_t kDims = 1;
constexpr std::uint32_t kDataType = 2;
constexpr std::uint32_t kFloatData = 4;
constexpr std::uint32_t kInt32Data = 5;
constexpr std::uint32_t kStringData = 6;
constexpr std::uint32_t kInt64Data = 7;
constexpr std::uint32_t kName = 8;
constexpr std::uint32_t kRawData = 9;
constexpr std::uint32_t kDoubleData = 10;
constexpr std::uint32_t kUint64Data = 11;
constexpr std::uint32_t kDataLocation = 14;

constexpr std::uint64_t kMaxFileBytes = std::uint64_t{1} << 30;

// Collects a repeated scalar field given either packed (one length-delimited run) or
// unpacked (one value per key) -- parsers must accept both.
template <typename T, typename ReadOne>
void read_repeated(Reader& r, WireType got, WireType element, std::vector<T>& out, ReadOne read_one,
                   const char* field) {
  if (got == WireType::kLengthDelimited) {
    Reader packed = r.sub();
    while (!packed.done()) out.push_back(read_one(packed));
    return;
  }
  if (got != element) r.fail(std::string("wrong wire type for ") + field);
  out.push_back(read_one(r));
}

std::int64_t as_int64(std::uint64_t v) { return std::bit_cast<std::int64_t>(v); }
// protobuf int32 semantics: the low 32 bits of the (sign-extended) varint.
std::int32_t as_int32(std::uint64_t v) {
  return std::bit_cast<std::int32_t>(static_cast<std::uint32_t>(v));
}

struct Fields {
  std::string name;
  std::optional<std::int32_t> data_type;
  std::vector<std::int64_t> dims;
  std::vector<float> float_data;
  std::vector<std::int32_t> int32_data;
  std::vector<std::int64_t> int64_data;
  std::vector<double> double_data;
  std::vector<std::uint64_t> uint64_data;
  std::optional<std::string_view> raw_data;
  std::size_t string_count = 0;
  std::int32_t data_location = 0;
};

Fields read_fields(std::string_view bytes) {
  Fields f;
  Reader r(bytes);
  const auto varint = [](Reader& in) { return in.varint(); };
  while (!r.done()) {
    const wire::Tag tag = r.tag();
    switch (tag.field) {
      case kDims:
        read_repeated(
            r, tag.type, WireType::kVarint, f.dims,
            [](Reader& in) { return as_int64(in.varint()); }, "dims");
        break;
      case kDataType:
        if (tag.type != WireType::kVarint) r.fail("wrong wire type for data_type");
        f.data_type = as_int32(r.varint());
        break;
      case kFloatData:
        read_repeated(
            r, tag.type, WireType::kFixed32, f.float_data,
            [](Reader& in) { return std::bit_cast<float>(in.fixed32()); }, "float_data");
        break;
      case kInt32Data:
        read_repeated(
            r, tag.type, WireType::kVarint, f.int32_data,
            [](Reader& in) { return as_int32(in.varint()); }, "int32_data");
        break;
      case kStringData:
        if (tag.type != WireType::kLengthDelimited) r.fail("wrong wire type for string_data");
        (void)r.length_delimited();
        ++f.string_count;
        break;
      case kInt64Data:
        read_repeated(
            r, tag.type, WireType::kVarint, f.int64_data,
            [](Reader& in) { return as_int64(in.varint()); }, "int64_data");
        break;
      case kName:
        if (tag.type != WireType::kLengthDelimited) r.fail("wrong wire type for name");
        f.name = std::string(r.length_delimited());
        break;
      case kRawData:
        if (tag.type != WireType::kLengthDelimited) r.fail("wrong wire type for raw_data");
        f.raw_data = r.length_delimited();
        break;
      case kDoubleData:
        read_repeated(
            r, tag.type, WireType::kFixed64, f.double_data,
            [](Reader& in) { return std::bit_cast<double>(in.fixed64()); }, "double_data");
        break;
      case kUint64Data:
        read_repeated(r, tag.type, WireType::kVarint, f.uint64_data, varint, "uint64_data");
        break;
      case kDataLocation:
        if (tag.type != WireType::kVarint) r.fail("wrong wire type for data_location");
        f.data_location = as_int32(r.varint());
        break;
      default:
        r.skip(tag.type);  // segment, doc_string, external_data, metadata_props, ...
        break;
    }
  }
  return f;
}

template <typename T>
void append(std::vector<std::byte>& out, T v) {
  const auto* p = reinterpret_cast<const std::byte*>(&v);
  out.insert(out.end(), p, p + sizeof(T));
}

// int32_data carries every type of 16 bits or less; each value must fit the type.
template <typename T>
void narrow_int32(const std::vector<std::int32_t>& in, std::vector<std::byte>& out, std::int64_t lo,
                  std::int64_t hi, const std::string& type) {
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] < lo || in[i] > hi) {
      throw DecodeError("int32_data[" + std::to_string(i) + "] = " + std::to_string(in[i]) +
                        " is out of range for " + type);
    }
    append(out, static_cast<T>(in[i]));
  }
}

Tensor build(Fields f) {
  if (!f.data_type) throw DecodeError("data_type is missing");
  // Range-check before the cast: an out-of-range value of a C enum is UB in C++.
  if (*f.data_type <= 0 || *f.data_type > ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16) {
    throw DecodeError("unsupported data_type " + std::to_string(*f.data_type));
  }
  const auto type = static_cast<ONNXTensorElementDataType>(*f.data_type);
  const std::size_t esize = element_size(type);
  if (esize == 0) throw DecodeError("unsupported data_type " + type_name(type));
  if (f.data_location != 0) throw DecodeError("external data is not supported");
  if (f.string_count != 0) throw DecodeError("string_data in a non-string tensor");

  std::size_t count = 1;
  for (std::size_t i = 0; i < f.dims.size(); ++i) {
    const std::int64_t d = f.dims[i];
    if (d < 0) throw DecodeError("dims[" + std::to_string(i) + "] is negative");
    const auto ud = static_cast<std::uint64_t>(d);
    if (ud != 0 && count > std::numeric_limits<std::size_t>::max() / esize / ud) {
      throw DecodeError("dims " + dims_string(f.dims) + " overflow");
    }
    count *= static_cast<std::size_t>(ud);
  }

  Tensor t;
  t.name = std::move(f.name);
  t.type = type;
  t.dims = std::move(f.dims);
  const std::string tname = type_name(type);

  const std::size_t typed_fields =
      (f.float_data.empty() ? 0U : 1U) + (f.int32_data.empty() ? 0U : 1U) +
      (f.int64_data.empty() ? 0U : 1U) + (f.double_data.empty() ? 0U : 1U) +
      (f.uint64_data.empty() ? 0U : 1U);
  if (f.raw_data) {
    if (typed_fields != 0) throw DecodeError("both raw_data and typed data fields");
    if (f.raw_data->size() != count * esize) {
      throw DecodeError("raw_data has " + std::to_string(f.raw_data->size()) + " bytes, dims " +
                        dims_string(t.dims) + " of " + tname + " need " +
                        std::to_string(count * esize));
    }
    const auto* p = reinterpret_cast<const std::byte*>(f.raw_data->data());
    t.bytes.assign(p, p + f.raw_data->size());
    return t;
  }

  // The one typed field the type may use; any other non-empty one is an error.
  std::size_t got = 0;
  const char* field = "";
  bool field_used = false;
  switch (type) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT:
      field = "float_data";
      field_used = !f.float_data.empty();
      got = f.float_data.size();
      for (float v : f.float_data) append(t.bytes, v);
      break;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE:
      field = "double_data";
      field_used = !f.double_data.empty();
      got = f.double_data.size();
      for (double v : f.double_data) append(t.bytes, v);
      break;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64:
      field = "int64_data";
      field_used = !f.int64_data.empty();
      got = f.int64_data.size();
      for (std::int64_t v : f.int64_data) append(t.bytes, v);
      break;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64:
      field = "uint64_data";
      field_used = !f.uint64_data.empty();
      got = f.uint64_data.size();
      for (std::size_t i = 0; i < f.uint64_data.size(); ++i) {
        const std::uint64_t v = f.uint64_data[i];
        if (type == ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64) {
          append(t.bytes, v);
        } else if (v > std::numeric_limits<std::uint32_t>::max()) {
          throw DecodeError("uint64_data[" + std::to_string(i) + "] is out of range for uint32");
        } else {
          append(t.bytes, static_cast<std::uint32_t>(v));
        }
      }
      break;
    default:
      field = "int32_data";
      field_used = !f.int32_data.empty();
      got = f.int32_data.size();
      switch (type) {
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32:
          narrow_int32<std::int32_t>(f.int32_data, t.bytes,
                                     std::numeric_limits<std::int32_t>::min(),
                                     std::numeric_limits<std::int32_t>::max(), tname);
          break;
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16:
          narrow_int32<std::int16_t>(f.int32_data, t.bytes, -32768, 32767, tname);
          break;
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8:
          narrow_int32<std::int8_t>(f.int32_data, t.bytes, -128, 127, tname);
          break;
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16:
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16:   // IEEE half bits
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16:  // bfloat16 bits
          narrow_int32<std::uint16_t>(f.int32_data, t.bytes, 0, 65535, tname);
          break;
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8:
          narrow_int32<std::uint8_t>(f.int32_data, t.bytes, 0, 255, tname);
          break;
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL:
          narrow_int32<std::uint8_t>(f.int32_data, t.bytes, 0, 1, tname);
          break;
        default:
          throw DecodeError("unsupported data_type " + tname);
      }
      break;
  }
  if (typed_fields > (field_used ? 1U : 0U)) {
    throw DecodeError(std::string("a typed data field other than ") + field + " is set for " +
                      tname);
  }
  if (got != count) {
    throw DecodeError(std::string(field) + " has " + std::to_string(got) + " elements, dims " +
                      dims_string(t.dims) + " need " + std::to_string(count));
  }
  return t;
}

}  // namespace

std::size_t Tensor::element_count() const {
  std::size_t n = 1;
  for (std::int64_t d : dims) n *= static_cast<std::size_t>(d);
  return n;
}

void Tensor::check_element_size(std::size_t size) const {
  if (element_size(type) != size) {
    throw std::logic_error("tensor '" + name + "' of " + type_name(type) + " accessed with a " +
                           std::to_string(size) + "-byte element type");
  }
}

std::size_t element_size(ONNXTensorElementDataType type) {
  switch (type) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32:
      return 4;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64:
      return 8;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16:
      return 2;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL:
      return 1;
    default:
      return 0;
  }
}

std::string type_name(ONNXTensorElementDataType type) {
  switch (type) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT:
      return "float";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE:
      return "double";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16:
      return "float16";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16:
      return "bfloat16";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8:
      return "int8";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16:
      return "int16";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32:
      return "int32";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64:
      return "int64";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8:
      return "uint8";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16:
      return "uint16";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32:
      return "uint32";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64:
      return "uint64";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL:
      return "bool";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING:
      return "string";
    default:
      return "type " + std::to_string(static_cast<int>(type));
  }
}

std::string dims_string(const std::vector<std::int64_t>& dims) {
  std::string out = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i != 0) out += ',';
    out += std::to_string(dims[i]);
  }
  return out + "]";
}

std::expected<Tensor, std::string> parse_tensor_proto(std::string_view bytes) {
  try {
    return build(read_fields(bytes));
  } catch (const DecodeError& e) {
    return std::unexpected(std::string("TensorProto: ") + e.what());
  }
}

std::expected<Tensor, std::string> load_tensor_proto(const std::filesystem::path& file) {
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(file, ec);
  if (ec) return std::unexpected(file.string() + ": " + ec.message());
  if (size > kMaxFileBytes) return std::unexpected(file.string() + ": larger than 1 GiB");
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::unexpected(file.string() + ": cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (!in && !in.eof()) return std::unexpected(file.string() + ": read error");
  auto t = parse_tensor_proto(ss.str());
  if (!t) return std::unexpected(file.string() + ": " + t.error());
  return t;
}

}  // namespace tests::ort
