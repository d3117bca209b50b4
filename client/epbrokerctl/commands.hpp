// epbrokerctl: the commands, each through libepbroker only (the daemon is reached
// over D-Bus like any other client).
#pragma once

#include <iosfwd>

#include "client/epbrokerctl/cli.hpp"
#include "epbroker/client.hpp"

namespace epbrokerctl {

struct Context {
  epbroker::Client& client;
  const Invocation& inv;
  std::ostream& out;  // results (text or the JSON document)
  std::ostream& err;  // progress
  bool err_is_terminal = false;
  epbroker::CancelToken cancel;  // fired by SIGINT/SIGTERM
};

// Runs inv.command; returns the exit code. Failures from the daemon are thrown as
// epbroker::Error (main() maps them to exit codes and hints).
int run_command(Context& ctx);

// The exit code for an error, and what to do next (one or two sentences, "" if
// nothing useful can be said).
int exit_code_for(const epbroker::Error& e);
std::string hint_for(const epbroker::Error& e, const Invocation& inv);

}  // namespace epbrokerctl
