"""The `limits` library's strategies on its Redis storage (limits/strategies.py,
limits/storage/redis.py), behind contend's rate-limiter protocol.

What it claims (README.rst, the distribution's long description): a fixed window "When the
first request arrives, a window is started for a fixed duration ... All requests in that window
increment the counter and when the window expires, the counter resets"; a moving window "adds
each request's timestamp to a log if the nth oldest entry (where n is the limit) is either not
present or is older than the duration of the window"; a sliding window counter "approximates
the moving window while using less memory by maintaining two counters" (no bound of its own).
How each runs on Redis:

* fixed window: one script (incr_expire.lua) INCRBYs the counter by the cost and EXPIREs it
  for a new one; the hit is admitted when the count is within the limit (refused hits count);
* moving window: one script (acquire_moving_window.lua) on a list of times, the time being
  `time.time()` on the client, passed as ARGV;
* sliding window counter: one script (acquire_sliding_window.lua) on two counters, the current
  one set with PX of two windows and shifted into the previous one once a window has passed
  (the server's clock, through PTTL).

Mapping: `RedisStorage("redis://", connection_pool=<the client's pool>, key_prefix=<key>)` (its
documented `connection_pool` and `key_prefix` arguments: one client, keys under the protocol's
key), a `RateLimitItemPerSecond(limit, window_ms / 1000)` (windows are whole seconds), and the
strategy's `hit(item, cost=cost)`; `remaining()` is `get_window_stats(item).remaining`.
"""

from __future__ import annotations

from typing import Any

import redis
from limits import RateLimitItemPerSecond  # type: ignore[import-not-found,unused-ignore]
from limits.storage import RedisStorage  # type: ignore[import-not-found,unused-ignore]
from limits.strategies import (  # type: ignore[import-not-found,unused-ignore]
    FixedWindowRateLimiter,
    MovingWindowRateLimiter,
    SlidingWindowCounterRateLimiter,
)

from contend.adapters.fidelity import window_probe
from contend.adapters.units import check_limiter, window_seconds

FIDELITY = (
    "window_ms becomes a RateLimitItemPerSecond of window_ms / 1000 seconds (whole seconds, the "
    "library's finest granularity) and limit its amount, both unchanged; the storage uses the "
    "client's own connection pool"
)


class LimitsLimiter:
    """One `limits` strategy on its Redis storage behind contend's rate-limiter protocol."""

    def __init__(self, strategy: type, client: redis.Redis, key: str, limit: int, window_ms: int) -> None:
        check_limiter(key, limit, window_ms)
        storage = RedisStorage("redis://", connection_pool=client.connection_pool, key_prefix=key)
        self.limiter: Any = strategy(storage)
        self.item = RateLimitItemPerSecond(limit, window_seconds(window_ms))

    def hit(self, cost: int = 1) -> bool:
        return bool(self.limiter.hit(self.item, cost=cost))

    def remaining(self) -> int:
        return int(self.limiter.get_window_stats(self.item).remaining)


def fixed_window(client: redis.Redis, key: str, limit: int, window_ms: int) -> LimitsLimiter:
    """FixedWindowRateLimiter."""
    return LimitsLimiter(FixedWindowRateLimiter, client, key, limit, window_ms)


def moving_window(client: redis.Redis, key: str, limit: int, window_ms: int) -> LimitsLimiter:
    """MovingWindowRateLimiter."""
    return LimitsLimiter(MovingWindowRateLimiter, client, key, limit, window_ms)


def sliding_window_counter(client: redis.Redis, key: str, limit: int, window_ms: int) -> LimitsLimiter:
    """SlidingWindowCounterRateLimiter."""
    return LimitsLimiter(SlidingWindowCounterRateLimiter, client, key, limit, window_ms)


def fidelity(client: redis.Redis, key: str) -> str:
    """What each strategy left on the server for a window of 2 s (the sliding window counter's
    current counter lives two windows)."""
    seen = [
        window_probe(fixed_window, client, f"{key}:fixed", 2000),
        window_probe(moving_window, client, f"{key}:moving", 2000),
        window_probe(sliding_window_counter, client, f"{key}:sliding", 2000, ttl_windows=2),
    ]
    return " | ".join(seen)
