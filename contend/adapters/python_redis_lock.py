"""python-redis-lock (`redis_lock.Lock`), with and without `auto_renewal`.

What it claims: "Lock context manager implemented via redis SETNX/BLPOP",
"Interface targeted to be exactly like threading.Lock", "no spinloops at
acquire": waiters block in BLPOP on a signal list that a release pushes to.
With `expire`, "the lock will expire after that many seconds" (None: never);
with `auto_renewal=True` a thread renews it every 2/3 of `expire` while the
holder lives. Release and extend check the holder's id in Lua. No fencing
token. contend takes it to claim mutual exclusion, safe release, crash
liveness (it is always given an `expire`) and clock-skew safety.

Mapping: `ttl_ms` → `expire` in whole seconds (the library takes an int: it
calls `int(expire)`), so the factory declares `ttl_resolution_ms = 1000` and
contend asks for whole seconds only. `acquire(blocking, timeout)` →
`lock.acquire(blocking=..., timeout=...)` with the timeout rounded up to whole
seconds, the type the library documents (it calls `int(timeout)`, and 0 means
"wait up to `expire`"); it refuses a timeout longer than `expire` without
auto-renewal (TimeoutTooLarge), so a longer wait is asked for in turns of at
most `expire`. `release()` → `lock.release()` (NotAcquired on
a lost lease). `extend(ttl_ms)` → `lock.extend(expire=seconds)`, which resets
the TTL. One object per client; ownership is per object, not per thread. A
release's wake-up signal lingers for `signal_expire`: 120 s here instead of 1 s,
so that under contend's scheduler it does not vanish on the real clock.
"""

from __future__ import annotations

import math
import time

import redis
import redis_lock  # type: ignore[import-not-found,import-untyped]

from contend.adapters.fidelity import lease_probe
from contend.adapters.units import check_lease, whole_seconds

#: How long a release's wake-up signal waits for a waiter (its `signal_expire`, ms; default 1000).
#: Longer than any check runs in real time: otherwise whether a waiter sees a signal depends on
#: how fast the machine is, not on the order of round trips contend chooses.
SIGNAL_EXPIRE_MS = 120_000


class PythonRedisLock:
    """python-redis-lock's Lock behind contend's lock protocol."""

    def __init__(self, client: redis.Redis, key: str, ttl_ms: int, *, auto_renewal: bool = False) -> None:
        check_lease(key, ttl_ms)
        self.expire = whole_seconds(ttl_ms)
        self.auto_renewal = auto_renewal
        self.lock = redis_lock.Lock(
            client, key, expire=self.expire, auto_renewal=auto_renewal, signal_expire=SIGNAL_EXPIRE_MS
        )

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        if not blocking:
            return bool(self.lock.acquire(blocking=False))
        if timeout is None:
            return bool(self.lock.acquire(blocking=True))
        if self.auto_renewal or timeout <= self.expire:
            return bool(self.lock.acquire(blocking=True, timeout=max(1, math.ceil(timeout))))
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            if self.lock.acquire(blocking=True, timeout=max(1, min(math.ceil(left), self.expire))):
                return True
        return False

    def release(self) -> None:
        self.lock.release()

    def extend(self, ttl_ms: int) -> bool:
        check_lease("-", ttl_ms)
        self.lock.extend(expire=whole_seconds(ttl_ms))
        return True


def factory(client: redis.Redis, key: str, ttl_ms: int) -> PythonRedisLock:
    """The lock-protocol factory: a lease of `ttl_ms` (whole seconds), no renewal."""
    return PythonRedisLock(client, key, ttl_ms)


def auto_renewal_factory(client: redis.Redis, key: str, ttl_ms: int) -> PythonRedisLock:
    """The lock-protocol factory with `auto_renewal=True`: the holder's lease is renewed while it lives."""
    return PythonRedisLock(client, key, ttl_ms, auto_renewal=True)


factory.ttl_resolution_ms = 1000  # type: ignore[attr-defined]
auto_renewal_factory.ttl_resolution_ms = 1000  # type: ignore[attr-defined]


FIDELITY = "expire is whole seconds (the library calls int(expire)) and only whole-second TTLs are asked for"


def fidelity(client: redis.Redis, key: str) -> str:
    """What the library left on the server for a lease taken through the adapter."""
    return lease_probe(factory, client, key, 3000, f"lock:{key}", seconds=True)
