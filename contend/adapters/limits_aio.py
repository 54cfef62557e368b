"""The `limits` library's async strategies (limits/aio/strategies.py) on its async Redis storage
through redis-py's asyncio client (limits/aio/storage/redis/, `implementation="redispy"`),
behind contend's rate-limiter protocol with coroutine methods.

What it claims: as the synchronous strategies (contend.adapters.limits_redis), which its README
says of both: "The library provides identical APIs for use in sync and async codebases". The
scripts are the same Lua; the moving window's time is `time.time()` on the client.

Mapping, as the synchronous adapter's: `RedisStorage("async+redis://", implementation="redispy",
connection_pool=<the client's pool>, key_prefix=<key>)` (its documented arguments: the default
implementation is coredis, which contend does not drive; the redispy one is documented beside
it), a `RateLimitItemPerSecond(limit, window_ms / 1000)`, `await strategy.hit(item, cost=cost)`;
`remaining()` is `(await get_window_stats(item)).remaining`.
"""

from __future__ import annotations

from typing import Any

import redis.asyncio
from limits import RateLimitItemPerSecond  # type: ignore[import-not-found,unused-ignore]
from limits.aio.storage import RedisStorage  # type: ignore[import-not-found,unused-ignore]
from limits.aio.strategies import (  # type: ignore[import-not-found,unused-ignore]
    FixedWindowRateLimiter,
    MovingWindowRateLimiter,
    SlidingWindowCounterRateLimiter,
)

from contend.adapters.fidelity import window_probe_async
from contend.adapters.units import check_limiter, window_seconds

FIDELITY = (
    "window_ms becomes a RateLimitItemPerSecond of window_ms / 1000 seconds and limit its amount, "
    "both unchanged; the storage is the redispy implementation on the client's own connection pool"
)


class AsyncLimitsLimiter:
    """One async `limits` strategy behind contend's rate-limiter protocol (coroutine methods)."""

    def __init__(
        self, strategy: type, client: redis.asyncio.Redis, key: str, limit: int, window_ms: int
    ) -> None:
        check_limiter(key, limit, window_ms)
        pool: Any = client.connection_pool  # limits types its options as scalars; redispy takes a pool
        storage = RedisStorage(
            "async+redis://", implementation="redispy", connection_pool=pool, key_prefix=key
        )
        self.limiter: Any = strategy(storage)
        self.item = RateLimitItemPerSecond(limit, window_seconds(window_ms))

    async def hit(self, cost: int = 1) -> bool:
        return bool(await self.limiter.hit(self.item, cost=cost))

    async def remaining(self) -> int:
        return int((await self.limiter.get_window_stats(self.item)).remaining)


def fixed_window(client: redis.asyncio.Redis, key: str, limit: int, window_ms: int) -> AsyncLimitsLimiter:
    """limits.aio's FixedWindowRateLimiter."""
    return AsyncLimitsLimiter(FixedWindowRateLimiter, client, key, limit, window_ms)


def moving_window(client: redis.asyncio.Redis, key: str, limit: int, window_ms: int) -> AsyncLimitsLimiter:
    """limits.aio's MovingWindowRateLimiter."""
    return AsyncLimitsLimiter(MovingWindowRateLimiter, client, key, limit, window_ms)


def sliding_window_counter(
    client: redis.asyncio.Redis, key: str, limit: int, window_ms: int
) -> AsyncLimitsLimiter:
    """limits.aio's SlidingWindowCounterRateLimiter."""
    return AsyncLimitsLimiter(SlidingWindowCounterRateLimiter, client, key, limit, window_ms)


async def fidelity_async(client: redis.asyncio.Redis, key: str) -> str:
    """What each async strategy left on the server for a window of 2 s."""
    seen = [
        await window_probe_async(fixed_window, client, f"{key}:fixed", 2000),
        await window_probe_async(moving_window, client, f"{key}:moving", 2000),
        await window_probe_async(sliding_window_counter, client, f"{key}:sliding", 2000, ttl_windows=2),
    ]
    return " | ".join(seen)
