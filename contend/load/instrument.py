"""Measuring an operation from outside: round trips on a client, time spent waiting for and holding a lock."""

from __future__ import annotations

import contextvars
import time
from typing import Any

import redis

from contend.impl.locks.token import TokenLock
from contend.load.metrics import OperationMetrics


class CountingPool(redis.ConnectionPool):
    """A connection pool that counts round trips: one per packet of commands sent.

    A pipeline or MULTI/EXEC block is one round trip, like a single command.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.round_trips = 0

    def make_connection(self) -> Any:
        conn = super().make_connection()
        send = conn.send_packed_command

        def counted(command: Any, check_health: bool = True) -> None:
            self.round_trips += 1
            send(command, check_health)

        conn.send_packed_command = counted  # type: ignore[method-assign]
        return conn


def counting_client(url: str, **kwargs: Any) -> redis.Redis:
    """A client whose `connection_pool.round_trips` counts what it sent."""
    kwargs.setdefault("socket_connect_timeout", 5)
    return redis.Redis(connection_pool=CountingPool.from_url(url, **kwargs))


def round_trips(client: redis.Redis) -> int:
    """Round trips `client` has sent so far (0 for a client that does not count)."""
    return int(getattr(client.connection_pool, "round_trips", 0))


#: The operation running in this thread or greenlet, for locks taken inside library code.
CURRENT_STEP: contextvars.ContextVar[OperationMetrics | None] = contextvars.ContextVar(
    "contend_step", default=None
)


class LockTimer:
    """Wraps one lock's acquire and release: wait and hold times and failed attempts go to `step`.

    A failed attempt is a round trip of acquire beyond the first (a poll of a
    taken lock, or a fair semaphore's poll of its place in line).
    """

    def __init__(self, lock: Any, client: redis.Redis, step: OperationMetrics | None) -> None:
        self.lock = lock
        self.client = client
        self.step = step
        self.acquired_at: float | None = None

    def acquire(self, timeout: float) -> bool:
        before = round_trips(self.client)
        start = time.perf_counter()
        got = bool(self.lock.acquire(blocking=True, timeout=timeout))
        now = time.perf_counter()
        if self.step is not None:
            self.step.lock_wait = (self.step.lock_wait or 0.0) + (now - start)
            self.step.retries += max(0, round_trips(self.client) - before - 1)
        if got:
            self.acquired_at = now
        return got

    def release(self) -> None:
        try:
            self.lock.release()
        finally:
            if self.step is not None and self.acquired_at is not None:
                held = time.perf_counter() - self.acquired_at
                self.step.lock_hold = max(self.step.lock_hold or 0.0, held)
            self.acquired_at = None


class TimedTokenLock(TokenLock):
    """A TokenLock that reports to the CURRENT_STEP: for locks taken inside a registry strategy."""

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        step = CURRENT_STEP.get()
        before = round_trips(self.client)
        start = time.perf_counter()
        got = super().acquire(blocking, timeout)
        now = time.perf_counter()
        if step is not None:
            step.lock_wait = (step.lock_wait or 0.0) + (now - start)
            step.retries += max(0, round_trips(self.client) - before - 1)
        self._acquired_at = now
        return got

    def release(self) -> None:
        try:
            super().release()
        finally:
            step = CURRENT_STEP.get()
            acquired_at = getattr(self, "_acquired_at", None)
            if step is not None and acquired_at is not None:
                step.lock_hold = max(step.lock_hold or 0.0, time.perf_counter() - acquired_at)
