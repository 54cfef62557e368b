"""Counting semaphores with leases: at most `limit` holders, each for `ttl_ms` unless extended.

`Semaphore` keeps one sorted set: member = holder id, score = its lease's
expiry in milliseconds on the server's clock (TIME inside the scripts, so
client clocks do not matter). Acquire is one script: drop expired leases,
then add ours if fewer than `limit` remain.

`FairSemaphore` grants in request order, with the sorted sets of Redis in
Action's fair semaphore: a counter hands out tickets, `<key>:owner` ranks
entries by ticket and `<key>:timeout` holds each entry's expiry. A request
takes a ticket once and keeps it while it waits; it holds a slot once fewer
than `limit` live entries have lower tickets. A waiter refreshes its entry
on every poll, so a waiter that dies drops out of the queue after `ttl_ms`.
(The book retries with a new ticket each time; keeping the ticket is what
makes the order first come, first served.)

Both are leases: a holder that pauses past its TTL loses its slot without
knowing, and release or extend then raises LockNotOwnedError.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from typing import Any

import redis

from contend.impl.locks.errors import LockError
from contend.impl.locks.lease import ScriptedLease
from contend.impl.locks.validation import check_count, check_timeout
from contend.impl.roundtrip import LuaScript

# The server's clock in ms, as `now`: every script below starts with it.
_NOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""


class Semaphore(ScriptedLease):
    """Up to `limit` concurrent holders of `key`; one object is one holder."""

    fair = False
    kind = "semaphore"
    held_thing = "a slot"
    lost = "this holder's lease gone"

    # KEYS[1]: the holders' sorted set (member token, score expiry ms on the server's clock).
    # ARGV[1]: the token, ARGV[2]: limit, ARGV[3]: TTL in ms. 1 when a slot was taken, else 0.
    ACQUIRE = LuaScript(
        _NOW
        + """
    redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
    if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
        redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
        local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
        redis.call('PEXPIREAT', KEYS[1], last[2])
        return 1
    end
    return 0
    """
    )
    # KEYS[1]: the holders' sorted set. ARGV[1]: the token. 1 when its live lease was removed, else 0.
    RELEASE = LuaScript(
        _NOW
        + """
    redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
    return redis.call('ZREM', KEYS[1], ARGV[1])
    """
    )
    # KEYS[1]: the holders' sorted set. ARGV[1]: the token, ARGV[2]: the new TTL in ms.
    # 1 when its live lease was reset to expire ARGV[2] ms from now, else 0.
    EXTEND = LuaScript(
        _NOW
        + """
    redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
    if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
        return 0
    end
    redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[2]), ARGV[1])
    local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
    redis.call('PEXPIREAT', KEYS[1], last[2])
    return 1
    """
    )

    def __init__(self, client: redis.Redis, key: str, limit: int, ttl_ms: int, **kwargs: Any) -> None:
        super().__init__(client, key, ttl_ms, **kwargs)
        self.limit = check_count(limit, "limit")

    def try_acquire(self) -> bool:
        """One attempt, one round trip."""
        token = secrets.token_hex(16)
        if self.ACQUIRE(self.client, [self.key], [token, self.limit, self.ttl_ms]):
            self.token = token
            return True
        return False

    def holders(self) -> int:
        """Live leases right now (expired ones not yet purged are not counted)."""
        now_ms = _server_ms(self.client)
        return int(self.client.zcount(self.key, f"({now_ms}", "+inf"))

    def __repr__(self) -> str:
        state = "holding a slot" if self.token else "not holding"
        return f"<{type(self).__name__} {self.key!r} limit={self.limit} ttl={self.ttl_ms}ms {state}>"


class FairSemaphore(Semaphore):
    """A Semaphore that grants slots in the order requests arrived."""

    fair = True

    # Drop entries whose timeout passed from both sets.
    _PURGE = """
    local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)
    for _, member in ipairs(expired) do
        redis.call('ZREM', KEYS[1], member)
    end
    redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
    """
    # The three keys live as long as the latest entry.
    _KEEP_ALIVE = """
    local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
    if last[2] then
        for i = 1, 3 do
            redis.call('PEXPIREAT', KEYS[i], last[2])
        end
    end
    """
    # KEYS[1]: owner (token by ticket), KEYS[2]: timeout (token by expiry ms), KEYS[3]: the ticket counter.
    # ARGV[1]: the token, ARGV[2]: limit, ARGV[3]: TTL in ms, ARGV[4]: 1 to stay queued if not granted.
    # 1 when granted at once, else 0.
    ENQUEUE = LuaScript(
        _NOW
        + _PURGE
        + """
    local ticket = redis.call('INCR', KEYS[3])
    redis.call('ZADD', KEYS[1], ticket, ARGV[1])
    redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[1])
    local granted = redis.call('ZRANK', KEYS[1], ARGV[1]) < tonumber(ARGV[2])
    if not granted and ARGV[4] ~= '1' then
        redis.call('ZREM', KEYS[1], ARGV[1])
        redis.call('ZREM', KEYS[2], ARGV[1])
    end
    """
        + _KEEP_ALIVE
        + """
    if granted then return 1 end
    return 0
    """
    )
    # KEYS: owner, timeout, counter (as ENQUEUE). ARGV[1]: the token, ARGV[2]: limit, ARGV[3]: TTL in ms.
    # Our rank in the queue (granted when < limit), or -1: our entry expired (no poll for ttl_ms).
    POLL = LuaScript(
        _NOW
        + _PURGE
        + """
    local rank = redis.call('ZRANK', KEYS[1], ARGV[1])
    if not rank then return -1 end
    redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[1])
    """
        + _KEEP_ALIVE
        + """
    return rank
    """
    )
    # KEYS: owner, timeout, counter. ARGV[1]: the token. 1 when its live entry was removed, else 0.
    RELEASE = LuaScript(
        _NOW
        + _PURGE
        + """
    redis.call('ZREM', KEYS[2], ARGV[1])
    return redis.call('ZREM', KEYS[1], ARGV[1])
    """
    )
    # KEYS: owner, timeout, counter. ARGV[1]: the token, ARGV[2]: the new TTL in ms. 1 when reset, else 0.
    EXTEND = LuaScript(
        _NOW
        + _PURGE
        + """
    if not redis.call('ZSCORE', KEYS[2], ARGV[1]) then
        return 0
    end
    redis.call('ZADD', KEYS[2], 'XX', now + tonumber(ARGV[2]), ARGV[1])
    """
        + _KEEP_ALIVE
        + """
    return 1
    """
    )

    def __init__(self, client: redis.Redis, key: str, limit: int, ttl_ms: int, **kwargs: Any) -> None:
        super().__init__(client, key, limit, ttl_ms, **kwargs)
        self.keys = [f"{self.key}:owner", f"{self.key}:timeout", f"{self.key}:counter"]

    @property
    def script_keys(self) -> list[str]:
        return self.keys

    def try_acquire(self) -> bool:
        """Take a ticket; granted at once or nothing stays queued. One round trip."""
        token = secrets.token_hex(16)
        if self.ENQUEUE(self.client, self.keys, [token, self.limit, self.ttl_ms, 0]):
            self.token = token
            return True
        return False

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        """Queue for a slot and wait for our turn until `timeout` seconds (None: no limit)."""
        self._not_held("acquire")
        timeout = check_timeout(timeout)
        if not blocking:
            return self.try_acquire()
        holder = secrets.token_hex(16)
        if self.ENQUEUE(self.client, self.keys, [holder, self.limit, self.ttl_ms, 1]):
            self.token = holder
            return True
        deadline = None if timeout is None else time.monotonic() + timeout
        # The head of the line polls often, those behind it less; all well within the TTL,
        # since an entry not refreshed for ttl_ms drops out of the line.
        slowest = min(self.max_retry_interval, self.ttl_ms / 4000)
        try:
            while True:
                rank = int(self.POLL(self.client, self.keys, [holder, self.limit, self.ttl_ms]))
                if rank < 0:
                    raise LockError(
                        f"semaphore {self.key!r}: our place in the line expired while waiting "
                        f"(no poll for {self.ttl_ms} ms)"
                    )
                if rank < self.limit:
                    self.token = holder
                    return True
                wait = min(slowest, self.retry_interval / 2 * (rank - self.limit + 1))
                if deadline is not None:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        self.RELEASE(self.client, self.keys, [holder])
                        return False
                    wait = min(wait, left)
                time.sleep(wait)
        except BaseException:
            if self.token != holder:
                with contextlib.suppress(Exception):
                    self.RELEASE(self.client, self.keys, [holder])
            raise

    def holders(self) -> int:
        """Slots taken right now: the first `limit` live entries of the queue."""
        now_ms = _server_ms(self.client)
        return min(self.limit, int(self.client.zcount(self.keys[1], f"({now_ms}", "+inf")))


def _server_ms(client: redis.Redis) -> int:
    seconds, micros = client.time()
    return int(seconds) * 1000 + int(micros) // 1000


def factory(client: redis.Redis, key: str, ttl_ms: int, limit: int = 1, **kwargs: Any) -> Semaphore:
    """The lock-protocol factory (a mutex unless `limit` says otherwise)."""
    return Semaphore(client, key, limit, ttl_ms, **kwargs)


def fair_factory(client: redis.Redis, key: str, ttl_ms: int, limit: int = 1, **kwargs: Any) -> FairSemaphore:
    """The lock-protocol factory of the fair variant."""
    return FairSemaphore(client, key, limit, ttl_ms, **kwargs)
