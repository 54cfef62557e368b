"""KNOWN-BAD: seed 004's first SETNX lock: SETNX an expiry time; on an expired lock, DEL then SETNX.

1. SETNX key <now + expire>: set means locked.
2. Else GET the value; if it is in the past the holder is presumed dead:
   DEL the key and SETNX again.
3. Release: DEL.

Known flaws, kept on purpose (the post walks through the first):

* Two clients that both find the lock expired both DEL and SETNX. If C's
  DEL+SETNX lands before B's DEL, B deletes C's fresh lock and SETNXes its
  own: B and C both hold the lock.
* Release is a plain DEL: a holder that outlived its expiry deletes the lock
  of whoever took it next.
* Expiry is judged by each client's wall clock (injectable `clock`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import redis

from contend.impl.locks import clock as clock_module
from contend.impl.locks.polling import PollingLock
from contend.impl.locks.validation import check_key, check_ttl_ms


class SetnxDelLock(PollingLock):
    """SETNX <expiry>; an expired holder is removed by DEL before a second SETNX."""

    def __init__(
        self,
        client: redis.Redis,
        key: str,
        ttl_ms: int,
        *,
        clock: Callable[[], float] = clock_module.wall_clock,
    ) -> None:
        self.client = client
        self.key = check_key(key)
        self.ttl_ms = check_ttl_ms(ttl_ms)
        self.clock = clock
        self.held = False

    def try_acquire(self) -> bool:
        """SETNX; else GET, and if expired DEL and SETNX again."""
        if self._setnx():
            return True
        old = self.client.get(self.key)
        if old is not None and float(old) < self.clock():
            self.client.delete(self.key)
            return self._setnx()
        return False

    def _setnx(self) -> bool:
        self.held = bool(self.client.setnx(self.key, repr(self.clock() + self.ttl_ms / 1000)))
        return self.held

    def _drop(self) -> None:
        """DEL the key (whoever holds it by now)."""
        self.client.delete(self.key)


def factory(
    client: redis.Redis,
    key: str,
    ttl_ms: int,
    *,
    clock: Callable[[], float] = clock_module.wall_clock,
    **kwargs: Any,
) -> SetnxDelLock:
    """The lock-protocol factory; `clock` is the client's wall clock (skew it to test)."""
    return SetnxDelLock(client, key, ttl_ms, clock=clock, **kwargs)
