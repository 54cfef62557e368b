"""Stopping on SIGINT, SIGTERM or SIGHUP: at once, with the results so far, and every server stopped.

The first signal sets `STOP` (long work polls it and stops at its next chance),
raises `Interrupted` in the main thread, and arms a watchdog: if the process
has not exited within the grace period (work stuck in a call that does not
return), the watchdog prints what the command registered with `on_forced_exit`,
stops every embedded server this process started and exits. A second signal
does that at once.

A signal that arrives while the main thread runs a finalizer (`__del__`, run by
the garbage collector wherever it happens to start) raises nothing: Python would
only print that exception and go on. `STOP` is set all the same, and `arrived()`
says which signal came, so a command judges "interrupted" by `arrived()`, never
by whether the exception reached it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType

#: Set once a stop signal arrived.
STOP = threading.Event()
#: Seconds between the first signal and the forced exit.
GRACE = 4.5

_last_words: list[Callable[[], None]] = []
_watchdogs: list[threading.Timer] = []
_arrived: list[Interrupted] = []  # the first stop signal since install()


class Interrupted(KeyboardInterrupt):
    """A stop signal arrived; `code` is the exit status (128 + the signal's number)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.code = 128 + signum


def on_forced_exit(report: Callable[[], None]) -> None:
    """Have the watchdog call `report` (print the results so far) before it forces the exit."""
    _last_words.append(report)


def install() -> Callable[[], None]:
    """Handle SIGINT, SIGTERM and SIGHUP as above (main thread only); returns what restores the
    handlers there were before."""
    STOP.clear()
    _last_words.clear()
    _arrived.clear()
    before = {}
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            number = getattr(signal, name)
            before[number] = signal.signal(number, _handle)

    def restore() -> None:
        for number, handler in before.items():
            signal.signal(number, handler)
        _last_words.clear()
        _arrived.clear()
        for timer in _watchdogs:  # the command returned in time: no forced exit
            timer.cancel()
        _watchdogs.clear()

    return restore


def arrived() -> Interrupted | None:
    """The stop signal that arrived since `install()` (as the `Interrupted` it raised, or would
    have raised outside a finalizer), or None."""
    return _arrived[0] if _arrived else None


_depth = [0]  # deferred() blocks under way
_pending: list[int] = []  # stop signals that arrived in them


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Hold the first stop signal back until the block ends (main thread): for a step that must
    happen whole, such as a fault applied and recorded, so an interruption lands before or after
    it. A second signal still forces the exit at once."""
    _depth[0] += 1
    try:
        yield
    finally:
        _depth[0] -= 1
        if not _depth[0] and _pending:
            signum = _pending[0]
            _pending.clear()
            _handle(signum, None)


def _handle(signum: int, frame: FrameType | None) -> None:
    if _depth[0] and not STOP.is_set() and not _pending:
        _pending.append(signum)  # raised when the deferred() block ends
        return
    if _pending:
        _pending.clear()
        STOP.set()  # the second signal: the first one counts as handled
    if STOP.is_set():
        _force_exit(128 + signum)
    STOP.set()
    timer = threading.Timer(GRACE, _force_exit, args=(128 + signum,))
    timer.daemon = True
    timer.start()
    _watchdogs.append(timer)
    _arrived.append(Interrupted(signum))
    if not _in_finalizer(frame):  # raised in a finalizer, it would only be printed
        raise _arrived[0]


def _in_finalizer(frame: FrameType | None) -> bool:
    """Is the main thread running a `__del__` (the signal's frame or one of its callers)?"""
    while frame is not None:
        if frame.f_code.co_name == "__del__":
            return True
        frame = frame.f_back
    return False


def forced_exit_code() -> int:
    """The exit code a forced exit ends with (for the reports it runs first); 130 if none is under way."""
    return _forcing[0] if _forcing else 130


_forcing: list[int] = []


def _force_exit(code: int) -> None:
    _forcing[:] = [code]
    for report in _last_words:
        with contextlib.suppress(Exception):
            report()
    # Servers exist only if contend.servers.server was imported (a command that never starts
    # one, such as `contend history check`, does not pay for importing redis-py here).
    server = sys.modules.get("contend.servers.server")
    if server is not None:
        with contextlib.suppress(Exception):
            server.stop_all(timeout=1.0)
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)
