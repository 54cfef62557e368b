"""The probes behind each adapter's fidelity line: one lease taken through the adapter, and the
TTL the library left on the server read back, so a wrong unit or a lease of 0 shows at once."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import redis
import redis.asyncio


def _judged(ttl_ms: int, left: int, seconds: bool, where: str, elapsed: float = 0.0) -> str:
    """What the lease left on the server says about the unit the library was given: the whole
    lease, less at most the `elapsed` seconds between the acquire's call and the read (on a busy
    machine a tenth of a second or more) and 100 ms."""
    if seconds:
        assert ttl_ms // 1000 - elapsed - 1 <= left <= ttl_ms // 1000, f"ttl_ms={ttl_ms} gave TTL {left} s"
        return f"ttl_ms={ttl_ms} → TTL {left} s{where}"
    assert ttl_ms - 100 - 1000 * elapsed < left <= ttl_ms, f"ttl_ms={ttl_ms} gave PTTL {left} ms"
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
    started = time.monotonic()
    assert lock.acquire(blocking=False), "a free lock was not acquired"
    name = stored or key
    left = client.ttl(name) if seconds else client.pttl(name)
    elapsed = time.monotonic() - started
    lock.release()
    where = f" on {stored.replace(key, '<key>')}" if stored else ""
    return _judged(ttl_ms, int(left), seconds, where, elapsed)


async def lease_probe_async(
    factory: Callable[..., Any], client: redis.asyncio.Redis, key: str, ttl_ms: int
) -> str:
    """`lease_probe` for an adapter with coroutine methods on a redis.asyncio client."""
    lock = factory(client, key, ttl_ms)
    started = time.monotonic()
    assert await lock.acquire(blocking=False), "a free lock was not acquired"
    left = await client.pttl(key)
    elapsed = time.monotonic() - started
    await lock.release()
    return _judged(ttl_ms, int(left), False, "", elapsed)


def _windowed(key: str, window_ms: int, found: list[tuple[str, int]], ttl_windows: float | None) -> str:
    """What a limiter's keys left on the server say about the window the library was given:
    each key's PTTL within `ttl_windows` windows (None: the library sets no expiry, PTTL -1)."""
    assert found, f"a hit left no key under {key}"
    parts = []
    for name, left in found:
        if ttl_windows is None:
            assert left == -1, f"{name}: PTTL {left} ms where the library sets no expiry"
        else:
            top = int(ttl_windows * window_ms)
            assert top - 1100 < left <= top, f"window_ms={window_ms} gave PTTL {left} ms on {name}"
        parts.append(f"PTTL {left} ms on {name.replace(key, '<key>')}")
    return f"window_ms={window_ms}, limit 1: one hit admitted, the next refused → {'; '.join(parts)}"


def window_probe(
    factory: Callable[..., Any], client: redis.Redis, key: str, window_ms: int, ttl_windows: float | None = 1
) -> str:
    """Through `factory`, a limit of 1 per `window_ms` on a fresh key: one hit admitted, the next
    refused; then the PTTL of every key the library wrote under `key`, read back."""
    limiter = factory(client, key, 1, window_ms)
    assert limiter.hit(1) is True, "the first hit on a fresh key was refused"
    assert limiter.hit(1) is False, "a second hit within the window of a limit of 1 was admitted"
    found = [(k.decode(), int(client.pttl(k))) for k in sorted(client.scan_iter(match=f"*{key}*"))]
    return _windowed(key, window_ms, found, ttl_windows)


async def window_probe_async(
    factory: Callable[..., Any],
    client: redis.asyncio.Redis,
    key: str,
    window_ms: int,
    ttl_windows: float | None = 1,
) -> str:
    """`window_probe` for an adapter whose hit() is a coroutine on a redis.asyncio client."""
    limiter = factory(client, key, 1, window_ms)
    assert await limiter.hit(1) is True, "the first hit on a fresh key was refused"
    assert await limiter.hit(1) is False, "a second hit within the window of a limit of 1 was admitted"
    found = [(k.decode(), int(await client.pttl(k))) async for k in client.scan_iter(match=f"*{key}*")]
    return _windowed(key, window_ms, sorted(found), ttl_windows)
