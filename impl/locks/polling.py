"""Blocking acquire by polling: retry one attempt with jittered backoff until a deadline.

The deadline is on the monotonic clock, so a wall-clock jump neither shortens
nor stretches a wait.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

from impl.locks.validation import check_timeout


def poll_acquire(
    attempt: Callable[[], bool],
    *,
    blocking: bool = True,
    timeout: float | None = None,
    retry_interval: float = 0.005,
    max_retry_interval: float = 0.05,
) -> bool:
    """Call `attempt` until it returns True; give up at once unless `blocking`, else after `timeout` s."""
    timeout = check_timeout(timeout)
    deadline = None if timeout is None else time.monotonic() + timeout
    pause = retry_interval
    while True:
        if attempt():
            return True
        if not blocking:
            return False
        now = time.monotonic()
        if deadline is not None and now >= deadline:
            return False
        wait = random.uniform(pause / 2, pause)
        if deadline is not None:
            wait = min(wait, deadline - now)
        time.sleep(wait)
        pause = min(pause * 2, max_retry_interval)
