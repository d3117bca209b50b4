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


def _job(client, path):
    """Status's entry for the job at D-Bus path `path`, or None."""
    found = [j for j in client.status().jobs if j.progress.job == path]
    assert len(found) <= 1, found
    return found[0] if found else None


def _final_state_of(client, path):
    """The final state of job `path` as Status lists it (waits for it to end)."""
    def ended():
        job = _job(client, path)
        return job if job is not None and job.progress.final else None

    job = wait_until(ended, 30, "job %s to end in Status" % path)
    assert job.progress.target == "slow-ep", job
    return job


def test_cancel_from_another_thread_during_a_slow_download(slow_client):
    cancel = epbroker.Cancel()
    downloading = threading.Event()
    seen = []
    fired = []  # when the canceller called cancel(), if it did

    def on_progress(p):
        seen.append(p)
        if p.state == "downloading":
            downloading.set()

    def canceller():
        # Cancel once the download runs (or after 30 s, which fails below).
        downloading.wait(30)
        fired.append(time.monotonic())  # before cancel(): the call returns after this
        cancel.cancel()

    thread = threading.Thread(target=canceller)
    thread.start()
    start = time.monotonic()
    try:
        with pytest.raises(epbroker.Cancelled):
            slow_client.ensure_ready("slow-ep", on_progress, cancel)
        returned = time.monotonic()
    finally:
        thread.join(60)
    assert downloading.is_set(), "the download never started: %s" % seen
    # The call returned because of the other thread's cancel(), not before it.
    assert fired and fired[0] <= returned, (fired, returned)
    assert returned - start < WATCHDOG_S / 2
    jobs = {p.job for p in seen}
    assert len(jobs) == 1 and "" not in jobs, seen
    # The daemon's job (this call's, found by its path) was cancelled.
    job = _final_state_of(slow_client, jobs.pop())
    assert job.progress.state == "cancelled", job
    wait_until(lambda: _slow_ep_gone(slow_client), 30, "slow-ep's job to end")
    assert next(p for p in slow_client.providers() if p.name == "slow-ep").state != "ready"


def test_exception_in_callback_cancels_the_job_and_is_reraised(slow_client):
    jobs = []

    def on_progress(p):
        jobs.append(p.job)
        if p.state == "downloading":
            raise KeyboardInterrupt

    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        slow_client.ensure_ready("slow-ep", on_progress)
    assert time.monotonic() - start < WATCHDOG_S / 2
    assert len(set(jobs)) == 1 and jobs[0], jobs
    # This call's job was cancelled, not left running.
    job = _final_state_of(slow_client, jobs[0])
    assert job.progress.state == "cancelled", job
    wait_until(lambda: _slow_ep_gone(slow_client), 30, "slow-ep's job to end")


def test_ctrl_c_cancels_a_waiting_call_without_progress_callback(slow_client, slow_broker):
    # The child's SIGINT is SIG_DFL, so that Python installs its handler (the
    # package leaves an ignored SIGINT alone): a test runner started in the
    # background by a shell without job control inherits SIGINT ignored, and so
    # would the child (which then ran on, and this test timed out).
    earlier = {j.progress.job for j in slow_client.status().jobs}
    child = subprocess.Popen(
        [sys.executable, "-c", "import epbroker; epbroker.Client(%r).ensure_ready('slow-ep')"
         % slow_broker.address], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        # The child's job: the one slow-ep job that was not in Status before.
        job = wait_until(lambda: [j.progress.job for j in slow_client.status().jobs
                                  if j.progress.job not in earlier
                                  and j.progress.target == "slow-ep"
                                  and j.progress.state == "downloading"], 30,
                         "the download to start")
        assert len(job) == 1, job
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=WATCHDOG_S / 2)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode != 0 and "KeyboardInterrupt" in err, err
    final = _final_state_of(slow_client, job[0])
    assert final.progress.state == "cancelled", final
