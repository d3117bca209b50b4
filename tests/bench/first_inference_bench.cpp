// From "package file on disk" to "first inference done", per EP package. Prints
// figures; asserts nothing about speed.
//
//   bench_first_inference NAME=PACKAGE [NAME=PACKAGE ...]
//
// For each package, in a fresh temporary store: (1) safe extraction, (2)
// RegisterExecutionProviderLibrary, (3) session creation with the EP's first
// device appended (CPU fallback allowed, so every EP runs the same model), (4) the
// first Run. The model is the >10 M-parameter CNN of tests/ort (batch 1); an EP
// that offers no device on this machine is reported as such.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>

#include "catalog/package/extract.hpp"
#include "tests/ort/support/cnn_model.hpp"
#include "tests/ort/support/ep_registration.hpp"
#include "tests/ort/support/mixed_model.hpp"
#include "tests/ort/support/node_test.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double ms(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

int bench(const std::string& name, const fs::path& package, const std::string& model) {
  using namespace tests::ort;
  tests::support::TempDir store;
  const fs::path staging = store / name;
  fs::create_directory(staging);
  const auto t0 = Clock::now();
  // 1. Safe extraction into the store.
  auto manifest = catalog::package::extract_package(package, staging);
  if (!manifest) {
    std::cerr << name << ": " << manifest.error().message << "\n";
    return 1;
  }
  const auto t1 = Clock::now();
  // 2. Registration.
  ScopedPlugin plugin(test_env(), name, staging / manifest->ep.library);
  const auto t2 = Clock::now();
  const std::string ep = manifest->ep.ep_names.at(0);
  if (ep_devices_for(test_env(), ep).empty()) {
    std::printf(
        "%-10s %9.3f MB package: extract %7.1f ms, register %6.1f ms, no %s device on "
        "this machine\n",
        name.c_str(), static_cast<double>(fs::file_size(package)) / 1e6, ms(t0, t1), ms(t1, t2),
        ep.c_str());
    return 0;
  }
  // 3 + 4. Session with the EP, first inference.
  Ort::SessionOptions options;
  use_ep(test_env(), ep, {.ep_options = {}, .allow_cpu_fallback = true})(options);
  Ort::Session session(test_env(), model.data(), model.size(), options);
  const auto t3 = Clock::now();
  auto out = run_session(session, cnn_model_inputs(1));
  const auto t4 = Clock::now();
  if (!out) {
    std::cerr << name << ": " << out.error() << "\n";
    return 1;
  }
  std::printf(
      "%-10s %9.3f MB package: extract %7.1f ms, register %6.1f ms, session %7.1f ms, "
      "first run %7.1f ms; total %7.1f ms (%s)\n",
      name.c_str(), static_cast<double>(fs::file_size(package)) / 1e6, ms(t0, t1), ms(t1, t2),
      ms(t2, t3), ms(t3, t4), ms(t0, t4), ep.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help") {
    std::cout << "usage: bench_first_inference NAME=PACKAGE [NAME=PACKAGE ...]\n";
    return argc < 2 ? 2 : 0;
  }
  const auto model = tests::ort::cnn_model();
  std::printf("model: VGG-style CNN, %llu parameters, input [1,3,32,32]\n",
              static_cast<unsigned long long>(model.parameters));
  int rc = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto eq = arg.find('=');
    if (eq == std::string::npos) {
      std::cerr << "expected NAME=PACKAGE, got " << arg << "\n";
      return 2;
    }
    try {
      rc |= bench(arg.substr(0, eq), arg.substr(eq + 1), model.bytes);
    } catch (const std::exception& e) {
      std::cerr << arg << ": " << e.what() << "\n";
      rc = 1;
    }
  }
  return rc;
}
