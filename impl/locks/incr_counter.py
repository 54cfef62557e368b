"""Seed 001's counter lock: MULTI INCR key, EXPIRE key; whoever gets 1 wins.

Each attempt is one MULTI/EXEC round trip, so the TTL is set with the INCR.
The post likes that the counter shows how hard clients are pressing. Released
by DEL, after which the next INCR gets 1 again. (EXPIRE in the post; PEXPIRE
here, so tests can use leases shorter than a second.)

Known flaws, kept on purpose:

* Every losing attempt runs EXPIRE too and pushes the TTL out again. Waiters
  that poll more often than the TTL keep a crashed holder's lock alive for as
  long as they keep polling: the TTL never frees it.
* Release is a plain DEL: a holder that outlived its TTL deletes the lock of
  whoever took it next.
"""

from __future__ import annotations

from typing import Any

import redis

from contend.impl.locks.polling import PollingLock
from contend.impl.locks.validation import check_key, check_ttl_ms, check_ttl_seconds, seconds_to_ms


class CounterLock(PollingLock):
    """The post's `count_next`: the caller whose INCR returns 1 holds the lock."""

    def __init__(self, client: redis.Redis, key: str, expires_in: float = 2) -> None:
        self.client = client
        self.key = check_key(key)
        self.ttl_ms = seconds_to_ms(check_ttl_seconds(expires_in, "expires_in"), "expires_in")
        self.held = False

    def count_next(self) -> int:
        """MULTI; INCR key; PEXPIRE key ttl; EXEC: the counter after this press."""
        with self.client.pipeline(transaction=True) as pipe:
            pipe.incr(self.key)
            pipe.pexpire(self.key, self.ttl_ms)
            count, _ = pipe.execute()
        return int(count)

    def try_acquire(self) -> bool:
        """One press: True if it got 1."""
        self.held = self.count_next() == 1
        return self.held

    def _drop(self) -> None:
        """DEL the counter (whoever holds it by now)."""
        self.client.delete(self.key)


def factory(client: redis.Redis, key: str, ttl_ms: int, **kwargs: Any) -> CounterLock:
    """The lock-protocol factory."""
    return CounterLock(client, key, check_ttl_ms(ttl_ms) / 1000, **kwargs)
