// epbrokerd under load (issue 6, section 5): N concurrent clients, each with its
// own bus connection, requesting and releasing sessions (a lease on test-ep, the
// install of bulk-ep listed) for S seconds while an install runs: bulk-ep (4 MiB)
// from the catalog's /__trickle__/ targets (80 KiB/s), so it spans most of a 60 s
// run. Clients are closed loops: RequestSession, then Release of what it granted,
// then (after --think-ms; the clients' first cycles spread over one think time)
// again; they are spread over a few threads, each driving
// its share of connections with raw sd-bus. Prints figures, asserts nothing timed:
//   sustained calls/s (RequestSession + Release), RequestSession p50/p99/max,
//   replies by error name, cycles per client (min/max), the daemon's RSS and open
//   descriptors at start, middle, end of the load and once every client has left,
//   its and dbus-daemon's CPU time, and whether the leases were consistent at the
//   end: every client's sessions released, no session object left, DaemonState
//   idle, the install done and bulk-ep ready. Exit 1 only if that last check fails
//   (or setup does), never for a speed.
// The private bus gets max_connections_per_user and max_completed_connections of
// 4 x N, and max_incomplete_connections too (dbus-daemon's defaults, the system
// bus's, are 256, 2048 and 64).
// Needs root (installing without polkit). Usage:
//   bench_load [--clients N] [--seconds S] [--think-ms T] [--threads K]
#include <poll.h>
#include <sys/resource.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "tests/daemon/integration/broker_client.hpp"
#include "tests/daemon/integration/private_bus.hpp"
#include "tests/daemon/integration/proc_stats.hpp"
#include "tests/daemon/integration/test_catalog.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
namespace td = tests::daemon;

struct Flags {
  int clients = 1000;
  int seconds = 60;
  int think_ms = 0;
  int threads = 4;
};

struct Worker;

struct Client {
  Worker* worker = nullptr;
  sd_bus* bus = nullptr;
  enum class State { idle, requesting, releasing } state = State::idle;
  std::string session;
  Clock::time_point sent;
  Clock::time_point next;  // when idle: the next cycle starts
  long cycles = 0;
  int held = 0;  // sessions granted and not released
};

struct Worker {
  std::vector<Client> clients;
  std::vector<double> request_us;
  std::map<std::string, long> errors;
  long requests = 0;
  long releases = 0;
  const std::atomic<bool>* stop = nullptr;
  int think_ms = 0;
  void run();
  void send(Client& c);
};

constexpr const char* kDest = "org.epbroker.Broker1";

int on_reply(sd_bus_message* m, void* userdata, sd_bus_error*) {
  auto& c = *static_cast<Client*>(userdata);
  Worker& w = *c.worker;
  const sd_bus_error* e = sd_bus_message_get_error(m);
  if (c.state == Client::State::requesting) {
    w.request_us.push_back(
        std::chrono::duration<double, std::micro>(Clock::now() - c.sent).count());
    const char* path = nullptr;
    if (e) {
      ++w.errors[std::string("RequestSession: ") + (e->name ? e->name : "?")];
    } else if (sd_bus_message_read(m, "o", &path) > 0) {
      c.session = path;
      ++c.held;
      c.state = Client::State::releasing;
      w.send(c);
      return 0;
    }
  } else if (c.state == Client::State::releasing) {
    if (e) {
      ++w.errors[std::string("Release: ") + (e->name ? e->name : "?")];
    } else {
      --c.held;
    }
    ++c.cycles;
  }
  c.state = Client::State::idle;
  c.next = Clock::now() + std::chrono::milliseconds(w.think_ms);
  return 0;
}

void Worker::send(Client& c) {
  sd_bus_message* m = nullptr;
  int r = 0;
  if (c.state == Client::State::requesting) {
    r = sd_bus_message_new_method_call(c.bus, &m, kDest, td::kBrokerPath, td::kBrokerInterface,
                                       "RequestSession");
    if (r >= 0)
      r = sd_bus_message_append(m, "a{sv}", 1, "providers", "as", 2, "test-ep", "bulk-ep");
    ++requests;
  } else {
    r = sd_bus_message_new_method_call(c.bus, &m, kDest, c.session.c_str(), td::kSessionInterface,
                                       "Release");
    ++releases;
  }
  c.sent = Clock::now();
  if (r >= 0) r = sd_bus_call_async(c.bus, nullptr, m, on_reply, &c, 120'000'000);
  sd_bus_message_unref(m);
  if (r < 0) {
    ++errors["(not sent)"];
    c.state = Client::State::idle;
  }
}

