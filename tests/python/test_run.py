"""python -m epbroker.run (g): a node model with --check under max_performance, and
its exit codes."""

from __future__ import annotations

import subprocess
import sys

import pytest

from support import (ONNX_NODE_DIR, OPENVINO, TEST_EP_NAME, bf16_atol, bf16_rtol,
                     is_intel_cpu)

MODEL = str(ONNX_NODE_DIR / "test_matmul_2d/model.onnx")


def _run(*args, timeout=180):
    return subprocess.run([sys.executable, "-m", "epbroker.run", *args], capture_output=True,
                          text=True, timeout=timeout)


def test_check_max_performance(broker):
    r = _run(MODEL, "--check", "--policy", "max_performance", "--iterations", "5",
             "--atol", str(bf16_atol(1e-4)), "--rtol", str(bf16_rtol(1e-3)))
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert any(line.startswith("  registered test-ep") and TEST_EP_NAME in line
               for line in lines), r.stdout
    # Where the catalog offers OpenVINO (Intel CPUs), ORT's max_performance picks it.
    ep = OPENVINO if is_intel_cpu() else TEST_EP_NAME
    assert any(line.startswith("  %s: 1 node(s)" % ep) for line in lines), r.stdout
    assert any(line.startswith("latency: median ") and " ms over 5 runs" in line
               for line in lines), r.stdout
    assert any(line.startswith("check: ") and ": ok;" in line for line in lines), r.stdout
    assert "skipped future-ep: ort_too_old" in r.stdout


def test_mismatch_exits_1(broker):
    # No difference can be <= -1: every element fails the tolerance.
    r = _run(MODEL, "--check", "--atol", "-1", "--rtol", "0", "--iterations", "1")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "MISMATCH" in r.stdout


def test_input_file(broker, tmp_path):
    import numpy as np
    a = tmp_path / "a.npy"
    np.save(a, np.ones((3, 4), dtype=np.float64))
    r = _run(MODEL, "--input", "a=%s" % a, "--iterations", "1", "--check", "--atol",
             str(bf16_atol(1e-4)), "--rtol", str(bf16_rtol(1e-3)))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "input a: float32 [3, 4] from %s" % a in r.stdout
    r = _run(MODEL, "--input", "nope=%s" % a, "--iterations", "1")
    assert r.returncode == 4 and "no such input" in r.stderr, r.stdout + r.stderr


@pytest.mark.parametrize("args,code,text", [
    (["--policy", "fastest", MODEL], 2, "invalid choice"),
    (["--iterations", "0", MODEL], 2, "at least 1"),
    (["/nonexistent/model.onnx"], 4, "no such model file"),
    ([MODEL, "--bus-address", "unix:path=/nonexistent/bus"], 3, "broker cannot be used"),
])
def test_exit_codes(args, code, text):
    r = _run(*args)
    assert r.returncode == code, r.stdout + r.stderr
    assert text in r.stderr, r.stderr


def test_help_and_version():
    r = _run("--help")
    assert r.returncode == 0 and "exit codes:" in r.stdout and "130" in r.stdout, r.stdout
    r = _run("--version")
    assert r.returncode == 0 and "epbroker.run 0.1.0" in r.stdout and "libepbroker" in r.stdout
