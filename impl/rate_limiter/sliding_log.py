"""Sliding logs: a sorted set of admitted hits scored by the server's time.

`SlidingLog` is correct: one script drops the entries older than the window, counts the rest
and, if the hit fits, adds it and renews the set's PEXPIRE, all on the server's clock (TIME), so
at most `limit` are admitted in any `window_ms`. `SeparateCountLog` is known-bad: it reads the
server's time, trims and counts (ZREMRANGEBYSCORE, ZCARD) in one round trip and adds the hit
(ZADD, PEXPIRE) in another, so clients that counted the same log all add to it.
"""

from __future__ import annotations

import uuid

import redis

from contend.impl.rate_limiter.base import check_args, check_cost

#: Scripts that read TIME and then write need effects replication on Redis before 7.0.
_EFFECTS = "pcall(function() redis.replicate_commands() end)\n"
#: The server's time in ms (with its fraction), in a script.
_NOW = "local t = redis.call('TIME')\nlocal now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000\n"


class SlidingLog:
    """At most `limit` admitted in any interval of `window_ms` (the log counts admitted hits)."""

    # KEYS[1]: the log. ARGV[1]: limit, ARGV[2]: window_ms, ARGV[3]: cost, ARGV[4]: a unique id.
    # Returns 1 (admitted: `cost` entries scored now, the log's expiry renewed) or 0.
    HIT = (
        _EFFECTS
        + _NOW
        + """
    local cost = tonumber(ARGV[3])
    redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%.3f', now - tonumber(ARGV[2])))
    if redis.call('ZCARD', KEYS[1]) + cost > tonumber(ARGV[1]) then
        return 0
    end
    for i = 1, cost do
        redis.call('ZADD', KEYS[1], string.format('%.3f', now), ARGV[4] .. ':' .. i)
    end
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    return 1
    """
    )
    # KEYS[1]: the log. ARGV[1]: limit, ARGV[2]: window_ms. Returns what the window has left.
    REMAINING = (
        _NOW
        + """
    local used = redis.call('ZCOUNT', KEYS[1], '(' .. string.format('%.3f', now - tonumber(ARGV[2])), '+inf')
    return math.max(0, tonumber(ARGV[1]) - used)
    """
    )

    def __init__(self, client: redis.Redis, key: str, limit: int, window_ms: int) -> None:
        self.key, self.limit, self.window_ms = check_args(key, limit, window_ms)
        self.client = client
        self._hit = client.register_script(self.HIT)
        self._remaining = client.register_script(self.REMAINING)

    def hit(self, cost: int = 1) -> bool:
        """Admit `cost` units now, or refuse (one round trip)."""
        cost = check_cost(cost, self.limit)
        args = [self.limit, self.window_ms, cost, uuid.uuid4().hex]
        return bool(self._hit(keys=[self.key], args=args))

    def remaining(self) -> int:
        """What the last `window_ms` has left."""
        return int(self._remaining(keys=[self.key], args=[self.limit, self.window_ms]))


class SeparateCountLog(SlidingLog):
    """Known-bad: TIME, then ZREMRANGEBYSCORE and ZCARD, then ZADD: three round trips."""

    def hit(self, cost: int = 1) -> bool:
        cost = check_cost(cost, self.limit)
        seconds, micros = self.client.time()
        now = seconds * 1000 + micros / 1000
        with self.client.pipeline(transaction=False) as pipe:
            pipe.zremrangebyscore(self.key, "-inf", f"{now - self.window_ms:.3f}")
            pipe.zcard(self.key)
            _, used = pipe.execute()
        if used + cost > self.limit:
            return False
        hit_id = uuid.uuid4().hex
        with self.client.pipeline(transaction=True) as pipe:
            pipe.zadd(self.key, {f"{hit_id}:{i}": now for i in range(1, cost + 1)})
            pipe.pexpire(self.key, self.window_ms)
            pipe.execute()
        return True


def factory(client: redis.Redis, key: str, limit: int, window_ms: int) -> SlidingLog:
    return SlidingLog(client, key, limit, window_ms)


def separate_count_factory(client: redis.Redis, key: str, limit: int, window_ms: int) -> SlidingLog:
    return SeparateCountLog(client, key, limit, window_ms)
