// bus_fuzz: a seeded fuzzer of epbrokerd's bus API (issue 6, section 4). It starts
// a private bus whose first call activates the daemon (the integration fixture:
// PrivateBus, TestCatalog served on loopback), refreshes and installs test-ep
// when run as root, then sends N method calls from a few connections, each with
// up to 32 calls in flight: valid-ish RequestSession / Release mixes (random a{sv}
// options, models among them, releases of our own, other connections' and stale
// sessions), the other Broker1 methods with valid and junk names (rarely a real
// install, removal, refresh or verify), ListModels / EnsureModel / RemoveModel
// (the catalog also publishes a small model, bus_fuzz::kModelName, which they
// rarely install or remove), Cancel of job paths, Properties/ObjectManager/Introspect/
// Peer calls, right members with random signatures and random members with random
// values (nested arrays, dicts, structs, variants), random object paths and
// interfaces. Every few thousand calls a connection closes with its calls in
// flight (a client vanishing mid-call) and a new one takes its place.
//
// It checks that every call gets a reply (an error or not) within --timeout-ms,
// and samples the daemon's RSS (/proc/PID/status VmRSS) and open descriptors
// (/proc/PID/fd) at the start, after --warmup calls, every --sample-every calls
// and at the end, once every session is released and the daemon is idle again
// (also VmSize: an exited thread never joined keeps its 8 MiB stack mapped).
// Findings (exit 1): the daemon's pid changed or it died (a crash), a call went
// unanswered, the bus closed one of our connections, RSS grew more than
// --rss-growth-kb (default 16 MiB), VmSize more than --vm-growth-kb (64 MiB) or
// descriptors more than --fd-growth (8) from the warm-up sample to the end, or
// (--asan-log-dir) a sanitizer wrote a report. A daemon under ASan (libasan mapped)
// has its RSS and VmSize bounds skipped unless given: its shadow memory and
// quarantine grow by themselves. The seed is printed; the same seed sends the same
// calls (the replies it reacts to can differ with timing).
//
// Usage: bus_fuzz [--calls N] [--seed S] [--epbrokerd PATH] [--sample-every N]
//                 [--warmup N] [--rss-growth-kb K] [--vm-growth-kb K] [--fd-growth N]
//                 [--timeout-ms T] [--asan-log-dir DIR]
// Exit: 0 no finding; 1 findings (listed on stderr); 2 usage or setup failure.
#include <poll.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "catalog/crypto/hash.hpp"
#include "catalog/model_metadata.hpp"
#include "tests/daemon/integration/private_bus.hpp"
#include "tests/daemon/integration/proc_stats.hpp"
#include "tests/daemon/integration/test_catalog.hpp"
#include "tests/fuzz/bus/call_generator.hpp"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
using tests::daemon::PrivateBus;

struct Flags {
  std::size_t calls = 1'000'000;
  std::uint64_t seed = 1;
  fs::path epbrokerd;
  std::size_t sample_every = 100'000;
  std::size_t warmup = 0;  // 0: min(calls / 5, 100,000)
  long rss_growth_kb = 16 * 1024;
  long vm_growth_kb = 64 * 1024;
  bool memory_bounds_given = false;  // either bound given on the command line
  long fd_growth = 8;
  int timeout_ms = 30'000;
  fs::path asan_log_dir;
};

constexpr int kConnections = 4;
constexpr int kWindow = 32;  // in flight per connection (the bus allows 128)
constexpr std::size_t kChurnEvery = 2'000;

struct Conn {
  sd_bus* bus = nullptr;
  int in_flight = 0;
  std::vector<std::string> sessions;  // granted to it, not released yet
};

struct Pending {
  int conn = 0;
  bus_fuzz::Kind kind = bus_fuzz::Kind::other;
  std::string object;  // Release: the session path
};

class Fuzzer {
 public:
  Fuzzer(const Flags& flags, std::string address, pid_t pid)
      : flags_(flags), address_(std::move(address)), pid_(pid), gen_(flags.seed) {}

  // Sends flags.calls calls and collects every reply; false on a setup failure.
  bool run();
  std::vector<std::string> findings;
  long warm_rss = -1;
  long warm_vm = -1;
  long warm_fds = -1;

