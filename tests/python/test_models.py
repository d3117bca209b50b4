"""Models through the Python package against the live broker, whose catalogs publish
node-matmul 1.0 (conftest: ONNX's test_matmul_2d node model as variants fp32 and
fp32-cpu sharing their file, published with epbroker-publish pack-model and
add-model): Client.models() with the plan; ensure_model() with progress, its lease
refusing remove_model() (Busy) until released, then removed; an explicit variant,
no download, the shared file; a lease ended by garbage collection; the leased file run with onnxruntime against a plain
InferenceSession of the published bytes, also through
epbroker.onnxruntime.model_session(); `python -m epbroker.run --model NAME`; and a
KeyboardInterrupt in the progress callback cancelling a slow model download."""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import os
import subprocess
import sys

import numpy as np
import onnxruntime as ort
import pytest

import epbroker
import epbroker.onnxruntime as ebo
from support import (MODEL, MODEL_SOURCE, MODEL_VARIANTS, TEST_EP, bf16_atol, bf16_rtol,
                     node_test_inputs, node_test_output, wait_until)

NODE_TEST = "test_matmul_2d"


def _remove_all(client):
    try:
        client.remove_model(MODEL, now=True)
    except epbroker.NotFound:
        pass  # nothing installed


@pytest.fixture(autouse=True)
def clean_store(broker):
    """Each test starts, and leaves the broker, with no variant of MODEL installed."""
    with epbroker.Client(broker.address) as client:
        _remove_all(client)
        yield
        _remove_all(client)


def _listed(client, **kw):
    found = [m for m in client.models(**kw) if m.name == MODEL]
    assert len(found) == 1, found
    return found[0]


def _card_file(broker, variant):
    """The card's entry for `variant`'s model.onnx (path, size, sha256)."""
    v = next(v for v in broker.model_card["epbroker"]["variants"] if v["id"] == variant)
    return next(f for f in v["files"] if f["path"] == "model.onnx")


def _sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _try_remove(client):
    """remove_model(MODEL), or None while the daemon still counts the lease."""
    try:
        return client.remove_model(MODEL)
    except epbroker.Busy:
        return None


def test_models_lists_the_published_model_with_a_plan(client, broker):
    m = _listed(client)
    assert isinstance(m, epbroker.ModelInfo)
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.name = "other"  # type: ignore[misc]
    assert (m.version, m.publisher, m.license, m.task, m.state, m.reason, m.remote) == (
        "1.0", "epbroker tests", "Apache-2.0", "matrix-multiplication", "available", "", "test")
    assert m.license_url == "https://www.apache.org/licenses/LICENSE-2.0"
    assert m.description.startswith("ONNX's test_matmul_2d")
    assert tuple(v.id for v in m.variants) == MODEL_VARIANTS
    size = os.path.getsize(MODEL_SOURCE)
    for v in m.variants:
        assert isinstance(v, epbroker.ModelVariant)
        assert (v.ort_min, v.opset, v.size, v.installed) == ("1.16", 13, size, False), v
    fp32, cpu = m.variants
    assert (fp32.devices, fp32.eps) == ((), ())
    assert (cpu.devices, cpu.eps) == (("cpu",), ("CPUExecutionProvider",))
    # What this machine gets, and why.
    assert m.planned in MODEL_VARIANTS, m
    assert m.plan_device and m.plan_ep and m.plan_reason, m
    # The arguments reach the daemon, which checks them.
    assert _listed(client, policy="prefer_cpu", ort_version=ort.__version__).planned
    with pytest.raises(epbroker.InvalidArgument):
        client.models(ort_version="one")
    with pytest.raises(epbroker.InvalidArgument):
        client.models(policy="fastest")


