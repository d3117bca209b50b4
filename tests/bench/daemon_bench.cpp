// epbrokerd on a private bus with a signed catalog on loopback (the integration
// tests' TestCatalog: test-ep, bulk-ep, foreign-ep), test-ep installed. Prints
// figures, asserts nothing about speed:
//   1. activation to first reply: the first ListDevices starts a fresh daemon
//      (store, catalog cache, hardware discovery) (goal < 50 ms);
//   2. RequestSession (3 providers listed, a lease on test-ep) + Release vs
//      org.freedesktop.DBus.Peer.Ping to the daemon, interleaved, p50/p99 over N
//      calls each (goal: RequestSession p50 <= 1.5x Ping), through libepbroker
//      and, for context, through a generic sdbus-c++ proxy; and the CPU time
//      per call of the daemon, dbus-daemon and this client;
//   3. idle RSS: the kernel's VmRSS of that daemon after it has answered those
//      calls (goal < 10 MB), with Pss, private and anonymous memory and the
//      largest mappings as context; idle wakeups over 5 s (context switches of
//      all the daemon's threads; goal: none);
//   4. the round trips of 2. again on a second bus whose daemon has no catalog
//      and no store (a reply listing no provider: the fixed cost of a session);
//   before all this, for context, the RSS of the daemon that refreshed and
//   installed (libcurl, libarchive and OpenSSL loaded), which then exits; a
//   daemon loads them only when it first fetches, extracts or verifies.
// Installing needs root (without polkit only root may install): run as another
// user, the catalog stays unrefreshed and RequestSession lists nothing.
// Usage: bench_daemon [CALLS]
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "epbroker/client.hpp"
#include "tests/daemon/integration/private_bus.hpp"
#include "tests/daemon/integration/test_catalog.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using tests::daemon::PrivateBus;
using Dicts = std::vector<std::map<std::string, sdbus::Variant>>;
using namespace std::chrono_literals;

double us(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

std::string pct(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  char buf[96];
  std::snprintf(buf, sizeof buf, "p50 %.0f us, p99 %.0f us", v[v.size() / 2],
                v[v.size() * 99 / 100]);
  return buf;
}

// "Key:   123 kB" lines of /proc/PID/<file>, as numbers.
std::map<std::string, long> proc_fields(const std::string& path) {
  std::map<std::string, long> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    try {
      out[line.substr(0, colon)] = std::stol(line.substr(colon + 1));
    } catch (const std::exception&) {
    }
  }
  return out;
}

std::string proc(pid_t pid, const std::string& file) {
  return "/proc/" + std::to_string(pid) + "/" + file;
}

long switches(pid_t pid) {
  long total = 0;
  for (const auto& t : std::filesystem::directory_iterator(proc(pid, "task"))) {
    auto f = proc_fields((t.path() / "status").string());
    total += f["voluntary_ctxt_switches"] + f["nonvoluntary_ctxt_switches"];
  }
  return total;
}

// CPU time of every thread of `pid` so far (schedstat), in microseconds.
double cpu_us(pid_t pid) {
  double total = 0;
  std::error_code ec;
  for (const auto& t : std::filesystem::directory_iterator(proc(pid, "task"), ec)) {
    std::ifstream in(t.path() / "schedstat");
    double ns = 0;
    if (in >> ns) total += ns / 1000.0;
  }
  return total;
}

// The dbus-daemon of `bus` (a child of this process, its config under the bus's root).
std::optional<pid_t> bus_daemon_pid(const PrivateBus& bus) {
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "stat");
    std::string stat;
    if (!std::getline(in, stat)) continue;
    const auto close = stat.rfind(')');
    const auto open = stat.find('(');
    if (close == std::string::npos || open == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    char state = 0;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid != getpid() || stat.substr(open + 1, close - open - 1) != "dbus-daemon") continue;
    std::ifstream cmd(e.path() / "cmdline");
    const std::string args((std::istreambuf_iterator<char>(cmd)), {});
    if (args.find(bus.root().string()) != std::string::npos) {
      return static_cast<pid_t>(std::stoi(name));
    }
  }
  return std::nullopt;
}

// The mappings with the most resident memory: "name size, ..." (kB).
std::string largest_mappings(pid_t pid, std::size_t count) {
  std::map<std::string, long> rss;
  std::ifstream in(proc(pid, "smaps"));
  std::string line;
  std::string name;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (std::isxdigit(static_cast<unsigned char>(line[0])) && line.find('-') < 17 &&
        line.find(' ') != std::string::npos) {
      // "start-end perms offset dev inode [name]"
      std::size_t pos = 0;
      for (int field = 0; field < 5 && pos != std::string::npos; ++field) {
        pos = line.find_first_not_of(' ', line.find(' ', pos));
      }
      name = pos == std::string::npos ? "[anon]" : line.substr(pos);
      name = std::filesystem::path(name).filename().string();
    } else if (line.rfind("Rss:", 0) == 0) {
      rss[name] += std::stol(line.substr(4));
    }
  }
  std::vector<std::pair<long, std::string>> v;
  for (const auto& [n, kb] : rss) v.emplace_back(kb, n);
  std::sort(v.rbegin(), v.rend());
  std::string out;
  for (std::size_t i = 0; i < v.size() && i < count; ++i) {
    out += (i ? ", " : "") + v[i].second + " " + std::to_string(v[i].first);
  }
  return out;
}