 private:
  static int on_reply(sd_bus_message* m, void* userdata, sd_bus_error*);
  void replied(std::uint64_t id, sd_bus_message* m);
  sd_bus* open_connection();
  void close_connection(int index);
  bool send_one(int index);
  void sample(const char* what);

  const Flags& flags_;
  std::string address_;
  pid_t pid_;
  bus_fuzz::Generator gen_;
  Conn conns_[kConnections];
  std::unordered_map<std::uint64_t, Pending> pending_;
  std::uint64_t next_id_ = 1;
  std::size_t sent_ = 0;
  std::size_t answered_ = 0;
  std::size_t abandoned_ = 0;
  std::size_t unanswered_ = 0;
  std::size_t dropped_ = 0;  // connections the bus closed
  std::size_t not_sent_ = 0;
  std::map<std::string, std::size_t> replies_;  // error name or "ok"
  Clock::time_point start_ = Clock::now();
  Clock::time_point last_reply_ = Clock::now();
};

Fuzzer* g_fuzzer = nullptr;

int Fuzzer::on_reply(sd_bus_message* m, void* userdata, sd_bus_error*) {
  g_fuzzer->replied(reinterpret_cast<std::uintptr_t>(userdata), m);
  return 0;
}

void Fuzzer::replied(std::uint64_t id, sd_bus_message* m) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;  // its connection was closed on purpose
  const Pending p = std::move(it->second);
  pending_.erase(it);
  Conn& c = conns_[p.conn];
  --c.in_flight;
  ++answered_;
  last_reply_ = Clock::now();
  auto drop_session = [&] {
    auto& s = c.sessions;
    s.erase(std::remove(s.begin(), s.end(), p.object), s.end());
  };
  if (const sd_bus_error* e = sd_bus_message_get_error(m)) {
    const std::string name = e->name ? e->name : "(unnamed)";
    ++replies_[name];
    // What sd-bus or dbus-daemon say when no answer came: the daemon timed out
    // (sd-bus: NoReply), or left the bus (dbus-daemon: NoReply / Disconnected).
    if (name == "org.freedesktop.DBus.Error.NoReply" ||
        name == "org.freedesktop.DBus.Error.Timeout" ||
        name == "org.freedesktop.DBus.Error.Disconnected") {
      if (++unanswered_ <= 5) {
        findings.push_back("call " + std::to_string(id) + " (" + bus_fuzz::kind_name(p.kind) +
                           ") unanswered: " + name + ": " + (e->message ? e->message : ""));
      }
    }
    if (p.kind == bus_fuzz::Kind::release && (name == "org.epbroker.Error.NotFound" ||
                                              name == "org.freedesktop.DBus.Error.UnknownObject")) {
      drop_session();
    }
    return;
  }
  ++replies_["ok"];
  const char* path = nullptr;
  if (p.kind == bus_fuzz::Kind::request_session && sd_bus_message_read(m, "o", &path) > 0) {
    c.sessions.push_back(path);
    gen_.known_session(path);
  } else if (p.kind == bus_fuzz::Kind::release) {
    drop_session();
  } else if (p.kind == bus_fuzz::Kind::starts_job && sd_bus_message_read(m, "o", &path) > 0) {
    gen_.known_job(path);
  }
}

sd_bus* Fuzzer::open_connection() {
  sd_bus* bus = nullptr;
  if (sd_bus_new(&bus) < 0) return nullptr;
  if (sd_bus_set_address(bus, address_.c_str()) < 0 || sd_bus_set_bus_client(bus, 1) < 0 ||
      sd_bus_start(bus) < 0) {
    sd_bus_unref(bus);
    return nullptr;
  }
  return bus;
}

void Fuzzer::close_connection(int index) {
  Conn& c = conns_[index];
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (it->second.conn == index) {
      ++abandoned_;
      it = pending_.erase(it);
    } else {
      ++it;
    }
  }
  sd_bus_flush_close_unref(c.bus);
  c = Conn{};
}

