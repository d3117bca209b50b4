#include "daemon/core/authorizer.hpp"

#include <algorithm>

namespace epbrokerd::core {

std::string_view action_id(Action a) {
  return a == Action::install ? "org.epbroker.install" : "org.epbroker.manage";
}

Result<void> UidAuthorizer::check(const RequestContext& ctx, Action action) {
  if (ctx.uid == 0 || std::find(allowed_.begin(), allowed_.end(), ctx.uid) != allowed_.end()) {
    return {};
  }
  return fail(Errc::NotAuthorized, "uid " + std::to_string(ctx.uid) + " may not perform " +
                                       std::string(action_id(action)));
}

}  // namespace epbrokerd::core
