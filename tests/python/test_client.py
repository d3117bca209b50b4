"""epbroker.Client's calls against the live broker: every value copied out of the C
handles, and the lifecycle calls (install, hold, update, history, verify, gc)."""

from __future__ import annotations

import threading

import pytest

import epbroker
from support import TEST_EP, TEST_EP_NAME


def test_devices_has_this_cpu(client):
    devices = client.devices()
    cpus = [d for d in devices if d.type == "cpu"]
    assert cpus, devices
    assert cpus[0].id and cpus[0].arch == "x86_64" and cpus[0].threads >= 1
    assert all(isinstance(d, epbroker.Device) for d in devices)
    with pytest.raises(Exception):
        cpus[0].id = "x"  # frozen


def test_providers_lists_the_catalog(client):
    listed = {p.name: p for p in client.providers()}
    assert {TEST_EP, "future-ep"} <= set(listed), listed
    p = listed[TEST_EP]
    assert p.kind == "execution_provider" and p.ep_names == (TEST_EP_NAME,)
    assert p.version == "0.1.0" and p.vendor == "epbroker" and p.remote == "test"
    assert p.ort_min == "1.29.0" and p.size > 0
    assert listed["future-ep"].ort_min == "99.0.0"


def test_status(client):
    s = client.status()
    assert s.version and s.daemon_state in ("idle", "busy", "stopping")
    assert s.catalog_revision >= 1 and s.catalog_expires.endswith("Z")
    assert any(j.progress.kind == "refresh" for j in s.jobs), s.jobs


def test_install_returns_the_ready_provider_and_history_records_it(client):
    p = client.install(TEST_EP)
    assert p.state == "ready" and p.library_path and p.versions
    assert p.versions[0].version == "0.1.0" and p.versions[0].role == "current"
    entries = client.history(TEST_EP)
    assert entries and all(e.name == TEST_EP for e in entries)
    assert any(e.action == "install" and e.result == "ok" for e in entries), entries
    assert all(isinstance(e.time, int) and e.time > 0 for e in entries)


def test_hold_update_dry_run_unhold(client):
    client.ensure_ready(TEST_EP)
    client.hold(TEST_EP)
    try:
        held = next(p for p in client.providers() if p.name == TEST_EP)
        assert held.held
        changes = client.update([TEST_EP], dry_run=True)
        assert [c.name for c in changes] == [TEST_EP]
        assert changes[0].from_version == changes[0].to_version == "0.1.0"
        assert changes[0].job == ""
    finally:
        client.unhold(TEST_EP)
    assert not next(p for p in client.providers() if p.name == TEST_EP).held
    actions = [e.action for e in client.history(TEST_EP)]
    assert "hold" in actions and "unhold" in actions, actions


def test_rollback_without_previous_version_is_not_found(client):
    client.ensure_ready(TEST_EP)
    with pytest.raises(epbroker.NotFound):
        client.rollback(TEST_EP)


def test_verify_reports_each_installed_version(client):
    client.ensure_ready(TEST_EP)
    seen = []
    report = client.verify(seen.append)
    assert any(r.name == TEST_EP and r.ok and r.problem == "" for r in report.results), report
    assert report.finished > 0
    assert seen and seen[-1].final and seen[-1].kind == "verify", seen


def test_gc_and_reset_remote(client):
    removed = client.gc()
    assert all(isinstance(r, epbroker.RemovedVersion) for r in removed)
    with pytest.raises(epbroker.NotFound):
        client.reset_remote("no-such-remote")
    with pytest.raises(epbroker.NotFound):
        client.remove("no-such-package")


def test_request_session_lists_what_it_considered(client):
    client.ensure_ready(TEST_EP)
    with client.request_session("max_performance", [TEST_EP, "future-ep"], ort_version="1.30.0") \
            as session:
        assert session.path.startswith("/")
        by_name = {p.name: p for p in session.providers}
        assert by_name[TEST_EP].ready and by_name[TEST_EP].library_path
        assert not by_name["future-ep"].ready
        assert [p.name for p in session.ready_providers] == [TEST_EP]
    assert session.path == "" and not session.active
    assert session.providers  # still readable


def test_calls_from_several_threads_are_serialized(client):
    errors = []

    def work():
        try:
            for _ in range(5):
                client.providers()
                client.status()
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors and not any(t.is_alive() for t in threads)


def test_cancel_flag():
    c = epbroker.Cancel()
    assert not c.cancelled
    c.cancel()
    c.cancel()
    assert c.cancelled
