// epbrokerd on a private bus: prints figures, asserts nothing about speed.
//   1. activation to first reply (the first ListDevices starts the daemon);
//   2. RequestSession+Release round trips vs org.freedesktop.DBus.Peer.Ping to
//      the daemon, p50/p99 over N calls each (goal: RequestSession p50 <= 1.5x Ping);
//   3. idle RSS (goal < 10 MB) and idle wakeups over 5 s (context switches of
//      all the daemon's threads; goal: none).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "tests/daemon/integration/private_bus.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using tests::daemon::PrivateBus;

double us(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

std::string pct(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  char buf[96];
  std::snprintf(buf, sizeof buf, "p50 %.0f us, p99 %.0f us", v[v.size() / 2],
                v[v.size() * 99 / 100]);
  return buf;
}

long status_field(pid_t pid, const std::string& file, const std::string& key) {
  std::ifstream in(file.empty() ? "/proc/" + std::to_string(pid) + "/status" : file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) return std::stol(line.substr(key.size() + 1));
  }
  return -1;
}

long switches(pid_t pid) {
  long total = 0;
  for (const auto& t :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task")) {
    const std::string f = (t.path() / "status").string();
    total += status_field(pid, f, "voluntary_ctxt_switches") +
             status_field(pid, f, "nonvoluntary_ctxt_switches");
  }
  return total;
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::stoi(argv[1]) : 2000;
  PrivateBus bus;
  auto conn = bus.connect();
  auto broker = sdbus::createProxy(*conn, "org.epbroker.Broker1", "/org/epbroker/Broker1");
  broker->finishRegistration();

  // 1. Activation.
  std::vector<std::map<std::string, sdbus::Variant>> devices;
  auto t0 = Clock::now();
  broker->callMethod("ListDevices").onInterface("org.epbroker.Broker1").storeResultsTo(devices);
  const auto activation = Clock::now() - t0;
  std::printf("activation to first reply (ListDevices, %zu devices): %.1f ms  [goal < 50 ms]\n",
              devices.size(), us(activation) / 1000.0);

  // 2. Round trips.
  std::vector<double> ping, session;
  for (int i = 0; i < n; ++i) {
    t0 = Clock::now();
    broker->callMethod("Ping").onInterface("org.freedesktop.DBus.Peer");
    ping.push_back(us(Clock::now() - t0));
  }
  for (int i = 0; i < n; ++i) {
    sdbus::ObjectPath path;
    std::vector<std::map<std::string, sdbus::Variant>> providers;
    std::map<std::string, sdbus::Variant> opts{
        {"policy", sdbus::Variant(std::string("prefer_gpu"))}};
    t0 = Clock::now();
    broker->callMethod("RequestSession")
        .onInterface("org.epbroker.Broker1")
        .withArguments(opts)
        .storeResultsTo(path, providers);
    session.push_back(us(Clock::now() - t0));
    auto s = sdbus::createProxy(*conn, "org.epbroker.Broker1", path);
    s->finishRegistration();
    s->callMethod("Release").onInterface("org.epbroker.Session1");
  }
  std::sort(ping.begin(), ping.end());
  std::sort(session.begin(), session.end());
  std::printf(
      "Peer.Ping:      %s (%d calls)\nRequestSession: %s (%d calls); p50 ratio %.2f  "
      "[goal <= 1.5]\n",
      pct(ping).c_str(), n, pct(session).c_str(), n,
      session[session.size() / 2] / ping[ping.size() / 2]);

  // 3. Idle: RSS and wakeups over 5 s.
  const auto pid = bus.broker_pid();
  if (!pid) {
    std::fprintf(stderr, "daemon pid unknown\n");
    return 1;
  }
  const long before = switches(*pid);
  t0 = Clock::now();
  while (Clock::now() - t0 < std::chrono::seconds(5)) {
    struct timespec ts {
      0, 100'000'000
    };
    nanosleep(&ts, nullptr);  // a benchmark's measuring window, not a test wait
  }
  const long after = switches(*pid);
  std::printf(
      "idle RSS %ld kB  [goal < 10240 kB]; idle wakeups %ld in 5 s (%.1f/s)  [goal: none]\n",
      status_field(*pid, "", "VmRSS"), after - before, static_cast<double>(after - before) / 5.0);
  return 0;
}