void Worker::run() {
  std::vector<pollfd> fds(clients.size());
  while (true) {
    const auto now = Clock::now();
    const bool stopping = stop->load();
    bool busy = false;
    auto wake = now + 10ms;
    for (auto& c : clients) {
      if (c.state == Client::State::idle && !stopping && c.next <= now) {
        c.state = Client::State::requesting;
        send(c);
      }
      if (c.state == Client::State::idle && !stopping) wake = std::min(wake, c.next);
      busy = busy || c.state != Client::State::idle;
    }
    if (stopping && !busy) return;
    bool progressed = false;
    for (auto& c : clients) {
      while (sd_bus_process(c.bus, nullptr) > 0) progressed = true;
    }
    if (progressed) continue;
    for (std::size_t i = 0; i < clients.size(); ++i) {
      fds[i] = {sd_bus_get_fd(clients[i].bus),
                static_cast<short>(sd_bus_get_events(clients[i].bus)), 0};
    }
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(wake - Clock::now());
    poll(fds.data(), fds.size(), static_cast<int>(std::clamp<long>(ms.count(), 0, 10)));
  }
}

sd_bus* connect(const std::string& address) {
  sd_bus* bus = nullptr;
  if (sd_bus_new(&bus) < 0) return nullptr;
  if (sd_bus_set_address(bus, address.c_str()) < 0 || sd_bus_set_bus_client(bus, 1) < 0 ||
      sd_bus_start(bus) < 0) {
    sd_bus_unref(bus);
    return nullptr;
  }
  // sd_bus_start() only sends Hello: wait for its reply, one connection at a time.
  const char* unique = nullptr;
  if (sd_bus_get_unique_name(bus, &unique) < 0) bus = sd_bus_flush_close_unref(bus);
  return bus;
}

// busctl's answer to a call returning one object path or string: the quoted value.
std::string quoted(const std::string& out) {
  const auto a = out.find('"');
  const auto b = out.rfind('"');
  return a == std::string::npos || b <= a ? "" : out.substr(a + 1, b - a - 1);
}

std::string job_state(const td::PrivateBus& bus, const std::string& job) {
  return quoted(bus.busctl({"get-property", kDest, job, td::kJobInterface, "State"}).out);
}

bool is_final(const std::string& state) {
  return state == "done" || state == "failed" || state == "cancelled";
}

// CPU time of every thread of `pid` so far (schedstat), in seconds.
double cpu_s(pid_t pid) {
  double total = 0;
  std::error_code ec;
  for (const auto& t :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream in(t.path() / "schedstat");
    double ns = 0;
    if (in >> ns) total += ns / 1e9;
  }
  return total;
}

// The dbus-daemon this process started (our child, named so).
pid_t bus_daemon_pid() {
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "stat");
    std::string stat;
    if (!std::getline(in, stat)) continue;
    const auto close = stat.rfind(')');
    if (close == std::string::npos || stat.find("(dbus-daemon)") == std::string::npos) continue;
    if (std::stol(stat.substr(close + 4)) == getpid()) return std::stoi(name);
  }
  return -1;
}

