// Crash-safe file replacement: write a temporary file in the same directory,
// fsync it, rename it over the target, fsync the directory. Readers see the
// old bytes or the new bytes, never a mix.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "catalog/error.hpp"

namespace catalog {

Result<void> atomic_write_file(const std::filesystem::path& path, std::string_view bytes);

// Whole file into memory, refusing files larger than `max_bytes`
// (Errc::length_mismatch) or that cannot be read (Errc::io / not_found).
Result<std::string> read_file(const std::filesystem::path& path, std::uint64_t max_bytes);

// fsync() of a directory, so a rename inside it is durable.
Result<void> fsync_dir(const std::filesystem::path& dir);

}  // namespace catalog
