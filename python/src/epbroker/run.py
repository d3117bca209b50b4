"""python -m epbroker.run: the Python sample app (the counterpart of epbroker-run).

Acquires providers from the broker (ensure_and_register), registers them in this
process's onnxruntime, runs a model and reports where ORT placed the graph and
how fast it ran; --check compares the outputs with ORT's CPU EP alone. With
--model NAME the model comes from the broker's model catalog (Client.ensure_model:
installed when missing, leased while it runs).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Tuple

from . import __version__
from ._errors import Error

if TYPE_CHECKING:  # pragma: no cover
    from ._session import ModelLease

# Exit codes (documented in --help; scripts rely on them).
EXIT_OK = 0
EXIT_MISMATCH = 1  # --check: outputs differ from the CPU EP beyond tolerance
EXIT_USAGE = 2  # bad command line (argparse)
EXIT_BROKER = 3  # the broker could not be used (bus, daemon, authorization, session, --model)
EXIT_INPUT = 4  # the model or an --input file could not be read or does not fit
EXIT_RUNTIME = 5  # ONNX Runtime failed (session creation, a run)
EXIT_INTERNAL = 6  # a bug or an unexpected failure
EXIT_INTERRUPTED = 130  # Ctrl-C (the install job was cancelled)

#: The session config entry that makes ORT record where it placed each node
#: (kOrtSessionOptionsRecordEpGraphAssignmentInfo), read back with
#: InferenceSession.get_provider_graph_assignment_info().
RECORD_ASSIGNMENT = "session.record_ep_graph_assignment_info"

SEED = 0

EPILOG = """\
exit codes:
  0    ok
  1    --check: an output differs from the CPU EP's beyond --atol + --rtol*|cpu|
  2    bad command line
  3    the broker could not be used (bus, daemon, authorization, session), or
       --model NAME could not be installed or leased
  4    the model or an --input file could not be read or does not fit the model
  5    ONNX Runtime failed (session creation, a run)
  6    internal error
  130  interrupted (Ctrl-C) while installing: the install job was cancelled

Inputs not given with --input get random data (seed 0): floats in [0, 1),
integers in [0, 256), booleans; dynamic dimensions are 1.

--model NAME runs the variant of catalog model NAME planned for --policy and this
onnxruntime (`epbrokerctl models` lists them), or --variant ID; it is installed
when missing (with progress; Ctrl-C cancels) unless --no-install, and leased while
it runs."""


def parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    """The command line (argparse exits 2 on a bad one, 0 for --help/--version)."""
    p = argparse.ArgumentParser(
        prog="python -m epbroker.run", epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run an ONNX model on the execution providers epbrokerd provides.")
    p.add_argument("model", metavar="MODEL.onnx", nargs="?", default=None,
                   help="the model to run (or --model NAME)")
    p.add_argument("--model", dest="model_name", metavar="NAME", default=None,
                   help="run model NAME from the broker's model catalog instead")
    p.add_argument("--variant", default="", metavar="ID",
                   help="with --model: this variant instead of the planned one")
    p.add_argument("--policy", default="max_performance",
                   choices=["default", "prefer_cpu", "prefer_gpu", "prefer_npu",
                            "max_performance", "max_efficiency", "min_overall_power"],
                   help="ORT's device policy, also the order of the lease (default: "
                        "max_performance)")
    p.add_argument("--check", action="store_true",
                   help="compare the outputs with ORT's CPU EP alone")
    p.add_argument("--atol", type=float, default=1e-4, help="--check: absolute tolerance")
    p.add_argument("--rtol", type=float, default=1e-3, help="--check: relative tolerance")
    p.add_argument("--iterations", type=int, default=20, help="timed runs (default 20)")
    p.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                   help="an input from a .npy file (repeatable)")
    p.add_argument("--no-install", action="store_true",
                   help="use ready providers (and an installed --model) only")
    p.add_argument("--bus-address", default=None, help="D-Bus address of the broker's bus")
    p.add_argument("--version", action="version", version=_version_text())
    args = p.parse_args(argv)
    if args.model is not None and args.model_name is not None:
        p.error("MODEL.onnx and --model are exclusive (%r, --model %s)" % (args.model,
                                                                          args.model_name))
    if args.model is None and args.model_name is None:
        p.error("no model given: MODEL.onnx or --model NAME")
    if args.variant and args.model_name is None:
        p.error("--variant needs --model")
    if args.iterations < 1:
        p.error("--iterations must be at least 1")
    for spec in args.input:
        if "=" not in spec or not spec.split("=", 1)[0]:
            p.error("--input takes NAME=FILE.npy, not %r" % spec)
    return args


def _version_text() -> str:
    parts = ["epbroker.run %s" % __version__]
    try:
        from ._client import library_version
        parts.append("libepbroker %s" % library_version())
    except ImportError:
        parts.append("libepbroker not found")
    try:
        import onnxruntime
        parts.append("onnxruntime %s" % onnxruntime.__version__)
    except ImportError:
        parts.append("onnxruntime not installed")
    return ", ".join(parts)


_DTYPES = {"tensor(float)": "float32", "tensor(double)": "float64", "tensor(float16)": "float16",
           "tensor(int8)": "int8", "tensor(uint8)": "uint8", "tensor(int16)": "int16",
           "tensor(uint16)": "uint16", "tensor(int32)": "int32", "tensor(uint32)": "uint32",
           "tensor(int64)": "int64", "tensor(uint64)": "uint64", "tensor(bool)": "bool"}


class InputError(Exception):
    """An input that cannot be read or does not fit (exit 4)."""


def make_inputs(session, specs: Sequence[str]) -> Tuple[Dict[str, object], Dict[str, str]]:
    """The feed for `session`: --input files, random data for the rest; and where
    each input came from."""
    import numpy as np
    files = dict(spec.split("=", 1) for spec in specs)
    names = {i.name for i in session.get_inputs()}
    for name in files:
        if name not in names:
            raise InputError("--input %s: the model has no such input (it has %s)" % (
                name, ", ".join(sorted(names))))
    rng = np.random.default_rng(SEED)
    feed, source = {}, {}
    for i in session.get_inputs():
        dtype = _DTYPES.get(i.type)
        if dtype is None:
            raise InputError("input %s: type %s is not supported" % (i.name, i.type))
        if i.name in files:
            try:
                array = np.load(files[i.name], allow_pickle=False)
            except (OSError, ValueError) as e:
                raise InputError("--input %s: %s" % (i.name, e))
            converted = array.astype(dtype)
            if array.dtype.kind in "iu" and not np.array_equal(converted, array):
                raise InputError("--input %s: values do not fit %s" % (i.name, dtype))
            feed[i.name], source[i.name] = converted, files[i.name]
            continue
        shape = [d if isinstance(d, int) and d > 0 else 1 for d in i.shape]
        if dtype.startswith("float"):
            feed[i.name] = rng.random(shape).astype(dtype)
        elif dtype == "bool":
            feed[i.name] = rng.integers(0, 2, shape).astype(bool)
        else:
            feed[i.name] = rng.integers(0, 256 if dtype != "int8" else 128, shape).astype(dtype)
        source[i.name] = "random (seed %d)" % SEED
    return feed, source


def assignment(session) -> List[Tuple[str, int, int, Dict[str, int]]]:
    """(ep, subgraphs, nodes, {op_type: count}) per EP, in ORT's order."""
    parts: Dict[str, List] = {}
    for sub in session.get_provider_graph_assignment_info():
        part = parts.setdefault(sub.ep_name, [0, 0, {}])
        part[0] += 1
        for node in sub.get_nodes():
            part[1] += 1
            part[2][node.op_type] = part[2].get(node.op_type, 0) + 1
    return [(ep, s, n, ops) for ep, (s, n, ops) in parts.items()]


