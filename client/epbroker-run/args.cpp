#include "client/epbroker-run/args.hpp"

#include <CLI/CLI.hpp>
#include <charconv>
#include <functional>
#include <string_view>
#include <utility>

namespace epbroker_run {

namespace {

constexpr const char* kDescription =
    R"(Runs an ONNX model in this process's ONNX Runtime on the execution providers the
epbroker daemon brokers: it asks the daemon for every provider compatible with this
machine (installing missing ones, with progress on stderr), registers them, lets
ONNX Runtime place the graph by policy (or on the EP you name), runs it, and prints
which EP and device ran each part of the graph, latency and throughput.)";

constexpr const char* kFooter = R"(Exit codes:
  0  success
  1  internal error
  2  bad command line
  3  the broker could not be used (no bus, daemon not installed or not running,
     not authorized, session refused)
  4  the model, an --input or --labels file could not be read or does not fit
  5  ONNX Runtime failed (no such EP or device, session creation, a run)
  6  --check: outputs differ from the CPU EP beyond the tolerance
  130  interrupted (Ctrl-C) while installing: the install job was cancelled

See epbroker-run(1).)";

constexpr const char* kSelection = "Selection (one of)";
constexpr const char* kRuns = "Inputs and runs";
constexpr const char* kBroker = "Broker";
constexpr const char* kOutput = "Output";

