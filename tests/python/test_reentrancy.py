"""A progress callback that calls into the Client (or a Session of it) that is
waiting: refused with InvalidArgument at once, never a hang on the connection's
lock, and the wait itself ends normally; the Session it tried to release still
holds its lease afterwards and releases normally."""

from __future__ import annotations

import epbroker
from support import TEST_EP


def test_callback_calling_the_waiting_client_is_refused(client):
    seen = []

    def progress(p):
        try:
            client.providers()
        except epbroker.Error as e:
            seen.append(e)

    client.refresh(progress=progress)
    assert seen, "the refresh reported no progress"
    assert all(isinstance(e, epbroker.InvalidArgument) for e in seen), seen
    assert "progress callback" in str(seen[0])
    assert client.providers(), "the client works after the refused calls"


def test_callback_releasing_a_session_of_the_waiting_client_is_refused(client):
    client.ensure_ready(TEST_EP)
    session = client.request_session(providers=[TEST_EP])
    assert session.active
    seen = []

    def progress(p):
        try:
            session.release()
        except epbroker.Error as e:
            seen.append(e)

    client.refresh(progress=progress)
    assert seen and all(isinstance(e, epbroker.InvalidArgument) for e in seen), seen
    assert session.active and session.path, "a refused release changed nothing"
    before = client.status().sessions
    session.release()
    assert not session.active
    assert client.status().sessions == before - 1
