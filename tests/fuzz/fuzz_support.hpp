// What the libFuzzer targets in tests/fuzz and their seed generator share: fixed
// test keys (so that seeds signed once verify in every later process), the small
// TUF repository those keys sign, input splitting and one scratch directory per
// process.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/crypto/signing_key.hpp"
#include "catalog/tuf/metadata.hpp"

namespace epbroker_fuzz {

// The reference time of every TUF check in the fuzzers (the tests' kNow), and
// the update time: one hour later.
inline const catalog::tuf::TimePoint kNow{std::chrono::sys_days{std::chrono::year{2030} / 1 / 1}};
inline const catalog::tuf::TimePoint kUpdateTime = kNow + std::chrono::hours{1};

// Fixed Ed25519 test keys (public knowledge: they protect nothing), by role name:
// "root", "root2" (the rotated root), "timestamp", "snapshot", "targets",
// "vendor" (a delegated targets role). Aborts if OpenSSL refuses one.
catalog::crypto::PrivateKey fixed_key(std::string_view role);
std::vector<std::string> fixed_key_roles();

// The EP metadata the fuzz repository's targets carry: {"epbroker": {...}} text,
// the full example of tests/unit/ep_metadata_test.cpp (with an integer in place
// of its float, which canonical JSON, and so TUF signing, has no form for).
std::string_view sample_ep_custom_text();

// One published state of the fuzz repository: path (as Repository::publish
// writes it, "metadata/1.root.json", ...) -> bytes.
using Files = std::map<std::string, std::string>;

// The fuzz repository, deterministic given `pin_hashes`: publish #1 (root v1,
// a target and a delegation to "vendor" with one target of its own), publish #2
// (one more target), publish #3 (root rotated to "root2"). Returns the files
// of each publish in order (each a complete view: later files overwrite
// earlier ones of the same name). Aborts on any error (a harness bug).
std::vector<Files> fuzz_repository(bool pin_hashes);

// The root every TUF fuzzer trusts first: metadata/1.root.json of the repository.
const std::string& trusted_root();

// Splits `data` at NUL bytes into at most `max_parts` parts (the last keeps any
// further NULs). JSON and the config files cannot hold a raw NUL, so it is a
// free separator for inputs of several documents.
std::vector<std::string_view> split_parts(std::string_view data, std::size_t max_parts);

// A private directory for this process, created on first use under $TMPDIR (or
// /tmp) and removed with its contents at normal exit.
const std::filesystem::path& process_temp_dir();

// Whether EPBROKER_FUZZ_VERBOSE is set: the harnesses then say on stderr how
// far each input got (to check seeds by hand: ./fuzz_X SEED_FILE).
bool verbose();

// Aborts the process with `what` on stderr: a broken invariant is a finding.
[[noreturn]] void finding(std::string_view what);

}  // namespace epbroker_fuzz