void print_memory(pid_t pid, const char* what, bool idle) {
  auto status = proc_fields(proc(pid, "status"));
  auto rollup = proc_fields(proc(pid, "smaps_rollup"));
  std::printf(
      "%s RSS %ld kB%s\n"
      "  (RssAnon %ld, RssFile %ld; Pss %ld, Private_Clean %ld, Private_Dirty %ld, "
      "Shared_Clean %ld kB; %ld threads)\n"
      "  largest mappings (Rss kB): %s\n",
      what, status["VmRSS"], idle ? "  [goal < 10240 kB]" : "", status["RssAnon"],
      status["RssFile"], rollup["Pss"], rollup["Private_Clean"], rollup["Private_Dirty"],
      rollup["Shared_Clean"], status["Threads"], largest_mappings(pid, 8).c_str());
}

// RequestSession (+ Release) vs Peer.Ping on `bus`, interleaved so that all see
// the same machine load, two ways: through libepbroker (Client::request_session,
// what an app calls: it reads the providers straight off the reply), and through
// a generic sdbus-c++ proxy call that decodes them into Variants (a Variant is a
// message of its own per value: context for what decoding costs). Then the CPU
// time per call of each kind, in blocks: what the ratio costs in work, apart from
// waiting to be scheduled (the benchmark, its bus and the daemon share the CPUs).
// `label` goes after the method names.
void round_trips(const PrivateBus& bus, sdbus::IConnection& conn, int n, const char* label) {
  auto broker = sdbus::createProxy(conn, tests::daemon::kBrokerName, tests::daemon::kBrokerPath);
  broker->finishRegistration();
  epbroker::Client client(epbroker::ClientOptions{bus.address()});
  const std::map<std::string, sdbus::Variant> opts{
      {"policy", sdbus::Variant(std::string("default"))}};
  std::size_t listed = 0;
  std::size_t ready = 0;
  auto library_round = [&]() -> double {
    const auto start = Clock::now();
    auto session = client.request_session();
    const double took = us(Clock::now() - start);
    listed = session.providers().size();
    ready = session.ready_providers().size();
    return took;  // the Session's destructor releases it
  };
  auto generic_round = [&]() -> double {
    sdbus::ObjectPath path;
    Dicts providers;
    const auto start = Clock::now();
    broker->callMethod("RequestSession")
        .onInterface("org.epbroker.Broker1")
        .withArguments(opts)
        .storeResultsTo(path, providers);
    const double took = us(Clock::now() - start);
    auto s = sdbus::createProxy(conn, tests::daemon::kBrokerName, path);
    s->finishRegistration();
    s->callMethod("Release").onInterface("org.epbroker.Session1");
    return took;
  };
  auto ping_round = [&]() -> double {
    const auto start = Clock::now();
    broker->callMethod("Ping").onInterface("org.freedesktop.DBus.Peer");
    return us(Clock::now() - start);
  };
  for (int i = 0; i < 100; ++i) {  // warm-up
    ping_round();
    library_round();
    generic_round();
  }
  std::vector<double> ping;
  std::vector<double> session;
  std::vector<double> generic;
  for (int i = 0; i < n; ++i) {
    ping.push_back(ping_round());
    session.push_back(library_round());
    generic.push_back(generic_round());
  }
  std::sort(ping.begin(), ping.end());
  std::sort(session.begin(), session.end());
  std::sort(generic.begin(), generic.end());
  const auto p50 = [](const std::vector<double>& v) { return v[v.size() / 2]; };
  std::printf(
      "Peer.Ping%s:      %s (%d calls)\n"
      "RequestSession%s: %s (%d calls, libepbroker; %zu providers listed, %zu ready and "
      "leased); p50 ratio %.2f  [goal <= 1.5]\n"
      "  same through a generic sdbus-c++ proxy (a Variant per value): %s; p50 ratio %.2f\n",
      label, pct(ping).c_str(), n, label, pct(session).c_str(), n, listed, ready,
      p50(session) / p50(ping), pct(generic).c_str(), p50(generic) / p50(ping));
  const auto pid = bus.broker_pid();
  const auto bus_pid = bus_daemon_pid(bus);
  if (!pid || !bus_pid) return;
  auto per_call = [&](const auto& round) {
    const double d0 = cpu_us(*pid);
    const double b0 = cpu_us(*bus_pid);
    const double c0 = cpu_us(getpid());
    for (int i = 0; i < n; ++i) round();
    return std::array<double, 3>{(cpu_us(*pid) - d0) / n, (cpu_us(*bus_pid) - b0) / n,
                                 (cpu_us(getpid()) - c0) / n};
  };
  const auto p = per_call(ping_round);
  const auto s = per_call(library_round);
  std::printf(
      "  CPU per call (us): Peer.Ping daemon %.0f, dbus-daemon %.0f, client %.0f; "
      "RequestSession+Release (libepbroker) daemon %.0f, dbus-daemon %.0f, client %.0f\n",
      p[0], p[1], p[2], s[0], s[1], s[2]);
}

