"""celery-once's Redis backend (celery_once/backends/redis.py): the lock behind `QueueOnce` tasks.

What it claims: "Allows you to prevent multiple execution and queuing of celery tasks";
`raise_or_lock(key, timeout)` "Checks if the task is locked and raises an exception, else
locks the task. By default, the tasks and the key expire after 60 minutes." It takes redis-py's
`Lock(key, timeout=timeout, blocking=..., blocking_timeout=...)` and, when the task is done,
`clear_lock(key)`, which is "Remove the lock from redis" (a `DEL`, whoever holds it). No
fencing token, no extend.

Mapping: `ttl_ms` → `timeout` in whole seconds (celery-once's documented unit; the factory
declares `ttl_resolution_ms = 1000`). `acquire(blocking, timeout)` → the backend's `blocking`
and `blocking_timeout` settings (1 s by default; None becomes a day), then
`raise_or_lock(key, timeout)`: AlreadyQueued is a False. `release()` → `clear_lock(key)`, as
`QueueOnce.after_return` does. The backend is celery-once's own class; only the client it
would make from a URL (one per process, a module global) is the one contend gives it.
"""

from __future__ import annotations

import redis
from celery_once import AlreadyQueued  # type: ignore[import-not-found,import-untyped]
from celery_once.backends.redis import Redis as OnceRedis  # type: ignore[import-not-found,import-untyped]

from contend.adapters.fidelity import lease_probe
from contend.adapters.units import check_lease, whole_seconds

FIDELITY = (
    "timeout is whole seconds (celery-once's unit, handed to redis-py's Lock); release is "
    "clear_lock, as QueueOnce.after_return calls it"
)
FOREVER = 24 * 3600.0


def backend(client: redis.Redis, *, blocking: bool, blocking_timeout: float) -> OnceRedis:
    """celery-once's Redis backend on `client` (its constructor would build a global client from a URL)."""
    made = OnceRedis.__new__(OnceRedis)
    made._redis = client
    made.blocking, made.blocking_timeout = blocking, blocking_timeout
    return made


class CeleryOnceLock:
    """celery-once's Redis backend behind contend's lock protocol."""

    def __init__(self, client: redis.Redis, key: str, ttl_ms: int) -> None:
        check_lease(key, ttl_ms)
        self.client, self.key, self.seconds = client, key, whole_seconds(ttl_ms)

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        once = backend(
            self.client, blocking=blocking, blocking_timeout=FOREVER if timeout is None else timeout
        )
        try:
            once.raise_or_lock(self.key, timeout=self.seconds)
        except AlreadyQueued:
            return False
        return True

    def release(self) -> None:
        backend(self.client, blocking=False, blocking_timeout=1).clear_lock(self.key)


def factory(client: redis.Redis, key: str, ttl_ms: int) -> CeleryOnceLock:
    """The lock-protocol factory."""
    return CeleryOnceLock(client, key, ttl_ms)


factory.ttl_resolution_ms = 1000  # type: ignore[attr-defined]


def fidelity(client: redis.Redis, key: str) -> str:
    """What the library left on the server for a lease taken through the adapter."""
    return lease_probe(factory, client, key, 3000, seconds=True)
