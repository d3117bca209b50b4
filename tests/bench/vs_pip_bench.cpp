// "Nothing installed" -> first inference through epbrokerd, beside `pip install
// onnxruntime onnxruntime-ep-openvino` from the same files + a first inference in
// Python (goal: >= 3x faster); and the disk use of N apps sharing one store vs N
// virtualenvs. Prints figures; asserts nothing about speed.
//
//   bench_vs_pip [--wheels DIR] [--repeat N] [--python PY]
//     DIR: the pinned wheels of tests/bench/requirements-bench-pip.txt (default
//     $EPBROKER_CACHE/dl/bench-wheels; `tests/bench/pip_side.py fetch` fills it).
//     PY: the interpreter the venvs are made from (CPython 3.11; pip_side.py's
//     default otherwise).
//   bench_vs_pip --app BUS_ADDRESS MODEL   (internal: the app process, below)
//
// Broker side, per repetition: an empty store, a private bus whose first call
// activates epbrokerd, a signed catalog on loopback HTTP with the OpenVINO EP and
// the shared ONNX Runtime packages. One app process (this binary with --app),
// timed from spawn to exit, does: activation (first call), catalog refresh,
// ensure_ready("openvino") (download, verify, install), request_session, ORT env +
// RegisterExecutionProviderLibrary of the granted library, session creation on
// the model (OpenVINO's devices when ORT offers any, else the CPU EP), first Run.
// The daemon is shown the intel-laptop fixture machine: on a host without an
// Intel CPU it would list OpenVINO as incompatible. There, ORT's OpenVINO EP then
// offers no device and the CPU EP runs the model; the install and registration
// work is the same.
// Python app, interleaved with it (tests/bench/python_app.py, the Python package over
// libepbroker's C API, on a fresh bus and empty store of its own): activation,
// refresh, ensure_and_register(providers=["openvino"]), InferenceSession, first
// run, timed from spawn to exit (cold); then the same app again on that store
// (warm: ensure_and_register with nothing to install).
// Pip side, interleaved with it: tests/bench/pip_side.py run (venv creation,
// reported apart; pip install --no-index --find-links; python -c first inference
// on the same model file, each a process timed from spawn to exit).
#include <onnxruntime_cxx_api.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "catalog/atomic_file.hpp"
#include "epbroker/client.hpp"
#include "tests/bench/served_catalog.hpp"
#include "tests/daemon/integration/private_bus.hpp"
#include "tests/ort/support/cnn_model.hpp"
#include "tests/ort/support/ep_registration.hpp"
#include "tests/ort/support/node_test.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using nlohmann::json;
using namespace std::chrono_literals;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

fs::path source_dir() { return EPBROKER_BENCH_SOURCE_DIR; }

// Bytes allocated on disk under `root` (du: st_blocks, each inode once).
std::uint64_t disk_use(const fs::path& root) {
  std::set<std::pair<dev_t, ino_t>> seen;
  std::uint64_t total = 0;
  auto add = [&](const fs::path& p) {
    struct stat st {};
    if (lstat(p.c_str(), &st) == 0 && seen.insert({st.st_dev, st.st_ino}).second) {
      total += static_cast<std::uint64_t>(st.st_blocks) * 512;
    }
  };
  add(root);
  for (const auto& e : fs::recursive_directory_iterator(root)) add(e.path());
  return total;
}

double mb(std::uint64_t bytes) { return static_cast<double>(bytes) / 1e6; }

// ---- the app process ----------------------------------------------------------------