// Runs a job to its end (polling State); returns the final state.
std::string run_job(sdbus::IConnection& conn, const sdbus::ObjectPath& path) {
  auto job = sdbus::createProxy(conn, tests::daemon::kBrokerName, path);
  job->finishRegistration();
  std::string state;
  tests::daemon::wait_until(
      [&] {
        state =
            job->getProperty("State").onInterface(tests::daemon::kJobInterface).get<std::string>();
        return state == "done" || state == "failed" || state == "cancelled";
      },
      120s);
  return state;
}

// Refresh, then install test-ep, on the daemon the first call activates; then
// stops that daemon so the measured one starts fresh with a full store.
bool prepare_store(PrivateBus& bus, sdbus::IConnection& conn) {
  auto broker = sdbus::createProxy(conn, tests::daemon::kBrokerName, tests::daemon::kBrokerPath);
  broker->finishRegistration();
  sdbus::ObjectPath job;
  broker->callMethod("RefreshCatalog")
      .onInterface(tests::daemon::kBrokerInterface)
      .storeResultsTo(job);
  if (run_job(conn, job) != "done") return false;
  broker->callMethod("EnsureProvider")
      .onInterface(tests::daemon::kBrokerInterface)
      .withArguments(std::string(tests::daemon::kTestEp))
      .storeResultsTo(job);
  if (run_job(conn, job) != "done") return false;
  if (auto pid = bus.broker_pid()) {
    print_memory(*pid, "context: after refresh + install,", false);
    kill(*pid, SIGTERM);
  }
  return bus.wait_daemons_gone(10s);
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::stoi(argv[1]) : 2000;
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  // The loopback HTTP server finds its script as under CTest.
  setenv("EPBROKER_SOURCE_DIR", EPBROKER_BENCH_SOURCE_DIR, 0);
  setenv("EPBROKER_PYTHON", EPBROKER_BENCH_PYTHON, 0);
  tests::daemon::TestCatalog catalog;
  tests::daemon::PrivateBusOptions options;
  options.log_level.clear();  // the default (info): what is measured
  PrivateBus bus(options);
  catalog.add_to(bus);
  auto conn = bus.connect();
  if (geteuid() == 0) {
    if (!prepare_store(bus, *conn)) {
      std::fprintf(stderr, "refresh or install failed:\n%s\n", bus.log().c_str());
      return 1;
    }
  } else {
    std::printf("(not root: no refresh or install; RequestSession lists no provider)\n");
  }
  auto broker = sdbus::createProxy(*conn, tests::daemon::kBrokerName, tests::daemon::kBrokerPath);
  broker->finishRegistration();

  // 1. Activation.
  Dicts devices;
  auto t0 = Clock::now();
  broker->callMethod("ListDevices").onInterface("org.epbroker.Broker1").storeResultsTo(devices);
  const auto activation = Clock::now() - t0;
  std::printf("activation to first reply (ListDevices, %zu devices): %.1f ms  [goal < 50 ms]\n",
              devices.size(), us(activation) / 1000.0);

  // 2. Round trips.
  round_trips(bus, *conn, n, "");
  const auto pid = bus.broker_pid();
  if (!pid) {
    std::fprintf(stderr, "daemon pid unknown\n");
    return 1;
  }

  // 3. Idle: wakeups over 5 s, then memory.
  // The last Release's clean-up (the session object's removal) runs after its
  // reply: 1 s to settle, then the 5 s window.
  t0 = Clock::now();
  while (Clock::now() - t0 < 1s) {
    timespec ts{0, 100'000'000};
    nanosleep(&ts, nullptr);
  }
  const long before = switches(*pid);
  t0 = Clock::now();
  while (Clock::now() - t0 < 5s) {
    timespec ts{0, 100'000'000};
    nanosleep(&ts, nullptr);  // a benchmark's measuring window, not a test wait
  }
  const long after = switches(*pid);
  std::printf("idle wakeups %ld in 5 s (%.1f/s)  [goal: none]\n", after - before,
              static_cast<double>(after - before) / 5.0);
  print_memory(*pid, "idle", true);

  // 4. The same round trips on a daemon without catalog or store: the fixed
  //    cost of a session, apart from the providers a reply lists.
  PrivateBus empty(options);
  auto empty_conn = empty.connect();
  round_trips(empty, *empty_conn, n, " (no catalog)");
  return 0;
}
