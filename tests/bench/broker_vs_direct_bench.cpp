// Inference through a broker-registered EP vs the same EP registered directly:
// prints figures, asserts nothing about speed (goal: p50 difference <= 1%).
//
//   bench_broker_vs_direct [ITERATIONS]   (default 2000 runs per path)
//
// Path A (broker): epbrokerd on a private bus installs test-ep from a signed
// catalog on loopback; libepbroker's request_session() leases it and hands back
// the store's library_path, which is registered in this process's ORT.
// Path B (direct): the same library as the build staged it (the bytes the package
// was packed from, checked equal), registered without the broker.
// Every session runs an MLP that test-ep takes whole (CPU fallback disabled, every
// node checked to be on EpbrokerTestEp), with the same inputs, interleaved (order
// rotated) so that drift (frequency, other load) hits all alike and each path
// runs first, second and third equally often. The floor A vs B is read against:
// path C, a copy of B's file registered directly too (two loads of the same bytes
// differ by code placement alone).
#include <onnxruntime_cxx_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "catalog/atomic_file.hpp"
#include "epbroker/client.hpp"
#include "tests/daemon/integration/private_bus.hpp"
#include "tests/daemon/integration/test_catalog.hpp"
#include "tests/ort/support/ep_registration.hpp"
#include "tests/ort/support/model_writer.hpp"
#include "tests/ort/support/node_test.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using tests::ort::Tensor;

constexpr const char* kEpName = "EpbrokerTestEp";
constexpr std::int64_t kBatch = 8;
constexpr std::int64_t kIn = 256;
constexpr std::int64_t kHidden = 256;
constexpr std::int64_t kOut = 64;

Tensor random_tensor(std::string name, std::vector<std::int64_t> dims, float bound,
                     std::mt19937& rng) {
  std::size_t n = 1;
  for (auto d : dims) n *= static_cast<std::size_t>(d);
  std::uniform_real_distribution<float> dist(-bound, bound);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return Tensor::from_values(std::move(name), ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, std::move(dims),
                             v);
}

// X[8,256] -MatMul+Add-> Relu -Gemm-> Relu -MatMul+Add-> Mul -> Y[8,64]: only ops
// test-ep implements (Add, Mul, Relu, MatMul, default Gemm).
std::string mlp_model() {
  namespace onnx = tests::ort::onnx;
  std::mt19937 rng(5);
  onnx::Model model;
  onnx::Graph& g = model.graph;
  g.name = "mlp";
  g.inputs.push_back({"X", ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, {kBatch, kIn}});
  g.outputs.push_back({"Y", ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, {kBatch, kOut}});
  g.initializers.push_back(random_tensor("W1", {kIn, kHidden}, 0.1f, rng));
  g.initializers.push_back(random_tensor("B1", {kHidden}, 0.05f, rng));
  g.initializers.push_back(random_tensor("W2", {kHidden, kHidden}, 0.08f, rng));
  g.initializers.push_back(random_tensor("B2", {kHidden}, 0.05f, rng));
  g.initializers.push_back(random_tensor("W3", {kHidden, kOut}, 0.08f, rng));
  g.initializers.push_back(random_tensor("B3", {kOut}, 0.05f, rng));
  g.initializers.push_back(random_tensor("S", {kOut}, 2.0f, rng));
  g.nodes = {{"MatMul", {"X", "W1"}, {"M1"}, "matmul1", {}, ""},
             {"Add", {"M1", "B1"}, {"A1"}, "add1", {}, ""},
             {"Relu", {"A1"}, {"R1"}, "relu1", {}, ""},
             {"Gemm", {"R1", "W2", "B2"}, {"G2"}, "gemm2", {}, ""},
             {"Relu", {"G2"}, {"R2"}, "relu2", {}, ""},
             {"MatMul", {"R2", "W3"}, {"M3"}, "matmul3", {}, ""},
             {"Add", {"M3", "B3"}, {"A3"}, "add3", {}, ""},
             {"Mul", {"A3", "S"}, {"Y"}, "mul", {}, ""}};
  return onnx::serialize_model(model);
}

