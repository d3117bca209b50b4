// The TUF 1.0 metadata model: root, timestamp, snapshot, targets (with
// delegations), the signed envelope, and the rules each role's fields obey.
//
// Parsing is strict and exception-free: missing or mistyped fields are
// Errc::bad_field naming the field; an unknown spec major version is
// Errc::unsupported. Unrecognised fields at the top of `signed` and inside
// keys are kept for re-signing (deeper ones are dropped by to_json); signatures
// are always checked over the canonical form of the *received* `signed` object.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/error.hpp"
#include "catalog/tuf/key.hpp"

namespace catalog::tuf {

using TimePoint = std::chrono::sys_seconds;

// "YYYY-MM-DDTHH:MM:SSZ" (UTC) <-> time point. Anything else is Errc::bad_field.
Result<TimePoint> parse_expires(std::string_view text);
std::string format_expires(TimePoint t);

inline constexpr std::string_view kSpecVersion = "1.0.31";

// Fields every role shares.
struct Common {
  std::string spec_version{kSpecVersion};
  std::uint64_t version = 1;
  TimePoint expires{};
  nlohmann::json unrecognized = nlohmann::json::object();

  bool is_expired(TimePoint now) const { return now >= expires; }
};

struct Role {
  std::vector<std::string> keyids;  // unique
  std::uint64_t threshold = 1;      // >= 1
};

// One bin of a succinct hash-bin delegation: trusted for the target paths whose
// SHA-256 digest starts with the `bit_length` bits of `index`.
struct HashBin {
  std::uint32_t bit_length = 1;  // 1..32
  std::uint32_t index = 0;       // < 2^bit_length
};

struct DelegatedRole : Role {
  // Any string but "" and the top-level role names: "a/b", ".." and "é x%"
  // are names like others (the Updater quotes them for URLs and file names).
  std::string name;
  bool terminating = false;
  // Exactly one of the three is set: "paths" or "path_hash_prefixes" as the
  // JSON says, or `bin` for a bin of a succinct_roles delegation (never in
  // JSON; SuccinctRoles::bin() makes such roles).
  std::optional<std::vector<std::string>> paths;
  std::optional<std::vector<std::string>> path_hash_prefixes;
  std::optional<HashBin> bin = std::nullopt;

  // Whether this role is trusted for `target_path` (pattern match per path
  // segment with shell-style wildcards, SHA-256 prefix of the path, or the
  // path's hash bin).
  bool is_delegated_path(std::string_view target_path) const;
};

// "succinct_roles" (TAP 15 succinct hash-bin delegations, as python-tuf's
// SuccinctRoles): 2^bit_length delegated roles ("bins") sharing these keyids
// and threshold. Bin i is named "<name_prefix>-<i>", i in lower-case hex
// zero-padded to the digits of 2^bit_length - 1 ("bins-0a" of 256); it is
// trusted only for the target paths whose SHA-256 starts with the bit_length
// bits of i, so each path has exactly one bin.
struct SuccinctRoles : Role {
  std::uint32_t bit_length = 1;  // 1..32 (parse_metadata refuses others)
  std::string name_prefix;

  // Whether bins are terminating. TAP 15: "All succinct hashed bin delegations
  // will be non-terminating" (a terminating parent delegation makes them so).
  // python-tuf 7's ngclient treats them as terminating instead: the two differ
  // only when the delegator of the bins has a lower-priority sibling that also
  // covers a path its bin does not list.
  static constexpr bool kTerminating = false;

  std::uint64_t bin_count() const { return std::uint64_t{1} << bit_length; }
  // Hex digits of the bin number in bin names.
  std::size_t suffix_width() const;
  // The bin `target_path` belongs to: the first bit_length bits of its SHA-256.
  std::uint32_t bin_for_target(std::string_view target_path) const;
  // "<name_prefix>-<index, zero-padded lower-case hex>". `index` < bin_count().
  std::string bin_name(std::uint32_t index) const;
  // The bin `role_name` names (exactly bin_name(i) for some i), or nullopt.
  std::optional<std::uint32_t> bin_index(std::string_view role_name) const;
  // Bin `index` as a delegated role: name, keyids, threshold, kTerminating, `bin`.
  DelegatedRole bin(std::uint32_t index) const;
};

struct Delegations {
  KeyMap keys;
  // The listed roles, in priority order. Empty when `succinct_roles` is set:
  // the JSON has exactly one of "roles" and "succinct_roles".
  std::vector<DelegatedRole> roles;
  std::optional<SuccinctRoles> succinct_roles = std::nullopt;

