"""walrus's `Lock` (walrus/lock.py, `Database.lock(name, ttl=...)`).

What it claims: "The lock uses Lua scripts to ensure the atomicity of its operations"; with a
TTL "the lock will be released automatically after the given number of milliseconds"; it
"does not use a spin-loop when blocking": waiters BLPOP an event list a release pushes to.
Release checks the holder's random id (`lock_release.lua`). No fencing token, no extend, no
acquire timeout.

Mapping: `ttl_ms` → `ttl` in milliseconds, unchanged ("TTL is specified in **milliseconds**";
ttl 0 or None would mean "never expires", and contend never passes 0). The lock's key is
walrus's own `lock:<name>` and its event list `lock.event:<name>`, with contend's key as the
name. `acquire(blocking, timeout)` → `acquire(block=blocking)` when there is no timeout; walrus
has no timeout, so a bounded wait tries `acquire(block=False)` until it runs out
(contend.adapters.polling). `release()` → `release()`, which returns False for a lock not
held (a refusal). The Database shares the client's connection pool.
"""

from __future__ import annotations

import redis
import walrus  # type: ignore[import-not-found,import-untyped]

from contend.adapters.fidelity import lease_probe
from contend.adapters.polling import poll
from contend.adapters.units import check_lease

FIDELITY = (
    "ttl is walrus's own unit (milliseconds), passed unchanged and never 0 (which would mean no expiry)"
)


class WalrusLock:
    """walrus's Lock behind contend's lock protocol."""

    def __init__(self, client: redis.Redis, key: str, ttl_ms: int) -> None:
        check_lease(key, ttl_ms)
        self.db = walrus.Database(connection_pool=client.connection_pool)
        self.lock = self.db.lock(key, ttl=ttl_ms)

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        if blocking and timeout is None:
            return bool(self.lock.acquire(block=True))
        return poll(lambda: bool(self.lock.acquire(block=False)), blocking, timeout)

    def release(self) -> None:
        self.lock.release()


def factory(client: redis.Redis, key: str, ttl_ms: int) -> WalrusLock:
    """The lock-protocol factory."""
    return WalrusLock(client, key, ttl_ms)


def fidelity(client: redis.Redis, key: str) -> str:
    """What the library left on the server for a lease taken through the adapter."""
    return lease_probe(factory, client, key, 1500, f"lock:{key}")
