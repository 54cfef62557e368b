"""The token lease plus a fencing token, and a resource that refuses stale writes.

`FencedLock` acquires with one script: `SET key token NX PX ttl` and, only if
that set the key, `INCR <key>:fence`; the counter's new value is the
`fencing_token`. Every grant of the lock gets a larger token than any grant
before it, because both happen in one atomic step.

A lease cannot stop a holder that pauses past its TTL (a GC pause, a stalled
VM) from carrying on as if it still held the lock. `FencedResource` is the
other half: a store that keeps the highest token it has seen and refuses a
write carrying a lower one, so the paused holder's late write is rejected
after its successor has written.

The counter key never expires: tokens must keep growing for the life of the
lock name. For Redis Cluster, give the key a hash tag (`{name}`) so the lock
and its counter share a slot.
"""

from __future__ import annotations

import secrets
from typing import Any

import redis

from contend.impl.locks.errors import StaleFencingTokenError
from contend.impl.locks.token import TokenLock
from contend.impl.locks.validation import check_key
from contend.impl.roundtrip import LuaScript


class FencedLock(TokenLock):
    """A TokenLock whose every grant carries a strictly increasing `fencing_token`."""

    # KEYS[1]: the lock key, KEYS[2]: its fence counter. ARGV[1]: the token, ARGV[2]: the TTL in ms.
    # The new fencing token (INCR of the counter) when the lease was taken, else 0.
    ACQUIRE = LuaScript(
        """
    if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
        return redis.call('INCR', KEYS[2])
    end
    return 0
    """
    )

    def __init__(self, client: redis.Redis, key: str, ttl_ms: int, **kwargs: Any) -> None:
        super().__init__(client, key, ttl_ms, **kwargs)
        self.fence_key = f"{self.key}:fence"
        self.fencing_token: int | None = None

    def try_acquire(self) -> bool:
        """One attempt, one round trip: the lease and its fencing token together."""
        token = secrets.token_hex(16)
        fencing = int(self.ACQUIRE(self.client, [self.key, self.fence_key], [token, self.ttl_ms]))
        if fencing:
            self.token = token
            self.fencing_token = fencing
            return True
        return False

    def __repr__(self) -> str:
        state = f"held, fencing token {self.fencing_token}" if self.token else "not held"
        return f"<FencedLock {self.key!r} ttl={self.ttl_ms}ms {state}>"


class FencedResource:
    """A value in Redis that accepts a write only with a fencing token >= the highest seen."""

    # KEYS[1]: the resource hash (fields token, value). ARGV[1]: the writer's fencing token,
    # ARGV[2]: the value. {1, token} when written, {0, highest token seen} when refused.
    WRITE = LuaScript(
        """
    local highest = tonumber(redis.call('HGET', KEYS[1], 'token') or '0')
    local token = tonumber(ARGV[1])
    if token < highest then
        return {0, highest}
    end
    redis.call('HSET', KEYS[1], 'token', ARGV[1], 'value', ARGV[2])
    return {1, token}
    """
    )

    def __init__(self, client: redis.Redis, key: str) -> None:
        self.client = client
        self.key = check_key(key)

    def write(self, token: int, value: str | bytes | int | float) -> None:
        """Store `value`; StaleFencingTokenError if a write with a higher token came first."""
        if isinstance(token, bool) or not isinstance(token, int) or token < 1:
            raise ValueError(f"fencing token must be a whole number >= 1, got {token!r}")
        accepted, highest = self.WRITE(self.client, [self.key], [token, value])
        if not accepted:
            raise StaleFencingTokenError(
                f"resource {self.key!r}: write with fencing token {token} refused; "
                f"token {highest} already wrote (the lease behind token {token} had expired)"
            )

    def read(self) -> bytes | str | None:
        """The last accepted value, or None."""
        value: bytes | str | None = self.client.hget(self.key, "value")
        return value

    def highest_token(self) -> int:
        """The highest fencing token a write has carried (0 before any)."""
        return int(self.client.hget(self.key, "token") or 0)


def factory(client: redis.Redis, key: str, ttl_ms: int, **kwargs: Any) -> FencedLock:
    """The lock-protocol factory."""
    return FencedLock(client, key, ttl_ms, **kwargs)
