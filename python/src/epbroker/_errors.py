"""epbroker's exceptions: one class per epbroker_status code of the C API.

Every failing call raises a subclass of :class:`Error`, chosen from the status
code by :data:`STATUS_CLASSES` (the one table from code to class).
"""

from __future__ import annotations

from typing import Dict, Type


class Error(Exception):
    """A call to epbrokerd (or libepbroker itself) failed.

    Attributes:
        status: the C API's epbroker_status code (1 = NotFound, ...).
        message: the daemon's own message when it answered, else libepbroker's.
        bus_name: the D-Bus error name received ("org.epbroker.Error.NotFound"),
            "" for a local error.
    """

    #: The status code this class stands for (0 in the base class).
    STATUS = 0
    #: The name epbrokerctl's JSON uses for it.
    NAME = "Error"

    def __init__(self, status: int, message: str, bus_name: str = "") -> None:
        super().__init__(message)
        self.status = int(status)
        self.message = message
        self.bus_name = bus_name

    @property
    def status_name(self) -> str:
        """"NotFound", "NotAuthorized", ... ("Unknown" for a code not in the table)."""
        cls = STATUS_CLASSES.get(self.status)
        return cls.NAME if cls is not None else "Unknown"

    def __str__(self) -> str:
        return "%s: %s" % (self.status_name, self.message) if self.message else self.status_name

    def __repr__(self) -> str:
        return "%s(%d, %r, %r)" % (type(self).__name__, self.status, self.message, self.bus_name)

    def __reduce__(self):  # picklable (multiprocessing, concurrent.futures)
        return (error_for, (self.status, self.message, self.bus_name))


class NotFound(Error):
    """No such package, version, job, session or remote."""

    STATUS, NAME = 1, "NotFound"


class NotAuthorized(Error):
    """Refused by polkit or by the daemon's policy (e.g. installing without root)."""

    STATUS, NAME = 2, "NotAuthorized"


class InvalidArgument(Error):
    """A bad name, option or value."""

    STATUS, NAME = 3, "InvalidArgument"


class Incompatible(Error):
    """The package cannot run on this machine or with this ONNX Runtime."""

    STATUS, NAME = 4, "Incompatible"


class VerificationFailed(Error):
    """A signature, hash or manifest did not verify."""

    STATUS, NAME = 5, "VerificationFailed"


class Network(Error):
    """A catalog or a package could not be fetched."""

    STATUS, NAME = 6, "Network"


class Busy(Error):
    """Refused while something holds it (a lease, a limit)."""

    STATUS, NAME = 7, "Busy"


class Cancelled(Error):
    """The job or the wait was cancelled."""

    STATUS, NAME = 8, "Cancelled"


class Unavailable(Error):
    """No bus, or the daemon cannot be reached or started."""

    STATUS, NAME = 9, "Unavailable"


class Timeout(Error):
    """The daemon did not answer in time."""

    STATUS, NAME = 10, "Timeout"


class Protocol(Error):
    """An answer this library does not understand."""

    STATUS, NAME = 11, "Protocol"


class DiskFull(Error):
    """The daemon's disk or quota is full."""

    STATUS, NAME = 12, "DiskFull"


class Internal(Error):
    """The daemon failed on its own side."""

    STATUS, NAME = 13, "Internal"


class NoMemory(Error):
    """This process ran out of memory."""

    STATUS, NAME = 14, "NoMemory"


class LibraryNotFound(Unavailable, ImportError):
    """libepbroker.so.0 could not be loaded (also an ImportError)."""

    def __init__(self, message: str) -> None:
        Unavailable.__init__(self, Unavailable.STATUS, message, "")


#: epbroker_status code -> exception class.
STATUS_CLASSES: Dict[int, Type[Error]] = {
    cls.STATUS: cls
    for cls in (NotFound, NotAuthorized, InvalidArgument, Incompatible, VerificationFailed,
                Network, Busy, Cancelled, Unavailable, Timeout, Protocol, DiskFull, Internal,
                NoMemory)
}


def error_for(status: int, message: str, bus_name: str = "") -> Error:
    """The exception for a status code (:class:`Error` itself for an unknown code)."""
    cls = STATUS_CLASSES.get(int(status), Error)
    return cls(status, message, bus_name)
