"""Cancelled (e): a Cancel from another thread during a slow download, and an
exception raised in the progress callback (KeyboardInterrupt) cancels the job and
is re-raised. Against slow_broker, whose slow-ep downloads at 1 byte/s."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time

import pytest

import epbroker
from support import wait_until


WATCHDOG_S = 60  # a cancel that does not work must not hang the suite


@pytest.fixture
def slow_client(slow_broker):
    """A client of the slow broker. A watchdog stops the HTTP server if the test
    still runs after WATCHDOG_S: the download then fails (Network) instead of
    lasting for days, and the test fails instead of hanging."""
    done = threading.Event()

    def watchdog():
        if not done.wait(WATCHDOG_S):
            for p in slow_broker.procs:
                if "http_server.py" in " ".join(map(str, p.args)):
                    p.kill()

    thread = threading.Thread(target=watchdog, daemon=True)
    thread.start()
    try:
        with epbroker.Client(slow_broker.address) as c:
            yield c
    finally:
        done.set()
        thread.join()


def _slow_ep_gone(client):
    return all(p.state != "installing" for p in client.providers() if p.name == "slow-ep")


def test_cancel_from_another_thread_during_a_slow_download(slow_client):
    cancel = epbroker.Cancel()
    downloading = threading.Event()
    seen = []

    def on_progress(p):
        seen.append(p)
        if p.state == "downloading":
            downloading.set()

    def canceller():
        # Cancel once the download runs (or after 30 s, which fails below).
        downloading.wait(30)
        cancel.cancel()

    thread = threading.Thread(target=canceller)
    thread.start()
    start = time.monotonic()
    try:
        with pytest.raises(epbroker.Cancelled):
            slow_client.ensure_ready("slow-ep", on_progress, cancel)
    finally:
        cancel.cancel()
        thread.join(60)
    assert downloading.is_set(), "the download never started: %s" % seen
    assert cancel.cancelled
    assert time.monotonic() - start < WATCHDOG_S / 2
    wait_until(lambda: _slow_ep_gone(slow_client), 30, "slow-ep's job to end")
    assert next(p for p in slow_client.providers() if p.name == "slow-ep").state != "ready"


def test_exception_in_callback_cancels_the_job_and_is_reraised(slow_client):
    def on_progress(p):
        if p.state == "downloading":
            raise KeyboardInterrupt

    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        slow_client.ensure_ready("slow-ep", on_progress)
    assert time.monotonic() - start < WATCHDOG_S / 2
    # The job was cancelled, not left running.
    jobs = wait_until(lambda: [j for j in slow_client.status().jobs
                               if j.progress.target == "slow-ep" and j.progress.final], 30,
                      "slow-ep's job in Status")
    assert jobs[-1].progress.state == "cancelled", jobs
    wait_until(lambda: _slow_ep_gone(slow_client), 30, "slow-ep's job to end")


def test_ctrl_c_cancels_a_waiting_call_without_progress_callback(slow_client, slow_broker):
    # SIGINT reaches Python at the next progress report (libepbroker's callback
    # runs Python code even when the caller passed none).
    child = subprocess.Popen(
        [sys.executable, "-c", "import epbroker; epbroker.Client(%r).ensure_ready('slow-ep')"
         % slow_broker.address], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: any(j.progress.target == "slow-ep" and j.progress.state == "downloading"
                               for j in slow_client.status().jobs), 30, "the download to start")
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=WATCHDOG_S / 2)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode != 0 and "KeyboardInterrupt" in err, err
    jobs = wait_until(lambda: [j for j in slow_client.status().jobs
                               if j.progress.target == "slow-ep" and j.progress.final], 30,
                      "slow-ep's job to end")
    assert jobs[-1].progress.state == "cancelled", jobs
