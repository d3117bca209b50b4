"""Errors map to their classes (e): the status table, the daemon's messages, an
unreachable bus, an install refused to an unprivileged uid. (Cancelling:
test_cancel.py; a too-new provider: test_ort.py.)"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

import epbroker
from support import TEST_EP


def test_status_table_covers_every_code():
    names = ["NotFound", "NotAuthorized", "InvalidArgument", "Incompatible",
             "VerificationFailed", "Network", "Busy", "Cancelled", "Unavailable", "Timeout",
             "Protocol", "DiskFull", "Internal", "NoMemory"]
    assert sorted(epbroker.STATUS_CLASSES) == list(range(1, 15))
    for code, name in enumerate(names, start=1):
        cls = epbroker.STATUS_CLASSES[code]
        assert cls.__name__ == name and cls.NAME == name
        assert getattr(epbroker, name) is cls and issubclass(cls, epbroker.Error)
        # The library's own name for the code is the class's.
        from epbroker._lib import lib
        assert lib().epbroker_status_name(code).decode() == name
        e = cls(code, "message", "bus.name")
        assert (e.status, e.message, e.bus_name, e.status_name) == (code, "message", "bus.name",
                                                                    name)


def test_unreachable_bus_is_unavailable(tmp_path):
    with pytest.raises(epbroker.Unavailable) as info:
        with epbroker.Client("unix:path=%s" % (tmp_path / "no-bus")) as c:
            c.providers()
    assert info.value.status == 9
    assert "no-bus" in info.value.message


def test_missing_library_is_library_not_found():
    env = dict(os.environ, LD_LIBRARY_PATH="")
    code = ("import epbroker\n"
            "try:\n"
            "    epbroker.Client('unix:path=/nonexistent')\n"
            "except epbroker.LibraryNotFound as e:\n"
            "    print('missing', isinstance(e, ImportError),\n"
            "          isinstance(e, epbroker.Unavailable), e)\n"
            "except epbroker.Unavailable:\n"
            "    print('installed')\n")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    if r.stdout.startswith("installed"):
        pytest.skip("libepbroker.so.0 is installed system-wide: it cannot be missing here")
    assert r.stdout.startswith("missing True True"), r.stdout
    assert "libepbroker.so.0" in r.stdout and "libepbroker0" in r.stdout, r.stdout


def test_bad_policy_is_invalid_argument(client):
    with pytest.raises(epbroker.InvalidArgument):
        client.request_session(policy="fastest")


def test_unknown_package_is_not_found_with_the_daemons_message(client):
    with pytest.raises(epbroker.NotFound) as info:
        client.ensure_ready("no-such-package")
    e = info.value
    assert e.bus_name == "org.epbroker.Error.NotFound"
    assert "no-such-package" in e.message
    assert str(e).startswith("NotFound: ")


def test_closed_client_refuses_calls(broker):
    c = epbroker.Client(broker.address)
    c.close()
    c.close()  # idempotent
    with pytest.raises(epbroker.InvalidArgument, match="closed"):
        c.providers()


def test_install_as_nobody_is_not_authorized(broker):
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop to nobody, try to install, report, leave at once
        code = 99
        try:
            os.close(read_fd)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            try:
                epbroker.Client(broker.address).install(TEST_EP)
                os.write(write_fd, b"no error")
            except epbroker.Error as e:
                os.write(write_fd, ("%s|%s|%s" % (type(e).__name__, e.bus_name,
                                                  e.message)).encode())
            code = 0
        except BaseException as e:  # noqa: B902 - reported to the parent
            os.write(write_fd, ("child failed: %r" % e).encode())
        finally:
            os._exit(code)
    os.close(write_fd)
    deadline = time.monotonic() + 60
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the uid-65534 child did not finish in 60 s")
        time.sleep(0.05)
    with os.fdopen(read_fd, "rb") as f:
        answer = f.read().decode()
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, answer
    kind, bus_name, message = (answer.split("|", 2) + ["", ""])[:3]
    assert kind == "NotAuthorized", answer
    assert bus_name == "org.epbroker.Error.NotAuthorized", answer
    assert message, answer
