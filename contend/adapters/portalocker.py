"""portalocker's `RedisLock` (portalocker/redis.py): a lock held by a Pub/Sub subscription.

What it claims: "`RedisLock` keeps the lock in a *subscription* rather than in a key. A holder
subscribes to the lock channel and a background thread keeps reading from it, so ownership is
a property of a live connection. Redis releases ownership when it removes the subscription,
without waiting for a key to expire." An acquire subscribes, counts the channel's subscribers
and asks the others who holds it (PUBLISH, answers within `unavailable_timeout`); competing
writers elect one winner by sorting holder ids; a release unsubscribes. No key, no TTL; a
fencing token only with `fencing=True`.

Mapping: contend's `ttl_ms` has no counterpart (there is no lease: a holder keeps the lock as
long as its subscription lives), so crash liveness is not claimed: contend's crash ends the
holder's calls, not its process, and the subscription's own connection and reader thread live
on, as they would in a process that caught the exception. `acquire(blocking=False)` →
`acquire(timeout=0, fail_when_locked=True)` ("exactly one attempt"); a blocking
`acquire(timeout)` → `acquire(timeout=timeout)` (None: a day). AlreadyLocked and LockException
are a False. `release()` → `release()`.
"""

from __future__ import annotations

import redis
from portalocker import RedisLock, exceptions  # type: ignore[import-not-found,import-untyped]

from contend.adapters.units import check_lease

FIDELITY = "no TTL is passed because portalocker has none (ttl_ms only checked); timeout=0 is its documented single attempt"
FOREVER = 24 * 3600.0


class PortalockerLock:
    """portalocker's RedisLock behind contend's lock protocol."""

    def __init__(self, client: redis.Redis, key: str, ttl_ms: int) -> None:
        check_lease(key, ttl_ms)
        self.lock = RedisLock(key, connection=client, interrupt_on_lost=False)

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        try:
            if not blocking:
                self.lock.acquire(timeout=0, fail_when_locked=True)
            else:
                self.lock.acquire(timeout=FOREVER if timeout is None else timeout, fail_when_locked=False)
        except (exceptions.AlreadyLocked, exceptions.LockException):
            return False
        return True

    def release(self) -> None:
        self.lock.release()


def factory(client: redis.Redis, key: str, ttl_ms: int) -> PortalockerLock:
    """The lock-protocol factory."""
    return PortalockerLock(client, key, ttl_ms)


def fidelity(client: redis.Redis, key: str) -> str:
    first, second = factory(client, key, 1000), factory(client, key, 1000)
    assert first.acquire(blocking=False), "a free lock was not acquired"
    try:
        assert not second.acquire(blocking=False), "a held lock was acquired again"
    finally:
        first.release()
    assert second.acquire(blocking=False), "a released lock could not be taken"
    second.release()
    return "timeout=0 made one attempt each: granted, refused while held, granted after the release"
