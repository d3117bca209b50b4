#include "client/epbroker-run/npy.hpp"

#include <bit>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

namespace epbroker_run {

// Element bytes are used as they are in memory.
static_assert(std::endian::native == std::endian::little,
              "epbroker-run assumes a little-endian host");

namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr std::uint64_t kMaxFile = std::uint64_t{4} << 30;

struct Descr {
  const char* text;
  DType type;
};
constexpr Descr kDescrs[] = {
    {"<f4", DType::float32},
    {"<i4", DType::int32},
    {"<i8", DType::int64},
    {"|u1", DType::uint8},
};

const char* const kConvertHint =
    "; supported: float32 '<f4', int32 '<i4', int64 '<i8', uint8 '|u1' (convert with "
    "numpy: np.save(path, np.ascontiguousarray(a, dtype='<f4'))";

// The value of 'key' in the header dict, as the raw text up to the next top-level
// ',' or '}' (tuples kept whole).
std::expected<std::string, std::string> dict_value(std::string_view header, std::string_view key) {
  for (const char quote : {'\'', '"'}) {
    const std::string needle = std::string(1, quote) + std::string(key) + quote;
    const auto at = header.find(needle);
    if (at == std::string_view::npos) continue;
    auto i = header.find(':', at + needle.size());
    if (i == std::string_view::npos) break;
    ++i;
    while (i < header.size() && header[i] == ' ') ++i;
    std::size_t depth = 0;
    std::size_t j = i;
    for (; j < header.size(); ++j) {
      const char c = header[j];
      if (c == '(') ++depth;
      if (c == ')' && depth > 0) --depth;
      if (depth == 0 && (c == ',' || c == '}')) break;
    }
    std::string v(header.substr(i, j - i));
    while (!v.empty() && v.back() == ' ') v.pop_back();
    return v;
  }
  return std::unexpected("header has no '" + std::string(key) + "'");
}

std::string unquote(const std::string& s) {
  if (s.size() >= 2 && (s.front() == '\'' || s.front() == '"') && s.back() == s.front()) {
    return s.substr(1, s.size() - 2);
  }
  return s;
}

std::expected<std::vector<std::int64_t>, std::string> parse_shape(const std::string& text) {
  if (text.size() < 2 || text.front() != '(' || text.back() != ')') {
    return std::unexpected("shape '" + text + "' is not a tuple");
  }
  std::vector<std::int64_t> out;
  std::string item;
  std::istringstream in(text.substr(1, text.size() - 2));
  while (std::getline(in, item, ',')) {
    const auto b = item.find_first_not_of(' ');
    if (b == std::string::npos) continue;  // the trailing comma of "(3,)"
    const auto e = item.find_last_not_of(' ');
    const std::string num = item.substr(b, e - b + 1);
    std::int64_t v = 0;
    for (const char c : num) {
      if (c < '0' || c > '9' || v > (std::numeric_limits<std::int64_t>::max() - 9) / 10) {
        return std::unexpected("shape '" + text + "' has a bad dimension '" + num + "'");
      }
      v = v * 10 + (c - '0');
    }
    out.push_back(v);
  }
  return out;
}

}  // namespace

const char* dtype_name(DType type) {
  switch (type) {
    case DType::float32:
      return "float32";
    case DType::int32:
      return "int32";
    case DType::int64:
      return "int64";
    case DType::uint8:
      return "uint8";
  }
  return "?";
}

std::size_t dtype_size(DType type) {
  switch (type) {
    case DType::float32:
    case DType::int32:
      return 4;
    case DType::int64:
      return 8;
    case DType::uint8:
      return 1;
  }
  return 1;
}

std::size_t Array::elements() const {
  std::size_t n = 1;
  for (const auto d : shape) n *= static_cast<std::size_t>(d);
  return n;
}

