"""Session (a lease) and the bus connection it shares with its Client."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator, List, Optional

from ._errors import InvalidArgument, error_for
from ._lib import lib, text
from ._values import Provider


class _Connection:
    """What a Client and its Sessions share: one bus connection, used by one call
    at a time (the lock), and sessions whose freeing had to wait for the lock."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.owner: Optional[int] = None  # the thread holding `lock` in held()
        self.deferred: List[int] = []  # session handles to free

    @contextmanager
    def held(self) -> Iterator[None]:
        """The connection for one call: waits for another thread's call, refuses a
        call from inside this thread's own (a progress callback calling into the
        Client or a Session that is waiting would otherwise hang on the lock), and
        afterwards frees the sessions dropped meanwhile, whatever the call raised."""
        if self.owner == threading.get_ident():
            raise InvalidArgument(3, "a progress callback called into the epbroker.Client (or "
                                     "one of its Sessions) that is waiting: use another Client")
        try:
            with self.lock:
                self.owner = threading.get_ident()
                try:
                    yield
                finally:
                    self.owner = None
        finally:
            self.free_deferred()

    def free_deferred(self) -> None:
        """Frees the sessions dropped while the connection was busy (if it is free now)."""
        if not self.deferred or not self.lock.acquire(blocking=False):
            return
        try:
            while self.deferred:
                lib().epbroker_session_free(self.deferred.pop())
        finally:
            self.lock.release()


class Session:
    """A lease on the providers the daemon granted (Broker1.RequestSession).

    While it lives the daemon deletes none of the granted providers' files. It is
    released by release(), by leaving a ``with`` block, when garbage-collected, or
    when the process ends; it keeps its Client's bus connection open even after
    Client.close().
    """

    def __init__(self, handle: int, conn: _Connection) -> None:
        L = lib()
        self._handle: Optional[int] = handle
        self._conn = conn
        self._path = text(L.epbroker_session_path(handle))
        self._providers = [Provider.from_c(L.epbroker_session_provider(handle, i))
                           for i in range(L.epbroker_session_provider_count(handle))]

    @property
    def path(self) -> str:
        """The session's D-Bus object path; "" once released."""
        return self._path if self._handle else ""

    @property
    def active(self) -> bool:
        """True until released."""
        return self._handle is not None

    @property
    def providers(self) -> List[Provider]:
        """Every provider the daemon considered, in its order (policy first): the
        ready ones are leased and have library_path; the others say why not
        (reason) or are installing (job). Still readable after release."""
        return list(self._providers)

    @property
    def ready_providers(self) -> List[Provider]:
        """The leased (ready) providers only."""
        return [p for p in self._providers if p.ready]

    def release(self) -> None:
        """Ends the lease now. Idempotent. Raises an epbroker.Error if the daemon
        refused; the session is released afterwards either way. Waits for a call
        in progress on its Client (they share one connection)."""
        if not self._handle:
            return
        L = lib()
        with self._conn.held():  # raises before anything changes when called from a callback
            handle, self._handle = self._handle, None
            if not handle:
                return  # released by another thread meanwhile
            status = L.epbroker_session_release(handle)
            error = error_for(status, text(L.epbroker_last_error_message()),
                              text(L.epbroker_last_error_bus_name())) if status else None
            L.epbroker_session_free(handle)
        if error is not None:
            raise error

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __del__(self) -> None:
        handle, self._handle = getattr(self, "_handle", None), None
        if not handle:
            return
        try:
            conn = self._conn
            # Not blocking: a collection may run on a thread (or inside a progress
            # callback) while the connection is in use; then the Client frees it.
            if conn.lock.acquire(blocking=False):
                try:
                    lib().epbroker_session_free(handle)
                finally:
                    conn.lock.release()
            else:
                conn.deferred.append(handle)
        except Exception:  # interpreter shutdown
            pass

    def __repr__(self) -> str:
        return "<epbroker.Session %s, %d ready>" % (self.path or "(released)",
                                                    len(self.ready_providers))
