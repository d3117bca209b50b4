// epbroker-run --model NAME: the model from the broker's model catalog, installed
// when missing (progress on stderr, Ctrl-C cancels) and leased for the run.
#pragma once

#include <expected>
#include <string>

#include <epbroker/client.hpp>

#include "client/epbroker-run/acquire.hpp"
#include "client/epbroker-run/args.hpp"

namespace epbroker_run {

struct FetchedModel {
  epbroker::ModelLease lease;  // keep it while ORT reads the files
  double ms = 0;               // connect + install + lease
};

// The policy a model's variant is planned with: --policy, else the device type
// --device names (prefer_cpu, prefer_gpu, prefer_npu), else default. --ep alone
// plans as default: the broker knows the EPs, not which one the user meant.
epbroker::Policy model_policy(const Options& options);

// Client::ensure_model(options.model_name) with --variant, model_policy(), this
// process's ONNX Runtime version, and --no-install (lease only an installed
// variant). Failures carry kBroker (kInterrupted for Ctrl-C) and a hint.
std::expected<FetchedModel, Failure> fetch_model(const Options& options);

}  // namespace epbroker_run
