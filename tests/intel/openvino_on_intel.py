#!/usr/bin/env python3
"""OpenVINO EP package on an Intel CPU, with the official Python build of ONNX Runtime.

The OpenVINO EP offers devices of Intel's vendor id only, and the machines this
project builds and tests on have AMD CPUs; this script is how the package is run
on an Intel machine that has ONNX Runtime's Python package, numpy and onnx but
not this project's build (its C++ tests link libarchive and friends, which such
a machine may lack).

  openvino_on_intel.py --package openvino-1.8.1.tar.gz --testdata DIR

1. unpack the package (a .tar.gz made by `epbroker-publish pack --gzip`) and
   check every file against its manifest.json (size, SHA-256);
2. RegisterExecutionProviderLibrary, list the EP devices;
3. run ONNX's pytorch-converted Conv / MaxPool / AvgPool / Linear tests on
   OpenVINO's CPU device with CPU-EP fallback disabled, against the expected
   outputs (rtol 1e-3, atol 1e-5);
4. an 11.5 M-parameter VGG-style CNN (random weights, the architecture of
   tests/ort/support/cnn_model.cpp) against ORT's CPU EP, batch 4;
5. print timings: package -> registered -> session -> first inference.
Ends with 'N passed, N failed'; exit 0 only if nothing failed.
"""
import argparse
import glob
import hashlib
import json
import os
import sys
import tarfile
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

F32 = {"load_config": json.dumps({"CPU": {"INFERENCE_PRECISION_HINT": "f32"}})}
passed = failed = 0


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
        print(f"  ok: {what}")
    else:
        failed += 1
        print(f"  FAIL: {what}")


def unpack(package, dest):
    with tarfile.open(package) as tf:
        tf.extractall(dest, filter="data")
    manifest = json.load(open(os.path.join(dest, "manifest.json")))
    for f in manifest["files"]:
        data = open(os.path.join(dest, f["path"]), "rb").read()
        if len(data) != f["size"] or hashlib.sha256(data).hexdigest() != f["sha256"]:
            raise SystemExit(f"{f['path']}: does not match manifest.json")
    return manifest


def load_case(case):
    model = onnx.load(os.path.join(case, "model.onnx"))
    sets = []
    for d in sorted(glob.glob(os.path.join(case, "test_data_set_*"))):
        ins = [numpy_helper.to_array(onnx.load_tensor(p))
               for p in sorted(glob.glob(os.path.join(d, "input_*.pb")))]
        outs = [numpy_helper.to_array(onnx.load_tensor(p))
                for p in sorted(glob.glob(os.path.join(d, "output_*.pb")))]
        sets.append((ins, outs))
    return model, sets


def ov_options(devices):
    so = ort.SessionOptions()
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    so.add_provider_for_devices(devices, F32)
    return so


