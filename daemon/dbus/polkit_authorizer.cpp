#include "daemon/dbus/polkit_authorizer.hpp"

#include <grp.h>
#include <pwd.h>

#include <map>
#include <tuple>

#include "daemon/log/log.hpp"

namespace epbrokerd::dbus {

using core::Errc;
using core::fail;

PolkitAuthorizer::PolkitAuthorizer(std::unique_ptr<sdbus::IConnection> conn)
    : conn_(std::move(conn)),
      authority_(sdbus::createProxy(*conn_, "org.freedesktop.PolicyKit1",
                                    "/org/freedesktop/PolicyKit1/Authority")) {
  authority_->finishRegistration();
}

bool PolkitAuthorizer::available(sdbus::IConnection& conn) {
  try {
    auto bus = sdbus::createProxy(conn, "org.freedesktop.DBus", "/org/freedesktop/DBus");
    std::vector<std::string> names;
    bus->callMethod("ListActivatableNames")
        .onInterface("org.freedesktop.DBus")
        .storeResultsTo(names);
    for (const auto& n : names) {
      if (n == "org.freedesktop.PolicyKit1") return true;
    }
    bool has_owner = false;
    bus->callMethod("NameHasOwner")
        .onInterface("org.freedesktop.DBus")
        .withArguments(std::string("org.freedesktop.PolicyKit1"))
        .storeResultsTo(has_owner);
    return has_owner;
  } catch (const sdbus::Error&) {
    return false;
  }
}

core::Result<void> PolkitAuthorizer::check(const core::RequestContext& ctx, core::Action action) {
  if (ctx.uid == 0) return {};
  // 1. Subject: the caller's connection, so polkit judges the process behind it.
  using Subject = sdbus::Struct<std::string, std::map<std::string, sdbus::Variant>>;
  Subject subject{std::string("system-bus-name"),
                  std::map<std::string, sdbus::Variant>{{"name", sdbus::Variant(ctx.sender)}}};
  std::map<std::string, std::string> details;
  const std::uint32_t allow_user_interaction = 1;
  sdbus::Struct<bool, bool, std::map<std::string, std::string>> result;
  // 2. Ask (may wait for an authentication agent; bounded by the bus timeout).
  try {
    std::lock_guard lock(mu_);
    authority_->callMethod("CheckAuthorization")
        .onInterface("org.freedesktop.PolicyKit1.Authority")
        .withArguments(subject, std::string(core::action_id(action)), details,
                       allow_user_interaction, std::string())
        .storeResultsTo(result);
  } catch (const sdbus::Error& e) {
    log::warn("polkit: cannot check {} for {} (uid {}): {}: {}", core::action_id(action),
              ctx.sender, ctx.uid, e.getName(), e.getMessage());
    return fail(Errc::NotAuthorized, "polkit could not be asked about " +
                                         std::string(core::action_id(action)) + ": " +
                                         e.getMessage());
  }
  if (std::get<0>(result)) {
    log::debug("polkit: {} granted to {} (uid {})", core::action_id(action), ctx.sender, ctx.uid);
    return {};
  }
  log::info("polkit: {} refused to {} (uid {}){}", core::action_id(action), ctx.sender, ctx.uid,
            std::get<1>(result) ? " (authentication required)" : "");
  return fail(Errc::NotAuthorized, "polkit refused " + std::string(core::action_id(action)) +
                                       " for uid " + std::to_string(ctx.uid) +
                                       (std::get<1>(result) ? " (authentication required)" : ""));
}

std::vector<uid_t> group_members(const std::string& group) {
  std::vector<uid_t> out;
  if (group.empty()) return out;
  const struct group* g = ::getgrnam(group.c_str());
  if (g == nullptr) return out;
  for (char** m = g->gr_mem; m != nullptr && *m != nullptr; ++m) {
    if (const struct passwd* pw = ::getpwnam(*m)) out.push_back(pw->pw_uid);
  }
  // Users whose primary group it is.
  setpwent();
  while (const struct passwd* pw = ::getpwent()) {
    if (pw->pw_gid == g->gr_gid) out.push_back(pw->pw_uid);
  }
  endpwent();
  return out;
}

}  // namespace epbrokerd::dbus
