// libepbroker internals: waiting for a Job1 object to finish, on the caller's
// thread, with progress and cancellation.
#pragma once

#include <string>

#include "client/src/connection.hpp"
#include "epbroker/client.hpp"

namespace epbroker::detail {

// Subscribes to the job's Finished and PropertiesChanged signals, then reads its
// properties (a job may have ended before the subscription), and drives the
// connection until the job is final. Progress goes to `on_progress` on this
// thread: once at the start, at every change, and once with the final state.
// Returns on "done"; throws the job's error on "failed", Error(cancelled) on
// "cancelled" or when `cancel` fires (see Client::ensure_ready for the rules),
// Error(unavailable) if the job object vanishes (the daemon went away).
Progress wait_for_job(Connection& conn, const std::string& path,
                      const ProgressCallback& on_progress, const CancelToken& cancel);

}  // namespace epbroker::detail
