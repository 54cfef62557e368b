"""The correct single-instance lease: SET NX PX with a random token.

Acquire is `SET key token NX PX ttl`; release and extend are Lua scripts that
compare the token first, so a client whose lease expired can never delete or
prolong the lease of the client that holds the key now. A blocking acquire
retries until a timeout measured on the monotonic clock.

What it does not give: protection for a holder that pauses longer than its TTL
(another client may then hold the lock too). `impl.locks.fenced` adds fencing
tokens for that.
"""

from __future__ import annotations

import random
import secrets
import time
from types import TracebackType
from typing import Any

import redis

from impl.locks.errors import LockError, LockNotOwnedError, LockTimeoutError
from impl.locks.validation import check_key, check_timeout, check_ttl_ms


class TokenLock:
    """A lease on `key` for `ttl_ms` milliseconds. One object per holder; not thread-shared."""

    RELEASE = """
    if redis.call('GET', KEYS[1]) == ARGV[1] then
        return redis.call('DEL', KEYS[1])
    end
    return 0
    """
    EXTEND = """
    if redis.call('GET', KEYS[1]) == ARGV[1] then
        return redis.call('PEXPIRE', KEYS[1], ARGV[2])
    end
    return 0
    """

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
        self._release = client.register_script(self.RELEASE)
        self._extend = client.register_script(self.EXTEND)

    def try_acquire(self) -> bool:
        """One attempt, one round trip."""
        token = secrets.token_hex(16)
        if self.client.set(self.key, token, nx=True, px=self.ttl_ms):
            self.token = token
            return True
        return False

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        """Take the lease; with `blocking`, retry until `timeout` seconds (None: no limit)."""
        timeout = check_timeout(timeout)
        if self.token is not None:
            raise LockError(
                f"lock {self.key!r}: acquire() while this object already holds it; "
                "release() first or use a second lock object"
            )
        deadline = None if timeout is None else time.monotonic() + timeout
        pause = self.retry_interval
        while True:
            if self.try_acquire():
                return True
            if not blocking:
                return False
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                return False
            wait = random.uniform(pause / 2, pause)
            if deadline is not None:
                wait = min(wait, deadline - now)
            time.sleep(wait)
            pause = min(pause * 2, self.max_retry_interval)

    def release(self) -> None:
        """Give the lease back; LockNotOwnedError if it is no longer ours."""
        token = self._held_token("release")
        self.token = None
        if not self._release(keys=[self.key], args=[token]):
            raise LockNotOwnedError(
                f"lock {self.key!r}: release() found the lease gone or held by another "
                f"client (it expired after {self.ttl_ms} ms or was taken)"
            )

    def extend(self, ttl_ms: int | None = None) -> bool:
        """Reset the lease to `ttl_ms` (default: the lock's TTL); LockNotOwnedError if lost."""
        ttl = self.ttl_ms if ttl_ms is None else check_ttl_ms(ttl_ms)
        token = self._held_token("extend")
        if not self._extend(keys=[self.key], args=[token, ttl]):
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
        return f"<TokenLock {self.key!r} ttl={self.ttl_ms}ms {state}>"


def factory(client: redis.Redis, key: str, ttl_ms: int, **kwargs: Any) -> TokenLock:
    """The lock-protocol factory."""
    return TokenLock(client, key, ttl_ms, **kwargs)
