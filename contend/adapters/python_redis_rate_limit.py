"""python-redis-rate-limit's `RateLimit` (redis_rate_limit/__init__.py), behind contend's
rate-limiter protocol.

What it claims (README.rst): "This lib offers an abstraction of a Rate Limit algorithm
implemented on top of Redis >= 2.6.0", "Example: 10 requests per second", and for `expire`:
"seconds to wait before resetting counters". One script, adapted from the INCR rate-limiter
pattern of the Redis documentation: INCRBY the counter by the cost, EXPIRE it when the count
equals the cost (a new counter); `TooManyRequests` when the count is over `max_requests`. A
refused hit is counted (its `get_usage` says the usage "could be greater than the maximum").

Mapping: `RateLimit(resource=<key>, client="contend", max_requests=limit, expire=window_ms /
1000, redis_pool=<the client's pool>)` (windows are whole seconds; its documented `redis_pool`
argument); `hit(cost)` is `increment_usage(increment_by=cost)`, what `with RateLimit(...)` does
for a cost of 1, admitted unless it raises `TooManyRequests` (then False). Its own ValueError
for a cost above `max_requests` is left to raise.
"""

from __future__ import annotations

from typing import Any

import redis
from redis_rate_limit import RateLimit, TooManyRequests  # type: ignore[import-not-found,import-untyped,unused-ignore]

from contend.adapters.fidelity import window_probe
from contend.adapters.units import check_limiter, window_seconds

FIDELITY = (
    "expire is seconds: window_ms / 1000, whole seconds, unchanged; max_requests is limit; "
    "the library's Redis is built on the client's own connection pool"
)


class RedisRateLimit:
    """python-redis-rate-limit's RateLimit behind contend's rate-limiter protocol."""

    def __init__(self, client: redis.Redis, key: str, limit: int, window_ms: int) -> None:
        check_limiter(key, limit, window_ms)
        self.limit: Any = RateLimit(
            resource=key,
            client="contend",
            max_requests=limit,
            expire=window_seconds(window_ms),
            redis_pool=client.connection_pool,
        )

    def hit(self, cost: int = 1) -> bool:
        try:
            self.limit.increment_usage(increment_by=cost)
        except TooManyRequests:
            return False
        return True


def factory(client: redis.Redis, key: str, limit: int, window_ms: int) -> RedisRateLimit:
    """The rate-limiter-protocol factory."""
    return RedisRateLimit(client, key, limit, window_ms)


def fidelity(client: redis.Redis, key: str) -> str:
    """What the library left on the server for a window of 2 s."""
    return window_probe(factory, client, key, 2000)