struct Stats {
  double p50 = 0, p99 = 0, min = 0;
};

Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v[v.size() * 99 / 100], v.front()};
}

// One path: a session on the devices of one registration, and what a timed Run needs.
struct Path {
  std::string label;
  fs::path library;
  std::vector<Ort::ConstEpDevice> devices;
  std::unique_ptr<Ort::Session> session;
  std::vector<double> us;
};

void make_session(Path& p, const std::string& model) {
  Ort::SessionOptions options;
  options.SetIntraOpNumThreads(1);
  tests::ort::disable_cpu_fallback(options);
  tests::ort::record_ep_assignment(options);
  tests::ort::append_ep(options, tests::ort::test_env(), p.devices);
  p.session =
      std::make_unique<Ort::Session>(tests::ort::test_env(), model.data(), model.size(), options);
  const auto nodes = tests::ort::ep_assignment(*p.session);
  for (const auto& n : nodes) {
    if (n.ep != kEpName) {
      throw std::runtime_error(p.label + ": node " + n.name + " ran on " + n.ep);
    }
  }
  std::printf("%-7s %s\n        %zu nodes, all on %s\n", p.label.c_str(), p.library.c_str(),
              nodes.size(), kEpName);
}

// The devices registered since `before` (each registration adds its own).
std::vector<Ort::ConstEpDevice> new_devices(const std::vector<Ort::ConstEpDevice>& before) {
  std::vector<Ort::ConstEpDevice> out;
  for (const auto& d : tests::ort::ep_devices_for(tests::ort::test_env(), kEpName)) {
    const bool seen = std::any_of(before.begin(), before.end(), [&](const Ort::ConstEpDevice& b) {
      return static_cast<const OrtEpDevice*>(b) == static_cast<const OrtEpDevice*>(d);
    });
    if (!seen) out.push_back(d);
  }
  return out;
}

