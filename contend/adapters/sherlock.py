"""sherlock's `RedisLock` (sherlock/lock.py).

What it claims: "Distributed inter-process locks with a choice of backend",
"API similar to standard library's threading.Lock": `SETNX` then `EXPIRE` in
one Lua script, released by a script that checks the owner. With `expire` the
lock expires after that many seconds. No fencing token. contend takes it to
claim mutual exclusion, safe release, crash liveness and clock-skew safety.

Mapping: `ttl_ms` → `expire` in whole seconds (its Lua script passes the value
to EXPIRE, which takes only integers), so the factory declares
`ttl_resolution_ms = 1000`. `acquire(blocking=False)` → `acquire(blocking=False)`;
a blocking acquire uses the lock's own `timeout` (seconds, which sherlock
counts down by its `retry_interval`, 0.01 s here, without reading a clock) and
sherlock raises LockTimeoutException when it runs out: that is a False here.
A timeout of None (no limit) becomes a year. `release()` → `release()`
(LockException on a lost lease). No `extend`: sherlock's `renew()` resets the
lease to its own `expire` only.

`never_expire_factory` is the configuration sherlock's README shows to "never
expire locks" (`expire=None`): contend's `ttl_ms` is then not used, and the
lock claims mutual exclusion and safe release but not crash liveness.
"""

from __future__ import annotations

import redis
import sherlock as sherlock_lib  # type: ignore[import-not-found,import-untyped]

from contend.adapters.fidelity import lease_probe
from contend.adapters.units import check_lease, whole_seconds

#: sherlock's `retry_interval` between tries of a blocking acquire (its default is 0.1 s).
RETRY_SECONDS = 0.01
FOREVER = 365 * 24 * 3600.0


class SherlockLock:
    """sherlock's RedisLock behind contend's lock protocol."""

    def __init__(self, client: redis.Redis, key: str, ttl_ms: int, *, expires: bool = True) -> None:
        check_lease(key, ttl_ms)
        self.lock = sherlock_lib.RedisLock(
            key,
            client=client,
            expire=whole_seconds(ttl_ms) if expires else None,
            timeout=0,
            retry_interval=RETRY_SECONDS,
        )

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        if not blocking:
            return bool(self.lock.acquire(blocking=False))
        self.lock.timeout = FOREVER if timeout is None else timeout
        try:
            return bool(self.lock.acquire(blocking=True))
        except sherlock_lib.LockTimeoutException:
            return False

    def release(self) -> None:
        self.lock.release()


def factory(client: redis.Redis, key: str, ttl_ms: int) -> SherlockLock:
    """The lock-protocol factory."""
    return SherlockLock(client, key, ttl_ms)


def never_expire_factory(client: redis.Redis, key: str, ttl_ms: int) -> SherlockLock:
    """The lock-protocol factory for `expire=None` ("never expire locks", sherlock's README)."""
    return SherlockLock(client, key, ttl_ms, expires=False)


factory.ttl_resolution_ms = 1000  # type: ignore[attr-defined]


FIDELITY = (
    "expire is whole seconds (its script's EXPIRE takes integers) and only whole-second TTLs are asked for"
)


def fidelity(client: redis.Redis, key: str) -> str:
    """What the library left on the server for a lease taken through the adapter."""
    return lease_probe(factory, client, key, 3000, seconds=True)
