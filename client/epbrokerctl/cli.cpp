#include "client/epbrokerctl/cli.hpp"

#include <algorithm>

namespace epbrokerctl {

const std::vector<CommandInfo>& commands() {
  static const std::vector<CommandInfo> kCommands = {
      {"devices", "devices", "List the CPUs, GPUs and NPUs epbrokerd found on this machine.",
       "Columns: ID (what providers name in DEVICES), TYPE, VENDOR, NAME, DRIVER, and details\n"
       "(CPU cores/threads/arch and notable ISA extensions; a GPU's or NPU's PCI bus path).\n",
       0, 0},
      {"providers", "providers",
       "List the execution-provider packages the trusted catalogs offer, and their state.",
       "States: ready (installed; LIBRARY is what applications register), available\n"
       "(compatible, not installed), installing (a job is running), incompatible (cannot\n"
       "run here; the reason is printed under it). SIZE is the installed size when ready,\n"
       "else the download size. DEVICES are the device ids (see `devices`) it serves.\n",
       0, 0},
      {"install", "install NAME",
       "Install package NAME (its newest compatible version) unless it is ready.",
       "Shows the download's progress (a bar with bytes, rate and ETA on a terminal, plain\n"
       "lines otherwise, on stderr) and waits until the package is installed and verified.\n"
       "Ctrl-C cancels the install job (nothing is installed) and exits 130; if another\n"
       "client started the same install, it goes on for that client.\n"
       "Needs polkit's org.epbroker.install (active local users), or root or membership of\n"
       "the daemon's install_group when polkit is not running.\n",
       1, 1},
      {"remove", "remove NAME", "Remove every installed version of package NAME.",
       "Refused (Busy, exit 1) while a running application holds a session on it.\n"
       "Needs polkit's org.epbroker.manage (administrators), or root / install_group.\n",
       1, 1},
      {"refresh", "refresh",
       "Refresh every trusted catalog (the TUF update workflow) and wait for it.",
       "Prints the catalog revision and expiry afterwards. Needs org.epbroker.manage.\n", 0, 0},
      {"verify", "verify", "Re-hash every installed package against its signed manifest.",
       "Exits 1 if any package is damaged; `epbrokerctl install NAME` repairs one.\n", 0, 0},
      {"status", "status",
       "Show the daemon's version and state, catalog, store size, sessions and jobs.",
       "Asking starts epbrokerd if it is not running (D-Bus activation).\n", 0, 0},
  };
  return kCommands;
}

const CommandInfo* find_command(std::string_view name) {
  for (const auto& c : commands()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

std::expected<Invocation, std::string> parse_args(const std::vector<std::string>& argv) {
  Invocation inv;
  bool options_done = false;
  std::vector<std::string> words;
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (options_done || a.empty() || a[0] != '-' || a == "-") {
      words.push_back(a);
    } else if (a == "--") {
      options_done = true;
    } else if (a == "--json") {
      inv.json = true;
    } else if (a == "-h" || a == "--help") {
      inv.help = true;
    } else if (a == "--version") {
      inv.version = true;
    } else if (a == "--bus-address") {
      if (i + 1 >= argv.size()) return std::unexpected("--bus-address needs a value");
      inv.bus_address = argv[++i];
      if (inv.bus_address.empty()) return std::unexpected("--bus-address must not be empty");
    } else if (a.starts_with("--bus-address=")) {
      inv.bus_address = a.substr(std::string_view("--bus-address=").size());
      if (inv.bus_address.empty()) return std::unexpected("--bus-address must not be empty");
    } else {
      return std::unexpected("unknown option '" + a + "'");
    }
  }
  if (!words.empty()) {
    inv.command = words.front();
    inv.args.assign(words.begin() + 1, words.end());
  }
  // `help [COMMAND]` is `[COMMAND] --help`.
  if (inv.command == "help") {
    inv.help = true;
    if (inv.args.size() > 1) return std::unexpected("help takes at most one command");
    inv.command = inv.args.empty() ? "" : inv.args.front();
    inv.args.clear();
  }
  if (!inv.command.empty()) {
    const CommandInfo* c = find_command(inv.command);
    if (!c) return std::unexpected("unknown command '" + inv.command + "'");
    if (!inv.help && (inv.args.size() < c->min_args || inv.args.size() > c->max_args)) {
      return std::unexpected(std::string("usage: epbrokerctl ") + std::string(c->synopsis));
    }
  } else if (!inv.help && !inv.version) {
    return std::unexpected("no command given");
  }
  return inv;
}

std::string tool_help() {
  std::string out =
      "Usage: epbrokerctl [--json] [--bus-address ADDRESS] COMMAND [ARGS]\n"
      "\n"
      "Administers epbrokerd, the ONNX Runtime execution-provider broker, over D-Bus.\n"
      "\n"
      "Commands:\n";
  for (const auto& c : commands()) {
    std::string head = "  " + std::string(c.synopsis);
    head.resize(std::max<std::size_t>(head.size() + 2, 18), ' ');
    out += head + std::string(c.summary) + "\n";
  }
  out +=
      "\n"
      "Options:\n"
      "  --json                 print one JSON document on stdout (shapes in\n"
      "                         docs/epbrokerctl.md), errors included\n"
      "  --bus-address ADDRESS  talk to the daemon on this D-Bus address instead of the\n"
      "                         system bus (default: $EPBROKER_BUS_ADDRESS if set)\n"
      "  -h, --help             this help; `epbrokerctl COMMAND --help` for a command's\n"
      "  --version              print epbrokerctl's version\n"
      "\n"
      "Exit status: 0 ok, 1 the daemon reported a failure, 2 usage error or invalid\n"
      "argument, 3 not authorized, 4 not found, 5 daemon not reachable, 130 interrupted\n"
      "(the job was cancelled).\n";
  return out;
}

std::string command_help(const CommandInfo& c) {
  return "Usage: epbrokerctl [--json] [--bus-address ADDRESS] " + std::string(c.synopsis) + "\n\n" +
         std::string(c.summary) + "\n\n" + std::string(c.details) +
         "\nOptions: --json, --bus-address ADDRESS, -h/--help (see `epbrokerctl --help`).\n";
}

}  // namespace epbrokerctl