def test_ensure_model_with_progress_then_busy_until_released(client, broker):
    seen = []
    lease = client.ensure_model(MODEL, progress=seen.append)
    try:
        assert isinstance(lease, epbroker.ModelLease)
        assert lease.active and lease.session_path.startswith("/org/epbroker/"), lease
        planned = _listed(client).planned
        assert (lease.name, lease.version, lease.variant) == (MODEL, "1.0", planned)
        assert os.path.realpath(lease.path).startswith(os.path.realpath(broker.store) + "/")
        assert lease.files == ("model.onnx",)
        assert lease.main == os.path.join(lease.path, "model.onnx")
        assert os.path.isfile(lease.main)
        assert _sha256(lease.main) == _card_file(broker, planned)["sha256"]
        # The model job's progress: bytes never going down, done last with every byte.
        assert seen, "no progress reported"
        assert all(p.kind == "model" and p.target == "%s/%s" % (MODEL, planned)
                   for p in seen), seen
        assert len({p.job for p in seen}) == 1, seen
        done = [p.bytes_done for p in seen]
        assert done == sorted(done), seen
        assert seen[-1].state == "done" and seen[-1].final, seen
        assert seen[-1].bytes_total > 0 and seen[-1].bytes_done == seen[-1].bytes_total, seen
        assert next(v for v in _listed(client).variants if v.id == planned).installed

        # Leased: remove_model is refused and removes nothing.
        with pytest.raises(epbroker.Busy):
            client.remove_model(MODEL)
        assert os.path.isfile(lease.main)
    finally:
        lease.release()
    lease.release()  # idempotent
    assert not lease.active and lease.session_path == ""
    assert (lease.name, lease.variant) == (MODEL, planned), "still readable after release"
    # The daemon ends the session just after answering Release: ask until it has.
    removed = wait_until(lambda: _try_remove(client), 10, "remove_model to be allowed")
    assert removed == [epbroker.RemovedModel(MODEL, "1.0", planned)]
    assert not os.path.exists(lease.main)
    with pytest.raises(epbroker.NotFound):
        client.remove_model(MODEL)


def test_explicit_variants_share_their_file_and_no_download(client, broker):
    with pytest.raises(epbroker.NotFound):
        client.ensure_model(MODEL, variant="fp32-cpu", download=False)  # not installed
    with pytest.raises(epbroker.NotFound):
        client.ensure_model("no-such-model")
    with pytest.raises(epbroker.NotFound):
        client.ensure_model(MODEL, version="9.9")
    with client.ensure_model(MODEL, variant="fp32-cpu", version="1.0", policy="prefer_cpu",
                             ort_version=ort.__version__) as cpu:
        assert (cpu.variant, cpu.devices, cpu.eps) == ("fp32-cpu", ("cpu",),
                                                       ("CPUExecutionProvider",))
        with client.ensure_model(MODEL, variant="fp32") as fp32:
            assert (fp32.devices, fp32.eps) == ((), ())
            # One file content, stored once for both variants.
            assert os.path.samefile(cpu.main, fp32.main)
        # Installed now: leased without download too.
        again = client.ensure_model(MODEL, variant="fp32-cpu", download=False)
        assert again.main == cpu.main and again.session_path != cpu.session_path
        again.release()
        # Removing one variant (at once: it is leased) keeps the file the other holds.
        assert client.remove_model(MODEL, "1.0", "fp32", now=True) == [
            epbroker.RemovedModel(MODEL, "1.0", "fp32")]
        assert os.path.isfile(cpu.main)
    assert not cpu.active


def test_model_lease_released_by_garbage_collection(client):
    lease = client.ensure_model(MODEL)
    wait_until(lambda: client.status().sessions >= 1, 10, "the lease to be counted")
    del lease
    gc.collect()
    wait_until(lambda: client.status().sessions == 0, 10, "the lease to end")
    assert client.remove_model(MODEL)  # nothing holds it any more


