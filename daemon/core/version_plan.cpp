#include "daemon/core/version_plan.hpp"

#include <algorithm>
#include <ctime>

namespace epbrokerd::core {

using common::VersionRole;

namespace {

bool usable(const InstalledVersion& v, const PackageLifecycle& lc) {
  return v.compatible && !lc.is_revoked(v.version.text) && !lc.is_removing(v.version.text);
}

const InstalledVersion* find(const std::vector<InstalledVersion>& installed,
                             const std::string& text) {
  for (const auto& v : installed) {
    if (v.version.text == text) return &v;
  }
  return nullptr;
}

// Newest first; equal values (e.g. "1.2" and "1.2.0") by text, for a stable order.
std::vector<const InstalledVersion*> newest_first(const std::vector<InstalledVersion>& installed) {
  std::vector<const InstalledVersion*> out;
  for (const auto& v : installed) out.push_back(&v);
  std::sort(out.begin(), out.end(), [](const auto* a, const auto* b) {
    if (auto c = a->version.value <=> b->version.value; c != 0) return c > 0;
    return a->version.text > b->version.text;
  });
  return out;
}

std::string date_of(std::int64_t unix_seconds) {
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

std::string current_of(const std::vector<const InstalledVersion*>& sorted,
                       const PackageLifecycle& lc) {
  const InstalledVersion* recorded = nullptr;
  for (const auto* v : sorted) {
    if (v->version.text == lc.current) recorded = v;
  }
  if (recorded && usable(*recorded, lc)) return recorded->version.text;
  if (!lc.current.empty()) {
    // A revoked, removed or no longer compatible current: the newest usable
    // version not above it, as a rollback would pick.
    auto cur = catalog::parse_version(lc.current);
    for (const auto* v : sorted) {
      if (usable(*v, lc) && cur && v->version.value <= *cur) return v->version.text;
    }
  }
  for (const auto* v : sorted) {
    if (usable(*v, lc)) return v->version.text;
  }
  return "";
}

}  // namespace

PackagePlan plan_package(const std::vector<InstalledVersion>& installed, const PackageLifecycle& lc,
                         const PlanSettings& settings) {
  PackagePlan plan;
  const auto sorted = newest_first(installed);
  plan.current = current_of(sorted, lc);
  const InstalledVersion* current = find(installed, plan.current);

  // The versions kept for rollback: the first keep_versions usable ones of
  // `previous` (with none recorded, the usable ones below current).
  std::vector<std::string> previous = lc.previous;
  if (lc.current.empty() && current) {
    for (const auto* v : sorted) {
      if (v->version.value < current->version.value) previous.push_back(v->version.text);
    }
  }
  std::vector<std::string> rollback;
  for (const auto& text : previous) {
    if (rollback.size() >= settings.keep_versions) break;
    const auto* v = find(installed, text);
    if (v && usable(*v, lc) && text != plan.current &&
        std::find(rollback.begin(), rollback.end(), text) == rollback.end()) {
      rollback.push_back(text);
    }
  }

  if (!rollback.empty()) plan.rollback = rollback.front();

  for (const auto* v : sorted) {
    VersionPlanEntry e;
    e.version = v->version.text;
    e.leases = v->leases;
    const bool free = v->leases == 0 && !v->pinned;
    const auto older = lc.older_ort.find(e.version);
    if (e.version == plan.current) {
      e.role = VersionRole::current;
      e.reason = "new sessions get it";
    } else if (lc.is_removing(e.version)) {
      e.role = VersionRole::removing;
      e.reason = "removed; its files go when the last session using it ends";
      e.collect = free;
    } else if (lc.is_revoked(e.version)) {
      e.role = VersionRole::revoked;
      e.reason = lc.revoked.at(e.version);
      e.collect = settings.remove_revoked && free;
    } else if (std::find(rollback.begin(), rollback.end(), e.version) != rollback.end()) {
      e.role = VersionRole::rollback;
      e.reason = "kept for rollback (keep_versions " + std::to_string(settings.keep_versions) + ")";
    } else if (v->compatible && older != lc.older_ort.end() &&
               settings.now - older->second <
                   static_cast<std::int64_t>(settings.keep_for_older_ort.count())) {
      e.role = VersionRole::older_ort;
      e.reason = "kept for apps whose ONNX Runtime is older than the current version needs" +
                 (current ? " (" + catalog::to_string(current->ort_min) + ")" : std::string()) +
                 "; last asked " + date_of(older->second);
    } else if (v->compatible && current && v->version.value > current->version.value) {
      e.role = VersionRole::staged;
      e.reason = "newer than current; `epbrokerctl update` makes it current";
    } else if (v->pinned) {
      e.role = VersionRole::staged;
      e.reason = "being installed";
    } else if (v->leases > 0) {
      e.role = VersionRole::leased;
      e.reason = "no longer needed; removed when the last of its " + std::to_string(v->leases) +
                 " session(s) ends";
    } else {
      e.role = VersionRole::unused;
      e.reason = v->compatible ? "no longer needed" : "not compatible with this machine";
      e.collect = true;
    }
    plan.versions.push_back(std::move(e));
  }
  return plan;
}

GrantChoice grant_version(const std::vector<InstalledVersion>& installed,
                          const PackageLifecycle& lc, const PackagePlan& plan,
                          const std::optional<catalog::Version>& app_ort) {
  GrantChoice out;
  const InstalledVersion* current = find(installed, plan.current);
  if (!current) {
    out.reason = "no usable version is installed";
    return out;
  }
  if (!app_ort || current->ort_min <= *app_ort) {
    out.version = plan.current;
    return out;
  }
  for (const auto* v : newest_first(installed)) {
    if (!usable(*v, lc) || v->version.value > current->version.value) continue;
    if (v->ort_min <= *app_ort) {
      out.version = v->version.text;
      out.for_older_ort = true;
      return out;
    }
  }
  out.reason = "needs ONNX Runtime >= " + catalog::to_string(current->ort_min) + ", app has " +
               catalog::to_string(*app_ort);
  return out;
}

}  // namespace epbrokerd::core
