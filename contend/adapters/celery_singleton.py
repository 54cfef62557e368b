"""celery-singleton's Redis backend (celery_singleton/backends/redis.py): the lock behind
`Singleton` tasks.

What it claims: "Prevent duplicate celery tasks": `lock(lock, task_id, expiry)` is
`SET lock task_id NX EX expiry`, and the lock is removed when the task succeeds or fails
(`unlock(lock)`: a `DEL`, whoever holds it). `lock_expiry` (seconds) is optional: "Optionally
you can also set a `lock_expiry` (in seconds) on the task" (README); without it the lock
never expires. No blocking acquire, no fencing token, no extend.

Mapping: `ttl_ms` → `expiry` in whole seconds (EX; the factory declares `ttl_resolution_ms =
1000`). `acquire()` → `lock(key, task_id, expiry)` with a fresh task id; a blocking acquire
tries again every 5 ms (contend.adapters.polling), as a caller of `apply_async` would retry.
`release()` → `unlock(key)`, as `Singleton.on_success`/`on_failure` do. The backend is
celery-singleton's own class on contend's client (its constructor builds one from a URL).
"""

from __future__ import annotations

import uuid

import redis
from celery_singleton.backends.redis import RedisBackend  # type: ignore[import-not-found,import-untyped]

from contend.adapters.fidelity import lease_probe
from contend.adapters.polling import poll
from contend.adapters.units import check_lease, whole_seconds

FIDELITY = "lock_expiry is whole seconds (SET EX), never None (which would mean no expiry); release is unlock, as on_success calls it"


def backend(client: redis.Redis) -> RedisBackend:
    """celery-singleton's Redis backend on `client` (its constructor would build one from a URL)."""
    made = RedisBackend.__new__(RedisBackend)
    made.redis = client
    return made


class CelerySingletonLock:
    """celery-singleton's Redis backend behind contend's lock protocol."""

    def __init__(self, client: redis.Redis, key: str, ttl_ms: int) -> None:
        check_lease(key, ttl_ms)
        self.backend, self.key, self.seconds = backend(client), key, whole_seconds(ttl_ms)

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        return poll(
            lambda: bool(self.backend.lock(self.key, str(uuid.uuid4()), expiry=self.seconds)),
            blocking,
            timeout,
        )

    def release(self) -> None:
        self.backend.unlock(self.key)


def factory(client: redis.Redis, key: str, ttl_ms: int) -> CelerySingletonLock:
    """The lock-protocol factory."""
    return CelerySingletonLock(client, key, ttl_ms)


factory.ttl_resolution_ms = 1000  # type: ignore[attr-defined]


def fidelity(client: redis.Redis, key: str) -> str:
    """What the library left on the server for a lease taken through the adapter."""
    return lease_probe(factory, client, key, 3000, seconds=True)
