"""Token buckets: capacity `limit`, refilled at `limit` per `window_ms`.

`Gcra` is correct: the generic cell rate algorithm in one script on the server's clock. The key
holds the theoretical arrival time (TAT); a hit of `cost` moves it `cost` emission intervals
(`window_ms / limit`) on from max(TAT, now) and is admitted if the TAT stays within `window_ms`
of now. The key expires when the bucket is full again. `UnwatchedTokenBucket` is known-bad: it
reads the bucket (tokens, last refill) and the server's time in one round trip, computes the
refill and writes the bucket back in a MULTI, with no WATCH: two clients that read the same
bucket both spend the same token.
"""

from __future__ import annotations

import math

import redis

from contend.impl.rate_limiter.base import check_args, check_cost
from contend.impl.rate_limiter.sliding_log import _EFFECTS, _NOW

#: Rounding slack in ms for the script's floating-point arithmetic (window / limit is rarely whole).
_SLACK = 0.001


class Gcra:
    """A bucket of `limit` tokens, refilled continuously at `limit` per `window_ms`."""

    # KEYS[1]: the TAT (ms on the server's clock). ARGV[1]: limit, ARGV[2]: window_ms, ARGV[3]: cost.
    # Returns 1 (admitted: the TAT moved on, the key expires when the bucket is full again) or 0.
    HIT = (
        _EFFECTS
        + _NOW
        + """
    local window = tonumber(ARGV[2])
    local interval = window / tonumber(ARGV[1])
    local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
    if tat < now then tat = now end
    local new_tat = tat + tonumber(ARGV[3]) * interval
    if new_tat - now > window + """
        + str(_SLACK)
        + """ then
        return 0
    end
    redis.call('SET', KEYS[1], string.format('%.3f', new_tat), 'PX', math.ceil(new_tat - now))
    return 1
    """
    )
    # KEYS[1]: the TAT. ARGV[1]: limit, ARGV[2]: window_ms. Returns the whole tokens left.
    REMAINING = (
        _NOW
        + """
    local window = tonumber(ARGV[2])
    local interval = window / tonumber(ARGV[1])
    local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
    if tat < now then tat = now end
    return math.floor((window - (tat - now)) / interval + """
        + str(_SLACK)
        + """)
    """
    )

    def __init__(self, client: redis.Redis, key: str, limit: int, window_ms: int) -> None:
        self.key, self.limit, self.window_ms = check_args(key, limit, window_ms)
        self.client = client
        self._hit = client.register_script(self.HIT)
        self._remaining = client.register_script(self.REMAINING)

    def hit(self, cost: int = 1) -> bool:
        """Admit `cost` tokens now, or refuse (one round trip)."""
        cost = check_cost(cost, self.limit)
        return bool(self._hit(keys=[self.key], args=[self.limit, self.window_ms, cost]))

    def remaining(self) -> int:
        """The whole tokens in the bucket now."""
        return int(self._remaining(keys=[self.key], args=[self.limit, self.window_ms]))


class UnwatchedTokenBucket(Gcra):
    """Known-bad: read (TIME, HMGET), compute, write back (HSET, PEXPIRE in MULTI), no WATCH."""

    def _read(self) -> tuple[float, float]:
        with self.client.pipeline(transaction=False) as pipe:
            pipe.time()
            pipe.hmget(self.key, "tokens", "at")
            (seconds, micros), (tokens, at) = pipe.execute()
        now = seconds * 1000 + micros / 1000
        if tokens is None or at is None:
            return now, float(self.limit)
        refill = (now - float(at)) * self.limit / self.window_ms
        return now, min(float(self.limit), float(tokens) + refill)

    def hit(self, cost: int = 1) -> bool:
        cost = check_cost(cost, self.limit)
        now, tokens = self._read()
        if tokens + 1e-9 < cost:
            return False
        with self.client.pipeline(transaction=True) as pipe:
            pipe.hset(self.key, mapping={"tokens": f"{tokens - cost:.6f}", "at": f"{now:.3f}"})
            pipe.pexpire(self.key, self.window_ms)
            pipe.execute()
        return True

    def remaining(self) -> int:
        return math.floor(self._read()[1] + 1e-9)


def factory(client: redis.Redis, key: str, limit: int, window_ms: int) -> Gcra:
    return Gcra(client, key, limit, window_ms)


def unwatched_factory(client: redis.Redis, key: str, limit: int, window_ms: int) -> Gcra:
    return UnwatchedTokenBucket(client, key, limit, window_ms)
