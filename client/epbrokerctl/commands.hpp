// epbrokerctl: the commands, each through libepbroker only (the daemon is reached
// over D-Bus like any other client).
#pragma once

#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "client/epbrokerctl/cli.hpp"
#include "client/epbrokerctl/output.hpp"
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

// The package lifecycle's commands (lifecycle_commands.cpp); each returns the exit
// code.
namespace lifecycle {
int providers(Context& ctx);
int install(Context& ctx);
int update(Context& ctx);
int hold(Context& ctx);
int unhold(Context& ctx);
int rollback(Context& ctx);
int history(Context& ctx);
int gc(Context& ctx);
int remove(Context& ctx);
int remote(Context& ctx);
}  // namespace lifecycle

// The models' commands (model_commands.cpp): `models`, `model install`, `model
// remove`; each returns the exit code.
namespace models {
int list(Context& ctx);
int model(Context& ctx);  // inv.action: install | remove
}  // namespace models

// Shared by the commands.
void print_json(Context& ctx, const nlohmann::json& doc);
std::string join(const std::vector<std::string>& v, const char* sep);
// Keeps the job's latest progress in `last` and shows it on `view` (not with --json:
// a script reads the document only).
epbroker::ProgressCallback progress_to(Context& ctx, ProgressView& view, epbroker::Progress& last);

// The exit code for an error, and what to do next (one or two sentences, "" if
// nothing useful can be said).
int exit_code_for(const epbroker::Error& e);
std::string hint_for(const epbroker::Error& e, const Invocation& inv);

}  // namespace epbrokerctl
