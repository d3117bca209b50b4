// Dotted numeric versions (package versions, ONNX Runtime versions, driver versions).
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/error.hpp"

namespace catalog {

inline constexpr std::size_t kMaxVersionParts = 4;    // "1.2.3.4"
inline constexpr std::size_t kMaxVersionDigits = 9;   // per component; fits uint32
inline constexpr std::size_t kMaxVersionSuffix = 64;  // bytes after the '-'

// A parsed version: numeric components and an optional suffix ("rc1" in
// "1.2.0-rc1"). Leading zeros are allowed ("535.104.05") and do not change a
// component's value.
//
// Ordering (operator<=>) compares components numerically, a missing component
// counting as 0 ("1.2" == "1.2.0"). The suffix is ignored except that, when the
// numbers are equal, a version with a suffix orders before the same version
// without one (semver pre-release): "1.2.0-rc1" < "1.2.0". Two versions that
// differ only in a non-empty suffix are equivalent. operator== is that
// equivalence, consistent with operator<=>; compare the original text when an
// exact match is wanted.
struct Version {
  std::vector<std::uint32_t> parts;
  std::string suffix;
};

std::weak_ordering operator<=>(const Version& a, const Version& b);
bool operator==(const Version& a, const Version& b);

// Parses `text` of the form D(.D){0,3}(-S)? where D is 1..9 ASCII digits and S is
// 1..64 characters of [A-Za-z0-9.]. Nothing else is accepted: no leading "v", no
// spaces, no empty components. Errors: Errc::bad_field, with a message that
// quotes the text and says what is wrong (callers prefix the field path).
Result<Version> parse_version(std::string_view text);

// Canonical text: components joined by '.', then "-suffix" if there is one.
// Leading zeros of the original text are not kept ("535.104.05" -> "535.104.5").
std::string to_string(const Version& v);

// A version as published in metadata: the exact text plus its parsed value.
// `text` is authoritative (it is what is serialized); `value` is parse_version(text).
struct VersionText {
  std::string text;
  Version value;

  friend bool operator==(const VersionText&, const VersionText&) = default;
};

// parse_version() keeping the text.
Result<VersionText> parse_version_text(std::string_view text);

}  // namespace catalog
