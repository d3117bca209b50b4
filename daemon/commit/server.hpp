// The helper's side of the commit protocol (protocol.hpp): one request read from
// `sock`, carried out with commit_install() / commit_remove(), progress and the
// result sent back. The request is the only input, and it is untrusted: fields
// are type-checked and bounded, descriptors must be as many as the operation
// takes, and a hang-up of the peer cancels the work.
#pragma once

#include "daemon/commit/commit.hpp"

namespace epbrokerd::commit {

// Serves one request on `sock` (a connected SOCK_SEQPACKET socket). Returns 0
// when an answer was sent (success or a typed error), 1 when none could be
// (no request, the peer gone).
int serve_one(int sock, const CommitEnv& env);

}  // namespace epbrokerd::commit
