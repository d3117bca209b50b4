// The lifecycle's decisions for one package, as pure functions of what is
// installed, what the lifecycle remembers (lifecycle_state.hpp) and the
// configuration: which version is current, what each installed version is kept
// for (or that it can go), and which version a session gets for an app's ORT.
// No I/O and no locking, so every rule is unit-tested on its own
// (tests/daemon/core_version_plan_test.cpp).
//
// Versions always compare by their parsed value (catalog/version.hpp: numeric
// components, a pre-release before its release), never as text.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "catalog/version.hpp"
#include "common/wire.hpp"
#include "daemon/core/lifecycle_state.hpp"

namespace epbrokerd::core {

// One installed version of the package, as the broker sees it now.
struct InstalledVersion {
  catalog::VersionText version;
  catalog::Version ort_min;  // the package's minimum ONNX Runtime
  bool compatible = true;    // with this machine (devices, arch, required libraries)
  std::size_t leases = 0;    // sessions holding it
  bool pinned = false;       // an install of it is committing: never collected
};

struct PlanSettings {
  std::size_t keep_versions = 1;  // previously current versions kept for rollback
  std::chrono::seconds keep_for_older_ort{std::chrono::days(30)};
  bool remove_revoked = false;
  std::int64_t now = 0;  // unix seconds
};

struct VersionPlanEntry {
  std::string version;
  common::VersionRole role = common::VersionRole::current;
  std::string reason;  // for people: why it is kept, or why it goes
  std::size_t leases = 0;
  bool collect = false;  // unleased and kept for nothing: delete it now
};

struct PackagePlan {
  // The version new sessions of an app with a recent ORT get; "" when no
  // installed version is usable (none, all revoked, removed or incompatible).
  std::string current;
  // What `rollback` makes current: the most recently current version kept for
  // rollback ("" when none is kept).
  std::string rollback;
  std::vector<VersionPlanEntry> versions;  // every installed version, newest first
};

// Usable: installed, compatible with the machine, neither revoked nor removing.
// The current version is the lifecycle's current when usable; else the newest
// usable version not above it (a revoked or broken current falls back to the
// version before it), else the newest usable one. With no current recorded (a
// store from before the lifecycle), the newest usable one, and the older usable
// ones count as previously current, newest first.
//
// Roles, in this precedence: current; removing (collected unleased); revoked
// (collected unleased when settings.remove_revoked); rollback (the first
// settings.keep_versions usable versions of `previous`); older_ort (an app with
// an older ORT asked for it within settings.keep_for_older_ort); staged (usable
// and above current: downloaded, or committed by an update that has not switched
// yet, or being installed); leased (kept for nothing else, still leased: goes
// with its last lease); unused (collected).
PackagePlan plan_package(const std::vector<InstalledVersion>& installed,
                         const PackageLifecycle& lifecycle, const PlanSettings& settings);

struct GrantChoice {
  std::string version;         // "" = none
  bool for_older_ort = false;  // not the current version: the app's ORT needs an older one
  std::string reason;          // why none ("" when one was chosen)
};

// The one version a session gets: the newest usable version not above the
// plan's current whose ort_min the app's ORT meets (`app_ort` unset: the
// current version).
GrantChoice grant_version(const std::vector<InstalledVersion>& installed,
                          const PackageLifecycle& lifecycle, const PackagePlan& plan,
                          const std::optional<catalog::Version>& app_ort);

}  // namespace epbrokerd::core