// Session objects the daemon has on the bus now (ObjectManager).
std::size_t session_objects(sdbus::IConnection& conn) {
  std::map<sdbus::ObjectPath, std::map<std::string, td::Dict>> objects;
  sdbus::createProxy(conn, kDest, td::kBrokerPath)
      ->callMethod("GetManagedObjects")
      .onInterface("org.freedesktop.DBus.ObjectManager")
      .storeResultsTo(objects);
  std::size_t n = 0;
  for (const auto& [path, interfaces] : objects) n += path.find("/session/") != std::string::npos;
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const int v = std::atoi(argv[i + 1]);
    if (a == "--clients")
      f.clients = v;
    else if (a == "--seconds")
      f.seconds = v;
    else if (a == "--think-ms")
      f.think_ms = v;
    else if (a == "--threads")
      f.threads = std::max(1, v);
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  if (geteuid() != 0) {
    std::fprintf(stderr, "bench_load: needs root (the install)\n");
    return 2;
  }
  setenv("EPBROKER_SOURCE_DIR", EPBROKER_BENCH_SOURCE_DIR, 0);
  setenv("EPBROKER_PYTHON", EPBROKER_BENCH_PYTHON, 0);
  // One socket per client here and in dbus-daemon (which inherits the limit).
  rlimit nofile{};
  getrlimit(RLIMIT_NOFILE, &nofile);
  nofile.rlim_cur = nofile.rlim_max;
  setrlimit(RLIMIT_NOFILE, &nofile);

  td::TestCatalog catalog;
  td::PrivateBusOptions options;
  const std::string limit = std::to_string(4 * f.clients + 64);
  options.extra_bus_config = "  <limit name=\"max_connections_per_user\">" + limit +
                             "</limit>\n  <limit name=\"max_completed_connections\">" + limit +
                             "</limit>\n  <limit name=\"max_incomplete_connections\">" + limit +
                             "</limit>\n";
  options.log_level.clear();  // the default (info), which logs no line per session
  td::PrivateBus bus(options);
  bus.add_remote("test", catalog.metadata_url(), catalog.base_url() + "__trickle__/targets/",
                 catalog.trusted_root());
  for (const char* method : {"RefreshCatalog", "EnsureProvider"}) {
    std::vector<std::string> args = {"call", kDest, td::kBrokerPath, td::kBrokerInterface, method};
    if (std::string(method) == "EnsureProvider") args.insert(args.end(), {"s", td::kTestEp});
    const std::string job = quoted(bus.busctl(args).out);
    // test-ep is small: even trickling (80 KiB/s) it takes a few seconds.
    td::wait_until([&] { return job_state(bus, job) == "done"; }, 120s);
    if (job_state(bus, job) != "done") {
      std::fprintf(stderr, "bench_load: %s failed:\n%s\n", method, bus.log().c_str());
      return 2;
    }
  }
  const auto pid = bus.broker_pid();
  const pid_t bus_pid = bus_daemon_pid();
  if (!pid) return 2;
  auto control = bus.connect();  // the bench's own reads (job state, objects, providers)

  // Connect every client first (sd_bus_start waits for Hello): not timed.
  std::vector<Worker> workers(static_cast<std::size_t>(f.threads));
  std::atomic<bool> stop{false};
  auto t0 = Clock::now();
  for (int i = 0; i < f.clients; ++i) {
    Worker& w = workers[static_cast<std::size_t>(i % f.threads)];
    Client c;
    c.bus = connect(bus.address());
    if (!c.bus) {
      std::fprintf(stderr, "bench_load: client %d cannot connect\n%s\n", i, bus.log().c_str());
      return 2;
    }
    w.clients.push_back(c);
  }
  for (auto& w : workers) {
    for (auto& c : w.clients) c.worker = &w;
    w.stop = &stop;
    w.think_ms = f.think_ms;
  }
  std::printf("connected %d clients in %.1f s (%d threads)\n", f.clients,
              std::chrono::duration<double>(Clock::now() - t0).count(), f.threads);

  // The install that runs during the load.
  const std::string install =
      quoted(bus.busctl({"call", kDest, td::kBrokerPath, td::kBrokerInterface, "EnsureProvider",
                         "s", td::kBulkEp})
                 .out);
  struct Sample {
    long rss, fds, bus_rss;
  };
  auto sample = [&] { return Sample{td::rss_kb(*pid), td::fd_count(*pid), td::rss_kb(bus_pid)}; };
  std::string install_state = "queued";
  double install_s = -1;
  auto watch_install = [&] {
    if (is_final(install_state)) return;
    try {
      install_state = td::job_property(*control, install, "State").get<std::string>();
    } catch (const sdbus::Error&) {
      return;
    }
    if (is_final(install_state)) {
      install_s = std::chrono::duration<double>(Clock::now() - t0).count();
    }
  };
  const Sample at_start = sample();
  const double cpu0 = cpu_s(*pid);
  const double bus_cpu0 = cpu_s(bus_pid);
  t0 = Clock::now();
  std::vector<std::thread> threads;
  // Client i starts its first cycle i/N of a think time in: clients that all woke
  // together would keep arriving in waves of N calls.
  for (std::size_t k = 0; k < workers.size(); ++k) {
    auto& clients = workers[k].clients;
    for (std::size_t j = 0; j < clients.size(); ++j) {
      const auto i = static_cast<long>(j * workers.size() + k);
      clients[j].next = t0 + std::chrono::milliseconds(i * f.think_ms / f.clients);
    }
  }
  for (auto& w : workers) threads.emplace_back([&w] { w.run(); });
  // The load's duration: the install's state read every 200 ms, the daemon sampled
  // at the middle.
  Sample middle{};
  std::string install_middle;
  const auto half = t0 + std::chrono::seconds(f.seconds) / 2;
  while (Clock::now() < t0 + std::chrono::seconds(f.seconds)) {
    watch_install();
    if (install_middle.empty() && Clock::now() >= half) {
      middle = sample();
      install_middle = install_state;
    }
    std::this_thread::sleep_for(200ms);
  }
  const Sample at_end = sample();
  stop = true;
  for (auto& t : threads) t.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  const double cpu = cpu_s(*pid) - cpu0;
  const double bus_cpu = cpu_s(bus_pid) - bus_cpu0;

  std::vector<double> lat;
  std::map<std::string, long> errors;
  long requests = 0;
  long releases = 0;
  long held = 0;
  long min_cycles = -1;
  long max_cycles = 0;
  for (auto& w : workers) {
    lat.insert(lat.end(), w.request_us.begin(), w.request_us.end());
    for (const auto& [k, v] : w.errors) errors[k] += v;
    requests += w.requests;
    releases += w.releases;
    for (const auto& c : w.clients) {
      held += c.held;
      min_cycles = min_cycles < 0 ? c.cycles : std::min(min_cycles, c.cycles);
      max_cycles = std::max(max_cycles, c.cycles);
    }
  }
  std::sort(lat.begin(), lat.end());
  auto pct = [&](double p) {
    return lat.empty()
               ? 0.0
               : lat[std::min(lat.size() - 1,
                              static_cast<std::size_t>(p * static_cast<double>(lat.size())))] /
                     1000.0;
  };
  std::printf(
      "load: %d clients, %.1f s, think %d ms, install of bulk-ep (4 MiB at 80 KiB/s) "
      "running (%s at the middle)\n",
      f.clients, elapsed, f.think_ms, install_middle.c_str());
  std::printf("calls: %ld RequestSession + %ld Release = %.0f calls/s sustained\n", requests,
              releases, static_cast<double>(requests + releases) / elapsed);
  std::printf("RequestSession: p50 %.1f ms, p99 %.1f ms, max %.1f ms (%zu replies)\n", pct(0.5),
              pct(0.99), lat.empty() ? 0.0 : lat.back() / 1000.0, lat.size());
  std::printf("cycles per client: min %ld, max %ld\n", min_cycles, max_cycles);
  std::printf("errors:%s\n", errors.empty() ? " none" : "");
  for (const auto& [k, v] : errors) std::printf("  %s: %ld\n", k.c_str(), v);
  std::printf("CPU during the load: epbrokerd %.1f s (%.0f%%), dbus-daemon %.1f s (%.0f%%)\n", cpu,
              100 * cpu / elapsed, bus_cpu, 100 * bus_cpu / elapsed);

  // Every client leaves; the daemon ends what they might still hold.
  // Released objects are removed by the daemon's main loop after the reply:
  // give it a moment, and say how long it took.
  const auto released_at = Clock::now();
  const std::size_t sessions_at_stop = session_objects(*control);
  td::wait_until([&] { return session_objects(*control) == 0; }, 10s);
  const auto daemon_sessions_before = session_objects(*control);
  std::printf("session objects when the load stopped: %zu, %zu after %.0f ms\n", sessions_at_stop,
              daemon_sessions_before,
              std::chrono::duration<double, std::milli>(Clock::now() - released_at).count());
  for (auto& w : workers) {
    for (auto& c : w.clients) c.bus = sd_bus_flush_close_unref(c.bus);
  }
  std::string state;
  const bool idle = td::wait_until(
      [&] {
        state = quoted(bus.busctl({"get-property", kDest, td::kBrokerPath, td::kBrokerInterface,
                                   "DaemonState"})
                           .out);
        return state == "idle";
      },
      180s);
  const Sample after = sample();
  std::printf(
      "daemon RSS kB / fds: start %ld / %ld, middle %ld / %ld, end %ld / %ld, "
      "clients gone + idle %ld / %ld\n",
      at_start.rss, at_start.fds, middle.rss, middle.fds, at_end.rss, at_end.fds, after.rss,
      after.fds);
  std::printf("dbus-daemon RSS kB: start %ld, middle %ld, end %ld, after %ld\n", at_start.bus_rss,
              middle.bus_rss, at_end.bus_rss, after.bus_rss);
  td::wait_until(
      [&] {
        watch_install();
        return is_final(install_state);
      },
      180s);
  const std::size_t objects = session_objects(*control);
  td::BrokerProxy broker(*control);
  const auto bulk = td::find_named(broker.ListProviders(), td::kBulkEp);
  const std::string bulk_state = bulk ? td::str(*bulk, "state") : "(not listed)";
  std::printf(
      "leases: sessions still held by clients %ld (session objects %zu before they left), "
      "session objects now %zu, DaemonState %s; install %s after %.1f s, bulk-ep %s; "
      "same daemon %s\n",
      held, daemon_sessions_before, objects, state.c_str(), install_state.c_str(), install_s,
      bulk_state.c_str(), bus.broker_pid() == pid ? "yes" : "NO");
  const bool consistent = held == 0 && daemon_sessions_before == 0 && objects == 0 && idle &&
                          install_state == "done" && bulk_state == "ready" &&
                          bus.broker_pid() == pid;
  std::printf("consistent at the end: %s\n", consistent ? "yes" : "NO");
  return consistent ? 0 : 1;
}
