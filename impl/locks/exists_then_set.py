"""KNOWN-BAD: seed 001's "ダメな例": EXISTS, then SET, then DEL when done.

The check and the flag are two round trips. Two clients that both run EXISTS
before either runs SET both see the key absent and both enter. The post's code
also sets no TTL, so a holder that crashes before its DEL leaves a lock nobody
can ever take. `factory` validates `ttl_ms` like every lock but, faithful to
the post, does not use it.
"""

from __future__ import annotations

from typing import Any

import redis

from impl.locks.errors import LockError, LockNotOwnedError
from impl.locks.polling import poll_acquire
from impl.locks.validation import check_key, check_ttl_ms


class ExistsThenSetLock:
    """`if redis.exists?(key) ... else redis.set(key, "true") ... redis.del(key)`."""

    def __init__(self, client: redis.Redis, key: str) -> None:
        self.client = client
        self.key = check_key(key)
        self.held = False

    def try_acquire(self) -> bool:
        """EXISTS; if absent, SET (a second round trip): True if this client set it."""
        if self.client.exists(self.key):
            return False
        self.client.set(self.key, "true")
        self.held = True
        return True

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        """Take the lock; with `blocking`, retry until `timeout` seconds (None: no limit)."""
        if self.held:
            raise LockError(f"lock {self.key!r}: acquire() while this object already holds it")
        return poll_acquire(self.try_acquire, blocking=blocking, timeout=timeout)

    def release(self) -> None:
        """DEL the key; LockNotOwnedError if this object never took it."""
        if not self.held:
            raise LockNotOwnedError(f"lock {self.key!r}: release() without a successful acquire()")
        self.held = False
        self.client.delete(self.key)


def factory(client: redis.Redis, key: str, ttl_ms: int, **kwargs: Any) -> ExistsThenSetLock:
    """The lock-protocol factory; `ttl_ms` is checked, then ignored, as the post sets no TTL."""
    check_ttl_ms(ttl_ms)
    return ExistsThenSetLock(client, key, **kwargs)
