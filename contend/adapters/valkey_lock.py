"""The `valkey` client's own `Lock` (valkey/lock.py, the `valkey` distribution: Valkey's fork of
redis-py), its round trips sent through a redis-py client.

What it claims: "A shared, distributed Lock. Using Valkey for locking allows the Lock to be
shared across processes and/or machines"; "``timeout`` indicates a maximum life for the lock
in seconds"; the token is thread-local by default so that another thread cannot release the
lock. The lease is `SET NX PX`, release and extend are token-checked Lua.

Mapping: `Lock(client, key, timeout=..., sleep=0.005)` built directly (what `Valkey.lock()`
does), on the redis-py client contend gives it: valkey's Lock calls nothing but `set`, `get`,
`register_script` and `get_encoder`, which redis-py's client has with the same meaning, and
contend's scheduler drives redis-py's connections, not valkey's. `ttl_ms` → `timeout` seconds
that truncate back to `ttl_ms` (it sends int(timeout * 1000) ms); `acquire(blocking,
timeout)` → `acquire(blocking=..., blocking_timeout=timeout)`; `release()`; `extend(ttl_ms)`
→ `extend(seconds, replace_ttl=True)`.
"""

from __future__ import annotations

from typing import Any

import redis
from valkey.lock import Lock  # type: ignore[import-not-found,import-untyped]

from contend.adapters.fidelity import lease_probe
from contend.adapters.units import check_lease, seconds_truncated_to

#: The Lock's `sleep` between tries of a blocking acquire (its default is 0.1 s), as redis-py's row.
POLL_SECONDS = 0.005
FIDELITY = (
    "timeout is seconds sent as int(timeout * 1000) ms, and the seconds given truncate back to ttl_ms "
    "exactly; valkey's Lock class over a redis-py client"
)


class ValkeyLock:
    """valkey's Lock behind contend's lock protocol."""

    def __init__(self, client: redis.Redis, key: str, ttl_ms: int) -> None:
        check_lease(key, ttl_ms)
        self.lock: Any = Lock(client, key, timeout=seconds_truncated_to(ttl_ms), sleep=POLL_SECONDS)

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        return bool(self.lock.acquire(blocking=blocking, blocking_timeout=timeout))

    def release(self) -> None:
        self.lock.release()

    def extend(self, ttl_ms: int) -> bool:
        check_lease("-", ttl_ms)
        return bool(self.lock.extend(seconds_truncated_to(ttl_ms), replace_ttl=True))


def factory(client: redis.Redis, key: str, ttl_ms: int) -> ValkeyLock:
    """The lock-protocol factory."""
    return ValkeyLock(client, key, ttl_ms)


def fidelity(client: redis.Redis, key: str) -> str:
    """What the library left on the server for a lease taken through the adapter."""
    return lease_probe(factory, client, key, 1501)
