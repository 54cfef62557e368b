"""fastapi-limiter's `WebSocketRateLimiter` (fastapi_limiter/depends.py) over a pyrate-limiter
`Limiter` on an async `RedisBucket`, behind contend's rate-limiter protocol with coroutine
methods.

What it claims (README.md): "FastAPI-Limiter is a rate limiting tool for fastapi routes, powered
by pyrate-limiter"; `limiter` is "A `pyrate_limiter.Limiter` instance that defines the rate
limiting rules", `callback` is invoked "when the rate limit is exceeded, default raises
`HTTPException` with `429` status code". Since 0.2.0 it has no Redis code of its own: a request
is `await limiter.try_acquire_async(<identifier>:<context>, blocking=False)` (its default), so
what Redis sees is pyrate-limiter's async RedisBucket (see contend.adapters.pyrate_limiter: a
sliding log on the client's clock, no expiry).

Mapping: `WebSocketRateLimiter(limiter=Limiter(SingleBucketFactory(await RedisBucket.init([Rate(limit,
window_ms)], client, key), schedule_leak=False)), identifier=<the key>)` (the leak off as in
contend.adapters.pyrate_limiter, which says why), the bucket made on the first hit (its `init` is a
coroutine, run once on the client's loop); a hit of cost 1 is one call of the dependency,
admitted unless it raises the default callback's HTTPException 429 (then False). The dependency
counts requests, one unit each: a hit of a larger cost is the same Limiter's documented
`try_acquire_async(key, weight=cost, blocking=False)`.
"""

from __future__ import annotations

from typing import Any

import redis.asyncio
from fastapi import HTTPException  # type: ignore[import-not-found,unused-ignore]
from fastapi_limiter.depends import WebSocketRateLimiter  # type: ignore[import-not-found,unused-ignore]
from pyrate_limiter import Limiter, Rate, RedisBucket, SingleBucketFactory  # type: ignore[import-not-found,unused-ignore]

from contend.adapters.fidelity import window_probe_async
from contend.adapters.units import check_limiter

FIDELITY = (
    "a Rate's interval is milliseconds: window_ms passed unchanged, limit its limit; the "
    "dependency's own defaults (blocking=False, the 429 callback); no background leak"
)

TOO_MANY_REQUESTS = 429


class FastapiLimiter:
    """fastapi-limiter's WebSocket dependency behind contend's rate-limiter protocol."""

    def __init__(self, client: redis.asyncio.Redis, key: str, limit: int, window_ms: int) -> None:
        check_limiter(key, limit, window_ms)
        self.client, self.key, self.rates = client, key, [Rate(limit, window_ms)]
        self.dependency: Any = None

    async def _identify(self, ws: Any) -> str:
        return self.key

    async def _made(self) -> Any:
        if self.dependency is None:
            bucket = await RedisBucket.init(self.rates, self.client, self.key)
            limiter = Limiter(SingleBucketFactory(bucket, schedule_leak=False))
            self.dependency = WebSocketRateLimiter(limiter=limiter, identifier=self._identify)
        return self.dependency

    async def hit(self, cost: int = 1) -> bool:
        dependency = await self._made()
        if cost != 1:
            return bool(
                await dependency.limiter.try_acquire_async(f"{self.key}:", weight=cost, blocking=False)
            )
        try:
            await dependency(None)
        except HTTPException as exc:
            if exc.status_code != TOO_MANY_REQUESTS:
                raise
            return False
        return True


def factory(client: redis.asyncio.Redis, key: str, limit: int, window_ms: int) -> FastapiLimiter:
    """The rate-limiter-protocol factory."""
    return FastapiLimiter(client, key, limit, window_ms)


async def fidelity_async(client: redis.asyncio.Redis, key: str) -> str:
    """What the library left on the server for a window of 2 s (a sorted set without expiry)."""
    return await window_probe_async(factory, client, key, 2000, ttl_windows=None)
