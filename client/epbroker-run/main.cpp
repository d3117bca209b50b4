// epbroker-run: the sample app. Acquires providers from the broker, registers
// them in its own ONNX Runtime, runs a model and reports where it ran and how fast
// (see --help and README.md).
#include <onnxruntime_session_options_config_keys.h>

#include <chrono>
#include <filesystem>
#include <iostream>

#include "client/epbroker-run/acquire.hpp"
#include "client/epbroker-run/args.hpp"
#include "client/epbroker-run/model_fetch.hpp"
#include "client/epbroker-run/report.hpp"
#include "client/epbroker-run/tensors.hpp"

namespace epbroker_run {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// The broker's name for an ORT hardware device: the CPU by type, others by PCI ids.
std::string device_name(const epbroker::EpDeviceInfo& d,
                        const std::vector<epbroker::Device>& devs) {
  for (const auto& b : devs) {
    if (b.type != d.type) continue;
    if (d.type == "cpu" || (b.vendor_id == d.vendor_id && b.device_id == d.device_id))
      return b.name;
  }
  return {};
}

// Where ORT put each node (Session::GetEpGraphAssignmentInfo, recorded because the
// session was created with session.record_ep_graph_assignment_info=1), with the
// devices of each EP: the ones appended for --ep/--device, else every device the
// env offers for that EP (from a brokered library first, as configure() ranks them).
std::vector<EpPart> assignment(const Ort::Session& session, const Ort::Env& env,
                               const std::optional<epbroker::Selection>& selection,
                               const std::vector<epbroker::Device>& devices) {
  std::vector<EpPart> parts;
  for (const Ort::ConstEpAssignedSubgraph& sub : session.GetEpGraphAssignmentInfo()) {
    const std::string ep = sub.GetEpName();
    auto it = std::find_if(parts.begin(), parts.end(), [&](const EpPart& p) { return p.ep == ep; });
    if (it == parts.end()) it = parts.insert(parts.end(), EpPart{ep, 0, 0, {}, {}, {}});
    ++it->subgraphs;
    for (const Ort::ConstEpAssignedNode& node : sub.GetNodes()) {
      ++it->nodes;
      ++it->ops[node.GetOperatorType()];
    }
  }
  const auto all = epbroker::ep_devices(env);
  for (auto& p : parts) {
    if (selection && selection->ep_name == p.ep) {
      for (const auto& d : selection->devices) p.devices.push_back({d, device_name(d, devices)});
      p.devices_note = "the devices appended for --ep/--device";
      continue;
    }
    std::vector<epbroker::EpDeviceInfo> mine;
    for (const auto& d : all) {
      if (d.ep_name == p.ep) mine.push_back(d);
    }
    // An EP both built into ORT and brokered: the brokered library's devices.
    if (std::any_of(mine.begin(), mine.end(),
                    [](const auto& d) { return !d.library_path.empty(); })) {
      std::erase_if(mine, [](const auto& d) { return d.library_path.empty(); });
    }
    for (const auto& d : mine) p.devices.push_back({d, device_name(d, devices)});
    if (mine.size() > 1) p.devices_note = "the EP's devices; the policy chose among them";
  }
  return parts;
}

struct Runs {
  std::vector<Ort::Value> outputs;  // of the last run
  Latency latency;
  std::int64_t batch = 1;  // items per run
};

Runs timed_runs(Ort::Session& session, std::vector<InputData>& inputs, const Options& o) {
  std::vector<const char*> in_names;
  for (const auto& in : inputs) in_names.push_back(in.info.name.c_str());
  const auto outs = model_outputs(session);
  std::vector<const char*> out_names;
  for (const auto& out : outs) out_names.push_back(out.name.c_str());
  std::vector<Ort::Value> values = as_values(inputs);
  Ort::RunOptions run_options;
  auto run = [&] {
    return session.Run(run_options, in_names.data(), values.data(), values.size(), out_names.data(),
                       out_names.size());
  };
  Runs r;
  double first = 0;
  for (int i = 0; i < o.warmup; ++i) {
    const auto t = Clock::now();
    r.outputs = run();
    if (i == 0) first = since(t);
  }
  std::vector<double> samples;
  for (int i = 0; i < o.iterations; ++i) {
    const auto t = Clock::now();
    r.outputs = run();
    samples.push_back(since(t));
  }
  // Items per run: the first input's first dimension as fed (an .npy of N rows
  // is a batch of N even without --batch).
  std::int64_t items = o.batch;
  if (!inputs.empty() && inputs[0].info.shape.size() >= 2 && inputs[0].info.shape[0] > 0) {
    items = inputs[0].info.shape[0];
  }
  r.batch = items;
  r.latency = summarize(std::move(samples), first, items);
  return r;
}

// ORT's error codes that mean "the model file is the problem".
bool model_error(const Ort::Exception& e) {
  const auto c = e.GetOrtErrorCode();
  return c == ORT_NO_SUCHFILE || c == ORT_INVALID_PROTOBUF || c == ORT_INVALID_GRAPH;
}

int run(Options o) {
  // 0. --model: the file comes from the broker's model catalog, leased until exit.
  std::optional<FetchedModel> fetched;
  if (!o.model_name.empty()) {
    auto f = fetch_model(o);
    if (!f) {
      std::cerr << "epbroker-run: " << f.error().message << "\n";
      return f.error().exit;
    }
    fetched = std::move(*f);
    o.model = fetched->lease.main();
  }
  if (!fs::is_regular_file(o.model)) {
    std::cerr << "epbroker-run: " << o.model.string() << ": no such model file\n";
    return kInput;
  }
  std::vector<std::string> labels;
  if (!o.labels.empty()) {
    auto l = read_labels(o.labels);
    if (!l) {
      std::cerr << "epbroker-run: --labels " << l.error() << "\n";
      return kInput;
    }
    labels = std::move(*l);
  }
  Ort::Env env(ORT_LOGGING_LEVEL_ERROR, "epbroker-run");
  Report report;
  report.model = o.model.string();
  if (fetched) {
    const auto& l = fetched->lease;
    report.catalog_model =
        CatalogModel{l.name(), l.version(), l.variant(), l.session_path(), fetched->ms};
  }
  report.ort_version = epbroker::ort_version();
  report.batch = o.batch;

  // 1. The broker: providers installed, leased and registered.
  std::optional<Brokered> brokered;
  std::string ep_name = o.ep;
  if (!o.no_broker && o.ep != "CPUExecutionProvider") {
    auto b = acquire(env, o);
    if (!b) {
      std::cerr << "epbroker-run: " << b.error().message << "\n";
      return b.error().exit;
    }
    brokered = std::move(*b);
    ep_name = brokered->ep_name;
    report.broker = true;
    report.session_path = brokered->ensured.session.path();
    report.broker_ms = brokered->ms;
    report.registered = brokered->ensured.registration.registered;
    report.skipped = brokered->ensured.registration.skipped;
  }
  // 1b. --library: plugin libraries registered directly, without the broker.
  for (const auto& [name, path] : o.libraries) {
    try {
      env.RegisterExecutionProviderLibrary(name.c_str(), path.c_str());
    } catch (const Ort::Exception& e) {
      std::cerr << "epbroker-run: --library " << name << "=" << path.string()
                << ": ONNX Runtime could not register it: " << e.what() << "\n";
      return kRuntime;
    }
  }
  const std::vector<epbroker::Device> no_devices;
  const auto& devices = brokered ? brokered->devices : no_devices;

  // 2. Session options: policy or explicit choice, assignment recorded.
  Ort::SessionOptions so;
  so.AddConfigEntry(kOrtSessionOptionsRecordEpGraphAssignmentInfo, "1");
  std::optional<epbroker::Selection> selection;
  try {
    if (!ep_name.empty() || !o.device.empty()) {
      epbroker::DeviceChoice choice;
      choice.ep_name = ep_name;
      if (o.device == "cpu") choice.type = OrtHardwareDeviceType_CPU;
      if (o.device == "gpu") choice.type = OrtHardwareDeviceType_GPU;
      if (o.device == "npu") choice.type = OrtHardwareDeviceType_NPU;
      // --ep naming an EP of a directly registered library means that library's
      // devices (an EP may also be built into ORT under the same name).
      for (const auto& [name, path] : o.libraries) {
        const std::string lib = fs::weakly_canonical(path).string();
        for (const auto& d : epbroker::ep_devices(env)) {
          if (d.library_path == lib && (ep_name.empty() || d.ep_name == ep_name)) {
            choice.library_path = lib;
          }
        }
      }
      selection = epbroker::configure(so, env, choice);
      report.selection =
          "ep " + selection->ep_name + (o.device.empty() ? "" : " (" + o.device + ")");
    } else {
      const auto policy = o.policy.value_or(epbroker::Policy::default_policy);
      epbroker::configure(so, env, policy);
      report.selection = "policy " + std::string(epbroker::to_string(policy));
    }
  } catch (const epbroker::Error& e) {
    std::cerr << "epbroker-run: " << e.message() << "\n";
    for (const auto& s : report.skipped) {
      std::cerr << "  not registered " << s.name << ": " << s.reason << "\n";
    }
    return kRuntime;
  }

  // 3. The session, the inputs, the runs.
  try {
    const auto t = Clock::now();
    Ort::Session session(env, o.model.c_str(), so);
    report.session_ms = since(t);
    const auto inputs_info = model_inputs(session);
    auto inputs = prepare_inputs(inputs_info, o);
    if (!inputs) {
      std::cerr << "epbroker-run: " << inputs.error() << "\n";
      return kInput;
    }
    for (const auto& in : *inputs) {
      report.inputs.push_back({in.info.name, type_name(in.info.type), in.info.shape, in.source});
    }
    try {
      report.parts = assignment(session, env, selection, devices);
      report.assignment_source = "ONNX Runtime's graph assignment info";
    } catch (const Ort::Exception& e) {
      report.assignment_source = std::string("not available: ") + e.what();
    }
    Runs runs = timed_runs(session, *inputs, o);
    report.batch = runs.batch;
    report.latency = runs.latency;
    const auto outputs_info = model_outputs(session);
    for (std::size_t i = 0; i < runs.outputs.size(); ++i) {
      const auto& v = runs.outputs[i];
      report.outputs.push_back(
          {outputs_info[i].name,
           v.IsTensor() ? type_name(v.GetTensorTypeAndShapeInfo().GetElementType()) : "non-tensor",
           shape_of(v),
           {}});
    }

    // 4. --check: the CPU EP alone on the same inputs.
    if (o.check) {
      Ort::SessionOptions cpu_options;
      Ort::Session cpu(env, o.model.c_str(), cpu_options);
      Runs ref = timed_runs(cpu, *inputs, o);
      report.check =
          Check{compare(runs.outputs, ref.outputs, o.atol, o.rtol), o.atol, o.rtol, ref.latency};
    }

    // 5. --labels: top-K of the first output, for each batch item.
    if (!labels.empty() && !runs.outputs.empty()) {
      auto scores = as_doubles(runs.outputs[0]);
      if (!scores) {
        std::cerr << "epbroker-run: --labels: the first output is " << scores.error() << "\n";
        return kInput;
      }
      const auto shape = shape_of(runs.outputs[0]);
      std::size_t row = scores->size();
      if (shape.size() >= 2 && shape[0] > 0) row /= static_cast<std::size_t>(shape[0]);
      if (row != labels.size()) {
        std::cerr << "epbroker-run: warning: " << labels.size() << " labels for " << row
                  << " scores per item in '" << report.outputs[0].name << "'\n";
      }
      report.top_output = report.outputs[0].name;
      for (std::size_t at = 0; row > 0 && at + row <= scores->size(); at += row) {
        const std::vector<double> item(scores->begin() + static_cast<std::ptrdiff_t>(at),
                                       scores->begin() + static_cast<std::ptrdiff_t>(at + row));
        report.top_items.push_back(
            top_k(item, row, static_cast<std::size_t>(o.top), labels, report.softmax));
      }
      if (!report.top_items.empty()) report.top = report.top_items.front();
    }
  } catch (const Ort::Exception& e) {
    std::cerr << "epbroker-run: ONNX Runtime: " << e.what() << "\n";
    if (model_error(e)) {
      std::cerr << "  hint: is " << o.model.string() << " a valid ONNX model?\n";
      return kInput;
    }
    std::cerr << "  hint: try another --policy or --ep, or --ep CPUExecutionProvider\n";
    return kRuntime;
  }

  if (o.json) {
    std::cout << to_json(report).dump(2) << "\n";
  } else {
    print_text(std::cout, report);
  }
  return report.check && !report.check->diff.within ? kMismatch : kOk;
}

}  // namespace
}  // namespace epbroker_run

int main(int argc, char** argv) {
  using namespace epbroker_run;
  auto options = parse_args(argc, argv);
  if (!options) {
    std::cerr << "epbroker-run: " << options.error() << "\n";
    return kUsage;
  }
  if (options->help) {
    std::cout << usage();
    return kOk;
  }
  if (options->version) {
    std::cout << "epbroker-run " << EPBROKER_VERSION << "\n";
    return kOk;
  }
  try {
    return run(*options);
  } catch (const std::exception& e) {
    std::cerr << "epbroker-run: unexpected error: " << e.what() << "\n";
    return kInternal;
  }
}
