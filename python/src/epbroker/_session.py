"""Session and ModelLease (leases) and the bus connection they share with their Client."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator, List, Optional, Tuple, TypeVar

from ._errors import InvalidArgument, error_for
from ._lib import lib, text
from ._values import Provider

_L = TypeVar("_L", bound="_Lease")


class _Connection:
    """What a Client and its leases (Sessions, ModelLeases) share: one bus
    connection, used by one call at a time (the lock), and leases whose freeing had
    to wait for the lock."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.owner: Optional[int] = None  # the thread holding `lock` in held()
        # Leases to free: (the C function that frees the handle, the handle).
        self.deferred: List[Tuple[str, int]] = []

    @contextmanager
    def held(self) -> Iterator[None]:
        """The connection for one call: waits for another thread's call, refuses a
        call from inside this thread's own (a progress callback calling into the
        Client or a lease that is waiting would otherwise hang on the lock), and
        afterwards frees the leases dropped meanwhile, whatever the call raised."""
        if self.owner == threading.get_ident():
            raise InvalidArgument(3, "a progress callback called into the epbroker.Client (or "
                                     "one of its leases) that is waiting: use another Client")
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
        """Frees the leases dropped while the connection was busy (if it is free now)."""
        if not self.deferred or not self.lock.acquire(blocking=False):
            return
        try:
            while self.deferred:
                free, handle = self.deferred.pop()
                getattr(lib(), free)(handle)
        finally:
            self.lock.release()


class _Lease:
    """What Session and ModelLease share: a C lease handle on their Client's bus
    connection, released by release(), by leaving a ``with`` block, when
    garbage-collected, or when the process ends."""

    _RELEASE = ""  #: the C function that releases the handle
    _FREE = ""  #: the C function that frees it (releasing it first, errors ignored)

    def __init__(self, handle: int, conn: _Connection) -> None:
        self._handle: Optional[int] = handle
        self._conn = conn

    @property
    def active(self) -> bool:
        """True until released."""
        return self._handle is not None

    def release(self) -> None:
        """Ends the lease now. Idempotent. Raises an epbroker.Error if the daemon
        refused; the lease is released afterwards either way. Waits for a call
        in progress on its Client (they share one connection)."""
        if not self._handle:
            return
        L = lib()
        with self._conn.held():  # raises before anything changes when called from a callback
            handle, self._handle = self._handle, None
            if not handle:
                return  # released by another thread meanwhile
            status = getattr(L, self._RELEASE)(handle)
            error = error_for(status, text(L.epbroker_last_error_message()),
                              text(L.epbroker_last_error_bus_name())) if status else None
            getattr(L, self._FREE)(handle)
        if error is not None:
            raise error

    def __enter__(self: _L) -> _L:
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
                    getattr(lib(), self._FREE)(handle)
                finally:
                    conn.lock.release()
            else:
                conn.deferred.append((self._FREE, handle))
        except Exception:  # interpreter shutdown
            pass


class Session(_Lease):
    """A lease on the providers the daemon granted (Broker1.RequestSession).

    While it lives the daemon deletes none of the granted providers' files. It is
    released by release(), by leaving a ``with`` block, when garbage-collected, or
    when the process ends; it keeps its Client's bus connection open even after
    Client.close().
    """

    _RELEASE, _FREE = "epbroker_session_release", "epbroker_session_free"

    def __init__(self, handle: int, conn: _Connection) -> None:
        super().__init__(handle, conn)
        L = lib()
        self._path = text(L.epbroker_session_path(handle))
        self._providers = [Provider.from_c(L.epbroker_session_provider(handle, i))
                           for i in range(L.epbroker_session_provider_count(handle))]

    @property
    def path(self) -> str:
        """The session's D-Bus object path; "" once released."""
        return self._path if self._handle else ""

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

    def __repr__(self) -> str:
        return "<epbroker.Session %s, %d ready>" % (self.path or "(released)",
                                                    len(self.ready_providers))


def _strings(L, count: str, item: str, handle: int) -> Tuple[str, ...]:
    return tuple(text(getattr(L, item)(handle, i)) for i in range(getattr(L, count)(handle)))


class ModelLease(_Lease):
    """A lease on one installed model variant (Client.ensure_model()): while it
    lives the daemon deletes none of the variant's files, and remove_model()
    without `now` refuses it (Busy).

    Open `main` with onnxruntime while the lease lives. It is a session of its own
    (Session1, granting no provider), released like a Session: by release(), by
    leaving a ``with`` block, when garbage-collected, or when the process ends;
    it keeps its Client's bus connection open even after Client.close(). What it
    says (name ... eps) stays readable after release.
    """

    _RELEASE, _FREE = "epbroker_model_lease_release", "epbroker_model_lease_free"

    def __init__(self, handle: int, conn: _Connection) -> None:
        super().__init__(handle, conn)
        L = lib()
        self._name = text(L.epbroker_model_lease_name(handle))
        self._version = text(L.epbroker_model_lease_version(handle))
        self._variant = text(L.epbroker_model_lease_variant(handle))
        self._path = text(L.epbroker_model_lease_path(handle))
        self._main = text(L.epbroker_model_lease_main(handle))
        self._files = _strings(L, "epbroker_model_lease_file_count", "epbroker_model_lease_file",
                               handle)
        self._devices = _strings(L, "epbroker_model_lease_device_count",
                                 "epbroker_model_lease_device", handle)
        self._eps = _strings(L, "epbroker_model_lease_ep_count", "epbroker_model_lease_ep",
                             handle)
        self._session_path = text(L.epbroker_model_lease_session_path(handle))

    @property
    def name(self) -> str:
        """The model's name."""
        return self._name

    @property
    def version(self) -> str:
        """The model version leased (the newest installed one holding the variant)."""
        return self._version

    @property
    def variant(self) -> str:
        """The variant leased, e.g. "fp32"."""
        return self._variant

    @property
    def path(self) -> str:
        """The variant's directory in the store (absolute)."""
        return self._path

    @property
    def main(self) -> str:
        """Its main file (absolute): the one to open with onnxruntime."""
        return self._main

    @property
    def files(self) -> Tuple[str, ...]:
        """Every file of the variant, relative to `path` (`main` among them)."""
        return self._files

    @property
    def devices(self) -> Tuple[str, ...]:
        """The device types the variant is built for ("npu"); empty = any."""
        return self._devices

    @property
    def eps(self) -> Tuple[str, ...]:
        """The EP names the variant is built for; empty = any."""
        return self._eps

    @property
    def session_path(self) -> str:
        """The D-Bus object path of the lease's session; "" once released."""
        return self._session_path if self._handle else ""

    def __repr__(self) -> str:
        return "<epbroker.ModelLease %s %s %s, %s>" % (
            self._name, self._version, self._variant, self.session_path or "(released)")
