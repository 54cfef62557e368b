"""redis-py's own `Lock` (`client.lock(name, timeout=...)`, redis/lock.py).

What it claims: a lease with a random token (`SET NX PX`), released and
extended by Lua scripts that check the token, so a client "would not be able to
release" another's lock; the token is thread-local by default so that another
thread of the same process cannot either ("thread-1 would see the token value
as "xyz" and would be able to successfully release the thread-2's lock" is the
case `thread_local=True` exists for). "It's left to the user to resolve
deadlock issues": no fencing token. contend takes it to claim mutual exclusion,
safe release, crash liveness (the `timeout` lease) and clock-skew safety (the
lease lives on the server).

Mapping: `ttl_ms` → `timeout` in seconds, exactly: redis-py sends
`int(timeout * 1000)` ms, which truncates, so the seconds are nudged up until it
gives `ttl_ms` back. `acquire(blocking, timeout)` → `lock.acquire(blocking=...,
blocking_timeout=timeout)`, polling every 5 ms (its `sleep` option).
`release()` → `lock.release()` (LockNotOwnedError on a lost lease).
`extend(ttl_ms)` → `lock.extend(seconds, replace_ttl=True)`: reset, not added.
`thread_local=True` (the default) is kept: contend calls one object from one
thread.
"""

from __future__ import annotations

import redis
from redis.lock import Lock

from contend.adapters.fidelity import lease_probe
from contend.adapters.units import check_lease, seconds_truncated_to

#: redis-py's `sleep` between tries of a blocking acquire (its default is 0.1 s).
POLL_SECONDS = 0.005


class RedisPyLock:
    """redis-py's Lock behind contend's lock protocol."""

    def __init__(self, client: redis.Redis, key: str, ttl_ms: int) -> None:
        check_lease(key, ttl_ms)
        self.lock: Lock = client.lock(key, timeout=seconds_truncated_to(ttl_ms), sleep=POLL_SECONDS)

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        return bool(self.lock.acquire(blocking=blocking, blocking_timeout=timeout))

    def release(self) -> None:
        self.lock.release()

    def extend(self, ttl_ms: int) -> bool:
        check_lease("-", ttl_ms)
        return bool(self.lock.extend(seconds_truncated_to(ttl_ms), replace_ttl=True))


def factory(client: redis.Redis, key: str, ttl_ms: int) -> RedisPyLock:
    """The lock-protocol factory."""
    return RedisPyLock(client, key, ttl_ms)


FIDELITY = (
    "timeout is seconds sent as int(timeout * 1000) ms, and the seconds given truncate back to ttl_ms exactly"
)


def fidelity(client: redis.Redis, key: str) -> str:
    """What the library left on the server for a lease taken through the adapter."""
    return lease_probe(factory, client, key, 1501)