int bench(int iterations) {
  // 1. Path A's library: through the daemon and libepbroker.
  tests::daemon::TestCatalog catalog;
  if (!catalog.real_test_ep()) {
    std::cerr << "the test-ep package was not built (target test-ep-package)\n";
    return 1;
  }
  tests::daemon::PrivateBus bus;
  catalog.add_to(bus);
  epbroker::Client client({.bus_address = bus.address()});
  client.refresh();
  client.ensure_ready(tests::daemon::kTestEp);
  epbroker::SessionOptions request;
  request.providers = {tests::daemon::kTestEp};
  request.ort_version = OrtGetApiBase()->GetVersionString();
  epbroker::Session lease = client.request_session(request);
  const auto granted = lease.ready_providers();
  if (granted.size() != 1 || granted[0].library_path.empty()) {
    std::cerr << "the session did not grant test-ep\n";
    return 1;
  }
  // Path C: a copy of B's file, registered directly too. B vs C is what loading the
  // same bytes twice costs or gains without any broker (code placement, caches):
  // the floor that A vs B is read against.
  tests::support::TempDir copy_dir;
  const fs::path copy = copy_dir / "libepbroker_test_ep.so";
  fs::copy_file(EPBROKER_TEST_EP_LIBRARY, copy);
  // Registrations outlive the sessions on them (declared first, destroyed last).
  std::vector<std::unique_ptr<tests::ort::ScopedPlugin>> plugins;
  std::vector<Path> paths(3);
  paths[0].label = "broker";
  paths[0].library = granted[0].library_path;
  paths[1].label = "direct";
  paths[1].library = EPBROKER_TEST_EP_LIBRARY;
  paths[2].label = "copy";
  paths[2].library = copy;
  const auto bytes_a = catalog::read_file(paths[0].library, 1 << 30);
  const auto bytes_b = catalog::read_file(paths[1].library, 1 << 30);
  if (!bytes_a || !bytes_b || *bytes_a != *bytes_b ||
      fs::equivalent(paths[0].library, paths[1].library)) {
    std::cerr << "the broker's and the direct library must be distinct files with the same "
                 "bytes\n";
    return 1;
  }

  // 2. Register all in one ORT env; each registration brings its own devices.
  std::vector<Ort::ConstEpDevice> seen;
  for (auto& p : paths) {
    plugins.push_back(
        std::make_unique<tests::ort::ScopedPlugin>(tests::ort::test_env(), p.label, p.library));
    p.devices = new_devices(seen);
    if (p.devices.empty()) {
      std::cerr << p.label << ": the registration offered no " << kEpName << " device\n";
      return 1;
    }
    seen.insert(seen.end(), p.devices.begin(), p.devices.end());
  }
  const std::string model = mlp_model();
  std::printf("model: MLP [%lld,%lld] -> %lld -> %lld -> [%lld,%lld], float32; ORT %s\n",
              static_cast<long long>(kBatch), static_cast<long long>(kIn),
              static_cast<long long>(kHidden), static_cast<long long>(kHidden),
              static_cast<long long>(kBatch), static_cast<long long>(kOut),
              OrtGetApiBase()->GetVersionString());
  for (auto& p : paths) make_session(p, model);

  // 3. Interleaved timed runs on the same input, the order rotated every iteration
  // (A B C, B C A, C A B) so that each path runs first, second and third alike.
  std::mt19937 rng(11);
  const Tensor x = random_tensor("X", {kBatch, kIn}, 1.0f, rng);
  Ort::Value input = tests::ort::as_ort_value(x);
  const char* in_name = "X";
  const char* out_name = "Y";
  auto run = [&](Path& p, bool record) {
    const auto t0 = Clock::now();
    auto out = p.session->Run(Ort::RunOptions{nullptr}, &in_name, &input, 1, &out_name, 1);
    const auto t1 = Clock::now();
    if (record) p.us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  };
  for (int i = 0; i < 100; ++i) {  // warm-up: caches, allocator arenas
    for (auto& p : paths) run(p, false);
  }
  for (int i = 0; i < iterations; ++i) {
    for (std::size_t k = 0; k < paths.size(); ++k) {
      run(paths[(k + static_cast<std::size_t>(i)) % paths.size()], true);
    }
  }
  const Stats sa = stats(paths[0].us);
  const Stats sb = stats(paths[1].us);
  const Stats sc = stats(paths[2].us);
  auto pct = [](double x1, double x0) { return 100.0 * (x1 - x0) / x0; };
  std::printf("%d runs each, interleaved (order rotated)\n", iterations);
  for (std::size_t k = 0; k < paths.size(); ++k) {
    const Stats st = stats(paths[k].us);
    std::printf("%-7s p50 %8.1f us  p99 %8.1f us  min %8.1f us\n", paths[k].label.c_str(), st.p50,
                st.p99, st.min);
  }
  std::printf("broker vs direct: p50 %+.2f%%  [goal |d| <= 1%%]; p99 %+.2f%%, min %+.2f%%\n",
              pct(sa.p50, sb.p50), pct(sa.p99, sb.p99), pct(sa.min, sb.min));
  std::printf(
      "floor, copy vs direct (the same bytes loaded twice, no broker): p50 %+.2f%%; p99 "
      "%+.2f%%, min %+.2f%%\n",
      pct(sc.p50, sb.p50), pct(sc.p99, sb.p99), pct(sc.min, sb.min));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int iterations = argc > 1 ? std::atoi(argv[1]) : 2000;
  if (iterations < 10) {
    std::cerr << "usage: bench_broker_vs_direct [ITERATIONS >= 10]\n";
    return 2;
  }
  // The catalog's HTTP server finds its script and interpreter through these.
  setenv("EPBROKER_SOURCE_DIR", EPBROKER_BENCH_SOURCE_DIR, 0);
  setenv("EPBROKER_PYTHON", EPBROKER_BENCH_PYTHON, 0);
  try {
    return bench(iterations);
  } catch (const std::exception& e) {
    std::cerr << "bench_broker_vs_direct: " << e.what() << "\n";
    return 1;
  }
}
