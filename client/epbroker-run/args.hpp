// epbroker-run's command line, read with CLI11.
#pragma once

#include <cstdint>
#include <expected>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "epbroker/client.hpp"

namespace epbroker_run {

// Exit codes (documented in --help; scripts rely on them).
enum Exit : int {
  kOk = 0,
  kInternal = 1,       // a bug or an unexpected failure
  kUsage = 2,          // bad command line
  kBroker = 3,         // the broker could not be used (bus, daemon, authorization, session)
  kInput = 4,          // the model, an --input or --labels file could not be read or does not fit
  kRuntime = 5,        // ONNX Runtime failed (no such EP/device, session creation, a run)
  kMismatch = 6,       // --check: outputs differ from the CPU EP beyond tolerance
  kInterrupted = 130,  // Ctrl-C (or SIGTERM) while installing: the install job was cancelled
};

struct InputSpec {
  std::string name;            // model input name
  std::filesystem::path file;  // .npy; empty when random
  bool random = false;
};

struct Options {
  std::filesystem::path model;             // MODEL.onnx; with --model, the leased main file
  std::string model_name;                  // --model NAME: from the broker's model catalog
  std::string variant;                     // --variant ID (with --model)
  std::optional<epbroker::Policy> policy;  // --policy (default: "default")
  std::string ep;                          // --ep NAME (EP or package name)
  std::string device;                      // --device cpu|gpu|npu
  int iterations = 20;
  int warmup = 1;
  std::int64_t batch = 1;
  bool batch_set = false;
  std::vector<InputSpec> inputs;
  std::filesystem::path labels;
  int top = 5;
  bool check = false;
  double atol = 1e-4;
  double rtol = 1e-3;
  std::string bus_address;
  bool json = false;
  bool no_broker = false;
  bool no_install = false;
  // --library NAME=PATH: plugin EP libraries registered directly (implies no_broker).
  std::vector<std::pair<std::string, std::filesystem::path>> libraries;
  bool help = false;     // -h/--help: print usage(), exit kOk
  bool version = false;  // --version: print the version, exit kOk
};

// Parses argv[1..argc) with CLI11 ("--opt VALUE" or "--opt=VALUE", options and MODEL
// in any order, "--" ends the options; a repeated option keeps its last value, but
// --input and --library add one each). --help and --version are answered even with
// no model or an unknown option; a bad value is reported instead. Errors: a one-line
// message (for "epbroker-run: ...") naming the problem: an unknown option, a missing
// or bad value (numbers are decimal), no model or a second one, an --input name given
// twice, --policy with --ep/--device, MODEL.onnx with --model, --model with
// --no-broker or --library, --variant without --model.
std::expected<Options, std::string> parse_args(int argc, const char* const* argv);

// The --help text.
std::string usage();

}  // namespace epbroker_run
