"""Rate limiters: `hit(cost=1) -> bool` admits at most `limit` per `window_ms` on one key.

Every module offers the rate-limiter protocol through `factory(client, key, limit, window_ms)`;
which ones are known-bad, and why, is said in `impl.catalog`.
"""

from contend.impl.rate_limiter.base import check_args
from contend.impl.rate_limiter.fixed_window import (
    ClientClockWindow,
    FixedWindow,
    GetThenIncrWindow,
    IncrThenExpireWindow,
)
from contend.impl.rate_limiter.gcra import Gcra, UnwatchedTokenBucket
from contend.impl.rate_limiter.sliding_log import SeparateCountLog, SlidingLog

__all__ = [
    "ClientClockWindow",
    "FixedWindow",
    "Gcra",
    "GetThenIncrWindow",
    "IncrThenExpireWindow",
    "SeparateCountLog",
    "SlidingLog",
    "UnwatchedTokenBucket",
    "check_args",
]