int app(const std::string& address, const std::string& model) {
  json out;
  auto t = Clock::now();
  epbroker::Client client({.bus_address = address});
  client.devices();  // the first call: D-Bus activation
  out["activation_ms"] = ms_since(t);
  t = Clock::now();
  client.refresh();
  out["refresh_ms"] = ms_since(t);
  t = Clock::now();
  std::uint64_t downloaded = 0;
  // When each job state was first seen (progress comes as the daemon's signals).
  std::map<std::string, double> seen;
  client.ensure_ready("openvino", [&](const epbroker::Progress& p) {
    downloaded = p.bytes_done;
    seen.try_emplace(std::string(epbroker::to_string(p.state)), ms_since(t));
  });
  out["install_ms"] = ms_since(t);
  for (const auto& [state, at] : seen) out["seen_" + state + "_ms"] = at;
  out["downloaded_bytes"] = downloaded;
  t = Clock::now();
  epbroker::SessionOptions request;
  request.providers = {"openvino"};
  request.ort_version = OrtGetApiBase()->GetVersionString();
  epbroker::Session lease = client.request_session(request);
  out["request_session_ms"] = ms_since(t);
  const auto granted = lease.ready_providers();
  if (granted.size() != 1) throw std::runtime_error("the session did not grant openvino");
  t = Clock::now();
  Ort::Env env(ORT_LOGGING_LEVEL_ERROR, "bench_vs_pip");
  env.RegisterExecutionProviderLibrary("openvino", granted[0].library_path);
  out["register_ms"] = ms_since(t);
  t = Clock::now();
  Ort::SessionOptions options;
  const auto ep_devices = tests::ort::ep_devices_for(env, granted[0].ep_names.at(0));
  if (!ep_devices.empty()) tests::ort::append_ep(options, env, ep_devices);
  Ort::Session session(env, model.c_str(), options);
  out["session_ms"] = ms_since(t);
  t = Clock::now();
  auto result = tests::ort::run_session(session, tests::ort::cnn_model_inputs(1));
  if (!result) throw std::runtime_error(result.error());
  out["run_ms"] = ms_since(t);
  out["openvino_devices"] = ep_devices.size();
  out["ort_version"] = OrtGetApiBase()->GetVersionString();
  std::cout << out.dump() << std::endl;
  return 0;
}

// ---- the orchestrator -------------------------------------------------------------------

struct Samples {
  std::map<std::string, std::vector<double>> values;
  void add(const std::string& key, double v) { values[key].push_back(v); }
  double median(const std::string& key) const {
    auto v = values.at(key);
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  }
};

json last_json_line(const std::string& text, const std::string& who) {
  const auto end = text.find_last_not_of('\n');
  const auto start = text.rfind('\n', end);
  try {
    return json::parse(text.substr(start == std::string::npos ? 0 : start + 1));
  } catch (const json::exception&) {
    throw std::runtime_error(who + " printed no JSON result:\n" + text);
  }
}

struct Disk {
  std::uint64_t openvino = 0, onnxruntime = 0, store = 0;
  double runtime_install_ms = 0;
};

// A private bus whose daemon sees the intel-laptop fixture machine (so OpenVINO is
// compatible on any host).
tests::daemon::PrivateBusOptions intel_laptop() {
  tests::daemon::PrivateBusOptions options;
  const fs::path machine = source_dir() / "tests/data/sysfs/intel-laptop";
  options.sysfs_root = machine / "sys";
  options.procfs_root = machine / "proc";
  return options;
}

// One broker-side run; with `disk`, also installs the runtime package and measures.
void broker_side(const tests::bench::ServedCatalog& catalog, const fs::path& model, Samples& s,
                 Disk* disk) {
  tests::daemon::PrivateBus bus(intel_laptop());
  catalog.add_to(bus);
  const auto t0 = Clock::now();
  const auto r = tests::daemon::run_command(
      {fs::read_symlink("/proc/self/exe").string(), "--app", bus.address(), model.string()}, 300s);
  const double wall = ms_since(t0);
  if (r.exit_code != 0) {
    throw std::runtime_error("the app failed (" + std::to_string(r.exit_code) + "):\n" + r.err +
                             "\n---- bus.log ----\n" + bus.log());
  }
  const json j = last_json_line(r.out, "the app");
  s.add("wall", wall);
  for (const auto& [k, v] : j.items()) {
    if (v.is_number()) s.add(k, v.get<double>());
  }
  if (!disk) return;
  epbroker::Client client({.bus_address = bus.address()});
  const auto t1 = Clock::now();
  client.ensure_ready("onnxruntime");
  disk->runtime_install_ms = ms_since(t1);
  disk->openvino = disk_use(bus.store_dir() / "openvino");
  disk->onnxruntime = disk_use(bus.store_dir() / "onnxruntime");
  disk->store = disk_use(bus.store_dir());
}

// The Python app (python_app.py) cold on a fresh bus and empty store, then warm.
void python_side(const tests::bench::ServedCatalog& catalog, const fs::path& model, Samples& s) {
  tests::daemon::PrivateBus bus(intel_laptop());
  catalog.add_to(bus);
  for (const char* mode : {"cold", "warm"}) {
    const auto t0 = Clock::now();
    const auto r = tests::daemon::run_command(
        {"/usr/bin/env", "PYTHONPATH=" + (source_dir() / "python/src").string(),
         std::string("LD_LIBRARY_PATH=") + EPBROKER_BENCH_LIB_DIR, EPBROKER_BENCH_PYTHON,
         (source_dir() / "tests/bench/python_app.py").string(), mode, bus.address(),
         model.string()},
        300s);
    const double wall = ms_since(t0);
    if (r.exit_code != 0) {
      throw std::runtime_error(std::string("python_app.py ") + mode + " failed (" +
                               std::to_string(r.exit_code) + "):\n" + r.out + r.err +
                               "\n---- bus.log ----\n" + bus.log());
    }
    const json j = last_json_line(r.out, "python_app.py");
    s.add(std::string(mode) + "_wall", wall);
    for (const auto& [k, v] : j.items()) {
      if (v.is_number()) s.add(std::string(mode) + "_" + k, v.get<double>());
    }
  }
}

