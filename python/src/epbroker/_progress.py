"""A progress bar on stderr for install, refresh, verify and model jobs.

ProgressBar is a progress callback: one line per job, redrawn in place
("openvino  downloading  12.3/45.6 MiB  27%"), ended by a newline at the job's
final state. default_progress() returns one when stderr is a terminal and None
otherwise, so scripts and logs stay clean.
"""

from __future__ import annotations

import sys
from typing import Callable, Optional, TextIO, Union

from ._values import Progress

ProgressArg = Union[None, bool, Callable[[Progress], None]]


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return "%.1f %s" % (n / scale, unit)
    return "%d B" % n


class ProgressBar:
    """Draws each job's progress on one line of `stream` (stderr by default)."""

    def __init__(self, stream: Optional[TextIO] = None, width: int = 24) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.width = width
        self._job = ""  # the job whose line is open

    def line(self, p: Progress) -> str:
        """The text drawn for `p` (without the carriage return)."""
        name = p.target or p.kind
        if p.bytes_total:
            done = min(p.bytes_done, p.bytes_total)
            filled = self.width * done // p.bytes_total
            bar = "[" + "#" * filled + "-" * (self.width - filled) + "]"
            return "%s  %-11s %s %s/%s %3d%%" % (name, p.state, bar, _size(done),
                                                 _size(p.bytes_total),
                                                 100 * done // p.bytes_total)
        return "%s  %-11s %s" % (name, p.state, _size(p.bytes_done) if p.bytes_done else "")

    def __call__(self, p: Progress) -> None:
        if self._job and self._job != p.job:
            self.stream.write("\n")  # another job: keep the previous one's last line
        self._job = p.job
        self.stream.write("\r\x1b[2K" + self.line(p))
        if p.final:
            self.stream.write("\n")
            self._job = ""
        self.stream.flush()


def default_progress(stream: Optional[TextIO] = None) -> Optional[ProgressBar]:
    """A ProgressBar when `stream` (stderr) is a terminal, else None."""
    stream = stream if stream is not None else sys.stderr
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):  # closed or replaced stream
        tty = False
    return ProgressBar(stream) if tty else None


def resolve(progress: ProgressArg) -> Optional[Callable[[Progress], None]]:
    """None -> a bar if stderr is a terminal; False -> silent; True -> a bar;
    a callable -> itself."""
    if progress is None:
        return default_progress()
    if progress is False:
        return None
    if progress is True:
        return ProgressBar()
    return progress
