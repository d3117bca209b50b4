// A TUF repository as its publisher sees it: the four top-level roles (plus
// delegated targets roles), the private keys that sign them, and the rules for
// publishing a new consistent state. Used by `epbroker-publish` and by tests
// that need to build honest and hostile repositories.
//
// Layout written by publish():
//   metadata/N.root.json (every version) and root.json (latest)
//   metadata/timestamp.json
//   metadata/N.snapshot.json, N.targets.json, N.<role>.json   (consistent snapshots)
//   metadata/snapshot.json, targets.json, <role>.json          (otherwise)
//   targets/<dir>/<sha256>.<name> (consistent) or targets/<path>
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "catalog/crypto/ed25519.hpp"
#include "catalog/error.hpp"
#include "catalog/tuf/metadata.hpp"

namespace catalog::tuf {

// Where published files go: (path relative to the repository root, bytes).
using FileWriter = std::function<Result<void>(const std::string& rel, const std::string& bytes)>;

// Writes under `root` with atomic replacement, creating directories.
FileWriter directory_writer(const std::filesystem::path& root);

class Repository {
 public:
  Root root;
  Timestamp timestamp;
  Snapshot snapshot;
  Targets targets;
  std::map<std::string, Targets> delegated;  // role name -> metadata

  // Whether snapshot/timestamp pin length and hashes of what they list (in
  // addition to versions). On by default; tests turn it off to reach the
  // version checks behind the hash checks.
  bool pin_hashes = true;

  // A new repository: one fresh key per role except `root_keys` keys for root
  // (threshold `root_threshold`). Versions 1, expiries `now + lifetimes`.
  static Result<Repository> create(TimePoint now, std::size_t root_keys = 1,
                                   std::uint64_t root_threshold = 1,
                                   bool consistent_snapshot = true);

  // Reads the latest published state from `dir` (metadata/ as publish writes
  // it). Private keys are added separately with add_signing_key().
  static Result<Repository> load(const std::filesystem::path& dir);

  // Makes `key` available for signing whatever role lists its key id.
  void add_signing_key(crypto::PrivateKey key);
  const std::map<std::string, crypto::PrivateKey>& signing_keys() const { return keys_; }

  // Adds or replaces a target in `role` ("targets" or a delegated role) from its bytes.
  Result<void> add_target(const std::string& path, std::string bytes,
                          nlohmann::json custom = nullptr, const std::string& role = "targets");
  Result<void> remove_target(const std::string& path, const std::string& role = "targets");

  // Delegates `paths` from top-level targets to a new role signed by `key`.
  Result<void> add_delegation(const std::string& name, const std::vector<std::string>& paths,
                              crypto::PrivateKey key, bool terminating = false);

  // Replaces every key of `role` with `new_key` and bumps root. For "root" the
  // new root is signed by both the old and the new keys, as clients require.
  Result<void> rotate(const std::string& role, crypto::PrivateKey new_key);

  // Publishes what changed since the last publish (or load): bumps the
  // version and expiry of the root (if changed) and of each changed targets
  // role, always of snapshot and timestamp, signs everything, refuses to
  // publish a role whose signing threshold the loaded keys cannot meet, and
  // only then writes target files, root, targets roles, snapshot and, last,
  // timestamp. Nothing is written if any signing step fails. Versions start
  // at 1 on first publish.
  Result<void> publish(const FileWriter& out, TimePoint now);
  // Only snapshot + timestamp (new versions and expiry), e.g. from cron.
  Result<void> publish_timestamp(const FileWriter& out, TimePoint now);

  // Signed envelope bytes of a role in its current state (no version bump).
  Result<std::string> sign_role(const std::string& role) const;

  // Lifetimes used by publish().
  std::chrono::seconds root_lifetime{std::chrono::days{365}};
  std::chrono::seconds targets_lifetime{std::chrono::days{90}};
  std::chrono::seconds snapshot_lifetime{std::chrono::days{7}};
  std::chrono::seconds timestamp_lifetime{std::chrono::days{1}};

 private:
  Result<void> publish_unstaged(const FileWriter& out, TimePoint now);
  Result<std::string> sign_json(const nlohmann::json& signed_json,
                                const std::vector<std::string>& keyids,
                                const std::vector<std::string>& extra_keyids = {}) const;
  Result<void> write_targets_role(const FileWriter& out, const std::string& role, TimePoint now);
  Result<void> write_snapshot_and_timestamp(const FileWriter& out, TimePoint now);
  Result<void> write_root(const FileWriter& out);

  std::map<std::string, crypto::PrivateKey> keys_;    // keyid -> private key
  std::map<std::string, std::string> pending_files_;  // target files not yet written
  std::set<std::string> dirty_roles_;                 // targets roles changed
  std::set<std::string> published_;                   // roles already published once
  bool root_dirty_ = false;
  std::vector<std::string> previous_root_keyids_;  // extra signers for a root rotation
};

}  // namespace catalog::tuf