def test_leased_model_runs_like_its_published_bytes(client):
    with client.ensure_model(MODEL, ort_version=ort.__version__) as lease:
        leased = ort.InferenceSession(lease.main, providers=["CPUExecutionProvider"])
        direct = ort.InferenceSession(MODEL_SOURCE.read_bytes(),
                                      providers=["CPUExecutionProvider"])
        feed = node_test_inputs(NODE_TEST, leased)
        got = leased.run(None, feed)[0]
        np.testing.assert_array_equal(got, direct.run(None, feed)[0])
        np.testing.assert_allclose(got, node_test_output(NODE_TEST), rtol=1e-4, atol=1e-5)


def test_model_session_on_the_brokered_providers(broker):
    session, lease = ebo.model_session(MODEL, policy="max_performance", providers=[TEST_EP],
                                       progress=False)
    with lease:
        assert lease.model is not None and lease.model.active and lease.session.active
        assert lease.model.name == MODEL and os.path.isfile(lease.model.main)
        assert [r.name for r in lease.usable] == [TEST_EP], lease.results
        feed = node_test_inputs(NODE_TEST, session)
        direct = ort.InferenceSession(MODEL_SOURCE.read_bytes(),
                                      providers=["CPUExecutionProvider"])
        # OpenVINO, registered in this process's ORT by earlier tests, may take the
        # node under max_performance (support.bf16_atol).
        np.testing.assert_allclose(session.run(None, feed)[0], direct.run(None, feed)[0],
                                   rtol=bf16_rtol(1e-5), atol=bf16_atol(1e-5))
    assert not lease.model.active and not lease.session.active
    # A model the catalogs lack: the error, and nothing left leased.
    with pytest.raises(epbroker.NotFound):
        ebo.model_session("no-such-model", providers=[TEST_EP], progress=False)
    with epbroker.Client() as client:
        wait_until(lambda: client.status().sessions == 0, 10, "every session to end")


def _run(*args):
    return subprocess.run([sys.executable, "-m", "epbroker.run", *args], capture_output=True,
                          text=True, timeout=180)


def test_run_model_by_name(broker):
    r = _run("--model", MODEL, "--iterations", "2", "--check", "--atol", str(bf16_atol(1e-4)),
             "--rtol", str(bf16_rtol(1e-3)))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "catalog model: %s 1.0, variant " % MODEL in r.stdout, r.stdout
    assert any(line.startswith("check: ") and ": ok;" in line
               for line in r.stdout.splitlines()), r.stdout
    # The lease ended with the run: nothing holds the variant any more.
    with epbroker.Client() as client:
        assert wait_until(lambda: _try_remove(client), 10, "remove_model to be allowed")
    # Not installed and --no-install; a model the catalogs lack: exit 3 with the reason.
    r = _run("--model", MODEL, "--no-install", "--iterations", "1")
    assert r.returncode == 3 and "--model %s: NotFound" % MODEL in r.stderr, r.stdout + r.stderr
    r = _run("--model", "no-such-model", "--iterations", "1")
    assert r.returncode == 3 and "epbrokerctl models" in r.stderr, r.stdout + r.stderr
    r = _run("--model", MODEL, str(MODEL_SOURCE))
    assert r.returncode == 2 and "exclusive" in r.stderr, r.stderr


def test_exception_in_callback_cancels_the_model_download(slow_broker):
    jobs = []

    def on_progress(p):
        jobs.append(p.job)
        if p.state == "downloading":
            raise KeyboardInterrupt

    with epbroker.Client(slow_broker.address) as client:
        with pytest.raises(KeyboardInterrupt):
            client.ensure_model(MODEL, progress=on_progress)
        assert len(set(jobs)) == 1 and jobs[0], jobs

        def final():
            found = [j for j in client.status().jobs if j.progress.job == jobs[0]]
            return found[0] if found and found[0].progress.final else None

        job = wait_until(final, 30, "the model job to end")
        assert job.progress.kind == "model" and job.progress.state == "cancelled", job
        assert not any(v.installed for v in _listed(client).variants)
        assert client.status().sessions == 0, "nothing leased"
