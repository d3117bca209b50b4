// The TUF client update workflow (spec 1.0 section 5) over an injected Fetcher.
//
// One Updater is one update: it takes its reference time once, at
// construction, and uses it for every expiry check. Trusted metadata is
// persisted in `metadata_dir` under non-versioned names (root.json,
// timestamp.json, snapshot.json, targets.json, <role>.json), each replaced
// atomically once verified, and the root chain as <N>.root.json.
//
// Role names are data: a delegated role may be called "a/b", ".." or "é x%".
// Wherever a name becomes a URL path segment or a file name it is quoted with
// url_quote(name, false), as python-tuf's ngclient does (parse.quote(name, "")):
// "<base>/<N>.a%2Fb.json", metadata_dir/"a%2Fb.json". The quoting is
// injective and never yields "/", so no two roles share a file and none
// leaves metadata_dir; a delegated role whose file would be a root chain file
// ("7.root") fails to load (Errc::unsupported).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "catalog/error.hpp"
#include "catalog/tuf/fetcher.hpp"
#include "catalog/tuf/metadata.hpp"
#include "catalog/tuf/mirrors.hpp"
#include "catalog/tuf/trusted_set.hpp"

namespace catalog::tuf {

struct UpdaterConfig {
  std::filesystem::path metadata_dir;  // must contain a trusted root.json
  // The primary mirror.
  std::string metadata_base_url;  // "<base>/<N>.root.json", "<base>/timestamp.json", ...
  std::string target_base_url;    // "<base>/<hash>.<name>" with consistent snapshots
  // Further mirrors, tried in this order after the primary. Every fetch runs
  // through try_mirrors() (catalog/tuf/mirrors.hpp, which states which failures
  // fall through to the next mirror): a metadata file is fetched and verified per
  // mirror, so one mirror's refused bytes (bad signature, rollback, wrong hash,
  // ...) send us to the next; a target's length/hash failure likewise, after its
  // partial download is discarded.
  std::vector<Mirror> mirrors;
  // Retries of transient failures (Errc::network) per fetch: metadata is asked
  // again whole, a target resumes from its partial download.
  RetryPolicy retry;
  // Polled before every request, between a target's chunks and during backoff
  // waits; true stops the work with Errc::cancelled. Empty: never cancelled.
  CancelPredicate cancel;
  std::filesystem::path target_dir;  // default download location
  // Reference time for expiry; defaults to the wall clock at construction.
  std::optional<TimePoint> now;

  // Caps (bytes) for metadata whose length nothing signed pins yet.
  std::uint64_t max_root_length = 512'000;
  std::uint64_t max_timestamp_length = 16'384;
  std::uint64_t max_snapshot_length = 2'000'000;
  std::uint64_t max_targets_length = 5'000'000;
  std::uint32_t max_root_rotations = 256;
  // Roles one search for a target path visits besides top-level targets
  // (python-tuf's max_delegations); a path found only further is not found.
  std::uint32_t max_delegations = 32;
  // Roles list_targets() loads, top-level targets included. It needs every
  // role, and a succinct_roles delegation is 2^bit_length of them (RSTUF's
  // default: 256): the roles past this cap are reported failed (Errc::too_many),
  // and a succinct delegation with more bins than the cap still leaves fails as
  // a whole (FailedRole "<first bin>..<last bin>", paths {"hash:*"}).
  std::uint32_t max_listed_roles = 4096;
};

// A delegated targets role that list_targets() could not load: unreachable,
// refused by a TUF check (signature, expiry, version, hashes), missing from
// snapshot, or past UpdaterConfig::max_listed_roles (Errc::too_many).
struct FailedRole {
  std::string name;
  std::string delegator;           // the role whose delegation names it
  std::vector<std::string> paths;  // delegation_paths() of the delegation naming it
  Error error;
};

// What a delegation is trusted for, as FailedRole shows it: its "paths", or
// "hash:<prefix>" per "path_hash_prefixes" entry; for a hash bin,
// "hash:<hex prefix>" when its bit length is a multiple of 4, else
// "hash-bits:<binary prefix>".
std::vector<std::string> delegation_paths(const DelegatedRole& d);

// What list_targets() found: the targets it could resolve, and what it could not.
struct TargetListing {
  // Every target get_targetinfo() would return, of the paths that roles which
  // did load list (the same rules as all_targets()).
  std::vector<TargetFile> targets;
  // The delegated roles that failed, in the order the search met them.
  std::vector<FailedRole> failed;
  // Paths a loaded role lists whose search meets a failed role before it ends
  // (path -> that role): unknown, neither listed nor absent.
  std::map<std::string, std::string> withheld;
};

class Updater {
 public:
  // `fetcher` must outlive the Updater.
  Updater(UpdaterConfig config, Fetcher& fetcher);

  // Runs the whole workflow: root chain, timestamp, snapshot, top-level
  // targets. Ok only if every step succeeded. May be called once.
  Result<void> refresh();

  // Finds `target_path` in top-level targets or, depth-first by priority, in
  // delegated roles whose path patterns cover it (loading those roles as
  // needed). Refreshes first if refresh() was not called. Errc::not_found if
  // no trusted role lists it. A role the search meets that fails to load fails
  // the lookup with its error: the search never passes over it to a later role.
  Result<TargetFile> get_targetinfo(const std::string& target_path);

