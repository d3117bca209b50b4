// What the daemon remembers about each package's lifecycle beyond the store's
// trees: which version is current, which were current before (for rollback),
// holds, revocations, removals waiting for their last lease, and when an app
// with an older ONNX Runtime last needed an older version.
//
// Persisted as <state>/lifecycle.json, rewritten atomically (write, fsync,
// rename) after every change, so a crash leaves it as before or as after:
//   {"lifecycle_version": 1, "packages": {"<name>": {
//      "current": "1.3.0", "previous": ["1.2.0", ...],       // newest first
//      "held": true, "hold_reason": "rolled back from 1.3.0",
//      "revoked": {"1.4.0": "no trusted catalog lists it since <time>"},
//      "removing": ["1.1.0"],                                 // go when unleased
//      "older_ort": {"1.2.0": <unix seconds of the last request>}}}}
// Unknown keys are refused; a file that does not parse is set aside as
// lifecycle.json.bad (and logged by the caller), and the lifecycle starts
// empty: every installed package then has its newest version current, which
// is what a store without lifecycle.json (an upgrade from before it) means.
//
// Plain data and its file; no store, no locking (the Broker's lifecycle mutex
// guards it). Versions are the exact texts (the store's directory names).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "catalog/error.hpp"

namespace epbrokerd::core {

struct PackageLifecycle {
  std::string current;                // "" = none chosen yet (the newest usable is)
  std::vector<std::string> previous;  // versions that were current, newest first
  bool held = false;
  std::string hold_reason;                     // "" = held by the admin's hold
  std::map<std::string, std::string> revoked;  // version -> why
  std::vector<std::string> removing;           // removed for new sessions; files go when unleased
  std::map<std::string, std::int64_t> older_ort;  // version -> last request (unix seconds)

  bool empty() const {
    return current.empty() && previous.empty() && !held && revoked.empty() && removing.empty() &&
           older_ort.empty();
  }
  bool is_removing(const std::string& version) const;
  bool is_revoked(const std::string& version) const { return revoked.count(version) != 0; }
  // Makes `version` current: the old current goes first into `previous` (and
  // `version` leaves it), and `version` is no longer removing.
  void make_current(const std::string& version);
  // Drops every mention of `version` (its tree is gone).
  void forget(const std::string& version);

  friend bool operator==(const PackageLifecycle&, const PackageLifecycle&) = default;
};

struct LifecycleState {
  std::map<std::string, PackageLifecycle> packages;

  // The entry of `name`, created empty if missing.
  PackageLifecycle& at(const std::string& name) { return packages[name]; }
  // The entry of `name`, or an empty one.
  PackageLifecycle get(const std::string& name) const;
  // Drops entries with nothing in them.
  void prune();

  friend bool operator==(const LifecycleState&, const LifecycleState&) = default;
};

inline constexpr const char* kLifecycleFileName = "lifecycle.json";
inline constexpr int kLifecycleVersion = 1;

// Text of lifecycle.json (deterministic: sorted keys, indent 2, final newline).
std::string to_text(const LifecycleState& state);
// Parses lifecycle.json. Errors: Errc::malformed (not JSON), Errc::bad_field
// (a wrong key or type, naming it), Errc::unsupported (another version).
catalog::Result<LifecycleState> parse_lifecycle(std::string_view text);

// Reads <state_dir>/lifecycle.json. Missing: an empty state. Unreadable or not
// parsing: the file is renamed to lifecycle.json.bad, the error is returned in
// `problem`, and the state is empty.
LifecycleState load_lifecycle(const std::filesystem::path& state_dir,
                              std::optional<catalog::Error>* problem = nullptr);
// Writes it atomically. Errors: Errc::io / no_space.
catalog::Result<void> save_lifecycle(const std::filesystem::path& state_dir,
                                     const LifecycleState& state);

}  // namespace epbrokerd::core