bool Fuzzer::send_one(int index) {
  Conn& c = conns_[index];
  // Our own sessions, released by their owner most of the time.
  const std::string* own =
      c.sessions.empty() ? nullptr
                         : &c.sessions[gen_.below(static_cast<std::uint32_t>(c.sessions.size()))];
  sd_bus_message* m = nullptr;
  Pending p{index, bus_fuzz::Kind::other, ""};
  if (!gen_.build(c.bus, own, m, p.kind, p.object)) return false;
  const std::uint64_t id = next_id_++;
  const int r = sd_bus_call_async(c.bus, nullptr, m, on_reply,
                                  reinterpret_cast<void*>(static_cast<std::uintptr_t>(id)),
                                  static_cast<std::uint64_t>(flags_.timeout_ms) * 1000);
  sd_bus_message_unref(m);
  ++sent_;
  if (r < 0) {
    ++replies_[std::string("(not sent: ") + std::to_string(-r) + ")"];
    ++not_sent_;
    return true;
  }
  pending_.emplace(id, std::move(p));
  ++c.in_flight;
  return true;
}

void Fuzzer::sample(const char* what) {
  const double secs = std::chrono::duration<double>(Clock::now() - start_).count();
  std::size_t held = 0;
  for (const auto& c : conns_) held += c.sessions.size();
  std::printf(
      "%-8s calls %8zu  %6.0f calls/s  RSS %6ld kB  VmSize %7ld kB  fds %3ld  sessions held %3zu\n",
      what, answered_, secs > 0 ? static_cast<double>(answered_) / secs : 0.0,
      tests::daemon::rss_kb(pid_), tests::daemon::vm_kb(pid_), tests::daemon::fd_count(pid_), held);
}

