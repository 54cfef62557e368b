"""redlock's `RedLock` (redlock/lock.py, the `redlock` distribution), on one master.

What it claims: "Distributed locks with Redis" after antirez's Redlock, "a similar API with the
`threading.Lock` class": `acquire()` sets the resource with a fresh uuid (`SET NX PX ttl`) on
every node, tries `retry_times` (3) times `retry_delay` (0-200 ms, random) apart, and holds it
when a majority agreed within `ttl` minus the elapsed time (`datetime.utcnow()`) and a drift;
`release()` deletes only a key holding its uuid (Lua). No extend, no fencing token.

Mapping: `ttl_ms` → `ttl` in milliseconds, unchanged. `acquire(blocking=False)` → `acquire()`
of a lock with `retry_times=1`; a blocking acquire calls `acquire()` of one with its default
tries until one succeeds or the timeout runs out. `release()` → `release()`. The node is the
client itself (it takes StrictRedis objects as well as connection details).
"""

from __future__ import annotations

import redis
import redlock  # type: ignore[import-not-found,import-untyped]

from contend.adapters.fidelity import lease_probe
from contend.adapters.polling import poll
from contend.adapters.units import check_lease

#: A non-blocking try is one `acquire()` with one try, whose failed try still sleeps up to
#: `retry_delay` ms: 1 ms for it instead of its default 200.
FIDELITY = "ttl is redlock's own unit (milliseconds), passed unchanged; a blocking acquire keeps its tries and delays, a single try sleeps 1 ms after failing"


class RedlockLock:
    """redlock's RedLock behind contend's lock protocol."""

    def __init__(self, client: redis.Redis, key: str, ttl_ms: int) -> None:
        check_lease(key, ttl_ms)
        self.once = redlock.RedLock(
            key, connection_details=[client], ttl=ttl_ms, retry_times=1, retry_delay=1
        )
        self.retrying = redlock.RedLock(key, connection_details=[client], ttl=ttl_ms)
        self.holder: redlock.RedLock | None = None

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        def attempt(lock: redlock.RedLock) -> bool:
            if lock.acquire():
                self.holder = lock
                return True
            return False

        if not blocking:
            return attempt(self.once)
        return poll(lambda: attempt(self.retrying), True, timeout, interval=0.0)

    def release(self) -> None:
        if self.holder is not None:
            holder, self.holder = self.holder, None
            holder.release()


def factory(client: redis.Redis, key: str, ttl_ms: int) -> RedlockLock:
    """The lock-protocol factory."""
    return RedlockLock(client, key, ttl_ms)


def fidelity(client: redis.Redis, key: str) -> str:
    """What the library left on the server for a lease taken through the adapter."""
    return lease_probe(factory, client, key, 1500)
