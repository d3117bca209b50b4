// What epbroker-run found and measured, printed for people or as JSON (the shape
// is documented in README.md beside this file).
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <epbroker/ort.hpp>

#include "client/epbroker-run/tensors.hpp"

namespace epbroker_run {

struct Latency {
  std::size_t runs = 0;
  double first_ms = 0;  // the first (warm-up) run; 0 when none
  double p50_ms = 0;
  double p99_ms = 0;
  double mean_ms = 0;
  double throughput = 0;  // batch items per second over the timed runs
};

// Nearest-rank percentiles and the mean of `samples_ms`; throughput for `batch`.
Latency summarize(std::vector<double> samples_ms, double first_ms, std::int64_t batch);

struct DeviceLine {
  epbroker::EpDeviceInfo device;
  std::string name;  // the broker's name for the hardware ("" when unknown)
};

// One EP's share of the graph.
struct EpPart {
  std::string ep;
  std::size_t subgraphs = 0;
  std::size_t nodes = 0;
  std::map<std::string, std::size_t> ops;  // op type -> count
  std::vector<DeviceLine> devices;         // the devices it ran on (see devices_note)
  std::string devices_note;                // e.g. "chosen with --ep", "the EP's devices"
};

struct TensorSummary {
  std::string name;
  std::string type;
  std::vector<std::int64_t> shape;
  std::string source;  // inputs only
};

struct Check {
  Difference diff;
  double atol = 0;
  double rtol = 0;
  Latency cpu;
};

// --model: which catalog model, version and variant ran, and its lease.
struct CatalogModel {
  std::string name;
  std::string version;
  std::string variant;
  std::string session_path;  // the lease's session
  double ms = 0;             // connect + install + lease
};

struct Report {
  std::string model;                          // the file ORT loaded
  std::optional<CatalogModel> catalog_model;  // --model only
  std::string ort_version;
  std::string selection;  // "policy max_performance", "ep EpbrokerTestEp (cpu)"
  bool broker = false;
  std::string session_path;
  double broker_ms = 0;  // connect + install + session + register
  std::vector<epbroker::RegisteredProvider> registered;
  std::vector<epbroker::SkippedProvider> skipped;
  std::string assignment_source;  // how `parts` was found
  std::vector<EpPart> parts;
  std::vector<TensorSummary> inputs;
  std::vector<TensorSummary> outputs;
  double session_ms = 0;  // Ort::Session creation
  std::int64_t batch = 1;
  Latency latency;
  std::optional<Check> check;
  std::string top_output;
  bool softmax = false;
  std::vector<Scored> top;                     // the first batch item's (= top_items[0])
  std::vector<std::vector<Scored>> top_items;  // every batch item's, in order
};

void print_text(std::ostream& out, const Report& r);
nlohmann::json to_json(const Report& r);

}  // namespace epbroker_run
