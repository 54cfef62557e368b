"""Beaker's `RedisSynchronizer` (beaker/ext/redisnm.py): the lock a Beaker cache (Pyramid's,
Pylons') takes around regenerating a value, on its Redis backend.

What it claims: "Synchronizer based on redis. Provided ``url`` can be both a redis connection
string or an already existing StrictRedis instance. This Synchronizer only supports 1 reader or 1
writer at time, not concurrent readers." Its write lock is `SET beaker_lock:<id> <owner> NX EX
LOCK_EXPIRATION` (900 s by default: "If a cache entry generation function can take a lot, but 15
minutes is more than a reasonable time"), retried every 0.2 s when waiting; the owner is the
machine, process and thread; its release is a WATCH of the key, a GET, and a DEL when the owner
is this thread's.

Mapping: `RedisSynchronizer(key, client)` (the client contend gives, as its docstring allows),
its `LOCK_EXPIRATION` set on the instance to `ttl_ms` in whole seconds (the factory declares
`ttl_resolution_ms = 1000`). `acquire(blocking=False)` → `acquire_write_lock(wait=False)`; a
blocking acquire without a timeout → `acquire_write_lock(wait=True)` (its own 0.2 s retries);
with a timeout, `acquire_write_lock(wait=False)` every 5 ms until it runs out
(contend.adapters.polling: Beaker's wait has no timeout). `release()` → `release_write_lock()`.
"""

from __future__ import annotations

from typing import Any

import redis
from beaker.ext.redisnm import RedisSynchronizer  # type: ignore[import-not-found,import-untyped]

from contend.adapters.fidelity import lease_probe
from contend.adapters.polling import poll
from contend.adapters.units import check_lease, whole_seconds

FIDELITY = "LOCK_EXPIRATION is whole seconds (SET ... EX), set to the row's lease; the write lock, as Beaker takes it"


class BeakerLock:
    """Beaker's Redis synchronizer behind contend's lock protocol."""

    def __init__(self, client: redis.Redis, key: str, ttl_ms: int) -> None:
        check_lease(key, ttl_ms)
        self.sync: Any = RedisSynchronizer(key, client)
        self.sync.LOCK_EXPIRATION = whole_seconds(ttl_ms)

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        if blocking and timeout is None:
            return bool(self.sync.acquire_write_lock(wait=True))
        return poll(lambda: bool(self.sync.acquire_write_lock(wait=False)), blocking, timeout)

    def release(self) -> None:
        self.sync.release_write_lock()


def factory(client: redis.Redis, key: str, ttl_ms: int) -> BeakerLock:
    """The lock-protocol factory."""
    return BeakerLock(client, key, ttl_ms)


factory.ttl_resolution_ms = 1000  # type: ignore[attr-defined]


def fidelity(client: redis.Redis, key: str) -> str:
    """What the library left on the server for a lease taken through the adapter."""
    return lease_probe(factory, client, key, 3000, stored=f"beaker_lock:{key}", seconds=True)