  // The delegation of `role_name`: the listed role of that name, or the bin it
  // names (made by SuccinctRoles::bin()); nullopt when neither.
  std::optional<DelegatedRole> find(std::string_view role_name) const;
  // The delegations whose roles are trusted for `target_path`, in priority
  // order: the listed roles covering it (every one; the caller stops at a
  // terminating one), or the one bin it hashes into. Never enumerates bins.
  std::vector<DelegatedRole> roles_for_target(std::string_view target_path) const;
};

// An entry of timestamp/snapshot "meta".
struct MetaFile {
  std::uint64_t version = 1;
  std::optional<std::uint64_t> length;
  std::map<std::string, std::string> hashes;  // algo -> hex; may be empty
};

// An entry of targets "targets".
struct TargetFile {
  std::string path;
  std::uint64_t length = 0;
  std::map<std::string, std::string> hashes;  // at least one
  nlohmann::json custom;                      // null when absent
};

struct Root : Common {
  static constexpr std::string_view kType = "root";
  bool consistent_snapshot = true;
  KeyMap keys;
  std::map<std::string, Role> roles;  // root, timestamp, snapshot, targets
};

struct Timestamp : Common {
  static constexpr std::string_view kType = "timestamp";
  MetaFile snapshot_meta;  // meta["snapshot.json"]
};

struct Snapshot : Common {
  static constexpr std::string_view kType = "snapshot";
  std::map<std::string, MetaFile> meta;  // "targets.json", "<role>.json"
};

struct Targets : Common {
  static constexpr std::string_view kType = "targets";
  std::map<std::string, TargetFile> targets;
  std::optional<Delegations> delegations;
};

struct Signature {
  std::string keyid;
  std::string sig;  // hex
};

// A parsed metadata file: the typed role, its signatures, and the canonical
// bytes of its `signed` object that the signatures cover.
template <typename T>
struct Metadata {
  T signed_;
  std::vector<Signature> signatures;
  std::string canonical_signed;
};

// Parses a whole metadata file (`{"signatures": [...], "signed": {...}}`) of
// role type T. Does not check signatures, versions or expiry. A key twice in
// any JSON object is Errc::malformed ("T metadata JSON has a duplicate key
// "K""); two signatures with one keyid are Errc::bad_field.
template <typename T>
Result<Metadata<T>> parse_metadata(std::string_view bytes);

// Typed role <-> the JSON of its `signed` object.
template <typename T>
Result<T> role_from_json(const nlohmann::json& signed_json);
nlohmann::json to_json(const Root& r);
nlohmann::json to_json(const Timestamp& t);
nlohmann::json to_json(const Snapshot& s);
nlohmann::json to_json(const Targets& t);
nlohmann::json to_json(const TargetFile& f);
nlohmann::json to_json(const MetaFile& m);

// How many distinct keys listed in `role` (and present in `keys`) made a
// valid signature of `canonical_signed`: what verify_threshold() compares
// with the threshold (each key once, by Key::identity()).
std::size_t count_signers(const Role& role, const KeyMap& keys, const std::string& canonical_signed,
                          const std::vector<Signature>& signatures);

// Checks that at least `role.threshold` distinct keys listed in `role` (and
// present in `keys`) signed `canonical_signed`. Each key counts once however
// many signatures it made and however many of the role's key ids name it
// (Key::identity()). Errc::bad_signature naming `role_name` otherwise.
Result<void> verify_threshold(std::string_view role_name, const Role& role, const KeyMap& keys,
                              const std::string& canonical_signed,
                              const std::vector<Signature>& signatures);

// Checks that `bytes` has `length` (if given) and every listed hash. A hash of
// an unsupported algorithm fails (Errc::hash_mismatch), as in the reference
// implementation: an unverifiable pin is not a pin.
Result<void> verify_length_and_hashes(std::string_view what, std::string_view bytes,
                                      std::optional<std::uint64_t> length,
                                      const std::map<std::string, std::string>& hashes);

}  // namespace catalog::tuf
