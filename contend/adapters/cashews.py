"""cashews's lock (`Backend.lock`, cashews/backends/interface.py, on its Redis backend,
cashews/backends/redis/backend.py): an asyncio lock, coroutine methods.

What it claims: `lock(key, expire, wait=True, check_interval=0)` is an async context manager
that sets the key to a fresh uuid with `SET NX PX` (`set_lock`), waits `check_interval`
between tries when `wait` is true, raises LockedError otherwise, and on exit runs `unlock`,
a Lua compare-and-delete of its uuid. Its own comment: "if redis unavailable and a backend
have flag `safe` we will have a brake lock": with errors suppressed (the default) a lock whose
server does not answer is entered without being held. No fencing token, no extend.

Mapping: `ttl_ms` → `expire` in seconds, exactly (cashews sends `int(expire * 1000)` ms,
which truncates, so the seconds are nudged up). `acquire(blocking, timeout)` → entering
`lock(key, expire, wait=blocking, check_interval=0.005)`; cashews has no acquire timeout, so
a bounded wait enters it with `wait=False` again and again until it runs out. `release()` →
leaving the context manager. The backend is cashews's Redis backend with its defaults (errors
suppressed) whose client shares contend's connection pool.
"""

from __future__ import annotations

from typing import Any

import redis.asyncio
from cashews.backends.redis import Redis as CashewsRedis  # type: ignore[import-not-found,import-untyped]
from cashews.backends.redis.client import SafeRedis  # type: ignore[import-not-found,import-untyped]
from cashews.exceptions import LockedError  # type: ignore[import-not-found,import-untyped]

from contend.adapters.fidelity import lease_probe_async
from contend.adapters.polling import poll_async
from contend.adapters.units import check_lease, seconds_truncated_to

FIDELITY = (
    "expire is seconds sent as int(expire * 1000) ms, and the seconds given truncate back to ttl_ms exactly"
)
CHECK_INTERVAL = 0.005


def backend(client: redis.asyncio.Redis) -> Any:
    """cashews's Redis backend, its defaults, on a client of contend's connection pool."""
    made = CashewsRedis("redis://unused")
    made._client = SafeRedis(connection_pool=client.connection_pool)
    made._Redis__is_init = True  # type: ignore[attr-defined]  # its name-mangled "initialised" flag
    return made


class CashewsLock:
    """cashews's lock behind contend's lock protocol (coroutine methods)."""

    def __init__(self, client: redis.asyncio.Redis, key: str, ttl_ms: int) -> None:
        check_lease(key, ttl_ms)
        self.backend, self.key, self.expire = backend(client), key, seconds_truncated_to(ttl_ms)
        self.entered: Any = None

    async def _enter(self, wait: bool) -> bool:
        manager = self.backend.lock(self.key, self.expire, wait=wait, check_interval=CHECK_INTERVAL)
        try:
            await manager.__aenter__()
        except LockedError:
            return False
        self.entered = manager
        return True

    async def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        if blocking and timeout is None:
            return await self._enter(True)
        return await poll_async(lambda: self._enter(False), blocking, timeout)

    async def release(self) -> None:
        # Kept until the exit is done: a release that was cancelled can be called again, and
        # then leaves the context manager as cashews does (a finished one does nothing).
        if self.entered is not None:
            await self.entered.__aexit__(None, None, None)
            self.entered = None


def factory(client: redis.asyncio.Redis, key: str, ttl_ms: int) -> CashewsLock:
    """The lock-protocol factory."""
    return CashewsLock(client, key, ttl_ms)


async def fidelity_async(client: redis.asyncio.Redis, key: str) -> str:
    """What the library left on the server for a lease taken through the adapter."""
    return await lease_probe_async(factory, client, key, 1501)
