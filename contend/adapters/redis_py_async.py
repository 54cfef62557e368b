"""redis-py's asyncio `Lock` (`client.lock(name, timeout=...)` on a redis.asyncio client,
redis/asyncio/lock.py), behind contend's lock protocol with coroutine methods.

What it claims: as the synchronous Lock (contend.adapters.redis_py): a token lease set
with `SET NX PX`, released and extended by token-checking Lua, the token thread-local
by default. Under asyncio there is one more way to lose a lock: a task cancelled while
it releases. redis-py's issue #3847: `release()` cleared the token before it awaited
the compare-and-delete, so a task cancelled there left the key held by nobody who
could release it. PR #3900 keeps the token until the delete is done; the releases this
contend supports (redis-py 8.1) have it. contend's `cancel` check is how that is judged.

Mapping, as the synchronous adapter's: `ttl_ms` → `timeout` seconds that truncate back
to `ttl_ms`; `acquire(blocking, timeout)` → `acquire(blocking=..., blocking_timeout=timeout)`
polling every 5 ms; `release()`; `extend(ttl_ms)` → `extend(seconds, replace_ttl=True)`.
"""

from __future__ import annotations

from typing import Any

import redis.asyncio
from redis.asyncio.lock import Lock

from contend.adapters.fidelity import lease_probe_async
from contend.adapters.units import check_lease, seconds_truncated_to

#: redis-py's `sleep` between tries of a blocking acquire (its default is 0.1 s).
POLL_SECONDS = 0.005


class AsyncRedisPyLock:
    """redis.asyncio's Lock behind contend's lock protocol (coroutine methods)."""

    lock_class: type[Lock] = Lock

    def __init__(self, client: redis.asyncio.Redis, key: str, ttl_ms: int) -> None:
        check_lease(key, ttl_ms)
        self.lock: Any = client.lock(
            key, timeout=seconds_truncated_to(ttl_ms), sleep=POLL_SECONDS, lock_class=self.lock_class
        )

    async def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        return bool(await self.lock.acquire(blocking=blocking, blocking_timeout=timeout))

    async def release(self) -> None:
        await self.lock.release()

    async def extend(self, ttl_ms: int) -> bool:
        check_lease("-", ttl_ms)
        return bool(await self.lock.extend(seconds_truncated_to(ttl_ms), replace_ttl=True))


def factory(client: redis.asyncio.Redis, key: str, ttl_ms: int) -> AsyncRedisPyLock:
    """The lock-protocol factory."""
    return AsyncRedisPyLock(client, key, ttl_ms)


FIDELITY = (
    "timeout is seconds sent as int(timeout * 1000) ms, and the seconds given truncate back to ttl_ms exactly"
)


async def fidelity_async(client: redis.asyncio.Redis, key: str) -> str:
    """What the library left on the server for a lease taken through the adapter."""
    return await lease_probe_async(factory, client, key, 1501)
