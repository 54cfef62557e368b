"""pyrate-limiter's `RedisBucket` (pyrate_limiter/buckets/redis_bucket.py) under its `Limiter`
(pyrate_limiter/limiter.py), behind contend's rate-limiter protocol.

What it claims (README.md): "RedisBucket stores one sorted-set member per consumed unit for
exact sliding-window checks" (the default algorithm, `SlidingWindowLog`: "Precise rolling
window: admit while each rate's last `interval` stays under its limit"). One script ZCOUNTs the
members of the last `interval` and ZADDs one member per unit when they fit. Times are the
client's: `RedisBucket.now()` is `time_ns() // 1000000` ("We are not using redis' built-in TIME
since it is non-deterministic"); the README tells distributed workers to override `now()` with a
shared clock to agree on it. The sorted set has no expiry: the `Limiter` schedules a leaker
that removes what left every window.

Mapping: `Limiter(SingleBucketFactory(RedisBucket.init([Rate(limit, window_ms)], client, key),
schedule_leak=False))` (a Rate's interval is milliseconds, as `Duration` counts them), `hit(cost)`
is `try_acquire(key, weight=cost, blocking=False)` (its documented non-blocking try; blocking is
its default, which would wait for room instead of refusing). `Limiter(bucket)` would wrap the
bucket the same way with `schedule_leak=True`; the leak is off ("Disable only if you plan to
handle leaking manually"): it only ZREMRANGEBYSCOREs entries older than every window, which no
decision counts (the script's ZCOUNT reads the window alone), and it runs on the limiter's own
client in the background (a thread every 10 s; for an async bucket a task on the client's loop,
which would share the one connection contend's scheduler gives each client with its hits).
"""

from __future__ import annotations

from typing import Any

import redis
from pyrate_limiter import Limiter, Rate, RedisBucket, SingleBucketFactory  # type: ignore[import-not-found,unused-ignore]

from contend.adapters.fidelity import window_probe
from contend.adapters.units import check_limiter

FIDELITY = (
    "a Rate's interval is milliseconds: window_ms passed unchanged, limit its limit; blocking=False; "
    "no background leak (it trims only entries outside every window)"
)


class PyrateLimiter:
    """pyrate-limiter's Limiter over a RedisBucket behind contend's rate-limiter protocol."""

    def __init__(self, client: redis.Redis, key: str, limit: int, window_ms: int) -> None:
        check_limiter(key, limit, window_ms)
        if not isinstance(client, redis.Redis):  # RedisBucket.init would hand back a coroutine
            raise TypeError(
                f"a redis.Redis client, got {type(client).__name__} (the async row is fastapi-limiter's)"
            )
        self.key = key
        bucket = RedisBucket.init([Rate(limit, window_ms)], client, key)
        self.limiter: Any = Limiter(SingleBucketFactory(bucket, schedule_leak=False))

    def hit(self, cost: int = 1) -> bool:
        return bool(self.limiter.try_acquire(self.key, weight=cost, blocking=False))


def factory(client: redis.Redis, key: str, limit: int, window_ms: int) -> PyrateLimiter:
    """The rate-limiter-protocol factory."""
    return PyrateLimiter(client, key, limit, window_ms)


def fidelity(client: redis.Redis, key: str) -> str:
    """What the library left on the server for a window of 2 s (a sorted set without expiry)."""
    return window_probe(factory, client, key, 2000, ttl_windows=None)
