"""tooz's Redis driver lock (tooz/drivers/redis.py, `RedisLock`): OpenStack's coordination
library, whose `coordinator.get_lock(name)` many services take before they touch a shared
resource.

What it claims: `get_lock` returns "a distributed lock object"; the Redis driver's lock is
redis-py's `client.lock(name, timeout=lock_timeout, thread_local=False)` (a token lease, token-
checked release), `lock_timeout` being a whole number of seconds (`int(lock_timeout)`, by default
the driver's `timeout`, 30 s). `release()` returns False (and logs) when the lease was lost;
`heartbeat()` re-acquires it for a full `lock_timeout`. No fencing token.

Mapping: the coordinator is tooz's `RedisDriver` made by `get_coordinator(url, member_id,
lock_timeout=<seconds>)` and never started (starting opens a client of its own); the lock is
built as `get_lock` builds it, `RedisLock(coordinator, client, name, lock_timeout)`, on the
client contend gives. `ttl_ms` → `lock_timeout` in whole seconds (the factory declares
`ttl_resolution_ms = 1000`). `acquire(blocking, timeout)` → `acquire(blocking=...,
timeout=timeout)` (redis-py's default 0.1 s between tries); `release()` → `release()`.
"""

from __future__ import annotations

from typing import Any

import redis
from tooz import coordination  # type: ignore[import-not-found,import-untyped]
from tooz.drivers.redis import RedisLock  # type: ignore[import-not-found,import-untyped]

from contend.adapters.fidelity import lease_probe
from contend.adapters.units import check_lease, whole_seconds

FIDELITY = "lock_timeout is whole seconds (tooz's int()), the lock built as get_lock builds it"


class ToozLock:
    """tooz's Redis lock behind contend's lock protocol."""

    def __init__(self, client: redis.Redis, key: str, ttl_ms: int) -> None:
        check_lease(key, ttl_ms)
        seconds = whole_seconds(ttl_ms)
        coordinator: Any = coordination.get_coordinator(
            "redis://127.0.0.1:1", b"contend", lock_timeout=seconds
        )
        self.lock: Any = RedisLock(coordinator, client, key.encode(), coordinator.lock_timeout)

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        return bool(self.lock.acquire(blocking=blocking, timeout=timeout))

    def release(self) -> None:
        self.lock.release()


def factory(client: redis.Redis, key: str, ttl_ms: int) -> ToozLock:
    """The lock-protocol factory."""
    return ToozLock(client, key, ttl_ms)


factory.ttl_resolution_ms = 1000  # type: ignore[attr-defined]


def fidelity(client: redis.Redis, key: str) -> str:
    """What the library left on the server for a lease taken through the adapter."""
    return lease_probe(factory, client, key, 3000, stored=f"_tooz_{key}_lock", seconds=True)
