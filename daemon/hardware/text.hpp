// Small, strict text helpers for the values hardware discovery reads from sysfs and
// procfs. Pure functions over bytes that may be garbage: none of them throws (other
// than std::bad_alloc) and none trusts a length or a character it has not checked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "catalog/text.hpp"

namespace epbrokerd::hardware {

// `s` without leading and trailing ASCII whitespace (catalog/text.hpp).
using catalog::trim;

// `s` as a clean one-line label: trimmed, each run of whitespace folded into one
// space. "" when `s` holds any other byte outside printable ASCII (0x20-0x7e: NUL,
// control characters, non-ASCII), or when the result is longer than `max_bytes`;
// garbage makes the field unknown rather than half-shown.
std::string clean_text(std::string_view s, std::size_t max_bytes = 128);

// A sysfs hex attribute such as "0x10de\n" (vendor, device, subsystem_*) or
// "0x030200\n" (class): "0x" or "0X", 1 to 8 hex digits, then only whitespace.
// std::nullopt when malformed or when the value exceeds `max_value`.
std::optional<std::uint32_t> parse_sysfs_hex(std::string_view text,
                                             std::uint32_t max_value = 0xffff);

// A decimal unsigned integer surrounded by optional whitespace ("4", " 16\n");
// std::nullopt when malformed or above `max_value`.
std::optional<std::uint32_t> parse_decimal(std::string_view text,
                                           std::uint32_t max_value = 0xffffffffU);

// The value of the first "Key: value" line whose key (trimmed) equals `key`, trimmed;
// std::nullopt when there is none. The separator is the first ':' of the line.
// Used for /proc/driver/nvidia/gpus/*/information ("Model:", "Device Minor:").
std::optional<std::string_view> find_key_value(std::string_view text, std::string_view key);

// The driver version in the text of /proc/driver/nvidia/version, e.g. "580.65.06" from
//   "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65.06  Release Build ..."
//   "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul 27 06:54:38 UTC 2025"
// : on the first line starting "NVRM version:", the first token after "Kernel Module"
// that looks like a version (digits and dots, 2 to 4 parts, each at most 9 digits),
// skipping words such as "for" and "x86_64". std::nullopt when there is none.
std::optional<std::string> parse_nvidia_driver_version(std::string_view text);

// `value` as exactly `digits` lower-case hex digits (the low ones), e.g.
// hex_digits(0x10de, 4) == "10de", hex_digits(0x41, 2) == "41"; digits is 1 to 8.
std::string hex_digits(std::uint32_t value, int digits);

// `s` is a safe kernel name (driver or module name, version string): 1 to 64 bytes of
// [A-Za-z0-9._+-] (a version additionally allows '~' and ':').
bool is_kernel_name(std::string_view s);
bool is_version_text(std::string_view s);

}  // namespace epbrokerd::hardware
