// epbroker-run's use of the broker: connect, install what is missing (progress on
// stderr), take a session and register its providers in the app's Ort::Env.
#pragma once

#include <expected>
#include <string>
#include <vector>

#include <epbroker/ort.hpp>

#include "client/epbroker-run/args.hpp"

namespace epbroker_run {

// A failure with its exit code (see Exit) and a message saying what to do.
struct Failure {
  int exit = kInternal;
  std::string message;
};

struct Brokered {
  epbroker::EnsureResult ensured;         // holds the lease: keep it while ORT runs
  std::vector<epbroker::Device> devices;  // the machine as the daemon sees it (names)
  std::string ep_name;                    // --ep resolved: a package name becomes its EP
  double ms = 0;
};

// Everything above; `options.ep` may name a package (its first EP is used).
std::expected<Brokered, Failure> acquire(Ort::Env& env, const Options& options);

// What to tell the user for a broker error.
std::string broker_hint(const epbroker::Error& e);

}  // namespace epbroker_run
