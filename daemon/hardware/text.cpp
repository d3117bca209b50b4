#include "daemon/hardware/text.hpp"

#include <charconv>
#include <system_error>

namespace epbrokerd::hardware {
namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool is_alnum(char c) { return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

std::optional<std::uint32_t> parse_number(std::string_view digits, int base,
                                          std::uint32_t max_value) {
  if (digits.empty()) return std::nullopt;
  std::uint32_t value = 0;
  const char* end = digits.data() + digits.size();
  auto [ptr, ec] = std::from_chars(digits.data(), end, value, base);
  if (ec != std::errc{} || ptr != end || value > max_value) return std::nullopt;
  return value;
}

// Token is "N.N[.N[.N]]" with each N 1 to 9 digits.
bool looks_like_version(std::string_view token) {
  std::size_t parts = 0;
  std::size_t digits = 0;
  for (char c : token) {
    if (is_digit(c)) {
      if (++digits > 9) return false;
    } else if (c == '.') {
      if (digits == 0) return false;
      ++parts;
      digits = 0;
    } else {
      return false;
    }
  }
  if (digits == 0) return false;
  ++parts;
  return parts >= 2 && parts <= 4;
}

}  // namespace

std::string clean_text(std::string_view s, std::size_t max_bytes) {
  s = trim(s);
  std::string out;
  bool pending_space = false;
  for (char c : s) {
    if (is_space(c)) {
      pending_space = true;
      continue;
    }
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte > 0x7e) return {};
    if (pending_space) out.push_back(' ');
    pending_space = false;
    out.push_back(c);
    if (out.size() > max_bytes) return {};
  }
  return out;
}

std::optional<std::uint32_t> parse_sysfs_hex(std::string_view text, std::uint32_t max_value) {
  text = trim(text);
  if (text.size() < 3 || text[0] != '0' || (text[1] != 'x' && text[1] != 'X')) {
    return std::nullopt;
  }
  text.remove_prefix(2);
  if (text.size() > 8) return std::nullopt;
  return parse_number(text, 16, max_value);
}

std::optional<std::uint32_t> parse_decimal(std::string_view text, std::uint32_t max_value) {
  text = trim(text);
  if (text.size() > 10) return std::nullopt;
  for (char c : text) {
    if (!is_digit(c)) return std::nullopt;
  }
  return parse_number(text, 10, max_value);
}

std::optional<std::string_view> find_key_value(std::string_view text, std::string_view key) {
  while (!text.empty()) {
    const std::size_t eol = text.find('\n');
    const std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    if (trim(line.substr(0, colon)) == key) return trim(line.substr(colon + 1));
  }
  return std::nullopt;
}

std::optional<std::string> parse_nvidia_driver_version(std::string_view text) {
  constexpr std::string_view kPrefix = "NVRM version:";
  constexpr std::string_view kMarker = "Kernel Module";
  while (!text.empty()) {
    const std::size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
    if (!line.starts_with(kPrefix)) continue;
    const std::size_t marker = line.find(kMarker);
    if (marker == std::string_view::npos) return std::nullopt;
    line.remove_prefix(marker + kMarker.size());
    while (!line.empty()) {
      line = trim(line);
      std::size_t end = 0;
      while (end < line.size() && !is_space(line[end])) ++end;
      const std::string_view token = line.substr(0, end);
      if (looks_like_version(token)) return std::string(token);
      line.remove_prefix(end);
    }
    return std::nullopt;
  }
  return std::nullopt;
}

std::string hex_digits(std::uint32_t value, int digits) {
  constexpr std::string_view kHex = "0123456789abcdef";
  std::string out;
  for (int shift = (digits - 1) * 4; shift >= 0; shift -= 4) {
    out.push_back(kHex[(value >> shift) & 0xfU]);
  }
  return out;
}

bool is_kernel_name(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s) {
    if (!is_alnum(c) && c != '.' && c != '_' && c != '+' && c != '-') return false;
  }
  return true;
}

bool is_version_text(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s) {
    if (!is_alnum(c) && c != '.' && c != '_' && c != '+' && c != '-' && c != '~' && c != ':') {
      return false;
    }
  }
  return true;
}

}  // namespace epbrokerd::hardware
