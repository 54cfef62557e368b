"""What code under test prints on its own, counted instead of printed over the results.

Libraries log ("Failed to acquire Lock(...)"), let exceptions end their own threads
(a renewal thread whose lease is gone) and raise in finalizers (a lock that releases
itself in `__del__` after its server stopped). None of it is a verdict: the checks judge
what the code returns and what it does to Redis. While `quieted()` is active, such output
is counted by source and summed up in one line afterwards.
"""

from __future__ import annotations

import collections
import contextlib
import gc
import logging
import sys
import threading
from collections.abc import Iterator
from typing import Any


class Noise:
    """Counts of what code under test wrote while `quieted()` was active."""

    def __init__(self) -> None:
        self.thread_errors: collections.Counter[str] = collections.Counter()
        self.finalizer_errors: collections.Counter[str] = collections.Counter()
        self.log_records: collections.Counter[str] = collections.Counter()

    def summary(self) -> str:
        """One line, or "" when the code under test wrote nothing."""
        parts = []
        for label, counts in (
            ("exception(s) ending its threads", self.thread_errors),
            ("exception(s) in finalizers", self.finalizer_errors),
            ("log record(s)", self.log_records),
        ):
            total = sum(counts.values())
            if total:
                top = ", ".join(f"{what} ×{n}" for what, n in counts.most_common(3))
                parts.append(f"{total} {label} ({top})")
        if not parts:
            return ""
        return "code under test wrote " + "; ".join(parts) + " (not verdicts: what it returned was judged)"


class _Counting(logging.Handler):
    def __init__(self, noise: Noise) -> None:
        super().__init__(logging.WARNING)
        self.noise = noise

    def emit(self, record: logging.LogRecord) -> None:
        self.noise.log_records[f"{record.levelname} from {record.name}"] += 1


@contextlib.contextmanager
def quieted() -> Iterator[Noise]:
    """Count, rather than print, thread-ending exceptions, finalizer exceptions and (when the
    program configured no logging) warnings logged by code under test."""
    noise = Noise()
    before_thread, before_unraisable = threading.excepthook, sys.unraisablehook

    def thread_hook(args: Any) -> None:
        name = args.thread.name if args.thread is not None else "?"
        noise.thread_errors[f"{args.exc_type.__name__} in {name.split(' ', 1)[-1].strip('()')}"] += 1

    def unraisable_hook(args: Any) -> None:
        where = getattr(args.object, "__qualname__", type(args.object).__name__)
        noise.finalizer_errors[f"{args.exc_type.__name__} in {where}"] += 1

    root = logging.getLogger()
    handler = _Counting(noise) if not root.handlers else None
    threading.excepthook = thread_hook
    sys.unraisablehook = unraisable_hook
    if handler is not None:
        root.addHandler(handler)
    try:
        yield noise
    finally:
        gc.collect()  # finalizers of objects the checks left behind run now, counted
        threading.excepthook = before_thread
        sys.unraisablehook = before_unraisable
        if handler is not None:
            root.removeHandler(handler)
