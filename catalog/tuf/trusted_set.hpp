// The set of metadata this client currently trusts, and the rules (spec 1.0
// section 5) under which new metadata may join it. Pure logic over bytes: no
// fetching, no files. The Updater drives it.
//
// Order of use: create(root) -> update_root()* -> update_timestamp() ->
// update_snapshot() -> update_targets() -> update_delegated_targets()*.
// Each update verifies signatures against what is already trusted, refuses
// rollback, freeze and mix-and-match, and only then replaces the trusted copy.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "catalog/error.hpp"
#include "catalog/tuf/metadata.hpp"

namespace catalog::tuf {

class TrustedSet {
 public:
  // Trusts `root_bytes` as the starting root if it is signed by its own root
  // role threshold. Expiry is not checked here: an expired root may still be
  // the start of a rotation chain. `now` is the fixed reference time of this
  // whole update (all expiry checks use it).
  static Result<TrustedSet> create(std::string_view root_bytes, TimePoint now);

  // Root N -> N+1: must be signed by the thresholds of both the trusted root
  // and itself, and have version exactly N+1.
  Result<void> update_root(std::string_view bytes);
  // After the root chain: Errc::expired if the final root has expired.
  Result<void> check_final_root() const;

  // Accepts a new timestamp. A version equal to the trusted one keeps the
  // trusted copy (returns ok, `*unchanged = true`). Rollback of the timestamp
  // or of the snapshot version it names is Errc::rollback. The new timestamp is
  // stored before the expiry check, so an expired local copy still guards
  // against rollback; the expiry failure is still returned.
  Result<void> update_timestamp(std::string_view bytes, bool* unchanged = nullptr);

  // Accepts a snapshot matching the trusted timestamp's length/hashes (skipped
  // for `trusted_local` copies from our own disk). Any role listed in the
  // trusted snapshot must remain with a version not lower. Stored, then
  // checked: expiry and version == timestamp's snapshot version.
  Result<void> update_snapshot(std::string_view bytes, bool trusted_local = false);

  // Accepts a targets role (top-level "targets" delegated by root, or a
  // delegated role by `delegator`), matching snapshot's length/hashes/version.
  Result<void> update_delegated_targets(std::string_view bytes, const std::string& role_name,
                                        const std::string& delegator);

  const Metadata<Root>& root() const { return root_; }
  const std::optional<Metadata<Timestamp>>& timestamp() const { return timestamp_; }
  const std::optional<Metadata<Snapshot>>& snapshot() const { return snapshot_; }
  // Loaded targets roles by name ("targets" and delegated ones).
  const Metadata<Targets>* targets(const std::string& role) const;
  TimePoint reference_time() const { return now_; }

 private:
  TrustedSet(Metadata<Root> root, TimePoint now) : root_(std::move(root)), now_(now) {}
  Result<void> check_final_timestamp() const;
  Result<void> check_final_snapshot() const;

  Metadata<Root> root_;
  std::optional<Metadata<Timestamp>> timestamp_;
  std::optional<Metadata<Snapshot>> snapshot_;
  std::map<std::string, Metadata<Targets>> targets_;
  TimePoint now_;
};

}  // namespace catalog::tuf
