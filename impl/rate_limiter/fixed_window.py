"""Fixed windows: a counter per window that expires with it.

`FixedWindow` is correct: one script reads the counter, and only if the hit fits, INCRBYs it and
gives a new counter its PEXPIRE, so the window is born with its expiry (it starts at its first
hit and lasts `window_ms`). The others keep the same counter in ways that are known-bad:

* `IncrThenExpireWindow`: INCRBY, then PEXPIRE in a second round trip when the count shows it is
  the window's first hit. A client that dies between the two, or whose INCRBY reply is lost,
  leaves a counter that never expires: the key refuses every hit from then on.
* `GetThenIncrWindow`: GET, decide, then INCRBY (with the expiry, in one MULTI). Two clients that
  read the same count both admit: more than `limit` in one window.
* `ClientClockWindow`: one counter per window numbered by the client's clock
  (`time.time() // window`), INCRBY and PEXPIRE in one MULTI. Correct while the clients' clocks
  agree; a client whose clock is ahead counts in the next window's key while the others still
  count in this one, and the two admit `limit` each.
"""

from __future__ import annotations

import time

import redis

from contend.impl.rate_limiter.base import check_args, check_cost


class FixedWindow:
    """At most `limit` hits admitted in each window of `window_ms`, the window starting at its
    first hit (refused hits are not counted)."""

    # KEYS[1]: the window's counter. ARGV[1]: limit, ARGV[2]: window_ms, ARGV[3]: cost.
    # Returns 1 (admitted: the counter grew by cost; a new one was given its expiry) or 0.
    HIT = """
    local used = tonumber(redis.call('GET', KEYS[1]) or '0')
    if used + tonumber(ARGV[3]) > tonumber(ARGV[1]) then
        return 0
    end
    redis.call('INCRBY', KEYS[1], ARGV[3])
    if redis.call('PTTL', KEYS[1]) < 0 then
        redis.call('PEXPIRE', KEYS[1], ARGV[2])
    end
    return 1
    """

    def __init__(self, client: redis.Redis, key: str, limit: int, window_ms: int) -> None:
        self.key, self.limit, self.window_ms = check_args(key, limit, window_ms)
        self.client = client
        self._hit = client.register_script(self.HIT)

    def counter_key(self) -> str:
        """The key counting the current window."""
        return self.key

    def hit(self, cost: int = 1) -> bool:
        """Admit `cost` units now, or refuse (one round trip)."""
        cost = check_cost(cost, self.limit)
        return bool(self._hit(keys=[self.counter_key()], args=[self.limit, self.window_ms, cost]))

    def remaining(self) -> int:
        """What the current window has left."""
        used = self.client.get(self.counter_key())
        return max(0, self.limit - int(used or 0))


class IncrThenExpireWindow(FixedWindow):
    """Known-bad: INCRBY, then PEXPIRE in a second round trip on the window's first hit."""

    def hit(self, cost: int = 1) -> bool:
        cost = check_cost(cost, self.limit)
        used = self.client.incrby(self.key, cost)
        if used == cost:  # the first hit of a new window: give it its expiry
            self.client.pexpire(self.key, self.window_ms)
        return bool(used <= self.limit)


class GetThenIncrWindow(FixedWindow):
    """Known-bad: GET the count, decide, then INCRBY in another round trip."""

    def hit(self, cost: int = 1) -> bool:
        cost = check_cost(cost, self.limit)
        used = int(self.client.get(self.key) or 0)
        if used + cost > self.limit:
            return False
        with self.client.pipeline(transaction=True) as pipe:
            pipe.set(self.key, 0, nx=True, px=self.window_ms)
            pipe.incrby(self.key, cost)
            pipe.execute()
        return True


class ClientClockWindow(FixedWindow):
    """Known-bad under clock skew: windows numbered by the client's clock."""

    def counter_key(self) -> str:
        return f"{self.key}:{int(time.time() * 1000) // self.window_ms}"

    def hit(self, cost: int = 1) -> bool:
        cost = check_cost(cost, self.limit)
        with self.client.pipeline(transaction=True) as pipe:
            pipe.incrby(self.counter_key(), cost)
            pipe.pexpire(self.counter_key(), self.window_ms)
            used, _ = pipe.execute()
        return bool(used <= self.limit)


def factory(client: redis.Redis, key: str, limit: int, window_ms: int) -> FixedWindow:
    return FixedWindow(client, key, limit, window_ms)


def incr_then_expire_factory(client: redis.Redis, key: str, limit: int, window_ms: int) -> FixedWindow:
    return IncrThenExpireWindow(client, key, limit, window_ms)


def get_then_incr_factory(client: redis.Redis, key: str, limit: int, window_ms: int) -> FixedWindow:
    return GetThenIncrWindow(client, key, limit, window_ms)


def client_clock_factory(client: redis.Redis, key: str, limit: int, window_ms: int) -> FixedWindow:
    return ClientClockWindow(client, key, limit, window_ms)
