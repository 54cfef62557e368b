"""The correct single-instance lease: SET NX PX with a random token.

Acquire is `SET key token NX PX ttl`; release and extend are Lua scripts that
compare the token first, so a client whose lease expired can never delete or
prolong the lease of the client that holds the key now, and is told so with
LockNotOwnedError. A blocking acquire retries with jittered backoff until a
timeout measured on the monotonic clock. Each step is one round trip, sent
without redis-py's automatic retry (see `impl.locks.roundtrip`): a connection
error surfaces, and the outcome of that step is unknown.

What it does not give: protection for a holder that pauses longer than its TTL
(another client may then hold the lock too). `impl.locks.fenced` adds fencing
tokens for that.
"""

from __future__ import annotations

import secrets
from types import TracebackType
from typing import Any

import redis

from contend.impl.locks.errors import LockError, LockNotOwnedError, LockTimeoutError
from contend.impl.locks.polling import poll_acquire
from contend.impl.locks.validation import check_key, check_ttl_ms
from contend.impl.roundtrip import LuaScript, call


class TokenLock:
    """A lease on `key` for `ttl_ms` milliseconds. One object per holder; not thread-shared."""

    RELEASE = LuaScript(
        """
    if redis.call('GET', KEYS[1]) == ARGV[1] then
        return redis.call('DEL', KEYS[1])
    end
    return 0
    """
    )
    EXTEND = LuaScript(
        """
    if redis.call('GET', KEYS[1]) == ARGV[1] then
        return redis.call('PEXPIRE', KEYS[1], ARGV[2])
    end
    return 0
    """
    )

    def __init__(
        self,
        client: redis.Redis,
        key: str,
        ttl_ms: int,
        *,
        retry_interval: float = 0.005,
        max_retry_interval: float = 0.05,
    ) -> None:
        self.client = client
        self.key = check_key(key)
        self.ttl_ms = check_ttl_ms(ttl_ms)
        self.retry_interval = retry_interval
        self.max_retry_interval = max_retry_interval
        self.token: str | None = None

    def try_acquire(self) -> bool:
        """One attempt, one round trip."""
        token = secrets.token_hex(16)
        if call(self.client, "SET", self.key, token, "NX", "PX", self.ttl_ms) is not None:
            self.token = token
            return True
        return False

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        """Take the lease; with `blocking`, retry until `timeout` seconds (None: no limit)."""
        if self.token is not None:
            raise LockError(
                f"lock {self.key!r}: acquire() while this object already holds it; "
                "release() first or use a second lock object"
            )
        return poll_acquire(
            self.try_acquire,
            blocking=blocking,
            timeout=timeout,
            retry_interval=self.retry_interval,
            max_retry_interval=self.max_retry_interval,
        )

    def release(self) -> None:
        """Give the lease back; LockNotOwnedError if it is no longer ours."""
        token = self._held_token("release")
        self.token = None
        if not self.RELEASE(self.client, [self.key], [token]):
            raise LockNotOwnedError(
                f"lock {self.key!r}: release() found the lease gone or held by another "
                f"client (it expired after {self.ttl_ms} ms or was taken)"
            )

    def extend(self, ttl_ms: int | None = None) -> bool:
        """Reset the lease to `ttl_ms` (default: the lock's TTL); LockNotOwnedError if lost."""
        ttl = self.ttl_ms if ttl_ms is None else check_ttl_ms(ttl_ms)
        token = self._held_token("extend")
        if not self.EXTEND(self.client, [self.key], [token, ttl]):
            self.token = None
            raise LockNotOwnedError(
                f"lock {self.key!r}: extend() found the lease gone or held by another client"
            )
        return True

    def locked(self) -> bool:
        """Does anyone hold the key right now?"""
        return bool(self.client.exists(self.key))

    def _held_token(self, action: str) -> str:
        if self.token is None:
            raise LockNotOwnedError(f"lock {self.key!r}: {action}() on a lock this object does not hold")
        return self.token

    def __enter__(self) -> TokenLock:
        if not self.acquire():
            raise LockTimeoutError(f"lock {self.key!r}: could not acquire")
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    def __repr__(self) -> str:
        state = "held" if self.token else "not held"
        return f"<{type(self).__name__} {self.key!r} ttl={self.ttl_ms}ms {state}>"


def factory(client: redis.Redis, key: str, ttl_ms: int, **kwargs: Any) -> TokenLock:
    """The lock-protocol factory."""
    return TokenLock(client, key, ttl_ms, **kwargs)
