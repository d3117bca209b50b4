// The delegation side of the metadata model (catalog/tuf/metadata.hpp): which
// paths a delegated role is trusted for, and the bins of succinct_roles.
#include <fnmatch.h>

#include <algorithm>
#include <charconv>

#include "catalog/crypto/hash.hpp"
#include "catalog/tuf/metadata.hpp"

namespace catalog::tuf {
namespace {

bool segment_match(std::string_view target, std::string_view pattern) {
  auto split = [](std::string_view s) {
    std::vector<std::string> parts;
    std::size_t start = 0;
    while (true) {
      auto pos = s.find('/', start);
      parts.emplace_back(s.substr(start, pos - start));
      if (pos == std::string_view::npos) break;
      start = pos + 1;
    }
    return parts;
  };
  auto t = split(target);
  auto p = split(pattern);
  if (t.size() != p.size()) return false;
  for (std::size_t i = 0; i < t.size(); ++i) {
    // FNM_NOESCAPE: patterns are shell-style without backslash escapes, like
    // the reference implementation's fnmatch.
    if (fnmatch(p[i].c_str(), t[i].c_str(), FNM_NOESCAPE) != 0) return false;
  }
  return true;
}

// The first 32 bits of SHA-256(path), big-endian.
std::uint32_t hash_prefix32(std::string_view target_path) {
  const std::string h = crypto::sha256_hex(target_path);
  std::uint32_t v = 0;
  std::from_chars(h.data(), h.data() + 8, v, 16);
  return v;
}

}  // namespace

bool DelegatedRole::is_delegated_path(std::string_view target_path) const {
  if (paths) {
    return std::any_of(paths->begin(), paths->end(),
                       [&](const std::string& p) { return segment_match(target_path, p); });
  }
  if (path_hash_prefixes) {
    const std::string h = crypto::sha256_hex(target_path);
    return std::any_of(path_hash_prefixes->begin(), path_hash_prefixes->end(),
                       [&](const std::string& p) { return h.starts_with(p); });
  }
  if (bin) {
    if (bin->bit_length < 1 || bin->bit_length > 32) return false;
    return hash_prefix32(target_path) >> (32 - bin->bit_length) == bin->index;
  }
  return false;
}

// ---- succinct hash bins -----------------------------------------------------

std::size_t SuccinctRoles::suffix_width() const { return (bit_length + 3) / 4; }

std::uint32_t SuccinctRoles::bin_for_target(std::string_view target_path) const {
  return hash_prefix32(target_path) >> (32 - bit_length);
}

std::string SuccinctRoles::bin_name(std::uint32_t index) const {
  static constexpr char hex[] = "0123456789abcdef";
  std::string suffix(suffix_width(), '0');
  for (std::size_t i = suffix.size(); i-- > 0; index >>= 4) suffix[i] = hex[index & 0xF];
  return name_prefix + "-" + suffix;
}

std::optional<std::uint32_t> SuccinctRoles::bin_index(std::string_view role_name) const {
  // 1. "<name_prefix>-" and exactly suffix_width() lower-case hex digits (the
  //    only spelling bin_name() makes: "bins-0A" or "bins-+a" name no bin).
  if (role_name.size() != name_prefix.size() + 1 + suffix_width() ||
      !role_name.starts_with(name_prefix) || role_name[name_prefix.size()] != '-') {
    return std::nullopt;
  }
  const std::string_view suffix = role_name.substr(name_prefix.size() + 1);
  std::uint64_t index = 0;
  for (char c : suffix) {
    int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (digit < 0) return std::nullopt;
    index = index * 16 + static_cast<std::uint64_t>(digit);
  }
  // 2. Within range (three hex digits of 2^10 bins reach 0xfff).
  if (index >= bin_count()) return std::nullopt;
  return static_cast<std::uint32_t>(index);
}

DelegatedRole SuccinctRoles::bin(std::uint32_t index) const {
  DelegatedRole r;
  static_cast<Role&>(r) = static_cast<const Role&>(*this);
  r.name = bin_name(index);
  r.terminating = kTerminating;
  r.bin = HashBin{bit_length, index};
  return r;
}

std::optional<DelegatedRole> Delegations::find(std::string_view role_name) const {
  if (succinct_roles) {
    auto index = succinct_roles->bin_index(role_name);
    if (!index) return std::nullopt;
    return succinct_roles->bin(*index);
  }
  auto it = std::find_if(roles.begin(), roles.end(),
                         [&](const DelegatedRole& d) { return d.name == role_name; });
  if (it == roles.end()) return std::nullopt;
  return *it;
}

std::vector<DelegatedRole> Delegations::roles_for_target(std::string_view target_path) const {
  if (succinct_roles) return {succinct_roles->bin(succinct_roles->bin_for_target(target_path))};
  std::vector<DelegatedRole> out;
  for (const auto& d : roles) {
    if (d.is_delegated_path(target_path)) out.push_back(d);
  }
  return out;
}

}  // namespace catalog::tuf
