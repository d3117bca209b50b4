"""Magika (Google's file-type classifier) through the OpenVINO EP (b): on Intel CPUs
only, where the fixture's catalog offers the openvino package."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

import epbroker.onnxruntime as ebo
from epbroker.run import RECORD_ASSIGNMENT
from support import CACHE, is_intel_cpu

MODEL = CACHE / "models/magika/model.onnx"
OPENVINO = "OpenVINOExecutionProvider"


def test_magika_on_openvino_cpu(broker):
    if not is_intel_cpu():
        pytest.skip("the OpenVINO EP runs on Intel CPUs only; this CPU is not GenuineIntel")
    if "openvino" not in broker.packages:
        pytest.skip("the build has no openvino package (build the target openvino-package)")
    if not MODEL.is_file():
        pytest.skip("%s not found (scripts/demo/fetch-model.sh fetches it)" % MODEL)
    with ebo.ensure_and_register(providers=["openvino"], progress=False) as lease:
        results = [r for r in lease.results if r.name == "openvino"]
        assert results and results[0] in lease.usable, lease.results
        devices = [d for d in ebo.ep_devices(OPENVINO)
                   if d.device.type == ort.OrtHardwareDeviceType.CPU]
        assert devices, ebo.ep_devices()
        options = ort.SessionOptions()
        options.add_provider_for_devices(devices, {})
        options.add_session_config_entry(RECORD_ASSIGNMENT, "1")
        session = ort.InferenceSession(str(MODEL), options)
        # Four "files": 2048 byte tokens each (256 is padding).
        rng = np.random.default_rng(0)
        tokens = rng.integers(0, 257, size=(4, 2048)).astype(np.int32)
        got = session.run(None, {"bytes": tokens})[0]
        cpu = ort.InferenceSession(str(MODEL), providers=["CPUExecutionProvider"])
        want = cpu.run(None, {"bytes": tokens})[0]
        assert got.shape == want.shape == (4, want.shape[1])
        # OpenVINO may infer in bf16 on CPUs that have it (see scripts/demo.sh).
        np.testing.assert_allclose(got, want, atol=1e-2)
        assert (got.argmax(axis=1) == want.argmax(axis=1)).all()
        placed = {sub.ep_name for sub in session.get_provider_graph_assignment_info()}
        assert OPENVINO in placed, placed
