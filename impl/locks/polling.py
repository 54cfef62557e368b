"""Blocking acquire by polling: retry one attempt with jittered backoff until a deadline.

The deadline is on the monotonic clock, so a wall-clock jump neither shortens
nor stretches a wait.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

from contend.impl.locks.errors import LockError, LockNotOwnedError
from contend.impl.locks.validation import check_timeout


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


class PollingLock:
    """The lock protocol for a lock made of one attempt and one drop.

    Subclasses set `key`, write `try_acquire()` (one attempt that sets and
    returns `held`) and `_drop()` (what release sends); blocking acquire polls
    the attempt, and releasing a lock this object does not hold raises.
    """

    key: str
    held: bool = False

    def try_acquire(self) -> bool:
        raise NotImplementedError

    def _drop(self) -> None:
        raise NotImplementedError

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        """Take the lock; with `blocking`, retry until `timeout` seconds (None: no limit)."""
        if self.held:
            raise LockError(f"lock {self.key!r}: acquire() while this object already holds it")
        return poll_acquire(self.try_acquire, blocking=blocking, timeout=timeout)

    def release(self) -> None:
        """Drop the lock (see `_drop`); LockNotOwnedError if this object never took it."""
        if not self.held:
            raise LockNotOwnedError(f"lock {self.key!r}: release() without a successful acquire()")
        self.held = False
        self._drop()
