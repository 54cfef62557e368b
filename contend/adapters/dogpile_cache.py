"""dogpile.cache's Redis backend with `distributed_lock=True` (dogpile/cache/backends/redis.py):
the mutex a cache region takes before it regenerates a value.

What it claims: "distributed_lock: boolean, when True, will use a redis-lock as the dogpile
lock. Use this when multiple processes will be talking to the same redis instance";
"lock_timeout: integer, number of seconds after acquiring a lock that Redis should expire
it". `get_mutex(key)` wraps redis-py's `Lock(lock_template.format(key), timeout=lock_timeout,
sleep=lock_sleep, thread_local=..., blocking=lock_blocking, blocking_timeout=
lock_blocking_timeout)`; the wrapper's `acquire(wait)` is `mutex.acquire(blocking=wait)`.

Mapping: `ttl_ms` → `lock_timeout` in whole seconds (its documented unit; the factory
declares `ttl_resolution_ms = 1000`). The backend is built on the client's own connection
pool (its documented `connection_pool` argument), `thread_local_lock=False` as its docs ask
with a distributed lock, `lock_sleep` left at its default (0.1 s). `acquire(blocking,
timeout)` → `get_mutex(key)` of a backend whose `lock_blocking_timeout` is `timeout`, then
`acquire(wait=blocking)`; `release()` → that mutex's `release()`. No extend (the wrapper has
none), no fencing token.
"""

from __future__ import annotations

from typing import Any

import redis
from dogpile.cache.backends.redis import RedisBackend  # type: ignore[import-not-found,import-untyped]

from contend.adapters.fidelity import lease_probe
from contend.adapters.units import check_lease, whole_seconds

FIDELITY = (
    "lock_timeout is whole seconds (dogpile.cache's documented unit); lock_sleep is its default and "
    "a timeout is its lock_blocking_timeout"
)


def backend(client: redis.Redis, seconds: int, blocking_timeout: float | None) -> Any:
    """dogpile.cache's Redis backend on `client`'s pool, with the distributed lock."""
    return RedisBackend(
        {
            "connection_pool": client.connection_pool,
            "distributed_lock": True,
            "thread_local_lock": False,
            "lock_timeout": seconds,
            "lock_blocking_timeout": blocking_timeout,
        }
    )


class DogpileLock:
    """dogpile.cache's distributed Redis mutex behind contend's lock protocol."""

    def __init__(self, client: redis.Redis, key: str, ttl_ms: int) -> None:
        check_lease(key, ttl_ms)
        self.client, self.key, self.seconds = client, key, whole_seconds(ttl_ms)
        self.mutex: Any = None

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        mutex = backend(self.client, self.seconds, timeout).get_mutex(self.key)
        if mutex.acquire(wait=blocking):
            self.mutex = mutex
            return True
        return False

    def release(self) -> None:
        mutex, self.mutex = self.mutex, None
        if mutex is not None:
            mutex.release()


def factory(client: redis.Redis, key: str, ttl_ms: int) -> DogpileLock:
    """The lock-protocol factory."""
    return DogpileLock(client, key, ttl_ms)


factory.ttl_resolution_ms = 1000  # type: ignore[attr-defined]


def fidelity(client: redis.Redis, key: str) -> str:
    """What the library left on the server for a lease taken through the adapter."""
    return lease_probe(factory, client, key, 3000, stored=f"_lock{key}", seconds=True)