std::expected<Array, std::string> parse_npy(std::string_view bytes, const std::string& what) {
  auto fail = [&](const std::string& why) { return std::unexpected(what + ": " + why); };
  if (bytes.size() < 10 || bytes.substr(0, 6) != kMagic) {
    return fail("not a NumPy .npy file (no \\x93NUMPY magic); save arrays with numpy.save()");
  }
  const auto major = static_cast<unsigned char>(bytes[6]);
  std::size_t header_len = 0;
  std::size_t offset = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) |
                 (std::size_t{static_cast<unsigned char>(bytes[9])} << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return fail("truncated header");
    header_len = 0;
    for (int i = 0; i < 4; ++i) {
      header_len |= std::size_t{static_cast<unsigned char>(bytes[8 + static_cast<std::size_t>(i)])}
                    << (8 * i);
    }
    offset = 12;
  } else {
    return fail(".npy format version " + std::to_string(major) + " is not supported (1, 2, 3 are)");
  }
  if (bytes.size() < offset + header_len) return fail("truncated header");
  const std::string_view header = bytes.substr(offset, header_len);

  const auto descr = dict_value(header, "descr");
  const auto fortran = dict_value(header, "fortran_order");
  const auto shape_text = dict_value(header, "shape");
  if (!descr) return fail(descr.error());
  if (!fortran) return fail(fortran.error());
  if (!shape_text) return fail(shape_text.error());

  Array out;
  const std::string d = unquote(*descr);
  bool known = false;
  for (const auto& k : kDescrs) {
    if (d == k.text) {
      out.dtype = k.type;
      known = true;
    }
  }
  if (!known) {
    if (!d.empty() && d.front() == '>') {
      return fail("big-endian dtype '" + d + "' is not supported" + kConvertHint);
    }
    return fail("dtype '" + d + "' is not supported" + kConvertHint);
  }
  if (*fortran != "False") {
    return fail("Fortran-order array; save a C-order copy: np.save(path, np.ascontiguousarray(a))");
  }
  auto shape = parse_shape(*shape_text);
  if (!shape) return fail(shape.error());
  out.shape = std::move(*shape);

  // The element count, guarded against overflow.
  std::size_t n = 1;
  for (const auto dim : out.shape) {
    if (dim != 0 && n > std::numeric_limits<std::size_t>::max() / static_cast<std::size_t>(dim)) {
      return fail("shape is too large");
    }
    n *= static_cast<std::size_t>(dim);
  }
  const std::size_t size = dtype_size(out.dtype);
  if (n > (bytes.size() - offset - header_len) / size ||
      bytes.size() - offset - header_len != n * size) {
    return fail("data is " + std::to_string(bytes.size() - offset - header_len) + " bytes, shape " +
                *shape_text + " of " + dtype_name(out.dtype) + " needs " +
                std::to_string(n * size) + " (file truncated or not a plain array?)");
  }
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data()) + offset + header_len;
  out.data.assign(data, data + n * size);
  return out;
}

std::expected<Array, std::string> read_npy(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    return std::unexpected(file.string() + ": cannot open (" + std::strerror(errno) + ")");
  }
  in.seekg(0, std::ios::end);
  const auto size = static_cast<std::uint64_t>(in.tellg());
  if (size > kMaxFile) return std::unexpected(file.string() + ": larger than 4 GiB");
  in.seekg(0);
  std::string bytes(static_cast<std::size_t>(size), '\0');
  if (!in.read(bytes.data(), static_cast<std::streamsize>(size))) {
    return std::unexpected(file.string() + ": read error");
  }
  return parse_npy(bytes, file.string());
}

std::string to_npy(const Array& array) {
  std::string shape = "(";
  for (std::size_t i = 0; i < array.shape.size(); ++i) {
    shape += (i > 0 ? ", " : "") + std::to_string(array.shape[i]);
  }
  shape += array.shape.size() == 1 ? ",)" : ")";
  const char* descr = array.dtype == DType::float32 ? "<f4"
                      : array.dtype == DType::int32 ? "<i4"
                      : array.dtype == DType::int64 ? "<i8"
                                                    : "|u1";
  std::string header =
      std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad with spaces so that the data starts on a 64-byte boundary, ending in '\n'.
  const std::size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out(kMagic);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xFF);
  out += static_cast<char>((header.size() >> 8) & 0xFF);
  out += header;
  out.append(reinterpret_cast<const char*>(array.data.data()), array.data.size());
  return out;
}

std::expected<void, std::string> write_npy(const std::filesystem::path& file, const Array& array) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  const std::string bytes = to_npy(array);
  if (!out || !out.write(bytes.data(), static_cast<std::streamsize>(bytes.size())) ||
      !out.flush()) {
    return std::unexpected(file.string() + ": cannot write (" + std::strerror(errno) + ")");
  }
  return {};
}

}  // namespace epbroker_run
