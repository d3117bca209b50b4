"""libepbroker_ep.so, the broker as one plugin-EP library, from Python with the real
onnxruntime wheel: an app that knows nothing of epbroker registers it with one
line, ort.register_execution_provider_library("epbroker", PATH), and runs ONNX
node tests on test-ep alone with the CPU EP's outputs; with no daemon it keeps
the CPU EP and ORT logs why; on Intel CPUs OpenVINO comes the same way.

Each case runs in a fresh interpreter: ORT keeps one environment per process, and
this one's already has test-ep and OpenVINO registered directly by other tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import build_dir
from support import NODE_TESTS, OPENVINO, TEST_EP, TEST_EP_NAME, is_intel_cpu

# The app: only onnxruntime and numpy. argv[1] is a JSON object: the library,
# the EP, the node tests, EP options. It prints one JSON line: the EP's devices
# and, per test, the largest difference from the CPU EP.
APP = r"""
import json, sys
import numpy as np
import onnxruntime as ort
sys.path.insert(0, %(support)r)
from support import ONNX_NODE_DIR, node_test_inputs

args = json.loads(sys.argv[1])
ort.register_execution_provider_library("epbroker", args["library"])
devices = [d for d in ort.get_ep_devices() if d.ep_name == args["ep"]]
out = {"devices": len(devices),
       "library_path": [d.ep_metadata.get("library_path", "") for d in devices],
       "diff": {}}
for test in args["tests"]:
    model = str(ONNX_NODE_DIR / test / "model.onnx")
    cpu = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    feed = node_test_inputs(test, cpu)
    want = cpu.run(None, feed)[0]
    if devices:
        options = ort.SessionOptions()
        options.add_provider_for_devices(devices, args["ep_options"])
        options.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
        got = ort.InferenceSession(model, options).run(None, feed)[0]
        out["diff"][test] = float(np.max(np.abs(got.astype(np.float64) - want)))
ort.unregister_execution_provider_library("epbroker")
print(json.dumps(out))
"""


def _app(ep: str, tests, env_extra, ep_options=None):
    library = build_dir() / "client/ep/libepbroker_ep.so"
    assert library.is_file(), "build the epbroker_ep target (%s)" % library
    args = {"library": str(library), "ep": ep, "tests": list(tests),
            "ep_options": ep_options or {}}
    env = dict(os.environ, **env_extra)
    r = subprocess.run([sys.executable, "-c", APP % {"support": str(Path(__file__).parent)},
                        json.dumps(args)], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1]), r.stderr, str(library)


def test_one_line_registers_the_brokered_ep_and_runs_node_tests_alone(broker):
    out, err, library = _app(TEST_EP_NAME, NODE_TESTS,
                             {"EPBROKER_EP_PROVIDERS": TEST_EP, "EPBROKER_EP_INSTALL": "1"})
    assert out["devices"] == 1, err
    # ORT loaded the broker's library, which handed it test-ep's factory.
    assert [os.path.realpath(p) for p in out["library_path"]] == [os.path.realpath(library)]
    assert sorted(out["diff"]) == sorted(NODE_TESTS)
    for test, diff in out["diff"].items():
        assert diff <= 1e-5, (test, diff)


def test_no_daemon_keeps_the_cpu_ep_and_logs_why(broker, tmp_path):
    out, err, _ = _app(TEST_EP_NAME, NODE_TESTS[:1],
                       {"EPBROKER_BUS_ADDRESS": "unix:path=%s" % (tmp_path / "no-bus")})
    assert out["devices"] == 0 and out["diff"] == {}
    assert "epbroker_ep: no brokered execution providers" in err, err
    assert "ONNX Runtime's own execution providers remain" in err, err


@pytest.mark.skipif(not is_intel_cpu(), reason="the OpenVINO EP runs on Intel CPUs only; "
                    "the catalog offers it nowhere else")
def test_openvino_through_the_broker_library(broker):
    # Full precision on OpenVINO's CPU device (its default may be bf16: support.bf16_atol).
    out, err, _ = _app(OPENVINO, ["test_matmul_2d", "test_add"],
                       {"EPBROKER_EP_PROVIDERS": "openvino", "EPBROKER_EP_INSTALL": "1"},
                       {"load_config": json.dumps({"CPU": {"INFERENCE_PRECISION_HINT": "f32"}})})
    assert out["devices"] >= 1, err
    for test, diff in out["diff"].items():
        assert diff <= 1e-4, (test, diff)
