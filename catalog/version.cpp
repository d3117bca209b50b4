#include "catalog/version.hpp"

#include <algorithm>

#include "catalog/text.hpp"

namespace catalog {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool is_suffix_char(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.';
}

std::unexpected<Error> bad_version(std::string_view text, std::string_view why) {
  return fail(Errc::bad_field,
              "invalid version " + quote_for_message(text) + ": " + std::string(why));
}

}  // namespace

std::weak_ordering operator<=>(const Version& a, const Version& b) {
  const std::size_t n = std::max(a.parts.size(), b.parts.size());
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t x = i < a.parts.size() ? a.parts[i] : 0;
    const std::uint32_t y = i < b.parts.size() ? b.parts[i] : 0;
    if (x != y) return x < y ? std::weak_ordering::less : std::weak_ordering::greater;
  }
  const bool a_pre = !a.suffix.empty();
  const bool b_pre = !b.suffix.empty();
  if (a_pre == b_pre) return std::weak_ordering::equivalent;
  return a_pre ? std::weak_ordering::less : std::weak_ordering::greater;
}

bool operator==(const Version& a, const Version& b) { return (a <=> b) == 0; }

Result<Version> parse_version(std::string_view text) {
  if (text.empty()) return bad_version(text, "empty");
  std::string_view numbers = text;
  Version v;
  if (const std::size_t dash = text.find('-'); dash != std::string_view::npos) {
    numbers = text.substr(0, dash);
    const std::string_view suffix = text.substr(dash + 1);
    if (suffix.empty()) return bad_version(text, "empty suffix after '-'");
    if (suffix.size() > kMaxVersionSuffix) return bad_version(text, "suffix too long");
    if (!std::all_of(suffix.begin(), suffix.end(), is_suffix_char)) {
      return bad_version(text, "suffix may contain only [A-Za-z0-9.]");
    }
    v.suffix = std::string(suffix);
  }
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = numbers.find('.', start);
    const std::string_view part =
        numbers.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (part.empty()) return bad_version(text, "empty component");
    if (!std::all_of(part.begin(), part.end(), is_digit)) {
      return bad_version(text, "components must be decimal numbers");
    }
    if (part.size() > kMaxVersionDigits) return bad_version(text, "component too long");
    if (v.parts.size() == kMaxVersionParts) {
      return bad_version(text, "more than 4 components");
    }
    std::uint32_t value = 0;
    for (const char c : part) value = value * 10 + static_cast<std::uint32_t>(c - '0');
    v.parts.push_back(value);
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return v;
}

std::string to_string(const Version& v) {
  std::string out;
  for (std::size_t i = 0; i < v.parts.size(); ++i) {
    if (i != 0) out.push_back('.');
    out += std::to_string(v.parts[i]);
  }
  if (out.empty()) out = "0";
  if (!v.suffix.empty()) {
    out.push_back('-');
    out += v.suffix;
  }
  return out;
}

Result<VersionText> parse_version_text(std::string_view text) {
  auto v = parse_version(text);
  if (!v) return std::unexpected(std::move(v.error()));
  return VersionText{std::string(text), std::move(*v)};
}

}  // namespace catalog
