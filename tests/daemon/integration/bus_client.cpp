// A second bus client for the daemon integration tests, run as a child process
// (another unique name, another uid through setpriv, or a client to kill -9):
//
//   bus_client ADDRESS session [NAME...]   RequestSession({providers: NAMES}); prints
//                                          "session PATH", one "provider NAME STATE"
//                                          per provider, then "holding", and keeps the
//                                          connection (and so the lease) until killed
//   bus_client ADDRESS call METHOD [ARG]   calls Broker1.METHOD (ARG: its one string
//                                          argument); prints "ok [RESULT]"
//   bus_client ADDRESS release PATH        calls Session1.Release on PATH; prints "ok"
//   bus_client ADDRESS cancel PATH         calls Job1.Cancel on PATH; prints "ok"
//
// Errors print "error NAME: MESSAGE" and exit 1; usage errors exit 2.
#include <sdbus-c++/sdbus-c++.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <map>
#include <string>
#include <vector>

namespace {

constexpr const char* kName = "org.epbroker.Broker1";
constexpr const char* kPath = "/org/epbroker/Broker1";
constexpr const char* kInterface = "org.epbroker.Broker1";

using Dicts = std::vector<std::map<std::string, sdbus::Variant>>;

int session(sdbus::IConnection& conn, const std::vector<std::string>& names) {
  auto proxy = sdbus::createProxy(conn, kName, kPath);
  std::map<std::string, sdbus::Variant> opts;
  if (!names.empty()) opts.emplace("providers", sdbus::Variant(names));
  sdbus::ObjectPath path;
  Dicts providers;
  proxy->callMethod("RequestSession")
      .onInterface(kInterface)
      .withArguments(opts)
      .storeResultsTo(path, providers);
  std::cout << "session " << path << "\n";
  for (const auto& p : providers) {
    std::cout << "provider " << p.at("name").get<std::string>() << " "
              << p.at("state").get<std::string>() << "\n";
  }
  std::cout << "holding" << std::endl;
  while (true) pause();  // until killed
}

int call(sdbus::IConnection& conn, const std::string& method,
         const std::vector<std::string>& args) {
  auto proxy = sdbus::createProxy(conn, kName, kPath);
  auto msg = proxy->createMethodCall(kInterface, method);
  for (const auto& a : args) msg << a;
  auto reply = proxy->callMethod(msg);
  if (method == "EnsureProvider" || method == "RefreshCatalog") {
    sdbus::ObjectPath job;
    reply >> job;
    std::cout << "ok " << job << "\n";
  } else if (method == "ListProviders" || method == "ListDevices") {
    Dicts dicts;
    reply >> dicts;
    std::cout << "ok " << dicts.size() << "\n";
  } else {
    std::cout << "ok\n";
  }
  return 0;
}

// Release (Session1) or Cancel (Job1) on `path`.
int on_object(sdbus::IConnection& conn, const std::string& path, const char* interface,
              const char* method) {
  auto proxy = sdbus::createProxy(conn, kName, path);
  proxy->callMethod(method).onInterface(interface);
  std::cout << "ok\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: bus_client ADDRESS session|call|release|cancel ...\n";
    return 2;
  }
  const std::string address = argv[1];
  const std::string command = argv[2];
  const std::vector<std::string> rest(argv + 3, argv + argc);
  try {
    auto conn = sdbus::createSessionBusConnectionWithAddress(address);
    if (command == "session") return session(*conn, rest);
    if (command == "call" && !rest.empty()) {
      return call(*conn, rest[0], std::vector<std::string>(rest.begin() + 1, rest.end()));
    }
    if (command == "release" && rest.size() == 1) {
      return on_object(*conn, rest[0], "org.epbroker.Session1", "Release");
    }
    if (command == "cancel" && rest.size() == 1) {
      return on_object(*conn, rest[0], "org.epbroker.Job1", "Cancel");
    }
  } catch (const sdbus::Error& e) {
    std::cout << "error " << e.getName() << ": " << e.getMessage() << std::endl;
    return 1;
  }
  std::cerr << "bus_client: bad arguments\n";
  return 2;
}
