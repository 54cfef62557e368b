"""redis-lock-py's `RedisLock` (Pub/Sub waits) and `RedisSpinLock` (redis_lock/lock.py,
redis_lock/spin_lock.py of the `redis-lock-py` distribution, import name `redis_lock`, the same
as python-redis-lock's: each runs in an environment of its own).

What it claims: "Redis distributed lock implementation for Python based on Pub/Sub messaging":
`SET name token NX EX expire_timeout`, a release that deletes the key only when it holds the
lock's token and publishes an unlock message (Lua), waiters that subscribe to
`rlock-channel:<name>` and retry when it arrives or after growing timeouts, until
`blocking_timeout` (seconds) runs out. `RedisSpinLock` retries every `sleep_time` instead.
`expire_timeout` is "the maximum lifetime of acquired lock" (seconds, EX; None: no expiry).
No fencing token. `extend(additional_time)` adds seconds to what is left (`TTL` + n), which
is not contend's extend (a new lease of n), so it is not judged.

Mapping: `ttl_ms` → `expire_timeout` in whole seconds (EX takes integers; the factory declares
`ttl_resolution_ms = 1000`). `acquire(blocking=False)` → the spin lock's `acquire(blocking=
False)`, and for the Pub/Sub lock one `acquire()` with the shortest `blocking_timeout` (the
library refuses 0): a first `SET NX` that fails then waits up to that long. A blocking
`acquire(timeout)` → `blocking_timeout=timeout` (None: a day). `release()` → `release()`
(LockNotOwnedError when not held).
"""

from __future__ import annotations

import redis
import redis_lock  # type: ignore[import-not-found,import-untyped]

from contend.adapters.fidelity import lease_probe
from contend.adapters.units import check_lease, whole_seconds

FIDELITY = (
    "expire_timeout is whole seconds (SET EX) and only whole-second TTLs are asked for; "
    "blocking_timeout is seconds, as contend's timeout"
)
#: A day: the wait of a blocking acquire with no timeout (the library needs a number).
FOREVER = 24 * 3600.0
#: The shortest wait the Pub/Sub lock allows for a try that should not wait (0 is refused).
SHORTEST = 0.001


class RedisLockPy:
    """redis-lock-py's RedisLock (spin=False) or RedisSpinLock (spin=True) behind contend's lock protocol."""

    def __init__(self, client: redis.Redis, key: str, ttl_ms: int, *, spin: bool = False) -> None:
        check_lease(key, ttl_ms)
        self.client, self.key, self.expire, self.spin = client, key, whole_seconds(ttl_ms), spin
        self.lock = self._made(FOREVER)

    def _made(self, wait: float) -> redis_lock.RedisLock:
        kind = redis_lock.RedisSpinLock if self.spin else redis_lock.RedisLock
        return kind(self.client, self.key, blocking_timeout=wait, expire_timeout=self.expire)

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        wait = FOREVER if timeout is None else max(timeout, SHORTEST)
        if self.spin:
            self.lock = self._made(wait)
            return bool(self.lock.acquire(blocking=blocking, sleep_time=0.005))
        self.lock = self._made(wait if blocking else SHORTEST)
        return bool(self.lock.acquire())

    def release(self) -> None:
        self.lock.release()


def factory(client: redis.Redis, key: str, ttl_ms: int) -> RedisLockPy:
    """The lock-protocol factory: the Pub/Sub lock."""
    return RedisLockPy(client, key, ttl_ms)


def spin_factory(client: redis.Redis, key: str, ttl_ms: int) -> RedisLockPy:
    """The lock-protocol factory: the spin lock."""
    return RedisLockPy(client, key, ttl_ms, spin=True)


factory.ttl_resolution_ms = 1000  # type: ignore[attr-defined]
spin_factory.ttl_resolution_ms = 1000  # type: ignore[attr-defined]


def fidelity(client: redis.Redis, key: str) -> str:
    """What the library left on the server for a lease taken through the adapter."""
    return lease_probe(factory, client, key, 3000, seconds=True)