struct Venv {
  std::uint64_t onnxruntime = 0, openvino = 0, site_packages = 0, venv = 0;
  std::string python, ort_version;
  std::vector<std::string> providers;
  int openvino_devices = 0;
};

void pip_side(const fs::path& wheels, const fs::path& model, const std::string& python, Samples& s,
              Venv& venv) {
  tests::support::TempDir work;
  std::vector<std::string> argv = {EPBROKER_BENCH_PYTHON,
                                   (source_dir() / "tests/bench/pip_side.py").string(),
                                   "run",
                                   "--wheels",
                                   wheels.string(),
                                   "--model",
                                   model.string(),
                                   "--work",
                                   (work / "pip").string()};
  if (!python.empty()) argv.insert(argv.end(), {"--python", python});
  const auto r = tests::daemon::run_command(argv, 600s);
  if (r.exit_code != 0) {
    throw std::runtime_error("pip_side.py failed (" + std::to_string(r.exit_code) + "):\n" + r.out +
                             r.err);
  }
  const json j = last_json_line(r.out, "pip_side.py");
  for (const char* k : {"venv_s", "pip_install_s", "first_inference_s"}) {
    s.add(k, 1000.0 * j.at(k).get<double>());
  }
  for (const auto& [k, v] : j.at("first_inference").items()) {
    if (v.is_number()) s.add("py_" + k, 1000.0 * v.get<double>());
  }
  venv.onnxruntime = j.at("packages_bytes").at("onnxruntime").get<std::uint64_t>();
  venv.openvino = j.at("packages_bytes").at("onnxruntime-ep-openvino").get<std::uint64_t>();
  venv.site_packages = j.at("site_packages_bytes").get<std::uint64_t>();
  venv.venv = j.at("venv_bytes").get<std::uint64_t>();
  venv.python = j.at("python").get<std::string>();
  venv.ort_version = j.at("first_inference").at("ort_version").get<std::string>();
  venv.providers = j.at("first_inference").at("providers").get<std::vector<std::string>>();
  venv.openvino_devices = j.at("first_inference").at("openvino_devices").get<int>();
}

// The install job's phases, from when the app first saw each state. The daemon's
// states: downloading (metadata check, fetch, hash), verifying (the store
// extracts the package), installing (the store checks and commits the tree).
void install_phases(const Samples& b) {
  const std::pair<const char*, const char*> phases[] = {
      {"downloading", "download"}, {"verifying", "extract"}, {"installing", "check + commit"}};
  const char* next[] = {"verifying", "installing", "done"};
  std::string line;
  for (std::size_t i = 0; i < std::size(phases); ++i) {
    const std::string from = std::string("seen_") + phases[i].first + "_ms";
    const std::string to = std::string("seen_") + next[i] + "_ms";
    if (!b.values.contains(from) || !b.values.contains(to)) continue;
    char part[96];
    std::snprintf(part, sizeof part, "%s%s %.0f ms", line.empty() ? "" : ", ", phases[i].second,
                  b.median(to) - b.median(from));
    line += part;
  }
  if (!line.empty()) std::printf("      (%s)\n", line.c_str());
}

