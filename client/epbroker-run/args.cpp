#include "client/epbroker-run/args.hpp"

#include <charconv>
#include <string_view>

namespace epbroker_run {

namespace {

template <typename T>
std::optional<T> number(std::string_view s) {
  T v{};
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

std::string usage() {
  return R"(Usage: epbroker-run MODEL.onnx [options]

Runs an ONNX model in this process's ONNX Runtime on the execution providers the
epbroker daemon brokers: it asks the daemon for every provider compatible with this
machine (installing missing ones, with progress on stderr), registers them, lets
ONNX Runtime place the graph by policy (or on the EP you name), runs it, and prints
which EP and device ran each part of the graph, latency and throughput.

Selection (one of):
  --policy P          default | prefer_cpu | prefer_gpu | prefer_npu | max_performance |
                      max_efficiency | min_overall_power (ONNX Runtime's EP selection
                      policies; default: default)
  --ep NAME           run on this EP (e.g. EpbrokerTestEp, OpenVINOExecutionProvider,
                      CPUExecutionProvider) or on the EP of this package (e.g. openvino)
  --device TYPE       cpu | gpu | npu: with --ep, only that device type; alone, the
                      first EP offering one

Inputs and runs:
  --input NAME=FILE.npy   feed input NAME from a NumPy file (little-endian float32,
                      int32, int64 or uint8, C order; integer/float data is converted
                      to the input's type when every value fits). Repeatable.
  --input NAME=random     random data (float: [0,1); integers: [0,256)); the default
                      for every input not given
  --batch N           size of dynamic first dimensions (default 1); an .npy with a
                      first dimension of 1 is repeated N times
  --iterations N      timed runs after the warm-up (default 20)
  --warmup N          untimed runs first (default 1; the first one is reported)
  --check             also run on ONNX Runtime's CPU EP alone and report the max
                      absolute/relative difference and the CPU EP's latency
  --atol X, --rtol X  --check tolerance: |a-b| <= atol + rtol*|b| (default 1e-4, 1e-3)
  --labels FILE       one label per line: print the top-K labels of the first output
                      (each batch item), with softmax applied unless the scores
                      already sum to 1
  --top K             how many labels (default 5)

Broker:
  --bus-address A     D-Bus address of the broker (default $EPBROKER_BUS_ADDRESS,
                      else the system bus)
  --no-install        use only providers that are installed already
  --no-broker         do not contact the broker: ONNX Runtime's own EPs only
  --library NAME=PATH register the plugin EP library at PATH directly under NAME, as
                      an app without epbroker would (the baseline the broker is
                      measured against); implies --no-broker. With --ep, only that
                      library's devices are used. Repeatable.

Output:
  --json              one JSON object on stdout (progress still on stderr); see
                      client/epbroker-run/README.md for its shape
  -h, --help          this text

Exit codes:
  0  success
  1  internal error
  2  bad command line
  3  the broker could not be used (no bus, daemon not installed or not running,
     not authorized, session refused)
  4  the model, an --input or --labels file could not be read or does not fit
  5  ONNX Runtime failed (no such EP or device, session creation, a run)
  6  --check: outputs differ from the CPU EP beyond the tolerance
  130  interrupted (Ctrl-C) while installing: the install job was cancelled
)";
}

std::expected<Options, std::string> parse_args(int argc, char** argv) {
  Options o;
  std::vector<std::string_view> args(argv + 1, argv + argc);
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string_view a = args[i];
    // The value of an option: "--opt VALUE" or "--opt=VALUE".
    std::string_view value;
    std::string_view opt = a;
    if (a.starts_with("--") && a.find('=') != std::string_view::npos) {
      opt = a.substr(0, a.find('='));
      value = a.substr(a.find('=') + 1);
    }
    auto need = [&]() -> std::expected<std::string_view, std::string> {
      if (opt != a) return value;
      if (i + 1 >= args.size()) return std::unexpected(std::string(opt) + " needs a value");
      return args[++i];
    };
    auto positive = [&](auto& out) -> std::expected<void, std::string> {
      auto v = need();
      if (!v) return std::unexpected(v.error());
      using T = std::remove_reference_t<decltype(out)>;
      auto n = number<T>(*v);
      if (!n || *n < 1) {
        return std::unexpected(std::string(opt) + ": '" + std::string(*v) +
                               "' is not a positive integer");
      }
      out = *n;
      return {};
    };
    auto real = [&](double& out) -> std::expected<void, std::string> {
      auto v = need();
      if (!v) return std::unexpected(v.error());
      auto n = number<double>(*v);
      if (!n || *n < 0) {
        return std::unexpected(std::string(opt) + ": '" + std::string(*v) +
                               "' is not a non-negative number");
      }
      out = *n;
      return {};
    };
    std::expected<void, std::string> r;
    if (a == "-h" || a == "--help") {
      o.help = true;
      return o;
    } else if (opt == "--policy") {
      auto v = need();
      if (!v) return std::unexpected(v.error());
      o.policy = epbroker::parse_policy(*v);
      if (!o.policy) {
        return std::unexpected("--policy: unknown policy '" + std::string(*v) +
                               "' (default, prefer_cpu, prefer_gpu, prefer_npu, max_performance, "
                               "max_efficiency, min_overall_power)");
      }
    } else if (opt == "--ep") {
      auto v = need();
      if (!v) return std::unexpected(v.error());
      o.ep = *v;
    } else if (opt == "--device") {
      auto v = need();
      if (!v) return std::unexpected(v.error());
      if (*v != "cpu" && *v != "gpu" && *v != "npu") {
        return std::unexpected("--device: '" + std::string(*v) + "' is not cpu, gpu or npu");
      }
      o.device = *v;
    } else if (opt == "--iterations") {
      r = positive(o.iterations);
    } else if (opt == "--warmup") {
      auto v = need();
      if (!v) return std::unexpected(v.error());
      auto n = number<int>(*v);
      if (!n || *n < 0) return std::unexpected("--warmup: '" + std::string(*v) + "' is not >= 0");
      o.warmup = *n;
    } else if (opt == "--batch") {
      r = positive(o.batch);
      o.batch_set = true;
    } else if (opt == "--input") {
      auto v = need();
      if (!v) return std::unexpected(v.error());
      const auto eq = v->find('=');
      if (eq == std::string_view::npos || eq == 0 || eq + 1 == v->size()) {
        return std::unexpected("--input: expected NAME=FILE.npy or NAME=random, got '" +
                               std::string(*v) + "'");
      }
      InputSpec spec{std::string(v->substr(0, eq)), {}, false};
      const std::string_view src = v->substr(eq + 1);
      if (src == "random") {
        spec.random = true;
      } else {
        spec.file = std::string(src);
      }
      for (const auto& s : o.inputs) {
        if (s.name == spec.name) return std::unexpected("--input: '" + spec.name + "' given twice");
      }
      o.inputs.push_back(std::move(spec));
    } else if (opt == "--labels") {
      auto v = need();
      if (!v) return std::unexpected(v.error());
      o.labels = std::string(*v);
    } else if (opt == "--top") {
      r = positive(o.top);
    } else if (opt == "--atol") {
      r = real(o.atol);
    } else if (opt == "--rtol") {
      r = real(o.rtol);
    } else if (opt == "--bus-address") {
      auto v = need();
      if (!v) return std::unexpected(v.error());
      o.bus_address = *v;
    } else if (opt == "--library") {
      auto v = need();
      if (!v) return std::unexpected(v.error());
      const auto eq = v->find('=');
      if (eq == std::string_view::npos || eq == 0 || eq + 1 == v->size()) {
        return std::unexpected("--library: expected NAME=PATH, got '" + std::string(*v) + "'");
      }
      o.libraries.emplace_back(std::string(v->substr(0, eq)), std::string(v->substr(eq + 1)));
      o.no_broker = true;
    } else if (a == "--check") {
      o.check = true;
    } else if (a == "--json") {
      o.json = true;
    } else if (a == "--no-broker") {
      o.no_broker = true;
    } else if (a == "--no-install") {
      o.no_install = true;
    } else if (a.starts_with("-")) {
      return std::unexpected("unknown option '" + std::string(a) + "' (see --help)");
    } else if (o.model.empty()) {
      o.model = std::string(a);
    } else {
      return std::unexpected("more than one model given ('" + o.model.string() + "', '" +
                             std::string(a) + "')");
    }
    if (!r) return std::unexpected(r.error());
  }
  if (o.model.empty()) return std::unexpected("no model given (see --help)");
  if (o.policy && (!o.ep.empty() || !o.device.empty())) {
    return std::unexpected(
        "--policy and --ep/--device are exclusive: a policy lets ONNX Runtime "
        "choose, --ep/--device choose yourself");
  }
  return o;
}

}  // namespace epbroker_run