def timed(session, feed, iterations: int) -> Tuple[list, float, float]:
    """Outputs of the last run, the first (warm-up) run's ms, the median ms."""
    start = time.perf_counter()
    outputs = session.run(None, feed)
    first = (time.perf_counter() - start) * 1e3
    samples = []
    for _ in range(iterations):
        start = time.perf_counter()
        outputs = session.run(None, feed)
        samples.append((time.perf_counter() - start) * 1e3)
    samples.sort()
    mid = len(samples) // 2
    median = samples[mid] if len(samples) % 2 else (samples[mid - 1] + samples[mid]) / 2
    return outputs, first, median


def compare(a: list, b: list, atol: float, rtol: float) -> Tuple[float, bool]:
    """Max |a-b| over every output, and whether |a-b| <= atol + rtol*|b| everywhere."""
    import numpy as np
    worst, ok = 0.0, True
    for x, y in zip(a, b):
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape:
            return float("inf"), False
        if x.size == 0:
            continue
        x64, y64 = x.astype(np.float64), y.astype(np.float64)
        # NaN where both have NaN is agreement; a NaN on one side only is a mismatch
        # and makes the reported difference NaN (max() would hide it).
        ok = ok and bool(np.all(np.isclose(x64, y64, rtol=rtol, atol=atol, equal_nan=True)))
        both_nan = np.isnan(x64) & np.isnan(y64)
        diff = np.where(both_nan, 0.0, np.abs(x64 - y64))
        worst = float("nan") if np.isnan(diff).any() else max(worst, float(diff.max()))
    return worst, ok


def fetch_model(args: argparse.Namespace, ort_version: str) -> Optional["ModelLease"]:
    """--model NAME: Client.ensure_model with --variant, --policy and this
    onnxruntime's version (a progress bar when stderr is a terminal; Ctrl-C raises
    KeyboardInterrupt once the install job is cancelled). Returns the ModelLease,
    or None after printing why not."""
    from ._client import Client
    from ._progress import resolve
    try:
        with Client(args.bus_address) as client:
            return client.ensure_model(args.model_name, variant=args.variant, policy=args.policy,
                                       ort_version=ort_version, download=not args.no_install,
                                       progress=resolve(None))
    except Error as e:
        hint = ""
        if e.status_name == "NotFound":
            hint = "\n  hint: `epbrokerctl models` lists the models the catalogs offer and " \
                   "their variants" + ("; without --no-install it would be installed"
                                       if args.no_install else "")
        print("epbroker.run: --model %s: %s%s" % (args.model_name, e, hint), file=sys.stderr)
        return None


