"""redlock-py's `Redlock` (redlock/__init__.py, the `redlock-py` distribution), on one master.

What it claims: its README calls it a "Redis locking mechanism" after antirez's Redlock: `SET
NX PX` with a random value on every server, held when a majority answered and some validity
is left (`validity = ttl - elapsed - drift`, read off `time.time()`); `unlock` deletes only a
key holding that value (Lua). `lock(resource, ttl)` returns a Lock (validity, resource, key)
or False after `retry_count` tries (3, `retry_delay` 0.2 s apart). No extend, no fencing token.

Mapping: `ttl_ms` → `ttl` in milliseconds, unchanged (it asserts an int). `acquire(blocking=
False)` → one `lock()` with `retry_count=1`; a blocking acquire without a timeout calls `lock()`
(its own tries and delays) until one succeeds; with `timeout=T`, one-try `lock()`s until T has
passed since the call (one default `lock()` takes 0.6 s when the lock is held: three tries 0.2 s
apart, which alone overran a 0.2 s timeout). `release()` → `unlock(lock)`. The
Redlock object is built over the client itself (it takes client objects as well as URLs).
"""

from __future__ import annotations

from typing import Any

import redis
import redlock  # type: ignore[import-not-found,import-untyped]

from contend.adapters.fidelity import lease_probe
from contend.adapters.polling import poll
from contend.adapters.units import check_lease

#: A non-blocking try is one `lock()` with one try; redlock-py sleeps `retry_delay` after a failed
#: try even when it is the last, so that try's delay is 1 ms instead of its default 0.2 s (0 would
#: mean the default).
ONCE_DELAY = 0.001
FIDELITY = (
    "ttl is redlock-py's own unit (int milliseconds), passed unchanged; a blocking acquire without a timeout "
    "keeps its tries and delays, one with a timeout makes single tries until it runs out; a single try "
    "sleeps 1 ms after failing"
)


class RedlockPyLock:
    """redlock-py's Redlock behind contend's lock protocol."""

    def __init__(self, client: redis.Redis, key: str, ttl_ms: int) -> None:
        check_lease(key, ttl_ms)
        self.key, self.ttl_ms = key, ttl_ms
        self.once = redlock.Redlock([client], retry_count=1, retry_delay=ONCE_DELAY)
        self.retrying = redlock.Redlock([client])  # retry_count 3, retry_delay 0.2 s: its defaults
        self.held: Any = None

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        def attempt(manager: Any) -> bool:
            got = manager.lock(self.key, self.ttl_ms)
            if got:
                self.held = got
            return bool(got)

        if not blocking:
            return attempt(self.once)
        if timeout is not None:
            return poll(lambda: attempt(self.once), True, timeout)
        return poll(lambda: attempt(self.retrying), True, None, interval=0.0)

    def release(self) -> None:
        if self.held is not None:
            held, self.held = self.held, None
            self.once.unlock(held)


def factory(client: redis.Redis, key: str, ttl_ms: int) -> RedlockPyLock:
    """The lock-protocol factory."""
    return RedlockPyLock(client, key, ttl_ms)


def fidelity(client: redis.Redis, key: str) -> str:
    """What the library left on the server for a lease taken through the adapter."""
    return lease_probe(factory, client, key, 1500)
