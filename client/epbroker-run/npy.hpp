// NumPy .npy arrays for epbroker-run's --input: little-endian float32, int32,
// int64 and uint8, C order, format versions 1.0, 2.0 and 3.0 (reading), 1.0
// (writing). Everything else is refused with a message saying how to convert.
#pragma once

#include <cstdint>
#include <expected>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace epbroker_run {

enum class DType { float32, int32, int64, uint8 };

// "float32", "int32", "int64", "uint8".
const char* dtype_name(DType type);
std::size_t dtype_size(DType type);

struct Array {
  DType dtype = DType::float32;
  std::vector<std::int64_t> shape;  // () for a scalar
  std::vector<unsigned char> data;  // little-endian elements, C order

  std::size_t elements() const;
};

// Parses .npy bytes; `what` names the source in messages.
std::expected<Array, std::string> parse_npy(std::string_view bytes, const std::string& what);
// Reads and parses a file (at most 4 GiB).
std::expected<Array, std::string> read_npy(const std::filesystem::path& file);

// Version 1.0 .npy bytes for `array`.
std::string to_npy(const Array& array);
// Writes to_npy(array) to `file`; an error message on failure.
std::expected<void, std::string> write_npy(const std::filesystem::path& file, const Array& array);

}  // namespace epbroker_run
