#include "daemon/dbus/polkit_authorizer.hpp"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <map>
#include <tuple>
#include <utility>

#include "daemon/log/log.hpp"

namespace epbrokerd::dbus {

using core::Errc;
using core::fail;

namespace {

constexpr const char* kAuthorityInterface = "org.freedesktop.PolicyKit1.Authority";
// CheckAuthorization's flags.
constexpr std::uint32_t kAllowUserInteraction = 1;
// polkitd's refusal to answer a caller that is neither root nor an owner of the
// action (dbus/org.epbroker.policy says why the daemon's user owns them).
constexpr std::string_view kPolkitNotAuthorized = "org.freedesktop.PolicyKit1.Error.NotAuthorized";

}  // namespace

PolkitAuthorizer::PolkitAuthorizer(sdbus::IConnection& conn, std::chrono::seconds timeout)
    : timeout_(timeout),
      authority_(sdbus::createProxy(conn, "org.freedesktop.PolicyKit1",
                                    "/org/freedesktop/PolicyKit1/Authority")) {}

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
  return decide(ctx, action, true);
}

core::Result<void> PolkitAuthorizer::check_quietly(const core::RequestContext& ctx,
                                                   core::Action action) {
  return decide(ctx, action, false);
}

core::Result<void> PolkitAuthorizer::decide(const core::RequestContext& ctx, core::Action action,
                                            bool interactive) {
  if (ctx.uid == 0) return {};
  const std::string id(core::action_id(action));
  if (!ctx.authorization) {
    // A call the D-Bus layer does not run through run_authorized(): nobody asks.
    return fail(Errc::NotAuthorized, id + ": polkit cannot be asked for this request");
  }
  if (const auto* answer = ctx.authorization->answer(action)) return *answer;
  ctx.authorization->need(action, interactive);
  return fail(Errc::NotAuthorized, id + ": polkit has not answered yet");
}

void PolkitAuthorizer::ask(const core::RequestContext& ctx,
                           core::CallAuthorization::Question question,
                           std::function<void(core::Result<void>)> done) {
  if (ctx.uid == 0) {
    done({});
    return;
  }
  auto answer = std::make_shared<std::function<void(core::Result<void>)>>(std::move(done));
  const std::string action(core::action_id(question.action));
  // 1. Subject: the caller's connection, so polkit judges the process behind it.
  using Subject = sdbus::Struct<std::string, std::map<std::string, sdbus::Variant>>;
  Subject subject{std::string("system-bus-name"),
                  std::map<std::string, sdbus::Variant>{{"name", sdbus::Variant(ctx.sender)}}};
  const std::string cancel_id =
      "epbrokerd-" + std::to_string(::getpid()) + "-" + std::to_string(next_check_++);
  const auto asked_at = std::chrono::steady_clock::now();
  // 2. Ask, and answer the caller when polkit answers (on the bus thread) or the
  //    time is up (sd-bus then ends the call with NoReply).
  auto on_reply = [this, answer, action, cancel_id, asked_at, sender = ctx.sender, uid = ctx.uid](
                      const sdbus::Error* error,
                      sdbus::Struct<bool, bool, std::map<std::string, std::string>> result) {
    if (error != nullptr) {
      const bool timed_out = error->getName() == "org.freedesktop.DBus.Error.NoReply" &&
                             std::chrono::steady_clock::now() - asked_at >= timeout_;
      if (timed_out) {
        // Closes an authentication dialog still waiting for the user.
        try {
          authority_->callMethod("CancelCheckAuthorization")
              .onInterface(kAuthorityInterface)
              .withArguments(cancel_id)
              .dontExpectReply();
        } catch (const sdbus::Error&) {
          // polkit is gone: nothing to cancel.
        }
        log::warn("polkit: no answer about {} for {} (uid {}) within {} s: refused", action, sender,
                  uid, timeout_.count());
        (*answer)(fail(Errc::NotAuthorized, "polkit did not answer about " + action + " within " +
                                                std::to_string(timeout_.count()) + " s"));
        return;
      }
      if (error->getName() == kPolkitNotAuthorized) {
        // polkitd answers about another user's process only to root and to the
        // action's owners: this daemon's user is not one (an old or edited policy).
        log::error(
            "polkit: refuses to answer epbrokerd (uid {}) about {} for {} (uid {}): {}; the "
            "action's org.freedesktop.policykit.owner (org.epbroker.policy in "
            "/usr/share/polkit-1/actions/) must name the daemon's user",
            ::geteuid(), action, sender, uid, error->getMessage());
      } else {
        log::warn("polkit: cannot check {} for {} (uid {}): {}: {}", action, sender, uid,
                  error->getName(), error->getMessage());
      }
      (*answer)(fail(Errc::NotAuthorized,
                     "polkit could not be asked about " + action + ": " + error->getMessage()));
      return;
    }
    if (std::get<0>(result)) {
      log::debug("polkit: {} granted to {} (uid {})", action, sender, uid);
      (*answer)({});
      return;
    }
    const bool challenge = std::get<1>(result);
    log::info("polkit: {} refused to {} (uid {}){}", action, sender, uid,
              challenge ? " (authentication required)" : "");
    (*answer)(fail(Errc::NotAuthorized, "polkit refused " + action + " for uid " +
                                            std::to_string(uid) +
                                            (challenge ? " (authentication required)" : "")));
  };
  try {
    authority_->callMethodAsync("CheckAuthorization")
        .onInterface(kAuthorityInterface)
        .withTimeout(timeout_)
        .withArguments(subject, action, std::map<std::string, std::string>{},
                       question.interactive ? kAllowUserInteraction : std::uint32_t{0}, cancel_id)
        .uponReplyInvoke(std::move(on_reply));
  } catch (const sdbus::Error& e) {
    log::warn("polkit: cannot check {} for {} (uid {}): {}: {}", action, ctx.sender, ctx.uid,
              e.getName(), e.getMessage());
    (*answer)(fail(Errc::NotAuthorized,
                   "polkit could not be asked about " + action + ": " + e.getMessage()));
  }
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