  // Every target the top-level targets role and all reachable delegated roles
  // list (loading them), as get_targetinfo() resolves it: a path a role lists
  // outside what its delegations cover, or behind a terminating delegation,
  // is left out; earlier (higher-priority) roles win on duplicates.
  // Fails (with the first failed role's error) if any reachable delegated role
  // fails to load; see list_targets() for the listing that tolerates that.
  Result<std::vector<TargetFile>> all_targets();

  // all_targets() that does not give up on a failing delegated role (issue 17,
  // item 6): such a role (and every role delegated under it, which cannot even be
  // seen) is recorded in `failed`, and the listing goes on with the others. A
  // path whose search meets a failed role before any role lists it is withheld,
  // never resolved further: a role later in the search must not supply a target
  // for paths that a failed role was delegated first (else an attacker who
  // breaks one role would hand its paths to a lower-priority one). The bins of
  // a succinct_roles delegation are listed like other roles, lowest bin first.
  // Fails only when refresh() fails or on Errc::cancelled.
  Result<TargetListing> list_targets();

  // After list_targets() (or any other search): the failed delegated role whose
  // failure makes `target_path` unknown (its search meets that role before any
  // role lists the path), or nullopt when the search ends without one (listed,
  // or not listed). Loads no role that failed before. Errc only on cancel or a
  // failed refresh.
  Result<std::optional<std::string>> withheld_by(const std::string& target_path);

  // Where download_target() stores `info` by default: target_dir/<quoted path>.
  std::filesystem::path default_path(const TargetFile& info) const;

  // `path` (default: default_path) if a file is there whose length and hashes
  // match `info`, else nullopt.
  std::optional<std::filesystem::path> find_cached_target(
      const TargetFile& info, std::optional<std::filesystem::path> path = {}) const;

  // Streams the target into its partial file (partial_path()), capped at the
  // signed length and hashed on the fly, and renames it to `path` (default:
  // default_path) only if length and every hash match.
  // Resume: an existing partial file is hashed and the download continues from
  // its length (Fetcher::fetch_from); a server that sends the whole file instead
  // restarts it from zero. If the finished file fails its length or hashes after
  // a resume, the prefix may be what is wrong: it is discarded and the mirror
  // asked once more from zero before the mirror counts as failed. A complete
  // partial file that verifies needs no request at all.
  // Failure: the partial file is kept only when the download was interrupted
  // (Errc::network after the retries, Errc::cancelled), so a later call resumes;
  // any other failure (a mirror's bytes refused, not_found, local I/O) removes it.
  // A second download of the same target while one runs (any process) fails
  // with Errc::busy.
  Result<std::filesystem::path> download_target(const TargetFile& info,
                                                std::optional<std::filesystem::path> path = {});

  // The partial file download_target() keeps beside `path` (default:
  // default_path): named by the target's SHA-256 (else its first listed hash),
  // "<hex>.part", so a download never resumes another target's prefix.
  std::filesystem::path partial_path(const TargetFile& info,
                                     std::optional<std::filesystem::path> path = {}) const;

  const TrustedSet* trusted() const { return trusted_ ? &*trusted_ : nullptr; }

 private:
  Result<void> load_root();
  Result<void> update_root_chain();
  Result<void> update_timestamp();
  Result<void> update_snapshot();
  // A targets role, loaded once per update: a failure is remembered and
  // returned again (except Errc::cancelled).
  Result<const Metadata<Targets>*> load_targets(const std::string& role,
                                                const std::string& delegator);
  Result<const Metadata<Targets>*> load_targets_once(const std::string& role,
                                                     const std::string& delegator);
  // The search of spec 5.6.7 for `target_path`: the target, or nothing when no
  // role lists it. A role failing to load ends the search: with `tolerate`, as
  // `*withheld_by` = that role (ok, no target); otherwise with its error.
  Result<std::optional<TargetFile>> search(const std::string& target_path, bool tolerate,
                                           std::string* withheld_by);
  Result<void> persist(const std::string& role, const std::string& bytes) const;
  std::optional<std::string> read_local(const std::string& role) const;
  std::string metadata_url(std::size_t mirror, const std::string& role,
                           std::optional<std::uint64_t> version) const;
  // Fetches `role` (capped) from the mirrors in order until `accept` (the
  // verification) takes the bytes; returns them.
  Result<std::string> fetch_metadata(const std::string& role, std::optional<std::uint64_t> version,
                                     std::uint64_t cap,
                                     const std::function<Result<void>(const std::string&)>& accept);

  UpdaterConfig config_;
  std::vector<Mirror> mirrors_;  // primary first
  Fetcher& fetcher_;
  TimePoint now_;
  std::optional<TrustedSet> trusted_;
  bool refreshed_ = false;
  // Delegated roles that failed to load in this update, and why: asked only
  // once (each ask may cost every mirror's retries).
  std::map<std::string, Error> failed_roles_;
  // Roles whose succinct_roles delegation list_targets() could not load whole
  // (more bins than max_listed_roles left), and that error: every bin they
  // delegate fails with it in this update.
  std::map<std::string, Error> unlisted_bins_;
};

// Percent-encodes every byte except the unreserved A-Z a-z 0-9 - . _ ~ (and '/'
// if `keep_slash`) as %XX, upper-case hex; UTF-8 stays bytes. With keep_slash
// false this is Python's urllib.parse.quote(s, safe=""), which python-tuf's
// ngclient applies to role names in URLs and local file names and to target
// paths in local file names.
std::string url_quote(std::string_view s, bool keep_slash);

}  // namespace catalog::tuf
