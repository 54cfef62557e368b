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

from contend.impl.locks.polling import PollingLock
from contend.impl.locks.validation import check_key, check_ttl_ms


class ExistsThenSetLock(PollingLock):
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

    def _drop(self) -> None:
        """DEL the key."""
        self.client.delete(self.key)


def factory(client: redis.Redis, key: str, ttl_ms: int, **kwargs: Any) -> ExistsThenSetLock:
    """The lock-protocol factory; `ttl_ms` is checked, then ignored, as the post sets no TTL."""
    check_ttl_ms(ttl_ms)
    return ExistsThenSetLock(client, key, **kwargs)
