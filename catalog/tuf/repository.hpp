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
//   staged/<role>.json  metadata signed by fewer keys than its threshold (or
//                       waiting for the snapshot and timestamp keys): not yet
//                       seen by clients; more signatures are added to it
//                       (sign_staged) until it can be published
//
// Separate signers: a role's keys need not sit together. publish_or_stage()
// signs with the keys it has, keeps the signatures already collected for the
// same content, publishes what meets its threshold and stages the rest. A root
// is published only when both the new root's threshold and the trusted (last
// published) root's threshold are met, and only with the snapshot and
// timestamp keys at hand: nothing after a waiting root is published, since
// clients would check it against the new root.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "catalog/crypto/signing_key.hpp"
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
                                   bool consistent_snapshot = true,
                                   crypto::KeyType key_type = crypto::KeyType::ed25519);

  // A new repository whose root keys are held elsewhere: `root_keys` (public
  // keys) with `root_threshold`; fresh keys of `key_type` for the other roles.
  // Root v1 can only be staged until its holders sign it (sign_staged).
  static Result<Repository> create_with_root_keys(TimePoint now,
                                                  const std::vector<crypto::PublicKey>& root_keys,
                                                  std::uint64_t root_threshold,
                                                  bool consistent_snapshot,
                                                  crypto::KeyType key_type);

  // Reads the latest published state from `dir` (metadata/ as publish writes
  // it), then what staged/ holds on top of it (a staged role replaces its
  // published state, with the signatures collected so far). A repository
  // whose root v1 is still staged loads as never published. Private keys are
  // added separately with add_signing_key().
  static Result<Repository> load(const std::filesystem::path& dir);

  // Makes `key` available for signing whatever role lists its public key
  // (under any key id and with the scheme the metadata names for it).
  void add_signing_key(crypto::PrivateKey key);
  // Loaded keys by the key id of their default TUF form (Key::from_public).
  const std::map<std::string, crypto::PrivateKey>& signing_keys() const { return keys_; }
  // The private key loaded for the key `keyid` names (matched by public key,
  // so any key id or scheme of it), or nullptr.
  const crypto::PrivateKey* signing_key_for(const std::string& keyid) const;

  // Adds or replaces a target in `role` ("targets" or a delegated role) from its bytes.
  Result<void> add_target(const std::string& path, std::string bytes,
                          nlohmann::json custom = nullptr, const std::string& role = "targets");
  Result<void> remove_target(const std::string& path, const std::string& role = "targets");

  // Delegates `paths` from top-level targets to a new role signed by `key`.
  // Role names are limited to [A-Za-z0-9._+-] (not "." or ".."), so that they
  // need no quoting in any client's URLs or file names (Errc::invalid_argument).
  Result<void> add_delegation(const std::string& name, const std::vector<std::string>& paths,
                              crypto::PrivateKey key, bool terminating = false);
  // The same with only the role's public key (the vendor keeps the private
  // one): the role's metadata is staged until the vendor signs it.
  Result<void> add_delegation(const std::string& name, const std::vector<std::string>& paths,
                              const crypto::PublicKey& key, bool terminating = false);

  // Replaces every key of `role` with `new_key` and bumps root. For "root" the
  // new root is signed by both the old and the new keys, as clients require.
  Result<void> rotate(const std::string& role, crypto::PrivateKey new_key);

  // What publish_or_stage() did with each role it signed.
  struct RoleOutcome {
    std::string role;
    std::uint64_t version = 0;
    std::size_t signers = 0;  // distinct valid signatures of the role's keys
    std::uint64_t threshold = 0;
    // A new root must also meet the trusted root's threshold (0 / 0 for v1).
    std::size_t trusted_signers = 0;
    std::uint64_t trusted_threshold = 0;
    bool published = false;  // false: written to staged/ROLE.json
  };
  struct PublishReport {
    std::vector<RoleOutcome> roles;
    bool snapshot_published = false;  // snapshot and timestamp went out
    std::string waiting_for;          // why something stayed staged ("" if nothing did)
  };

  // Like publish(), to the repository directory `dir`, but a role whose
  // threshold the loaded keys cannot meet is staged instead of refused, and
  // so is everything when the snapshot or timestamp keys are not loaded.
  // Published roles' staged files are removed. Errc::bad_signature only when
  // no key at all was given for a role that needs signing.
  Result<PublishReport> publish_or_stage(const std::filesystem::path& dir, TimePoint now);

  // Adds `key`'s signature to the staged metadata of `role` (keeping the
  // others), then publish_or_stage(). Errc::not_found when nothing of `role`
  // is staged; Errc::invalid_argument when `key` is not one of the role's
  // keys (for root: of the new or the trusted root).
  Result<PublishReport> sign_staged(const std::filesystem::path& dir, const std::string& role,
                                    crypto::PrivateKey key, TimePoint now);

  // Whether `role` has staged metadata (loaded from staged/).
  bool is_staged(const std::string& role) const { return restaged_.contains(role); }

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
  Result<void> publish_unstaged(const FileWriter& out, TimePoint now, bool stage,
                                PublishReport& report);
  Result<std::string> sign_json(const std::string& role, const nlohmann::json& signed_json,
                                const std::vector<std::string>& keyids,
                                const std::vector<std::string>& extra_keyids = {}) const;
  bool can_sign(const std::string& role) const;
  Result<void> load_staged(const std::filesystem::path& dir);
  // Publishes or stages one role; appends its outcome to `report`.
  Result<bool> settle_role(const FileWriter& out, const std::string& role, bool stage, bool online,
                           PublishReport& report);
  Result<void> write_snapshot_and_timestamp(const FileWriter& out, TimePoint now);

  // The metadata's key for `keyid` (root, trusted root or delegations), or nullptr.
  const Key* find_key(const std::string& keyid) const;

  std::map<std::string, crypto::PrivateKey> keys_;    // default keyid -> private key
  std::map<std::string, std::string> pending_files_;  // target files not yet written
  std::set<std::string> dirty_roles_;                 // targets roles changed
  std::set<std::string> published_;                   // roles already published once
  bool root_dirty_ = false;
  std::vector<std::string> previous_root_keyids_;  // extra signers for a root rotation
  // The root clients trust now (the last published), for checking root N+1.
  std::optional<Root> trusted_root_;
  // Roles whose state came from staged/ (not yet published): their version is
  // already the next one; the signatures collected for that content.
  std::set<std::string> restaged_;
  // New roles whose keys are all held elsewhere: staged unsigned, not refused.
  std::set<std::string> awaiting_holders_;
  std::map<std::string, std::vector<Signature>> staged_signatures_;
  std::map<std::string, std::string> staged_canonical_;
};

}  // namespace catalog::tuf
