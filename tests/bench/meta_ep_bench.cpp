// Registering through the broker's plugin library (libepbroker_ep.so) vs
// registering the same EP library directly: prints figures, asserts nothing
// about speed (issue 22's figure: the added cost of the meta-EP).
//
//   bench_meta_ep [ROUNDS]   (default 20 rounds, one registration of each path)
//
// epbrokerd on a private bus installs test-ep from a signed catalog on loopback
// and stays up (warm, as on a machine where apps use it). Each round registers,
// checks the EP's one device is there, and unregisters:
//   meta:   RegisterExecutionProviderLibrary("epbroker", libepbroker_ep.so), which
//           asks the daemon for a session (EPBROKER_EP_PROVIDERS=test-ep), loads the
//           store's test-ep library and forwards its factory;
//   direct: RegisterExecutionProviderLibrary("test-ep", <the same store library>).
// The order alternates (meta first in even rounds, direct first in odd ones) so
// that drift hits both alike. Only the registration call is timed;
// unregistering is timed apart.
#include <onnxruntime_cxx_api.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "epbroker/client.hpp"
#include "tests/daemon/integration/private_bus.hpp"
#include "tests/daemon/integration/test_catalog.hpp"
#include "tests/ort/support/ep_registration.hpp"
#include "tests/ort/support/node_test.hpp"

namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kEpName = "EpbrokerTestEp";

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

struct Path {
  std::string label;
  std::string registration;
  std::string library;
  std::vector<double> reg_ms;
  std::vector<double> unreg_ms;
};

// One registration and unregistration of `p`, timed; false if the EP's device
// did not come or did not go.
bool round_of(Path& p) {
  Ort::Env& env = tests::ort::test_env();
  auto t0 = Clock::now();
  env.RegisterExecutionProviderLibrary(p.registration.c_str(), p.library);
  p.reg_ms.push_back(ms_since(t0));
  const bool came = tests::ort::ep_devices_for(env, kEpName).size() == 1;
  t0 = Clock::now();
  env.UnregisterExecutionProviderLibrary(p.registration.c_str());
  p.unreg_ms.push_back(ms_since(t0));
  return came && tests::ort::ep_devices_for(env, kEpName).empty();
}

void print(const Path& p) {
  auto reg = p.reg_ms;
  auto unreg = p.unreg_ms;
  std::sort(reg.begin(), reg.end());
  std::sort(unreg.begin(), unreg.end());
  std::printf("%-7s register: median %.3f ms, min %.3f, max %.3f; unregister: median %.3f ms\n",
              p.label.c_str(), reg[reg.size() / 2], reg.front(), reg.back(),
              unreg[unreg.size() / 2]);
}

int bench(int rounds) {
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
  std::string store_library;
  for (const auto& p : client.providers()) {
    if (p.name == tests::daemon::kTestEp) store_library = p.library_path;
  }
  if (store_library.empty()) {
    std::cerr << "test-ep is not ready\n";
    return 1;
  }
  ::setenv("EPBROKER_BUS_ADDRESS", bus.address().c_str(), 1);
  ::setenv("EPBROKER_EP_PROVIDERS", tests::daemon::kTestEp, 1);
  std::vector<Path> paths{{"meta", "epbroker", EPBROKER_META_EP_LIBRARY, {}, {}},
                          {"direct", "test-ep", store_library, {}, {}}};
  std::printf(
      "ONNX Runtime %s; %d rounds, one registration of each path per round, "
      "alternated\nmeta    %s\ndirect  %s\n",
      Ort::GetVersionString().c_str(), rounds, paths[0].library.c_str(), paths[1].library.c_str());
  for (int r = 0; r < rounds; ++r) {
    const int first = r % 2;
    for (int k = 0; k < 2; ++k) {
      Path& p = paths[static_cast<std::size_t>((first + k) % 2)];
      if (!round_of(p)) {
        std::cerr << p.label << ": the EP's device did not come and go in round " << r << "\n";
        return 1;
      }
    }
  }
  print(paths[0]);
  print(paths[1]);
  auto added = std::vector<double>(static_cast<std::size_t>(rounds));
  for (std::size_t i = 0; i < added.size(); ++i) added[i] = paths[0].reg_ms[i] - paths[1].reg_ms[i];
  std::sort(added.begin(), added.end());
  std::printf("added cost of the meta-EP per registration: median %.3f ms (min %.3f, max %.3f)\n",
              added[added.size() / 2], added.front(), added.back());
  std::printf("daemon sessions left: %zu\n", client.status().sessions);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 20;
  // The catalog's HTTP server finds its script and interpreter through these.
  ::setenv("EPBROKER_SOURCE_DIR", EPBROKER_BENCH_SOURCE_DIR, 0);
  ::setenv("EPBROKER_PYTHON", EPBROKER_BENCH_PYTHON, 0);
  try {
    return bench(rounds);
  } catch (const std::exception& e) {
    std::cerr << "bench_meta_ep: " << e.what() << "\n";
    return 1;
  }
}
