"""Helpers of the Python package's tests: polling with deadlines, ONNX test data."""

from __future__ import annotations

import os
import struct
import time
from pathlib import Path
from typing import Callable, Dict, List, Tuple, TypeVar

T = TypeVar("T")

ONNX_NODE_DIR = Path(os.environ.get("EPBROKER_ONNX_TESTDATA",
                                    "/usr/share/libonnx-testdata/data")) / "node"
#: Node tests whose every op the test EP implements (float32 Add, Mul, Relu, MatMul).
NODE_TESTS = ("test_add", "test_add_bcast", "test_mul", "test_mul_bcast", "test_relu",
              "test_matmul_2d", "test_matmul_3d", "test_matmul_4d")
CACHE = Path(os.environ.get("EPBROKER_CACHE", Path.home() / ".cache/epbroker"))
TEST_EP = "test-ep"
TEST_EP_NAME = "EpbrokerTestEp"
OPENVINO = "OpenVINOExecutionProvider"
#: The model both broker fixtures' catalogs publish (conftest), its variants, and
#: the one file they share (published as each one's model.onnx).
MODEL = "node-matmul"
MODEL_VARIANTS = ("fp32", "fp32-cpu")
MODEL_SOURCE = ONNX_NODE_DIR / "test_matmul_2d/model.onnx"


def is_intel_cpu() -> bool:
    """An Intel CPU (GenuineIntel in /proc/cpuinfo): where the OpenVINO EP runs."""
    try:
        return "GenuineIntel" in Path("/proc/cpuinfo").read_text()
    except OSError:
        return False


# OpenVINO's CPU plugin infers in bf16 by default on CPUs with native bf16
# (AVX512-BF16, AMX), so where the catalog offers OpenVINO (Intel CPUs) and a
# policy or an earlier registration in this process lets ORT pick it, outputs
# differ from the CPU EP's by up to ~1e-2 (seen: 3.7e-3 on a Xeon with AMX; the
# demo accepts 1e-2 for the same reason; 1.1e-2 on a value of 1.9 seen too, hence
# also a relative 1e-2). Elsewhere the tight defaults hold.
def bf16_atol(default: float) -> float:
    return 1e-2 if is_intel_cpu() else default


def bf16_rtol(default: float) -> float:
    return 1e-2 if is_intel_cpu() else default


def wait_until(predicate: Callable[[], T], timeout: float, what: str,
               interval: float = 0.05) -> T:
    """Polls `predicate` until it returns something true; AssertionError naming
    `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %.0f s waiting for %s" % (timeout, what))
        time.sleep(interval)


# ---- ONNX TensorProto (the test data's input_*.pb), wire format by hand -----------

_FLOAT = 1  # TensorProto.DataType.FLOAT


def _varint(data: bytes, i: int) -> Tuple[int, int]:
    shift = value = 0
    while True:
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, i


def read_tensor(path: Path):
    """(name, numpy array) of a float32 TensorProto file (dims, data_type,
    float_data or raw_data); ValueError for anything else."""
    import numpy as np
    data = path.read_bytes()
    dims: List[int] = []
    dtype, name, raw, floats = 0, "", b"", []
    i = 0
    while i < len(data):
        key, i = _varint(data, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(data, i)
            if field == 1:
                dims.append(value)
            elif field == 2:
                dtype = value
        elif wire == 2:
            size, i = _varint(data, i)
            chunk, i = data[i:i + size], i + size
            if field == 1:  # packed dims
                j = 0
                while j < len(chunk):
                    value, j = _varint(chunk, j)
                    dims.append(value)
            elif field == 4:  # packed float_data
                floats.extend(struct.unpack("<%df" % (len(chunk) // 4), chunk))
            elif field == 8:
                name = chunk.decode()
            elif field == 9:
                raw = chunk
        elif wire == 5:
            if field == 4:
                floats.append(struct.unpack("<f", data[i:i + 4])[0])
            i += 4
        elif wire == 1:
            i += 8
        else:
            raise ValueError("%s: unexpected wire type %d" % (path, wire))
    if dtype != _FLOAT:
        raise ValueError("%s: data type %d is not float" % (path, dtype))
    array = np.frombuffer(raw, dtype="<f4") if raw else np.array(floats, dtype=np.float32)
    return name, array.reshape(dims).astype(np.float32)


def node_test_inputs(test: str, session) -> Dict[str, object]:
    """The feed of node test `test`'s test_data_set_0, named as `session` names
    its inputs (input_0.pb is the model's first input, ...)."""
    base = ONNX_NODE_DIR / test / "test_data_set_0"
    feed = {}
    for k, meta in enumerate(session.get_inputs()):
        _, array = read_tensor(base / ("input_%d.pb" % k))
        feed[meta.name] = array
    return feed


def node_test_output(test: str):
    """The expected output_0.pb of node test `test`."""
    return read_tensor(ONNX_NODE_DIR / test / "test_data_set_0" / "output_0.pb")[1]