void report(const Samples& b, const Samples& py, const Samples& p, const Disk& d, const Venv& v,
            int repeat) {
  std::printf("\nmedian of %d; broker side: one app process, spawn to exit\n", repeat);
  const double ours = b.median("wall");
  std::printf("  %-58s %8.0f ms\n", "total (app process)", ours);
  const std::pair<const char*, const char*> parts[] = {
      {"activation_ms", "activation (first call: ListDevices)"},
      {"refresh_ms", "catalog refresh (TUF over loopback HTTP)"},
      {"install_ms", "ensure_ready openvino (download, verify, install)"},
      {"request_session_ms", "request_session"},
      {"register_ms", "ORT env + RegisterExecutionProviderLibrary"},
      {"session_ms", "ORT session creation"},
      {"run_ms", "first run"}};
  double inner = 0;
  for (const auto& [key, label] : parts) {
    std::printf("    %-56s %8.1f ms\n", label, b.median(key));
    inner += b.median(key);
    if (std::string(key) == "install_ms") install_phases(b);
  }
  std::printf("    %-56s %8.1f ms\n", "rest: process start (ORT loaded), exit", ours - inner);
  std::printf("  downloaded %.1f MB; ORT %s in the app\n",
              mb(static_cast<std::uint64_t>(b.median("downloaded_bytes"))),
              OrtGetApiBase()->GetVersionString());
  std::printf("Python app (the epbroker package, python_app.py), spawn to exit:\n");
  std::printf("  %-58s %8.0f ms\n", "cold: total (nothing installed -> first inference)",
              py.median("cold_wall"));
  std::printf(
      "    import %.0f ms, activation %.0f ms, refresh %.0f ms, ensure_and_register %.0f ms, "
      "session %.0f ms, run %.0f ms\n",
      py.median("cold_import_ms"), py.median("cold_activation_ms"), py.median("cold_refresh_ms"),
      py.median("cold_ensure_and_register_ms"), py.median("cold_session_ms"),
      py.median("cold_run_ms"));
  std::printf("  %-58s %8.0f ms\n", "warm: total (the store holds openvino)",
              py.median("warm_wall"));
  std::printf("    ensure_and_register (warm: lease + register, nothing to install) %.1f ms\n",
              py.median("warm_ensure_and_register_ms"));
  std::printf("pip side (Python %s, onnxruntime %s), each a process:\n", v.python.c_str(),
              v.ort_version.c_str());
  std::printf("  %-58s %8.0f ms\n", "venv creation (python -m venv; apart)", p.median("venv_s"));
  std::printf("  %-58s %8.0f ms\n",
              "pip install --no-index --find-links DIR onnxruntime "
              "onnxruntime-ep-openvino",
              p.median("pip_install_s"));
  std::printf("  %-58s %8.0f ms\n", "python -c: first inference", p.median("first_inference_s"));
  std::printf("    import %.0f ms, register %.0f ms, session %.0f ms, run %.0f ms\n",
              p.median("py_import_s"), p.median("py_register_s"), p.median("py_session_s"),
              p.median("py_run_s"));
  const double theirs = p.median("pip_install_s") + p.median("first_inference_s");
  std::printf(
      "ratio (pip install + first inference) / broker: %.1fx  [goal >= 3x]; "
      "with venv creation: %.1fx\n",
      theirs / ours, (theirs + p.median("venv_s")) / ours);
  std::printf("ratio (pip install + first inference) / Python app cold: %.1fx\n",
              theirs / py.median("cold_wall"));
  std::printf(
      "OpenVINO devices offered by ORT on this host: broker %.0f, python %d "
      "(python session providers: ",
      b.median("openvino_devices"), v.openvino_devices);
  for (const auto& pr : v.providers) std::printf("%s ", pr.c_str());
  std::printf(")%s\n", b.median("openvino_devices") == 0
                           ? "; no OpenVINO device here, so the CPU EP ran the model on both "
                             "sides after the OpenVINO EP was registered"
                           : "");
  std::printf(
      "shared runtime: ensure_ready onnxruntime (the store's ORT, for apps that do not "
      "bundle one) %.0f ms more; broker with it: ratio %.1fx\n",
      d.runtime_install_ms, theirs / (ours + d.runtime_install_ms));

  std::printf("\n== (c) disk: N apps sharing one store vs N virtualenvs\n");
  const std::uint64_t pkgs = d.openvino + d.onnxruntime;
  const std::uint64_t venv_pkgs = v.onnxruntime + v.openvino;
  std::printf(
      "store: openvino %.1f MB + onnxruntime %.1f MB = %.1f MB (du; whole store %.1f "
      "MB), whatever N\n",
      mb(d.openvino), mb(d.onnxruntime), mb(pkgs), mb(d.store));
  std::printf(
      "one venv: onnxruntime %.1f MB + onnxruntime-ep-openvino %.1f MB = %.1f MB (du of "
      "their site-packages entries); whole site-packages %.1f MB, whole venv %.1f MB\n",
      mb(v.onnxruntime), mb(v.openvino), mb(venv_pkgs), mb(v.site_packages), mb(v.venv));
  std::printf("%4s %12s %22s %22s %10s\n", "N", "store MB", "N venvs: packages MB",
              "N venvs: site-pkgs MB", "ratio");
  for (int n : {1, 5, 10, 50}) {
    const auto un = static_cast<std::uint64_t>(n);
    std::printf("%4d %12.1f %22.1f %22.1f %9.1fx\n", n, mb(pkgs), mb(un * venv_pkgs),
                mb(un * v.site_packages),
                static_cast<double>(un * venv_pkgs) / static_cast<double>(pkgs));
  }
  std::printf("(N venvs: computed, N x the one venv measured; ratio: packages vs store)\n");
}