bool Fuzzer::run() {
  g_fuzzer = this;
  for (auto& c : conns_) {
    c.bus = open_connection();
    if (!c.bus) return false;
  }
  const std::size_t warmup =
      flags_.warmup ? flags_.warmup : std::min<std::size_t>(flags_.calls / 5, 100'000);
  sample("start");
  std::size_t next_sample = flags_.sample_every;
  std::size_t next_churn = kChurnEvery;
  bool warmed = false;
  start_ = Clock::now();
  last_reply_ = start_;
  while (sent_ < flags_.calls || !pending_.empty()) {
    for (int i = 0; i < kConnections; ++i) {
      while (sent_ < flags_.calls && conns_[i].in_flight < kWindow) {
        if (!send_one(i)) break;
      }
    }
    bool progressed = false;
    for (int i = 0; i < kConnections; ++i) {
      int r = 0;
      while ((r = sd_bus_process(conns_[i].bus, nullptr)) > 0) progressed = true;
      if (r < 0 || sd_bus_is_open(conns_[i].bus) <= 0) {
        // The bus dropped us (its calls were answered NoReply, counted above): a
        // finding; the run goes on with a new connection.
        if (++dropped_ <= 5) {
          findings.push_back("connection " + std::to_string(i) + " closed under us after " +
                             std::to_string(sent_) + " calls (" + std::to_string(r < 0 ? -r : 0) +
                             ")");
        }
        close_connection(i);
        conns_[i].bus = open_connection();
        if (!conns_[i].bus) return false;
      }
    }
    if (!warmed && answered_ >= warmup) {
      warmed = true;
      warm_rss = tests::daemon::rss_kb(pid_);
      warm_vm = tests::daemon::vm_kb(pid_);
      warm_fds = tests::daemon::fd_count(pid_);
      sample("warm");
      if (answered_ >= next_sample) next_sample += flags_.sample_every;
    }
    if (answered_ >= next_sample) {
      sample("sample");
      next_sample += flags_.sample_every;
      if (tests::daemon::rss_kb(pid_) < 0) {
        findings.push_back("the daemon (pid " + std::to_string(pid_) + ") is gone");
        return true;
      }
    }
    if (sent_ >= next_churn && sent_ < flags_.calls) {
      // A client vanishing with its calls in flight; its sessions end with it.
      const int victim = static_cast<int>(gen_.below(kConnections));
      close_connection(victim);
      conns_[victim].bus = open_connection();
      if (!conns_[victim].bus) return false;
      next_churn += kChurnEvery;
      continue;
    }
    if (Clock::now() - last_reply_ > std::chrono::milliseconds(flags_.timeout_ms) + 5s) {
      findings.push_back(std::to_string(pending_.size()) + " calls unanswered and no reply for " +
                         std::to_string(flags_.timeout_ms / 1000 + 5) + " s");
      return true;
    }
    if (progressed) continue;
    pollfd fds[kConnections];
    for (int i = 0; i < kConnections; ++i) {
      fds[i] = {sd_bus_get_fd(conns_[i].bus), static_cast<short>(sd_bus_get_events(conns_[i].bus)),
                0};
    }
    poll(fds, kConnections, 100);
  }
  sample("sent");
  std::printf("replies:");
  for (const auto& [name, n] : replies_) std::printf(" %s %zu;", name.c_str(), n);
  std::printf("\n%zu calls abandoned by closing their connection (%zu closed)\n", abandoned_,
              flags_.calls / kChurnEvery);
  if (unanswered_ > 5) findings.push_back(std::to_string(unanswered_) + " calls unanswered in all");
  if (dropped_ > 5) findings.push_back(std::to_string(dropped_) + " connections dropped in all");
  if (not_sent_ > 0) findings.push_back(std::to_string(not_sent_) + " calls sd-bus would not send");
  for (int i = 0; i < kConnections; ++i) close_connection(i);  // every session ends
  return true;
}

// DaemonState over a fresh connection, "" if the call failed.
std::string daemon_state(const std::string& address) {
  sd_bus* bus = nullptr;
  std::string state;
  if (sd_bus_new(&bus) >= 0 && sd_bus_set_address(bus, address.c_str()) >= 0 &&
      sd_bus_set_bus_client(bus, 1) >= 0 && sd_bus_start(bus) >= 0) {
    char* s = nullptr;
    if (sd_bus_get_property_string(bus, "org.epbroker.Broker1", "/org/epbroker/Broker1",
                                   "org.epbroker.Broker1", "DaemonState", nullptr, &s) >= 0) {
      state = s;
      std::free(s);
    }
  }
  sd_bus_flush_close_unref(bus);
  return state;
}

// Model bus_fuzz::kModelName 1.0, published next to the packages for the model
// calls to find now and then: variants fp32 (any device) and int8 (NPUs), each a
// model.onnx and the same labels.txt. Throws std::runtime_error.
void publish_model(tests::daemon::TestCatalog& repo) {
  const std::string fp32 = "fp32 weights of the bus fuzzer's model";
  const std::string int8 = "int8 weights";
  const std::string labels = "cat\ndog\n";
  nlohmann::json c = {{"epbroker",
                       {{"schema", 2},
                        {"kind", "model"},
                        {"name", bus_fuzz::kModelName},
                        {"version", "1.0"},
                        {"publisher", "Test"},
                        {"license", "Apache-2.0"},
                        {"license_url", "https://example.com/license"},
                        {"task", "image-classification"},
                        {"inputs", {{{"name", "data"}, {"type", "float"}, {"shape", {"N", 3}}}}},
                        {"outputs", {{{"name", "prob"}, {"type", "float"}, {"shape", {"N", 2}}}}},
                        {"variants", nlohmann::json::array()}}}};
  for (const auto& [id, weights] : {std::pair{"fp32", fp32}, std::pair{"int8", int8}}) {
    nlohmann::json files = nlohmann::json::array();
    for (const auto& [path, bytes] : {std::pair{"labels.txt", labels}, {"model.onnx", weights}}) {
      files.push_back(
          {{"path", path}, {"size", bytes.size()}, {"sha256", catalog::crypto::sha256_hex(bytes)}});
    }
    nlohmann::json v = {
        {"id", id}, {"ort_min", "1.20"}, {"opset", 17}, {"main", "model.onnx"}, {"files", files}};
    if (std::string(id) == "int8") v["devices"] = {"npu"};
    c["epbroker"]["variants"].push_back(v);
  }
  auto meta = catalog::parse_model_metadata(c);
  if (!meta) throw std::runtime_error("bus_fuzz: model card: " + meta.error().message);
  repo.publish_model(*meta, {fp32, int8, labels});
}

bool setup_store(const PrivateBus& bus) {
  for (const char* call : {"RefreshCatalog", "EnsureProvider"}) {
    std::vector<std::string> args = {"call", tests::daemon::kBrokerName, tests::daemon::kBrokerPath,
                                     tests::daemon::kBrokerInterface, call};
    if (std::string(call) == "EnsureProvider") {
      args.insert(args.end(), {"s", tests::daemon::kTestEp});
    }
    const auto r = bus.busctl(args);
    if (r.exit_code != 0) return false;
    const std::string job =
        r.out.substr(r.out.find('"') + 1, r.out.rfind('"') - r.out.find('"') - 1);
    std::string state;
    tests::daemon::wait_until(
        [&] {
          state = bus.busctl({"get-property", tests::daemon::kBrokerName, job,
                              tests::daemon::kJobInterface, "State"})
                      .out;
          return state.find("done") != std::string::npos ||
                 state.find("failed") != std::string::npos;
        },
        60s);
    if (state.find("done") == std::string::npos) return false;
  }
  return true;
}

int usage() {
  std::fprintf(
      stderr,
      "usage: bus_fuzz [--calls N] [--seed S] [--epbrokerd PATH] [--sample-every N]\n"
      "                [--warmup N] [--rss-growth-kb K] [--vm-growth-kb K] [--fd-growth N]\n"
      "                [--timeout-ms T] [--asan-log-dir DIR]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return usage();
    const std::string v = argv[++i];
    if (a == "--rss-growth-kb" || a == "--vm-growth-kb") f.memory_bounds_given = true;
    try {
      if (a == "--calls")
        f.calls = std::stoul(v);
      else if (a == "--seed")
        f.seed = std::stoull(v);
      else if (a == "--epbrokerd")
        f.epbrokerd = v;
      else if (a == "--sample-every")
        f.sample_every = std::max(1UL, std::stoul(v));
      else if (a == "--warmup")
        f.warmup = std::stoul(v);
      else if (a == "--rss-growth-kb")
        f.rss_growth_kb = std::stol(v);
      else if (a == "--vm-growth-kb")
        f.vm_growth_kb = std::stol(v);
      else if (a == "--fd-growth")
        f.fd_growth = std::stol(v);
      else if (a == "--timeout-ms")
        f.timeout_ms = std::stoi(v);
      else if (a == "--asan-log-dir")
        f.asan_log_dir = v;
      else
        return usage();
    } catch (const std::exception&) {
      return usage();
    }
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  // The loopback HTTP server finds its script as under CTest.
  // One malloc arena in the daemon (the bus hands it this environment): glibc
  // reserves 64 MiB of address space for each arena a new thread contends into,
  // up to 8 per core and never returned, so VmSize could grow by 128 MiB after
  // warm-up with nothing leaked (seen once in CI, 2026-11-28, RSS +1.8 MB). With
  // one arena, VmSize growth is what this check is after: stacks of threads never
  // joined, and mappings not unmapped.
  setenv("MALLOC_ARENA_MAX", "1", 0);
  setenv("EPBROKER_SOURCE_DIR", EPBROKER_FUZZ_SOURCE_DIR, 0);
  setenv("EPBROKER_PYTHON", EPBROKER_FUZZ_PYTHON, 0);
  if (!f.asan_log_dir.empty()) {
    // dbus-daemon passes its environment on to the daemon it activates.
    fs::create_directories(f.asan_log_dir);
    const std::string opts = std::getenv("ASAN_OPTIONS") ? std::getenv("ASAN_OPTIONS") : "";
    setenv("ASAN_OPTIONS",
           (opts + (opts.empty() ? "" : ":") + "log_path=" + (f.asan_log_dir / "asan").string())
               .c_str(),
           1);
    setenv("UBSAN_OPTIONS",
           ("print_stacktrace=1:log_path=" + (f.asan_log_dir / "ubsan").string()).c_str(), 1);
  }
  std::printf("bus_fuzz: seed %llu, %zu calls, epbrokerd %s\n",
              static_cast<unsigned long long>(f.seed), f.calls,
              f.epbrokerd.empty() ? tests::daemon::epbrokerd_path().c_str() : f.epbrokerd.c_str());

  std::vector<std::string> findings;
  long end_rss = -1;
  long end_vm = -1;
  long end_fds = -1;
  long warm_rss = -1;
  long warm_vm = -1;
  long warm_fds = -1;
  bool asan = false;
  {
    tests::daemon::TestCatalog catalog;
    publish_model(catalog);
    tests::daemon::PrivateBusOptions options;
    options.epbrokerd = f.epbrokerd;
    options.log_level.clear();  // debug would log every session of a million calls
    PrivateBus bus(options);
    catalog.add_to(bus);
    if (geteuid() == 0 && !setup_store(bus)) {
      std::fprintf(stderr, "bus_fuzz: refresh or install failed:\n%s\n", bus.log().c_str());
      return 2;
    }
    if (daemon_state(bus.address()).empty()) {
      std::fprintf(stderr, "bus_fuzz: the daemon does not answer:\n%s\n", bus.log().c_str());
      return 2;
    }
    const auto pid = bus.broker_pid();
    if (!pid) return 2;
    asan = tests::daemon::under_asan(*pid);
    std::printf("daemon pid %d%s\n", *pid, asan ? " (AddressSanitizer)" : "");
    Fuzzer fuzzer(f, bus.address(), *pid);
    if (!fuzzer.run()) {
      std::fprintf(stderr, "bus_fuzz: cannot connect to %s\n", bus.address().c_str());
      return 2;
    }
    findings = std::move(fuzzer.findings);
    warm_rss = fuzzer.warm_rss;
    warm_vm = fuzzer.warm_vm;
    warm_fds = fuzzer.warm_fds;
    // Every connection closed: the daemon ends their sessions; jobs finish.
    std::string state;
    tests::daemon::wait_until([&] { return (state = daemon_state(bus.address())) == "idle"; }, 60s);
    if (state != "idle") findings.push_back("the daemon is not idle at the end: '" + state + "'");
    const auto now = bus.broker_pid();
    if (now != pid) {
      findings.push_back("the daemon's pid changed: " + std::to_string(*pid) + " -> " +
                         (now ? std::to_string(*now) : std::string("none")));
    }
    end_rss = tests::daemon::rss_kb(*pid);
    end_vm = tests::daemon::vm_kb(*pid);
    end_fds = tests::daemon::fd_count(*pid);
    std::printf(
        "end      idle: RSS %ld kB  VmSize %ld kB  fds %ld (warm-up: %ld kB, %ld kB, %ld; bounds "
        "+%ld kB, +%ld kB, +%ld)\n",
        end_rss, end_vm, end_fds, warm_rss, warm_vm, warm_fds, f.rss_growth_kb, f.vm_growth_kb,
        f.fd_growth);
  }  // the daemon gets SIGTERM and exits (LeakSanitizer runs then)
  const bool check_memory = !asan || f.memory_bounds_given;
  if (!check_memory) {
    std::printf(
        "the daemon runs under ASan: RSS and VmSize bounds not checked (give "
        "--rss-growth-kb or --vm-growth-kb to check them anyway)\n");
  }
  if (check_memory && end_rss >= 0 && warm_rss >= 0 && end_rss - warm_rss > f.rss_growth_kb) {
    findings.push_back("RSS grew " + std::to_string(end_rss - warm_rss) + " kB after warm-up");
  }
  if (check_memory && end_vm >= 0 && warm_vm >= 0 && end_vm - warm_vm > f.vm_growth_kb) {
    // E.g. exited threads never joined: each keeps its 8 MiB stack mapped.
    findings.push_back("VmSize grew " + std::to_string(end_vm - warm_vm) + " kB after warm-up");
  }
  if (end_fds >= 0 && warm_fds >= 0 && end_fds - warm_fds > f.fd_growth) {
    findings.push_back("fds grew by " + std::to_string(end_fds - warm_fds) + " after warm-up");
  }
  if (!f.asan_log_dir.empty()) {
    for (const auto& e : fs::directory_iterator(f.asan_log_dir)) {
      findings.push_back("sanitizer report " + e.path().string());
      std::ifstream in(e.path());
      std::string line;
      for (int n = 0; n < 30 && std::getline(in, line); ++n)
        std::fprintf(stderr, "%s\n", line.c_str());
    }
  }
  for (const auto& finding : findings) std::fprintf(stderr, "FINDING: %s\n", finding.c_str());
  std::printf("%s\n", findings.empty() ? "no finding" : "findings (see stderr)");
  return findings.empty() ? 0 : 1;
}
