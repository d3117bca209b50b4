// Where a Repository's files go, relative to the repository directory
// (internal to catalog/tuf/repository*.cpp; the layout is described in
// repository.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace catalog::tuf::layout {

inline constexpr const char* kTopRoles[] = {"root", "timestamp", "snapshot", "targets"};

// "metadata/N.ROLE.json" with consistent snapshots, else "metadata/ROLE.json".
inline std::string metadata_name(const std::string& role, std::uint64_t version, bool consistent) {
  return "metadata/" + (consistent ? std::to_string(version) + "." : std::string()) + role +
         ".json";
}

// Whether this publisher stores a delegated role of that name: 1 to 128 of
// [A-Za-z0-9._+-], not "." or ".." or "N.root", so that it needs no quoting in any
// client's URLs or file names (clients quote any name; see updater.hpp).
inline bool storable_role_name(std::string_view name) {
  if (name.empty() || name.size() > 128 || name == "." || name == "..") return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-' || c == '+';
    if (!ok) return false;
  }
  // "N.root" would be stored where root version N is.
  if (name.ends_with(".root")) {
    const auto number = name.substr(0, name.size() - 5);
    if (!number.empty() && number.find_first_not_of("0123456789") == std::string_view::npos) {
      return false;
    }
  }
  return true;
}

// Metadata waiting for signatures or for the snapshot and timestamp keys.
inline std::string staged_name(const std::string& role) { return "staged/" + role + ".json"; }

}  // namespace catalog::tuf::layout
