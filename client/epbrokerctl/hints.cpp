// epbrokerctl: exit codes for errors, and what to do next.
#include "client/epbrokerctl/commands.hpp"

#include <utility>

namespace epbrokerctl {
namespace {

// The polkit action a command needs other than org.epbroker.manage; null for manage.
const char* polkit_action(const std::string& cmd, const std::string& action) {
  if (cmd == "model" && action == "install") return "org.epbroker.install";
  if (cmd == "update") return "org.epbroker.update";
  if (cmd == "hold" || cmd == "unhold") return "org.epbroker.hold";
  if (cmd == "rollback") return "org.epbroker.downgrade";
  return nullptr;
}

// After a refusal: the action, and the three ways to be allowed. The same words
// as dbus/org.epbroker.policy, docs/epbrokerctl.md and docs/configuration.md.
std::string not_authorized_hint(const std::string& action, const std::string& retry) {
  return "This needs polkit's " + action + ". Run it as root (`sudo epbrokerctl " + retry +
         "`), or ask an administrator to grant " + action +
         " with a polkit rule in /etc/polkit-1/rules.d/ (for example to the members of group "
         "epbroker-users). Where polkit is not running, root and the members of install_group "
         "in /etc/epbroker/epbroker.conf are allowed.";
}

}  // namespace

int exit_code_for(const epbroker::Error& e) {
  using epbroker::Errc;
  switch (e.code()) {
    case Errc::not_authorized:
      return kNotAuthorized;
    case Errc::not_found:
      return kNotFound;
    case Errc::invalid_argument:
      return kUsage;
    case Errc::unavailable:
    case Errc::timeout:
      return kUnavailable;
    case Errc::incompatible:
    case Errc::verification_failed:
    case Errc::network:
    case Errc::busy:
    case Errc::cancelled:
    case Errc::protocol:
    case Errc::disk_full:
    case Errc::internal:
      return kFailed;
  }
  return kFailed;
}

std::string hint_for(const epbroker::Error& e, const Invocation& inv) {
  using epbroker::Errc;
  const std::string& cmd = inv.command;
  const bool test_bus = !inv.bus_address.empty();
  const std::string name = inv.args.empty() ? std::string("NAME") : inv.args.front();
  switch (e.code()) {
    case Errc::unavailable:
      if (test_bus) {
        return "Is a bus listening at " + inv.bus_address +
               ", and can it start epbrokerd (its services directory)?";
      }
      return "Is epbrokerd installed and D-Bus running? Check `systemctl status epbrokerd` and "
             "`journalctl -u epbrokerd`; for another bus use --bus-address or "
             "EPBROKER_BUS_ADDRESS.";
    case Errc::timeout:
      return "epbrokerd did not answer in time; check `systemctl status epbrokerd` and "
             "`journalctl -u epbrokerd`.";
    case Errc::not_authorized: {
      if (cmd == "install" && inv.allow_older) {
        return not_authorized_hint(
            "org.epbroker.downgrade",
            "install --allow-older " + name +
                (inv.package_version.empty() ? "" : "@" + inv.package_version));
      }
      if (cmd == "install") {
        return not_authorized_hint(
            "org.epbroker.install",
            "install " + name + (inv.package_version.empty() ? "" : "@" + inv.package_version));
      }
      const char* action = polkit_action(cmd, inv.action);
      std::string retry = inv.action.empty() ? cmd : cmd + " " + inv.action;
      if (inv.now) retry += " --now";
      for (const auto& [option, value] : {std::pair{" --variant ", &inv.variant},
                                          {" --version ", &inv.model_version},
                                          {" --policy ", &inv.policy}}) {
        if (!value->empty()) retry += option + *value;
      }
      for (const auto& a : inv.args) retry += " " + a;
      return not_authorized_hint(action != nullptr ? action : "org.epbroker.manage", retry);
    }
    case Errc::not_found:
      if (cmd == "remove" || cmd == "hold" || cmd == "unhold" || cmd == "update")
        return "Nothing is installed under that name: see `epbrokerctl providers`.";
      if (cmd == "rollback") {
        return "No previous version of " + name +
               " is kept: `epbrokerctl providers` lists the kept versions (keep_versions in "
               "/etc/epbroker/epbroker.conf says how many are).";
      }
      if (cmd == "remote") {
        return "No remote by that name: remotes are the files in /etc/epbroker/remotes.d/.";
      }
      if (cmd == "model" && inv.action == "remove") {
        return "Nothing installed matches: `epbrokerctl models` marks the installed variants "
               "with *.";
      }
      if (cmd == "model") {
        return "See `epbrokerctl models` for the models, versions and variants the trusted "
               "catalogs list; `epbrokerctl refresh` fetches the latest catalog.";
      }
      if (cmd == "install" && !inv.package_version.empty()) {
        return "The message lists the versions the catalogs offer; `epbrokerctl refresh` "
               "fetches the latest catalog.";
      }
      return "See `epbrokerctl providers` for the packages the trusted catalogs list; "
             "`epbrokerctl refresh` fetches the latest catalog.";
    case Errc::invalid_argument:
      if (cmd == "install" && !inv.package_version.empty() && !inv.allow_older) {
        return "Installing a version older than the current one is a downgrade: add "
               "--allow-older (`epbrokerctl install --allow-older " +
               name + "@" + inv.package_version + "`).";
      }
      if (cmd == "models" || cmd == "model") {
        return "Model names are lowercase letters, digits, '.', '_' and '-' (at most 64); see "
               "`epbrokerctl " +
               (inv.action.empty() ? cmd : cmd + " " + inv.action) + " --help`.";
      }
      return "Package names are lowercase letters, digits, '.', '_' and '-' (at most 64); see "
             "`epbrokerctl " +
             (cmd.empty() ? std::string("--help") : cmd + " --help") + "`.";
    case Errc::incompatible:
      if (cmd == "model") {
        return "`epbrokerctl models` shows which variant this machine gets, or why none fits.";
      }
      return "`epbrokerctl providers` shows why each package can or cannot run here.";
    case Errc::verification_failed:
      return "The catalog or package failed a signature, hash or manifest check and was not "
             "used. Do not bypass this: `epbrokerctl refresh` retries with fresh metadata; if it "
             "persists, tell the catalog's publisher.";
    case Errc::network:
      return "Check the network and the remote's URLs in /etc/epbroker/remotes.d/; "
             "`journalctl -u epbrokerd` has the details.";
    case Errc::busy:
      if (cmd == "remove" && !inv.now) {
        return "A running application holds a session on it; stop that application (or wait) "
               "and try again, or delete it at once with `epbrokerctl remove --now " +
               name + "`.";
      }
      if (cmd == "model" && inv.action == "remove" && !inv.now) {
        return "A running application leases it; stop that application (or wait) and try "
               "again, or delete it at once with `epbrokerctl model remove --now " +
               name + "`.";
      }
      return "Another operation is running; try again later (`epbrokerctl status` lists the "
             "running jobs).";
    case Errc::cancelled:
      return "";
    case Errc::protocol:
      return "epbrokerctl and epbrokerd may be different versions: compare `epbrokerctl "
             "--version` with `epbrokerctl status`.";
    case Errc::disk_full:
      return "Free space where epbrokerd keeps its store and downloads (/var/lib/epbroker, "
             "/var/cache/epbroker; `epbrokerctl status` shows the store's size) and try again.";
    case Errc::internal:
      return "epbrokerd failed on its own side; `journalctl -u epbrokerd` has the details. "
             "Please report it if it persists.";
  }
  return "";
}

}  // namespace epbrokerctl
