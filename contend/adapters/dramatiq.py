"""dramatiq's `ConcurrentRateLimiter` (dramatiq/rate_limits/concurrent.py) on its Redis backend
(dramatiq/rate_limits/backends/redis.py): a counting semaphore, and with limit 1 a mutex.

What it claims: "A rate limiter that ensures that only `limit` concurrent operations may happen
at the same time", "You can use a concurrent rate limiter of size 1 to get a distributed
mutex"; `ttl` is "The time in milliseconds that keys may live for" (default 900000). One
counter key: an acquire is `SET key 1 NX PX ttl` or a WATCH/MULTI increment below `limit`, a
release a WATCH/MULTI decrement, each resetting the key's TTL. Holders have no identity: a
release takes any slot back. No blocking acquire, no fencing token, no extend.

Mapping: the semaphore protocol's `limit` → `limit`, `ttl_ms` → `ttl` in milliseconds,
unchanged. `acquire()` → entering `limiter.acquire(raise_on_failure=False)` (the documented
use) and keeping it open; a blocking acquire enters it again every 5 ms until it is granted or
the timeout runs out (contend.adapters.polling). `release()` → leaving it, which releases the
slot as the library's `finally` does.
"""

from __future__ import annotations

from typing import Any

import redis
from dramatiq.rate_limits import ConcurrentRateLimiter  # type: ignore[import-not-found,import-untyped]
from dramatiq.rate_limits.backends import RedisBackend  # type: ignore[import-not-found,import-untyped]

from contend.adapters.fidelity import lease_probe
from contend.adapters.polling import poll
from contend.adapters.units import check_lease

FIDELITY = "ttl is dramatiq's own unit (milliseconds), passed unchanged; a slot is entered and left through its documented context manager"


class DramatiqSemaphore:
    """dramatiq's ConcurrentRateLimiter behind contend's semaphore protocol."""

    def __init__(self, client: redis.Redis, key: str, ttl_ms: int, limit: int = 1) -> None:
        check_lease(key, ttl_ms)
        self.limiter = ConcurrentRateLimiter(RedisBackend(client=client), key, limit=limit, ttl=ttl_ms)
        self.entered: Any = None

    def _enter(self) -> bool:
        manager = self.limiter.acquire(raise_on_failure=False)
        if manager.__enter__():
            self.entered = manager
            return True
        manager.__exit__(None, None, None)
        return False

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        return poll(self._enter, blocking, timeout)

    def release(self) -> None:
        entered, self.entered = self.entered, None
        if entered is not None:
            entered.__exit__(None, None, None)


def factory(client: redis.Redis, key: str, ttl_ms: int, limit: int = 1) -> DramatiqSemaphore:
    """The semaphore-protocol factory."""
    return DramatiqSemaphore(client, key, ttl_ms, limit)


def fidelity(client: redis.Redis, key: str) -> str:
    """What the library left on the server for a lease taken through the adapter."""
    return lease_probe(factory, client, key, 1500)
