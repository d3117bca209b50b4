// Protocol-buffers wire format, just enough for the ONNX messages the ORT tests read
// (TensorProto) and write (ModelProto and what it contains). No schema, no reflection.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace tests::ort::wire {

enum class WireType : std::uint8_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5,
};

// Thrown by Reader on malformed input; decoders catch it at their public boundary.
class DecodeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Tag {
  std::uint32_t field = 0;
  WireType type = WireType::kVarint;
};

// A cursor over a byte buffer. Every read is bounds-checked and throws DecodeError
// (with the byte offset) instead of reading past the end.
class Reader {
 public:
  // `base` is the offset of data[0] in the outermost buffer, for messages.
  explicit Reader(std::string_view data, std::size_t base = 0) : data_(data), base_(base) {}

  bool done() const { return pos_ == data_.size(); }
  std::size_t offset() const { return base_ + pos_; }

  std::uint64_t varint();
  std::uint32_t fixed32();
  std::uint64_t fixed64();
  // A length prefix followed by that many bytes.
  std::string_view length_delimited();
  // A field key: field number >= 1, wire type 0, 1, 2 or 5 (groups are refused).
  Tag tag();
  // Skips the value of a field of wire type `type`.
  void skip(WireType type);
  // A Reader over a length-delimited value (offsets stay those of the outer buffer).
  Reader sub();

  [[noreturn]] void fail(const std::string& what) const;

 private:
  std::string_view take(std::size_t n);

  std::string_view data_;
  std::size_t base_ = 0;
  std::size_t pos_ = 0;
};

// Appends wire-format fields to a byte string.
class Writer {
 public:
  void varint_field(std::uint32_t field, std::uint64_t value);
  // int32/int64 fields: negative values are sign-extended to 10 bytes, as protobuf does.
  void int_field(std::uint32_t field, std::int64_t value) {
    varint_field(field, static_cast<std::uint64_t>(value));
  }
  void fixed32_field(std::uint32_t field, std::uint32_t value);
  void fixed64_field(std::uint32_t field, std::uint64_t value);
  void bytes_field(std::uint32_t field, std::string_view bytes);
  // A nested message (already serialized).
  void message_field(std::uint32_t field, const Writer& message) {
    bytes_field(field, message.bytes());
  }

  const std::string& bytes() const { return out_; }
  std::string take() { return std::move(out_); }

 private:
  void key(std::uint32_t field, WireType type);
  void raw_varint(std::uint64_t value);
  void raw_fixed(std::uint64_t value, int size);

  std::string out_;
};

}  // namespace tests::ort::wire
