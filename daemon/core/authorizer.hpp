// Authorization of privileged operations. The core asks; the D-Bus layer
// provides the implementation (polkit CheckAuthorization with the caller's
// system-bus-name subject, or a uid/group fallback without polkit).
//
// Never blocking: the core decides on the bus thread, so check() answers from
// what is known at once. An authorizer that must ask someone (polkit, which may
// wait for the user to type a password) notes the question in the call's
// CallAuthorization and refuses for now; the D-Bus layer then asks (ask(), whose
// answer arrives later while the bus thread serves other callers) and calls the
// core again with the answer (daemon/dbus/authorized_call.hpp). One question per
// bus call at most.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

#include "daemon/core/error.hpp"
#include "daemon/core/request_context.hpp"

namespace epbrokerd::core {

enum class Action {
  install,    // org.epbroker.install: install a package of a trusted catalog
  update,     // org.epbroker.update: move installed packages to newer versions
  downgrade,  // org.epbroker.downgrade: rollback, install an older version
  hold,       // org.epbroker.hold: hold and unhold packages
  manage,     // org.epbroker.manage: remove, gc, refresh, remote reset, a new verification
};

std::string_view action_id(Action a);  // "org.epbroker.install", ...

// What one bus call learnt by asking (RequestContext::authorization): the answers
// obtained, and the question the core needed answered but could not decide alone.
// Made by the D-Bus layer per call; used on the thread that runs the call.
class CallAuthorization {
 public:
  struct Question {
    Action action = Action::manage;
    bool interactive = true;  // the user may be asked (an authentication dialog)
  };

  // The answer obtained for `action` in this call, if it was asked.
  const Result<void>* answer(Action action) const;
  void set_answer(Action action, Result<void> answer);
  // Notes that deciding `action` needs asking; the first question noted stays.
  void need(Action action, bool interactive);
  // The question noted, while it is unanswered.
  std::optional<Question> question() const;
  // Whether the D-Bus layer should ask question() and call the core again: a
  // question is noted and this call has not asked one yet.
  bool wants_asking() const { return question().has_value() && !asked_; }

 private:
  std::map<Action, Result<void>> answers_;
  std::optional<Question> question_;
  bool asked_ = false;
};

class Authorizer {
 public:
  virtual ~Authorizer() = default;
  // Ok when `ctx` may perform `action`; Errc::NotAuthorized otherwise, with a
  // message saying what was refused and why. Never blocks (see above): when the
  // decision needs an answer `ctx.authorization` does not hold, the question is
  // noted there (user interaction allowed) and the call refused for now.
  virtual Result<void> check(const RequestContext& ctx, Action action) = 0;
  // check() for a decision the caller is not to be bothered with (no
  // authentication dialog): the question noted, if any, is not interactive.
  virtual Result<void> check_quietly(const RequestContext& ctx, Action action) {
    return check(ctx, action);
  }
  // Asks `question` (noted by check() in ctx.authorization) and calls `done` once
  // with the answer: later, on the thread that runs the daemon's bus connection
  // (polkit), or at once (authorizers that never need to ask).
  virtual void ask(const RequestContext& ctx, CallAuthorization::Question question,
                   std::function<void(Result<void>)> done) {
    done(check(ctx, question.action));
  }
};

// Allows uid 0 and the uids in `allowed`; refuses everyone else. For tests and
// for systems without polkit (with the configured install group's members).
class UidAuthorizer : public Authorizer {
 public:
  explicit UidAuthorizer(std::vector<uid_t> allowed = {}) : allowed_(std::move(allowed)) {}
  Result<void> check(const RequestContext& ctx, Action action) override;

 private:
  std::vector<uid_t> allowed_;
};

}  // namespace epbrokerd::core
