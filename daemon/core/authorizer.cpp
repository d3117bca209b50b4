#include "daemon/core/authorizer.hpp"

#include <algorithm>

namespace epbrokerd::core {

std::string_view action_id(Action a) {
  switch (a) {
    case Action::install:
      return "org.epbroker.install";
    case Action::update:
      return "org.epbroker.update";
    case Action::downgrade:
      return "org.epbroker.downgrade";
    case Action::hold:
      return "org.epbroker.hold";
    case Action::manage:
      return "org.epbroker.manage";
  }
  return "org.epbroker.manage";  // not an Action value (a cast)
}

const Result<void>* CallAuthorization::answer(Action action) const {
  auto it = answers_.find(action);
  return it == answers_.end() ? nullptr : &it->second;
}

void CallAuthorization::set_answer(Action action, Result<void> answer) {
  answers_.insert_or_assign(action, std::move(answer));
  asked_ = true;
}

void CallAuthorization::need(Action action, bool interactive) {
  if (!question_) question_ = Question{action, interactive};
}

std::optional<CallAuthorization::Question> CallAuthorization::question() const {
  if (!question_ || answers_.contains(question_->action)) return std::nullopt;
  return question_;
}

Result<void> UidAuthorizer::check(const RequestContext& ctx, Action action) {
  if (ctx.uid == 0 || std::find(allowed_.begin(), allowed_.end(), ctx.uid) != allowed_.end()) {
    return {};
  }
  return fail(Errc::NotAuthorized, "uid " + std::to_string(ctx.uid) + " may not perform " +
                                       std::string(action_id(action)));
}

}  // namespace epbrokerd::core
