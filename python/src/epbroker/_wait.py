"""Waiting for daemon jobs: Cancel, and the progress callback of one call."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from types import FrameType
from typing import Callable, Iterator, Optional

from ._errors import NoMemory
from ._lib import PROGRESS_FN, check, lib
from ._values import Progress

#: A progress callback: called on the waiting thread, inside the call.
ProgressCallback = Callable[[Progress], None]


class Cancel:
    """Stops a wait (ensure_ready, install, update, refresh, verify, ensure_model) from
    any thread.

    Wraps epbroker_cancel: cancel() is one atomic store, safe from any thread and
    from a signal handler; once cancelled it stays cancelled (use a new Cancel for
    the next call).
    """

    def __init__(self) -> None:
        handle = lib().epbroker_cancel_new()
        if not handle:
            raise NoMemory(14, "epbroker_cancel_new: out of memory")
        self._handle: Optional[int] = handle
        # Bound now: cancel() runs in signal handlers, where nothing may wait on a lock.
        self._trigger = lib().epbroker_cancel_trigger

    def cancel(self) -> None:
        """Sets the flag: the call waiting on it returns (raising Cancelled)."""
        self._trigger(self._handle)

    @property
    def cancelled(self) -> bool:
        """True once cancel() was called."""
        return bool(lib().epbroker_cancel_is_triggered(self._handle))

    def __del__(self) -> None:
        handle, self._handle = getattr(self, "_handle", None), None
        if handle:
            try:
                lib().epbroker_cancel_free(handle)
            except Exception:  # interpreter shutdown
                pass


class _WakeupWatch:
    """Ctrl-C cancels the waiting call at once, progress or not.

    Python runs its signal handlers only between bytecodes of the main thread,
    which a waiting C call reaches only through the progress callback: a download
    that stalls sends none, and Ctrl-C would wait for it. But Python's C-level
    handler writes each signal's number to the wakeup fd at once; a thread reading
    that fd triggers the call's cancel flag on SIGINT, the call returns, and the
    Python-level handler then runs as usual. Whoever had the wakeup fd before
    (asyncio, say) still gets every byte. Main thread only (set_wakeup_fd)."""

    def __init__(self, cancel: "Cancel") -> None:
        self._r, self._w = os.pipe()
        os.set_blocking(self._w, False)
        try:
            self._old = signal.set_wakeup_fd(self._w, warn_on_full_buffer=False)
        except (ValueError, OSError):
            os.close(self._r)
            os.close(self._w)
            self._r = self._w = -1
            return
        self._thread = threading.Thread(target=self._run, args=(cancel,),
                                        name="epbroker-sigint", daemon=True)
        self._thread.start()

    def _run(self, cancel: "Cancel") -> None:
        while True:
            try:
                data = os.read(self._r, 64)
            except OSError:
                return
            if not data:
                return  # close(): the write end is gone
            if self._old != -1:
                try:
                    os.write(self._old, data)
                except OSError:
                    pass
            if signal.SIGINT in data:
                cancel.cancel()

    def close(self) -> None:
        if self._w == -1:
            return
        signal.set_wakeup_fd(self._old)
        os.close(self._w)
        self._thread.join()
        os.close(self._r)


class _ProgressCall:
    """One waiting call's progress callback: the Python callable wrapped in a
    CFUNCTYPE that lives as long as this object. An exception raised in the
    callable triggers the call's cancel flag; finish() raises it once the C call
    has returned. Ctrl-C likewise (see sigint())."""

    def __init__(self, progress: Optional[ProgressCallback], cancel: Optional[Cancel]) -> None:
        self.progress = progress
        # Always a flag, and always a callback: the callback is where Python runs
        # signal handlers (Ctrl-C) while the C call waits.
        self.cancel = cancel if cancel is not None else Cancel()
        self.error: Optional[BaseException] = None
        self.fn = PROGRESS_FN(self._on_progress)

    def _on_progress(self, progress: int, user: int) -> None:
        if self.error is not None:
            return
        try:
            if self.progress is not None:
                self.progress(Progress.from_c(progress))
        except BaseException as e:  # noqa: B902 - re-raised by finish()
            self.error = e
            self.cancel.cancel()

    @contextlib.contextmanager
    def sigint(self) -> Iterator[None]:
        """While the C call waits: Ctrl-C cancels it, and its KeyboardInterrupt is
        raised by finish() once the call has returned.

        Python runs signal handlers between bytecodes of the main thread, here at
        the entry of the progress callback: the default handler would raise
        KeyboardInterrupt there, outside any try, and ctypes would print and drop
        it. So the main thread's Python-level SIGINT handler is wrapped for the
        call: what it raises is recorded and triggers the cancel flag. Where no
        progress comes, _WakeupWatch triggers the flag from the wakeup fd. SIG_IGN and
        SIG_DFL are left alone, as are calls on other threads (signals reach only
        the main thread)."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = signal.getsignal(signal.SIGINT)
        if not callable(previous):
            yield
            return

        def on_sigint(signum: int, frame: Optional[FrameType]) -> None:
            try:
                previous(signum, frame)
            except BaseException as e:  # noqa: B902 - raised by finish()
                if self.error is None:
                    self.error = e
                self.cancel.cancel()

        signal.signal(signal.SIGINT, on_sigint)
        watch = _WakeupWatch(self.cancel)
        try:
            yield
        finally:
            watch.close()
            signal.signal(signal.SIGINT, previous)

    def finish(self, status: int) -> None:
        if self.error is not None:
            error, self.error = self.error, None
            raise error
        check(status)
