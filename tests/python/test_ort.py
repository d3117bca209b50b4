"""epbroker.onnxruntime against the live broker: test-ep registered and running ONNX
node tests alone (a), a second ensure_and_register is a no-op (d), a provider
needing a newer ORT is skipped with the reason and never registered (e), the
runtime package is never registered, and session_options' policies."""

from __future__ import annotations

import os

import numpy as np
import onnxruntime as ort
import pytest

import epbroker
import epbroker.onnxruntime as ebo
from epbroker.run import RECORD_ASSIGNMENT
from support import (NODE_TESTS, ONNX_NODE_DIR, TEST_EP, TEST_EP_NAME, node_test_inputs,
                     node_test_output)


def _devices():
    return [(d.ep_name, dict(d.ep_metadata).get("library_path", "")) for d in ort.get_ep_devices()]


def _result(lease, name):
    found = [r for r in lease.results if r.name == name]
    assert len(found) == 1, lease.results
    return found[0]


@pytest.fixture(scope="module")
def lease(broker):
    with ebo.ensure_and_register(providers=[TEST_EP], progress=False) as lease:
        yield lease


def test_test_ep_is_registered_from_the_store(broker, lease):
    r = _result(lease, TEST_EP)
    assert r.outcome == "registered" or r.code == "already_registered", r
    assert r.ep_names == (TEST_EP_NAME,)
    assert r.library_path.startswith(os.path.realpath(broker.store) + "/"), r
    assert os.path.isfile(r.library_path)
    assert [p.name for p in lease.session.ready_providers] == [TEST_EP]
    devices = ebo.ep_devices(TEST_EP_NAME)
    assert devices, _devices()
    assert {os.path.realpath(dict(d.ep_metadata)["library_path"]) for d in devices} == {
        r.library_path}
    assert ebo._registered.get(TEST_EP) == r.library_path


@pytest.mark.parametrize("test", NODE_TESTS)
def test_node_model_runs_on_test_ep_alone(lease, test):
    model = str(ONNX_NODE_DIR / test / "model.onnx")
    options = ort.SessionOptions()
    options.add_provider_for_devices(ebo.ep_devices(TEST_EP_NAME), {})
    options.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    options.add_session_config_entry(RECORD_ASSIGNMENT, "1")
    session = ort.InferenceSession(model, options)
    feed = node_test_inputs(test, session)
    got = session.run(None, feed)[0]
    cpu = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feed)[0]
    assert got.shape == cpu.shape
    if "matmul" in test:  # the order of the sums may differ
        np.testing.assert_allclose(got, cpu, rtol=1e-5, atol=1e-5)
    else:
        np.testing.assert_array_equal(got, cpu)
    np.testing.assert_allclose(got, node_test_output(test), rtol=1e-4, atol=1e-5)
    placed = {sub.ep_name: [n.op_type for n in sub.get_nodes()]
              for sub in session.get_provider_graph_assignment_info()}
    assert list(placed) == [TEST_EP_NAME], placed
    assert placed[TEST_EP_NAME], placed


def test_second_ensure_and_register_is_a_no_op(broker):
    with ebo.ensure_and_register(providers=[TEST_EP], progress=False) as first:
        r = _result(first, TEST_EP)
        # Registered here, or already by the module's lease (or an earlier module).
        assert (r.outcome, r.code) in (("registered", ""), ("skipped", "already_registered")), r
        before = _devices()
        with ebo.ensure_and_register(providers=[TEST_EP], progress=False) as second:
            r = _result(second, TEST_EP)
            assert (r.outcome, r.code) == ("skipped", "already_registered"), r
            assert "already registered" in r.reason
            assert second.registered == []
            assert [u.name for u in second.usable] == [TEST_EP]
            assert second.ep_names == [TEST_EP_NAME]
        assert _devices() == before
        assert [d[0] for d in before].count(TEST_EP_NAME) == 1, before