int orchestrate(const fs::path& wheels, int repeat, const std::string& python) {
  if (std::string(EPBROKER_OPENVINO_PACKAGE).empty() ||
      std::string(EPBROKER_ORT_RUNTIME_PACKAGE).empty()) {
    std::cerr << "the openvino and onnxruntime packages were not built (scripts/bootstrap.sh, "
                 "then targets openvino-package, onnxruntime-package)\n";
    return 1;
  }
  if (!fs::is_directory(wheels)) {
    std::cerr << "no wheel directory " << wheels
              << "; fill it with: tests/bench/pip_side.py fetch --dir " << wheels << "\n";
    return 1;
  }
  tests::support::TempDir tmp;
  const fs::path model = tmp / "model.onnx";
  const auto cnn = tests::ort::cnn_model();
  if (auto w = catalog::atomic_write_file(model, cnn.bytes); !w) {
    throw std::runtime_error(w.error().message);
  }
  std::printf("== (b) nothing installed -> first inference: broker vs pip\n");
  std::printf("model: VGG-style CNN, %.1f M parameters, %.1f MB file, input [1,3,32,32]\n",
              static_cast<double>(cnn.parameters) / 1e6, mb(cnn.bytes.size()));
  std::printf(
      "catalog: openvino %.1f MB, onnxruntime %.1f MB packages; the daemon sees the "
      "intel-laptop fixture machine (so OpenVINO is compatible)\n",
      mb(fs::file_size(EPBROKER_OPENVINO_PACKAGE)),
      mb(fs::file_size(EPBROKER_ORT_RUNTIME_PACKAGE)));
  const tests::bench::ServedCatalog catalog(
      {{source_dir() / "ep-packages/openvino/ep.json", EPBROKER_OPENVINO_PACKAGE},
       {source_dir() / "ep-packages/onnxruntime/ep.json", EPBROKER_ORT_RUNTIME_PACKAGE}});
  Samples broker, python_app, pip;
  Disk disk;
  Venv venv;
  for (int i = 0; i < repeat; ++i) {
    broker_side(catalog, model, broker, i == 0 ? &disk : nullptr);
    python_side(catalog, model, python_app);
    pip_side(wheels, model, python, pip, venv);
    std::printf(
        "run %d/%d: broker %.0f ms; Python app %.0f ms; pip install + first inference %.0f "
        "ms (+ venv %.0f ms)\n",
        i + 1, repeat, broker.values["wall"].back(), python_app.values["cold_wall"].back(),
        pip.values["pip_install_s"].back() + pip.values["first_inference_s"].back(),
        pip.values["venv_s"].back());
    std::fflush(stdout);
  }
  report(broker, python_app, pip, disk, venv, repeat);
  return 0;
}

fs::path default_wheels() {
  const char* cache = std::getenv("EPBROKER_CACHE");
  const char* home = std::getenv("HOME");
  const fs::path base =
      cache && *cache ? fs::path(cache) : fs::path(home ? home : "/root") / ".cache/epbroker";
  return base / "dl/bench-wheels";
}

}  // namespace

int main(int argc, char** argv) {
  // The catalog's HTTP server finds its script and interpreter through these.
  setenv("EPBROKER_SOURCE_DIR", EPBROKER_BENCH_SOURCE_DIR, 0);
  setenv("EPBROKER_PYTHON", EPBROKER_BENCH_PYTHON, 0);
  try {
    if (argc == 4 && std::string(argv[1]) == "--app") return app(argv[2], argv[3]);
    fs::path wheels = default_wheels();
    int repeat = 3;
    std::string python;
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--wheels" && i + 1 < argc) {
        wheels = argv[++i];
      } else if (a == "--repeat" && i + 1 < argc) {
        repeat = std::max(1, std::atoi(argv[++i]));
      } else if (a == "--python" && i + 1 < argc) {
        python = argv[++i];
      } else {
        std::cerr << "usage: bench_vs_pip [--wheels DIR] [--repeat N] [--python PY]\n";
        return a == "--help" ? 0 : 2;
      }
    }
    return orchestrate(wheels, repeat, python);
  } catch (const std::exception& e) {
    std::cerr << "bench_vs_pip: " << e.what() << "\n";
    return 1;
  }
}
