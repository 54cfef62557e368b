"""Seed 001: `SET key "true" NX EX expires_in`, released by a plain DEL.

One round trip to take it and the TTL comes with it, so a crashed holder's
lock frees itself. The post's TTL is in seconds (EX); here it is sent as PX so
tests can use leases shorter than a second.

Known flaw, kept on purpose: release is `DEL key` whoever holds it. A holder
that outlives its TTL (slow work, a GC pause) deletes the lock of the client
that took it after the expiry, and a third client can then enter beside that
one. The value is always "true", so there is nothing to tell holders apart.
"""

from __future__ import annotations

from typing import Any

import redis

from contend.impl.locks.polling import PollingLock
from contend.impl.locks.validation import check_key, check_ttl_ms, check_ttl_seconds, seconds_to_ms


class SetNxExLock(PollingLock):
    """The post's `if redis.set(key, "true", nx: true, ex: expires_in) ... redis.del(key)`."""

    def __init__(self, client: redis.Redis, key: str, expires_in: float = 2) -> None:
        self.client = client
        self.key = check_key(key)
        self.ttl_ms = seconds_to_ms(check_ttl_seconds(expires_in, "expires_in"), "expires_in")
        self.held = False

    def try_acquire(self) -> bool:
        """One SET NX with the TTL: True if it was set."""
        self.held = bool(self.client.set(self.key, "true", nx=True, px=self.ttl_ms))
        return self.held

    def _drop(self) -> None:
        """DEL the key (whoever holds it by now)."""
        self.client.delete(self.key)


def factory(client: redis.Redis, key: str, ttl_ms: int, **kwargs: Any) -> SetNxExLock:
    """The lock-protocol factory."""
    return SetNxExLock(client, key, check_ttl_ms(ttl_ms) / 1000, **kwargs)
