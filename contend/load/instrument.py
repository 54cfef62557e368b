"""Measuring an operation from outside: round trips on a client, time spent waiting for and holding a lock."""

from __future__ import annotations

import contextvars
import time
from typing import Any

import redis

from contend.impl.locks.token import TokenLock
from contend.load.metrics import OperationMetrics
from contend.servers.tap import round_trips, tap


def counting_client(url: str, **kwargs: Any) -> redis.Redis:
    """A client whose round trips are counted (read them with `round_trips`)."""
    kwargs.setdefault("socket_connect_timeout", 5)
    client = redis.Redis.from_url(url, **kwargs)
    tap(client)
    return client


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