def test_library_registered_by_the_app_itself_is_not_registered_again(lease):
    # What ORT has (get_ep_devices) counts, not only this module's record.
    path = _result(lease, TEST_EP).library_path
    saved = dict(ebo._registered)
    ebo._registered.clear()
    try:
        again = ebo.register_providers(lease.session)
    finally:
        ebo._registered.update(saved)
    assert [(r.name, r.code) for r in again] == [(TEST_EP, "already_registered")]
    assert path in again[0].reason


def test_another_library_with_the_same_ep_name_is_not_registered(lease, tmp_path):
    import dataclasses
    import shutil
    granted = lease.session.ready_providers[0]
    copy = tmp_path / "libcopy_ep.so"
    shutil.copy(granted.library_path, copy)
    before = _devices()
    twin = dataclasses.replace(granted, name="copy-ep", library_path=str(copy))
    r = ebo._register_one(ort, twin)
    assert (r.outcome, r.code) == ("skipped", "already_registered"), r
    assert TEST_EP_NAME in r.reason and os.path.realpath(granted.library_path) in r.reason
    assert _devices() == before
    assert "copy-ep" not in ebo._registered


def _check_future_ep(lease):
    r = _result(lease, "future-ep")
    assert (r.outcome, r.code) == ("skipped", "ort_too_old"), r
    assert "99.0.0" in r.reason and ort.__version__ in r.reason, r.reason
    assert "future-ep" not in ebo._registered
    assert not any("future-ep" in lib for _, lib in _devices()), _devices()
    assert lease.registered == []


def test_future_ep_not_installed_is_skipped_and_not_downloaded(broker, client):
    with ebo.ensure_and_register(providers=["future-ep"], progress=False) as lease:
        _check_future_ep(lease)
    listed = {p.name: p for p in client.providers()}
    assert listed["future-ep"].state == "available", listed["future-ep"]


def test_future_ep_installed_is_skipped_for_this_ort(broker, client):
    client.ensure_ready("future-ep")  # the daemon installs it; this ORT cannot load it
    try:
        with ebo.ensure_and_register(providers=["future-ep"], progress=False) as lease:
            _check_future_ep(lease)
    finally:
        client.remove("future-ep", now=True)


def test_runtime_package_is_never_registered(broker, client):
    if "onnxruntime" not in broker.packages:
        pytest.skip("the build has no onnxruntime runtime package (target onnxruntime-package)")
    client.ensure_ready("onnxruntime")
    try:
        with ebo.ensure_and_register(providers=[TEST_EP, "onnxruntime"], progress=False) as lease:
            r = _result(lease, "onnxruntime")
            assert (r.outcome, r.code) == ("skipped", "runtime_package"), r
            assert "kind runtime" in r.reason
            assert "onnxruntime" not in ebo._registered
            # The session names the runtime's library (so the check below means something).
            assert r.library_path and os.path.isfile(r.library_path), r
            runtime_dir = os.path.realpath(os.path.dirname(r.library_path)) + "/"
            assert runtime_dir.startswith(os.path.realpath(broker.store) + "/"), r
            assert not any(os.path.realpath(lib).startswith(runtime_dir)
                           for _, lib in _devices() if lib), _devices()
    finally:
        client.remove("onnxruntime", now=True)


@pytest.mark.parametrize("policy", epbroker.POLICIES)
def test_session_options_policy_runs(lease, policy):
    options = ebo.session_options(policy)
    session = ort.InferenceSession(str(ONNX_NODE_DIR / "test_add/model.onnx"), options)
    feed = node_test_inputs("test_add", session)
    np.testing.assert_array_equal(session.run(None, feed)[0], feed["x"] + feed["y"])


def test_session_options_rejects_unknown_policy():
    with pytest.raises(epbroker.InvalidArgument, match="fastest"):
        ebo.session_options("fastest")


def test_version_parsing_matches_the_cpp_glue():
    assert ebo.parse_version("1.30.0") == (1, 30, 0)
    assert ebo.parse_version("1.29") == (1, 29, 0)
    assert ebo.parse_version("1.31.0-dev") == (1, 31, 0)
    assert ebo.parse_version("1.2.3.4") == (1, 2, 3)
    assert ebo.parse_version("abc") is None
    assert ebo.parse_version("1.x") is None
