#!/usr/bin/env python3
"""The Python app of bench_vs_pip: what a Python user of the epbroker package does.

  python_app.py cold BUS_ADDRESS MODEL
      One process, on an empty store: import onnxruntime and epbroker, the first
      call (D-Bus activation), a catalog refresh, ensure_and_register(providers=
      ["openvino"]) (download, verify, install, lease, register), an InferenceSession
      on MODEL (OpenVINO's devices when ORT offers any, else the CPU EP) and one run.
  python_app.py warm BUS_ADDRESS MODEL
      The same app started again once the store holds the package: how long
      ensure_and_register takes when there is nothing to install.

Prints one JSON object (milliseconds) on its last line. Run by bench_vs_pip with
PYTHONPATH=python/src and LD_LIBRARY_PATH at the built libepbroker; never by a test.
"""

import json
import sys
import time


def ms(t0: float) -> float:
    return (time.perf_counter() - t0) * 1000.0


def main() -> int:
    mode, address, model = sys.argv[1], sys.argv[2], sys.argv[3]
    out = {}
    t = time.perf_counter()
    import numpy as np
    import onnxruntime as ort

    import epbroker
    from epbroker.onnxruntime import ensure_and_register, ep_devices

    out["import_ms"] = ms(t)
    client = epbroker.Client(address)
    if mode == "cold":
        t = time.perf_counter()
        client.devices()  # the first call: D-Bus activation
        out["activation_ms"] = ms(t)
        t = time.perf_counter()
        client.refresh()
        out["refresh_ms"] = ms(t)
    t = time.perf_counter()
    lease = ensure_and_register(providers=["openvino"], progress=False, client=client)
    out["ensure_and_register_ms"] = ms(t)
    registered = [r for r in lease.results if r.outcome == "registered" or r.code == "already_registered"]
    if not registered:
        print(json.dumps({"error": [r.reason for r in lease.results]}))
        return 1
    t = time.perf_counter()
    options = ort.SessionOptions()
    devices = ep_devices("OpenVINOExecutionProvider")
    if devices:
        options.add_provider_for_devices(devices, {})
    session = ort.InferenceSession(model, options)
    out["session_ms"] = ms(t)
    t = time.perf_counter()
    inp = session.get_inputs()[0]
    shape = [d if isinstance(d, int) else 1 for d in inp.shape]
    session.run(None, {inp.name: np.random.default_rng(1).random(shape, dtype=np.float32)})
    out["run_ms"] = ms(t)
    out["openvino_devices"] = len(devices)
    out["ort_version"] = ort.__version__
    lease.release()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
