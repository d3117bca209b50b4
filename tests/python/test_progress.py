"""Progress (f): a callable sees non-decreasing bytes and a final "done"; the bar
appears when stderr is a terminal (a pty) and nothing is printed otherwise."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time

import epbroker
from epbroker._progress import ProgressBar
from support import TEST_EP

CHILD = """
from epbroker.onnxruntime import ensure_and_register
with ensure_and_register(providers=["test-ep"]) as lease:
    print([(r.name, r.outcome, r.code) for r in lease.results])
"""


def _uninstall(client):
    try:
        client.remove(TEST_EP, now=True)
    except epbroker.NotFound:
        pass  # not installed


def test_callable_gets_monotone_bytes_and_a_final_done(client):
    _uninstall(client)
    seen = []
    provider = client.ensure_ready(TEST_EP, seen.append)
    assert provider.state == "ready" and provider.library_path
    assert seen, "no progress reported"
    assert all(p.kind == "install" and p.target == TEST_EP for p in seen), seen
    assert len({p.job for p in seen}) == 1, seen
    done = [p.bytes_done for p in seen]
    assert done == sorted(done), seen
    assert seen[-1].state == "done" and seen[-1].final, seen
    assert not any(p.final for p in seen[:-1]), seen
    assert seen[-1].bytes_total > 0 and seen[-1].bytes_done == seen[-1].bytes_total, seen


def _read_all(fd, deadline):
    out = b""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # EIO: the child closed its side
            break
        if not chunk:
            break
        out += chunk
    return out


def test_bar_on_a_terminal(client):
    _uninstall(client)
    master, slave = pty.openpty()
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE,
                             stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    try:
        bar = _read_all(master, time.monotonic() + 120).decode(errors="replace")
        stdout, _ = child.communicate(timeout=60)
    finally:
        os.close(master)
        if child.poll() is None:
            child.kill()
    assert child.returncode == 0, bar
    assert "('test-ep', 'registered', '')" in stdout.decode(), stdout
    assert "test-ep" in bar and "done" in bar and "100%" in bar, repr(bar)
    assert "\r" in bar, repr(bar)


def test_silent_when_stderr_is_not_a_terminal(client):
    _uninstall(client)
    child = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, timeout=120)
    assert child.returncode == 0, child.stderr
    assert "('test-ep', 'registered', '')" in child.stdout.decode(), child.stdout
    assert child.stderr == b"", child.stderr
    # It did install: the bar stayed away only because stderr is a pipe.
    assert any(p.name == TEST_EP and p.state == "ready" for p in client.providers())


class _Stream:
    def __init__(self, tty):
        self.tty, self.text = tty, ""

    def isatty(self):
        return self.tty

    def write(self, s):
        self.text += s

    def flush(self):
        pass


def test_bar_lines():
    from epbroker import Progress
    stream = _Stream(True)
    bar = ProgressBar(stream)
    bar(Progress("/j/1", "install", "ep", "downloading", "downloading", 512, 2048))
    bar(Progress("/j/1", "install", "ep", "done", "done", 2048, 2048))
    assert "ep" in stream.text and " 25%" in stream.text and "100%" in stream.text
    assert stream.text.endswith("\n")
    assert epbroker.default_progress(_Stream(False)) is None
    assert isinstance(epbroker.default_progress(_Stream(True)), ProgressBar)