// Decimal only (CLI11's own integers would read 010 as octal).
template <typename T>
std::optional<T> number(std::string_view s) {
  T v{};
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// A CLI11 check: `problem(value)` is "" for a good value, else what is wrong with it
// (CLI11 puts the option's name in front).
CLI::Validator check(std::function<std::string(const std::string&)> problem) {
  return CLI::Validator([problem = std::move(problem)](std::string& v) { return problem(v); },
                        std::string());
}

// NAME=VALUE with both parts non-empty.
bool is_pair(std::string_view v) {
  const auto eq = v.find('=');
  return eq != std::string_view::npos && eq != 0 && eq + 1 != v.size();
}

// --NAME N into `out`: an integer >= `min`.
template <typename T>
CLI::Option* add_integer(CLI::App& app, const std::string& name, T& out, T min,
                         const std::string& help) {
  return app
      .add_option_function<std::string>(
          name, [&out](const std::string& v) { out = *number<T>(v); }, help)
      ->type_name("N")
      ->check(check([min](const std::string& v) {
        const auto n = number<T>(v);
        if (n && *n >= min) return std::string();
        return "'" + v + (min == 1 ? "' is not a positive integer" : "' is not >= 0");
      }));
}

// --NAME X into `out`: a number >= 0.
CLI::Option* add_tolerance(CLI::App& app, const std::string& name, double& out,
                           const std::string& help) {
  return app
      .add_option_function<std::string>(
          name, [&out](const std::string& v) { out = *number<double>(v); }, help)
      ->type_name("X")
      ->check(check([](const std::string& v) {
        const auto n = number<double>(v);
        return n && *n >= 0 ? std::string() : "'" + v + "' is not a non-negative number";
      }));
}

// The command line as CLI11 reads it, into `o` (MODEL.onnx into `model`, --input and
// --library as given into `inputs`, `libraries`).
void declare(CLI::App& app, Options& o, std::string& model, std::vector<std::string>& inputs,
             std::vector<std::string>& libraries) {
  app.description(kDescription);
  app.footer(kFooter);
  app.get_formatter()->column_width(22);
  // A repeated option takes its last value (--input and --library keep them all).
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("MODEL.onnx", model, "the model to run (or --model NAME)")->type_name("");
  app.add_option("--model", o.model_name,
                 "run model NAME from the broker's model catalog instead of a\n"
                 "file: the variant planned for this machine (--policy, or the\n"
                 "--device type), installed when missing, leased while it runs")
      ->type_name("NAME")
      ->group(kSelection);
  app.add_option("--variant", o.variant,
                 "with --model: this variant instead of the planned one\n"
                 "(`epbrokerctl models` lists them)")
      ->type_name("ID")
      ->group(kSelection);

  app.add_option_function<std::string>(
         "--policy", [&o](const std::string& v) { o.policy = epbroker::parse_policy(v); },
         "default | prefer_cpu | prefer_gpu | prefer_npu | max_performance |\n"
         "max_efficiency | min_overall_power (ONNX Runtime's EP selection\n"
         "policies; default: default)")
      ->type_name("P")
      ->group(kSelection)
      ->check(check([](const std::string& v) {
        return epbroker::parse_policy(v)
                   ? std::string()
                   : "unknown policy '" + v +
                         "' (default, prefer_cpu, prefer_gpu, prefer_npu, max_performance, "
                         "max_efficiency, min_overall_power)";
      }));
  app.add_option("--ep", o.ep,
                 "run on this EP (e.g. EpbrokerTestEp, OpenVINOExecutionProvider,\n"
                 "CPUExecutionProvider) or on the EP of this package (e.g. openvino)")
      ->type_name("NAME")
      ->group(kSelection);
  app.add_option("--device", o.device,
                 "cpu | gpu | npu: with --ep, only that device type; alone, the\n"
                 "first EP offering one")
      ->type_name("TYPE")
      ->group(kSelection)
      ->check(check([](const std::string& v) {
        return v == "cpu" || v == "gpu" || v == "npu" ? std::string()
                                                      : "'" + v + "' is not cpu, gpu or npu";
      }));

  app.add_option("--input", inputs,
                 "NAME=FILE.npy: feed input NAME from a NumPy file (little-endian\n"
                 "float32, int32, int64 or uint8, C order; integer/float data is\n"
                 "converted to the input's type when every value fits).\n"
                 "NAME=random: random data (float: [0,1); integers: [0,256)); the\n"
                 "default for every input not given. Repeatable.")
      ->type_name("NAME=FILE.npy|NAME=random")
      ->group(kRuns)
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->check(check([](const std::string& v) {
        return is_pair(v) ? std::string()
                          : "expected NAME=FILE.npy or NAME=random, got '" + v + "'";
      }));
  add_integer(app, "--batch", o.batch, std::int64_t{1},
              "size of dynamic first dimensions (default 1); an .npy with a\n"
              "first dimension of 1 is repeated N times")
      ->group(kRuns);
  add_integer(app, "--iterations", o.iterations, 1, "timed runs after the warm-up (default 20)")
      ->group(kRuns);
  add_integer(app, "--warmup", o.warmup, 0,
              "untimed runs first (default 1; the first one is reported)")
      ->group(kRuns);
  app.add_flag("--check", o.check,
               "also run on ONNX Runtime's CPU EP alone and report the max\n"
               "absolute/relative difference and the CPU EP's latency")
      ->group(kRuns)
      ->disable_flag_override();
  add_tolerance(app, "--atol", o.atol, "--check tolerance: |a-b| <= atol + rtol*|b| (default 1e-4)")
      ->group(kRuns);
  add_tolerance(app, "--rtol", o.rtol, "--check tolerance, as --atol (default 1e-3)")->group(kRuns);
  app.add_option("--labels", o.labels,
                 "one label per line: print the top-K labels of the first output\n"
                 "(each batch item), with softmax applied unless the scores\n"
                 "already sum to 1")
      ->type_name("FILE")
      ->group(kRuns);
  add_integer(app, "--top", o.top, 1, "how many labels (default 5)")->type_name("K")->group(kRuns);

  app.add_option("--bus-address", o.bus_address,
                 "D-Bus address of the broker (default $EPBROKER_BUS_ADDRESS,\n"
                 "else the system bus)")
      ->type_name("A")
      ->group(kBroker);
  app.add_flag("--no-install", o.no_install, "use only providers that are installed already")
      ->group(kBroker)
      ->disable_flag_override();
  app.add_flag("--no-broker", o.no_broker, "do not contact the broker: ONNX Runtime's own EPs only")
      ->group(kBroker)
      ->disable_flag_override();
  app.add_option("--library", libraries,
                 "register the plugin EP library at PATH directly under NAME, as\n"
                 "an app without epbroker would (the baseline the broker is\n"
                 "measured against); implies --no-broker. With --ep, only that\n"
                 "library's devices are used. Repeatable.")
      ->type_name("NAME=PATH")
      ->group(kBroker)
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->check(check([](const std::string& v) {
        return is_pair(v) ? std::string() : "expected NAME=PATH, got '" + v + "'";
      }));

  // Added last, so that --help lists the groups in the order above.
  app.set_help_flag("-h,--help", "this text")->group(kOutput);
  app.set_version_flag("--version", std::string(), "print the version and exit")->group(kOutput);
  app.add_flag("--json", o.json,
               "one JSON object on stdout (progress still on stderr); see\n"
               "client/epbroker-run/README.md for its shape")
      ->group(kOutput)
      ->disable_flag_override();
}

// The message for arguments CLI11 could not place (the model is placed first).
std::string extras_message(const CLI::App& app, const std::string& model) {
  const std::vector<std::string> extras = app.remaining();
  const std::string first = extras.empty() ? std::string() : extras.front();
  if (first.starts_with("-")) return "unknown option '" + first + "' (see --help)";
  return "more than one model given ('" + model + "', '" + first + "')";
}

}  // namespace

