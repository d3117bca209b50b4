"""Lease lifetime (c): the lease outlives its Client; while it lives an admin's
remove() leaves the library in place; after release() the daemon deletes it."""

from __future__ import annotations

import gc
import os

import numpy as np
import onnxruntime as ort

import epbroker
import epbroker.onnxruntime as ebo
from support import ONNX_NODE_DIR, TEST_EP, TEST_EP_NAME, node_test_inputs, wait_until


def _versions(client, name):
    return [v for p in client.providers() if p.name == name for v in p.versions]


def test_lease_outlives_client_and_keeps_files_until_released(broker):
    client = epbroker.Client()
    lease = ebo.ensure_and_register(providers=[TEST_EP], progress=False, client=client)
    try:
        granted = lease.session.ready_providers
        assert [p.name for p in granted] == [TEST_EP]
        library = granted[0].library_path
        assert os.path.isfile(library)
        del client
        gc.collect()
        assert lease.session.active and lease.session.path

        with epbroker.Client() as admin:
            assert admin.status().sessions >= 1
            leased = _versions(admin, TEST_EP)
            assert leased and leased[0].leases >= 1, leased
            admin.remove(TEST_EP)
            # Removed, but still leased: the files stay while the lease lives.
            after = _versions(admin, TEST_EP)
            assert admin.status().sessions >= 1
        # The leased version is still listed, now "removing", and still leased.
        kept = [v for v in after if v.version == granted[0].version]
        assert len(kept) == 1, after
        assert kept[0].role == "removing" and kept[0].leases >= 1, after
        assert os.path.isfile(library), after
        # The provider still runs from there.
        options = ort.SessionOptions()
        options.add_provider_for_devices(ebo.ep_devices(TEST_EP_NAME), {})
        options.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
        session = ort.InferenceSession(str(ONNX_NODE_DIR / "test_relu/model.onnx"), options)
        feed = node_test_inputs("test_relu", session)
        np.testing.assert_array_equal(session.run(None, feed)[0], np.maximum(feed["x"], 0))
        assert os.path.isfile(library)
    finally:
        lease.release()
    lease.release()  # idempotent
    assert not lease.session.active and lease.session.path == ""
    wait_until(lambda: not os.path.exists(library), 30, "the daemon to delete %s" % library)


def test_session_released_by_garbage_collection(broker):
    with epbroker.Client() as client:
        client.ensure_ready(TEST_EP)
        session = client.request_session(providers=[TEST_EP])
        assert session.ready_providers
        wait_until(lambda: client.status().sessions >= 1, 10, "the session to be counted")
        del session
        gc.collect()
        wait_until(lambda: client.status().sessions == 0, 10, "the session to end")