def cnn_model(seed=7):
    rng = np.random.default_rng(seed)
    nodes, inits, x, in_ch, n = [], [], "X", 3, 0
    params = 0

    def conv(out_ch):
        nonlocal x, in_ch, n, params
        b = np.sqrt(6.0 / (in_ch * 9))
        inits.append(numpy_helper.from_array(
            rng.uniform(-b, b, (out_ch, in_ch, 3, 3)).astype(np.float32), f"W{n}"))
        inits.append(numpy_helper.from_array(
            rng.uniform(-0.05, 0.05, (out_ch,)).astype(np.float32), f"B{n}"))
        params += out_ch * in_ch * 9 + out_ch
        nodes.append(helper.make_node("Conv", [x, f"W{n}", f"B{n}"], [f"C{n}"],
                                      kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
        nodes.append(helper.make_node("Relu", [f"C{n}"], [f"R{n}"]))
        x, in_ch, n = f"R{n}", out_ch, n + 1

    def pool():
        nonlocal x, n
        nodes.append(helper.make_node("MaxPool", [x], [f"P{n}"], kernel_shape=[2, 2],
                                      strides=[2, 2]))
        x, n = f"P{n}", n + 1

    conv(64), conv(128), pool(), conv(256), conv(512), pool()
    for _ in range(4):
        conv(512)
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["G"]))
    nodes.append(helper.make_node("Flatten", ["G"], ["F"], axis=1))
    b = np.sqrt(6.0 / 512)
    inits.append(numpy_helper.from_array(rng.uniform(-b, b, (1000, 512)).astype(np.float32), "FcW"))
    inits.append(numpy_helper.from_array(rng.uniform(-0.05, 0.05, (1000,)).astype(np.float32), "FcB"))
    params += 1000 * 512 + 1000
    nodes.append(helper.make_node("Gemm", ["F", "FcW", "FcB"], ["Y"], transB=1))
    graph = helper.make_graph(
        nodes, "vgg_like",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 3, 32, 32])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 1000])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString(), params


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--package", required=True)
    ap.add_argument("--testdata", required=True, help="libonnx-testdata's data/ directory")
    args = ap.parse_args()
    print(f"onnxruntime {ort.__version__}, numpy {np.__version__}, onnx {onnx.__version__}")
    cpu = [l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")]
    print(f"CPU: {cpu[0] if cpu else 'unknown'} ({os.cpu_count()} threads)")

    with tempfile.TemporaryDirectory() as store:
        t0 = time.perf_counter()
        manifest = unpack(args.package, store)
        t1 = time.perf_counter()
        lib = os.path.join(store, manifest["epbroker"]["library"])
        ort.register_execution_provider_library("openvino", lib)
        t2 = time.perf_counter()
        devices = [d for d in ort.get_ep_devices() if d.ep_name == "OpenVINOExecutionProvider"]
        for d in devices:
            print(f"device: {d.ep_name} vendor={d.ep_vendor} type={d.device.type} "
                  f"vendor_id=0x{d.device.vendor_id:04x} device_id=0x{d.device.device_id:x} "
                  f"metadata={dict(d.ep_metadata)}")
        cpu_devs = [d for d in devices if d.device.type == ort.OrtHardwareDeviceType.CPU]
        check(len(cpu_devs) > 0, "OpenVINO offers a CPU device")
        if not cpu_devs:
            print(f"{passed} passed, {failed} failed")
            return 1

        print("-- pytorch-converted tests on OpenVINO (CPU device, no CPU-EP fallback)")
        root = os.path.join(args.testdata, "pytorch-converted")
        cases = []
        for pat in ("test_Conv*", "test_MaxPool*", "test_AvgPool*", "test_Linear*"):
            cases += sorted(glob.glob(os.path.join(root, pat)))
        for case in cases:
            name = os.path.basename(case)
            try:
                model, sets = load_case(case)
                sess = ort.InferenceSession(model.SerializeToString(), ov_options(cpu_devs))
                names = [i.name for i in sess.get_inputs()]
                ok, why = True, ""
                for ins, outs in sets:
                    got = sess.run(None, dict(zip(names, ins)))
                    for g, e in zip(got, outs):
                        if g.shape != e.shape or not np.allclose(g, e, rtol=1e-3, atol=1e-5):
                            ok, why = False, f"max |diff| {np.max(np.abs(g - e)) if g.shape == e.shape else 'shape'}"
                check(ok, f"{name} ({len(sets)} data set(s)) {why}")
            except Exception as e:  # noqa: BLE001 - report and go on
                check(False, f"{name}: {str(e).splitlines()[0]}")

        print("-- 11.5 M-parameter CNN: OpenVINO vs ORT's CPU EP")
        model, params = cnn_model()
        x = np.random.default_rng(11).uniform(0, 1, (4, 3, 32, 32)).astype(np.float32)
        ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"X": x})[0]
        t3 = time.perf_counter()
        sess = ort.InferenceSession(model, ov_options(cpu_devs))
        t4 = time.perf_counter()
        got = sess.run(None, {"X": x[:1]})[0]
        t5 = time.perf_counter()
        got = sess.run(None, {"X": x})[0]
        diff = float(np.max(np.abs(got - ref)))
        check(params > 10_000_000 and np.allclose(got, ref, rtol=1e-3, atol=1e-4),
              f"CNN ({params} parameters), batch 4: max |diff| vs CPU EP {diff:.2e}")
        for batch in (1, 4):
            xb = x[:batch]
            times = []
            for _ in range(10):
                t = time.perf_counter()
                sess.run(None, {"X": xb})
                times.append((time.perf_counter() - t) * 1e3)
            cpu_sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
            cpu_times = []
            for _ in range(10):
                t = time.perf_counter()
                cpu_sess.run(None, {"X": xb})
                cpu_times.append((time.perf_counter() - t) * 1e3)
            print(f"  batch {batch}: OpenVINO median {np.median(times):.1f} ms, "
                  f"CPU EP median {np.median(cpu_times):.1f} ms (10 runs each)")
        pkg_mb = os.path.getsize(args.package) / 1e6
        print(f"-- package ({pkg_mb:.1f} MB) -> first inference: unpack {1e3*(t1-t0):.0f} ms, "
              f"register {1e3*(t2-t1):.0f} ms, session {1e3*(t4-t3):.0f} ms, "
              f"first run {1e3*(t5-t4):.0f} ms")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
