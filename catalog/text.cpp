#include "catalog/text.hpp"

#include <cstdint>
#include <cstdio>

namespace catalog {

std::optional<std::size_t> utf8_length(std::string_view s) {
  std::size_t count = 0;
  std::size_t i = 0;
  const std::size_t n = s.size();
  while (i < n) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    std::size_t len = 0;
    std::uint32_t cp = 0;
    if (b0 < 0x80) {
      len = 1;
      cp = b0;
    } else if (b0 >= 0xC2 && b0 <= 0xDF) {
      len = 2;
      cp = b0 & 0x1Fu;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
      len = 3;
      cp = b0 & 0x0Fu;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
      len = 4;
      cp = b0 & 0x07u;
    } else {
      return std::nullopt;  // continuation byte, C0/C1 lead (overlong) or F5..FF
    }
    if (n - i < len) return std::nullopt;
    for (std::size_t k = 1; k < len; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if ((b & 0xC0u) != 0x80u) return std::nullopt;
      cp = (cp << 6) | (b & 0x3Fu);
    }
    if (len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) return std::nullopt;
    if (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) return std::nullopt;
    i += len;
    ++count;
  }
  return count;
}

std::string quote_for_message(std::string_view s, std::size_t max_bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  const bool cut = s.size() > max_bytes;
  if (cut) s = s.substr(0, max_bytes);
  std::string out;
  out.reserve(s.size() + 8);
  out.push_back('"');
  for (const char c : s) {
    const auto b = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (b >= 0x20 && b < 0x7F) {
      out.push_back(c);
    } else {
      out += "\\x";
      out.push_back(kHex[b >> 4]);
      out.push_back(kHex[b & 0x0Fu]);
    }
  }
  out.push_back('"');
  if (cut) out += "...";
  return out;
}

std::string_view trim(std::string_view s, std::string_view blanks) {
  const auto first = s.find_first_not_of(blanks);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(blanks) - first + 1);
}

std::string mode_text(std::uint32_t mode) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0%03o", mode & 07777U);
  return buf;
}

}  // namespace catalog
