"""The default clock and sleep of locks that read time on the client.

They look `time.time` and `time.sleep` up at every call, not once at import,
so a harness that virtualizes time (contend's scheduler) or a test that skews
a clock reaches them.
"""

from __future__ import annotations

import time


def wall_clock() -> float:
    """time.time(), looked up now."""
    return time.time()


def sleep(seconds: float) -> None:
    """time.sleep(seconds), looked up now."""
    time.sleep(seconds)
