#include "tests/ort/support/protobuf_wire.hpp"

#include <bit>

namespace tests::ort::wire {

static_assert(std::endian::native == std::endian::little,
              "the ORT test support assumes a little-endian host");

void Reader::fail(const std::string& what) const {
  throw DecodeError(what + " at byte " + std::to_string(offset()));
}

std::string_view Reader::take(std::size_t n) {
  if (n > data_.size() - pos_) {
    fail("truncated: " + std::to_string(n) + " bytes needed, " +
         std::to_string(data_.size() - pos_) + " left");
  }
  std::string_view out = data_.substr(pos_, n);
  pos_ += n;
  return out;
}

std::uint64_t Reader::varint() {
  std::uint64_t value = 0;
  for (int i = 0; i < 10; ++i) {
    if (pos_ == data_.size()) fail("truncated varint");
    const auto byte = static_cast<std::uint8_t>(data_[pos_++]);
    // The tenth byte holds bit 63 only.
    if (i == 9 && byte > 1) fail("varint overflows 64 bits");
    value |= static_cast<std::uint64_t>(byte & 0x7f) << (7 * i);
    if ((byte & 0x80) == 0) return value;
  }
  fail("varint longer than 10 bytes");
}

std::uint32_t Reader::fixed32() {
  const std::string_view b = take(4);
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) {
    v = (v << 8) | static_cast<std::uint8_t>(b[static_cast<std::size_t>(i)]);
  }
  return v;
}

std::uint64_t Reader::fixed64() {
  const std::string_view b = take(8);
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) {
    v = (v << 8) | static_cast<std::uint8_t>(b[static_cast<std::size_t>(i)]);
  }
  return v;
}

std::string_view Reader::length_delimited() {
  const std::uint64_t n = varint();
  if (n > data_.size() - pos_) {
    fail("length " + std::to_string(n) + " exceeds the " + std::to_string(data_.size() - pos_) +
         " bytes left");
  }
  return take(static_cast<std::size_t>(n));
}

Reader Reader::sub() {
  const std::string_view body = length_delimited();
  // The body ends where the cursor now is.
  return Reader(body, offset() - body.size());
}

Tag Reader::tag() {
  const std::uint64_t key = varint();
  const std::uint64_t field = key >> 3;
  const auto type = static_cast<std::uint8_t>(key & 7);
  if (field == 0 || field > 0x1fffffff) fail("bad field number " + std::to_string(field));
  switch (type) {
    case 0:
    case 1:
    case 2:
    case 5:
      break;
    case 3:
    case 4:
      fail("groups are not supported (field " + std::to_string(field) + ")");
    default:
      fail("bad wire type " + std::to_string(type) + " (field " + std::to_string(field) + ")");
  }
  return Tag{static_cast<std::uint32_t>(field), static_cast<WireType>(type)};
}

void Reader::skip(WireType type) {
  switch (type) {
    case WireType::kVarint:
      (void)varint();
      return;
    case WireType::kFixed64:
      (void)take(8);
      return;
    case WireType::kLengthDelimited:
      (void)length_delimited();
      return;
    case WireType::kFixed32:
      (void)take(4);
      return;
    case WireType::kStartGroup:
    case WireType::kEndGroup:
      break;
  }
  fail("cannot skip wire type " + std::to_string(static_cast<int>(type)));
}

void Writer::raw_varint(std::uint64_t value) {
  while (value >= 0x80) {
    out_.push_back(static_cast<char>(static_cast<std::uint8_t>(value & 0x7f) | 0x80));
    value >>= 7;
  }
  out_.push_back(static_cast<char>(value));
}

void Writer::raw_fixed(std::uint64_t value, int size) {
  for (int i = 0; i < size; ++i) {
    out_.push_back(static_cast<char>(value & 0xff));
    value >>= 8;
  }
}

void Writer::key(std::uint32_t field, WireType type) {
  raw_varint((static_cast<std::uint64_t>(field) << 3) | static_cast<std::uint64_t>(type));
}

void Writer::varint_field(std::uint32_t field, std::uint64_t value) {
  key(field, WireType::kVarint);
  raw_varint(value);
}

void Writer::fixed32_field(std::uint32_t field, std::uint32_t value) {
  key(field, WireType::kFixed32);
  raw_fixed(value, 4);
}

void Writer::fixed64_field(std::uint32_t field, std::uint64_t value) {
  key(field, WireType::kFixed64);
  raw_fixed(value, 8);
}

void Writer::bytes_field(std::uint32_t field, std::string_view bytes) {
  key(field, WireType::kLengthDelimited);
  raw_varint(bytes.size());
  out_.append(bytes);
}

}  // namespace tests::ort::wire