std::string usage() {
  CLI::App app(std::string(), "epbroker-run");
  Options o;
  std::string model;
  std::vector<std::string> inputs, libraries;
  declare(app, o, model, inputs, libraries);
  return app.help();
}

std::expected<Options, std::string> parse_args(int argc, const char* const* argv) {
  CLI::App app(std::string(), "epbroker-run");
  Options o;
  std::string model;
  std::vector<std::string> inputs, libraries;
  declare(app, o, model, inputs, libraries);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    o.help = true;
    return o;
  } catch (const CLI::CallForVersion&) {
    o.version = true;
    return o;
  } catch (const CLI::ExtrasError&) {
    return std::unexpected(extras_message(app, model));
  } catch (const CLI::ParseError& e) {
    return std::unexpected(e.what());
  }
  if (!o.model_name.empty() && !model.empty()) {
    return std::unexpected("a model file and --model are exclusive ('" + model + "', --model " +
                           o.model_name + ")");
  }
  if (model.empty() && o.model_name.empty()) {
    return std::unexpected("no model given: MODEL.onnx or --model NAME (see --help)");
  }
  if (!o.variant.empty() && o.model_name.empty()) {
    return std::unexpected("--variant needs --model");
  }
  o.model = model;
  for (const std::string& v : inputs) {
    const auto eq = v.find('=');
    InputSpec spec{v.substr(0, eq), {}, v.substr(eq + 1) == "random"};
    if (!spec.random) spec.file = v.substr(eq + 1);
    for (const auto& s : o.inputs) {
      if (s.name == spec.name) return std::unexpected("--input: '" + spec.name + "' given twice");
    }
    o.inputs.push_back(std::move(spec));
  }
  for (const std::string& v : libraries) {
    const auto eq = v.find('=');
    o.libraries.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    o.no_broker = true;
  }
  if (!o.model_name.empty() && o.no_broker) {
    return std::unexpected("--model needs the broker (not --no-broker or --library)");
  }
  o.batch_set = app.count("--batch") > 0;
  if (o.policy && (!o.ep.empty() || !o.device.empty())) {
    return std::unexpected(
        "--policy and --ep/--device are exclusive: a policy lets ONNX Runtime "
        "choose, --ep/--device choose yourself");
  }
  return o;
}

}  // namespace epbroker_run
