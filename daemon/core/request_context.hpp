// Namespace note: daemon/ code lives in epbrokerd:: (a namespace named
// `daemon` would clash with daemon(3) from <unistd.h>).
//
// Who is asking: what the D-Bus layer knows of a caller, handed to the core
// instead of a bus message. Identity always comes from the bus credentials.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

namespace epbrokerd::core {

class CallAuthorization;  // authorizer.hpp

struct RequestContext {
  uid_t uid = static_cast<uid_t>(-1);  // from the bus credentials, never from arguments
  std::string sender;                  // unique bus name, e.g. ":1.42"
  // What this bus call learnt by asking polkit (authorizer.hpp); set by the D-Bus
  // layer, null for the daemon's own work and in tests of the core.
  std::shared_ptr<CallAuthorization> authorization = {};
};

}  // namespace epbrokerd::core
