"""The probes behind each adapter's fidelity line: one lease taken through the adapter, and the
TTL the library left on the server read back, so a wrong unit or a lease of 0 shows at once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import redis
import redis.asyncio


def _judged(ttl_ms: int, left: int, seconds: bool, where: str) -> str:
    """What the lease left on the server says about the unit the library was given."""
    if seconds:
        assert left == ttl_ms // 1000, f"ttl_ms={ttl_ms} gave TTL {left} s"
        return f"ttl_ms={ttl_ms} → TTL {left} s{where}"
    assert ttl_ms - 100 < left <= ttl_ms, f"ttl_ms={ttl_ms} gave PTTL {left} ms"
    return f"ttl_ms={ttl_ms} → PTTL {left} ms{where}"


def lease_probe(
    factory: Callable[..., Any],
    client: redis.Redis,
    key: str,
    ttl_ms: int,
    stored: str = "",
    seconds: bool = False,
) -> str:
    """Acquire a lease of `ttl_ms` through `factory`, read the TTL of `stored` (the key itself by
    default; TTL in whole seconds for a library that takes seconds, else PTTL), release."""
    lock = factory(client, key, ttl_ms)
    assert lock.acquire(blocking=False), "a free lock was not acquired"
    name = stored or key
    left = client.ttl(name) if seconds else client.pttl(name)
    lock.release()
    return _judged(ttl_ms, int(left), seconds, f" on {stored.replace(key, '<key>')}" if stored else "")


async def lease_probe_async(
    factory: Callable[..., Any], client: redis.asyncio.Redis, key: str, ttl_ms: int
) -> str:
    """`lease_probe` for an adapter with coroutine methods on a redis.asyncio client."""
    lock = factory(client, key, ttl_ms)
    assert await lock.acquire(blocking=False), "a free lock was not acquired"
    left = await client.pttl(key)
    await lock.release()
    return _judged(ttl_ms, int(left), False, "")