def run(args: argparse.Namespace) -> int:
    """The app; returns the exit code."""
    if args.model_name is None:
        return _run_file(args)
    # --model: the file comes from the broker's model catalog, leased until the end.
    import onnxruntime as ort
    start = time.perf_counter()
    model = fetch_model(args, ort.__version__)
    if model is None:
        return EXIT_BROKER
    try:
        print("catalog model: %s %s, variant %s (session %s, %.0f ms)" % (
            model.name, model.version, model.variant, model.session_path,
            (time.perf_counter() - start) * 1e3))
        args.model = model.main
        return _run_file(args)
    finally:
        try:
            model.release()
        except Error:
            pass  # the daemon ends the lease when this process's connection closes anyway


def _run_file(args: argparse.Namespace) -> int:
    """Providers from the broker, then args.model in onnxruntime."""
    import onnxruntime as ort
    from .onnxruntime import ensure_and_register, session_options
    from ._client import Client
    if not os.path.isfile(args.model):
        print("epbroker.run: %s: no such model file" % args.model, file=sys.stderr)
        return EXIT_INPUT
    print("model: %s" % args.model)
    print("onnxruntime %s, epbroker %s" % (ort.__version__, __version__))
    start = time.perf_counter()
    try:
        with Client(args.bus_address) as client:
            lease = ensure_and_register(args.policy, install=not args.no_install, client=client)
    except Error as e:
        print("epbroker.run: the broker cannot be used: %s" % e, file=sys.stderr)
        return EXIT_BROKER
    with lease:
        print("broker: session %s (%.0f ms)" % (lease.session.path,
                                                (time.perf_counter() - start) * 1e3))
        for r in lease.results:
            if r.outcome == "registered" or r.code == "already_registered":
                print("  registered %s %s: %s (%s)%s" % (
                    r.name, r.version, ", ".join(r.ep_names), r.library_path,
                    "" if r.outcome == "registered" else ", already"))
            else:
                print("  skipped %s: %s: %s" % (r.name, r.code, r.reason))
        return _infer(ort, session_options, args)


def _infer(ort, session_options, args: argparse.Namespace) -> int:
    options = session_options(args.policy)
    options.add_session_config_entry(RECORD_ASSIGNMENT, "1")
    options.log_severity_level = 3
    try:
        session = ort.InferenceSession(args.model, options)
    except Exception as e:
        print("epbroker.run: ONNX Runtime cannot load %s: %s" % (args.model, e), file=sys.stderr)
        return EXIT_INPUT if "INVALID_PROTOBUF" in str(e) or "NO_SUCHFILE" in str(e) \
            else EXIT_RUNTIME
    print("policy %s; graph assignment (%s):" % (args.policy, RECORD_ASSIGNMENT))
    for ep, subgraphs, nodes, ops in assignment(session):
        print("  %s: %d node(s) in %d subgraph(s): %s" % (
            ep, nodes, subgraphs, ", ".join("%s x%d" % kv for kv in sorted(ops.items()))))
    try:
        feed, source = make_inputs(session, args.input)
    except InputError as e:
        print("epbroker.run: %s" % e, file=sys.stderr)
        return EXIT_INPUT
    for name, value in feed.items():
        print("input %s: %s %s from %s" % (name, value.dtype, list(value.shape), source[name]))
    try:
        outputs, first, median = timed(session, feed, args.iterations)
    except Exception as e:
        print("epbroker.run: the run failed: %s" % e, file=sys.stderr)
        return EXIT_RUNTIME
    print("latency: median %.3f ms over %d runs (first run %.3f ms)" % (median, args.iterations,
                                                                       first))
    if not args.check:
        return EXIT_OK
    try:
        cpu = ort.InferenceSession(args.model, providers=["CPUExecutionProvider"])
        cpu_outputs, _, cpu_median = timed(cpu, feed, args.iterations)
    except Exception as e:
        print("epbroker.run: the CPU EP run failed: %s" % e, file=sys.stderr)
        return EXIT_RUNTIME
    worst, ok = compare(outputs, cpu_outputs, args.atol, args.rtol)
    print("check: max |diff| %.3g vs CPUExecutionProvider (atol %g, rtol %g): %s; "
          "CPU EP median %.3f ms" % (worst, args.atol, args.rtol, "ok" if ok else "MISMATCH",
                                     cpu_median))
    return EXIT_OK if ok else EXIT_MISMATCH


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of `python -m epbroker.run`."""
    args = parse_args(argv)
    try:
        return run(args)
    except KeyboardInterrupt:
        print("epbroker.run: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except ImportError as e:
        print("epbroker.run: %s" % e, file=sys.stderr)
        return EXIT_BROKER if isinstance(e, Error) else EXIT_INTERNAL
    except Exception as e:  # a bug: say so, with the traceback
        import traceback
        traceback.print_exc()
        print("epbroker.run: internal error: %s" % e, file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
