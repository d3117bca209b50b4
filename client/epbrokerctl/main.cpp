// epbrokerctl: the admin CLI of epbrokerd (docs/epbrokerctl.md).
#include <signal.h>
#include <unistd.h>

#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "client/epbrokerctl/cli.hpp"
#include "client/epbrokerctl/commands.hpp"
#include "client/epbrokerctl/polkit_agent.hpp"
#include "epbroker/version.hpp"

namespace {

using namespace epbrokerctl;
using nlohmann::json;

// Fired by SIGINT/SIGTERM; the handler only stores into the token's atomic flag.
std::optional<epbroker::CancelToken> g_cancel;

extern "C" void on_signal(int) {
  if (g_cancel) g_cancel->cancel();
}

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  // A second Ctrl-C kills at once (the default action is restored on the first).
  sa.sa_flags = static_cast<int>(SA_RESETHAND);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

void print_error(bool as_json, std::string_view code, const std::string& bus_name,
                 const std::string& message, const std::string& hint, const std::string& command) {
  if (as_json) {
    std::cout << json{{"error",
                       {{"code", code},
                        {"bus_name", bus_name.empty() ? json(nullptr) : json(bus_name)},
                        {"message", message},
                        {"hint", hint.empty() ? json(nullptr) : json(hint)}}}}
                     .dump(2)
              << '\n';
    return;
  }
  std::cerr << "epbrokerctl" << (command.empty() ? "" : " " + command) << ": " << message << " ("
            << code << ")\n";
  if (!hint.empty()) std::cerr << hint << '\n';
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv, argv + argc);
  const auto parsed = parse_args(args);
  if (!parsed) {
    const bool as_json = std::find(args.begin(), args.end(), "--json") != args.end();
    print_error(as_json, "Usage", "", parsed.error(), "See `epbrokerctl --help`.", "");
    return kUsage;
  }
  const Invocation& inv = *parsed;
  if (inv.help) {
    const CommandInfo* c = inv.command.empty() ? nullptr : find_command(inv.command);
    std::cout << (c ? command_help(*c, inv.action) : tool_help());
    return kOk;
  }
  if (inv.version) {
    std::cout << "epbrokerctl " << EPBROKER_VERSION_STRING << '\n';
    return kOk;
  }

  // What error messages name: "install", "model remove".
  const std::string command = inv.action.empty() ? inv.command : inv.command + " " + inv.action;
  g_cancel.emplace();
  install_signal_handlers();
  try {
    // On a terminal, polkit may ask for a password (polkit_agent.hpp): the agent
    // first, then the call; stopped when this scope ends.
    const auto agent = PolkitAgent::start_if_useful(inv.command, !inv.no_ask_password);
    epbroker::Client client(epbroker::ClientOptions{inv.bus_address});
    Context ctx{client, inv, std::cout, std::cerr, isatty(STDERR_FILENO) == 1, *g_cancel};
    return run_command(ctx);
  } catch (const epbroker::Error& e) {
    if (e.code() == epbroker::Errc::cancelled && g_cancel->cancelled()) {
      print_error(inv.json, "Interrupted", e.bus_name(), "interrupted: " + e.message(), "",
                  command);
      return kInterrupted;
    }
    print_error(inv.json, epbroker::errc_name(e.code()), e.bus_name(), e.message(),
                hint_for(e, inv), command);
    return exit_code_for(e);
  } catch (const std::exception& e) {
    print_error(inv.json, "Internal", "", std::string("internal error: ") + e.what(), "", command);
    return kFailed;
  }
}
