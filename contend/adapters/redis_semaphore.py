"""Redis-Semaphore's `Semaphore` (redis_semaphore/__init__.py of the `redis-semaphore`
distribution): a counting semaphore of tokens in a list.

What it claims: "A distributed semaphore and mutex built on Redis": `count` tokens in
`<namespace>:AVAILABLE`, taken with BLPOP (LPOP when not blocking; NotAvailable when none),
recorded with the server's time in `<namespace>:GRABBED`, given back by `release()`; with
`stale_client_timeout` (seconds), an acquire first gives back tokens grabbed longer ago than
that ("release_stale_locks"), so a crashed holder's token comes back. Tokens are the numbers
0..count-1, not a fresh value per grant. No fencing token, no extend.

Mapping: the semaphore protocol's `limit` → `count`, `key` → `namespace`, `ttl_ms` →
`stale_client_timeout` in seconds (a float, compared with floats). `acquire(blocking=False)`
→ `acquire()` of a non-blocking Semaphore; a blocking `acquire(timeout)` → `acquire(timeout)`
(BLPOP's seconds; None → 0, BLPOP's "for ever"; a timeout of 0 or less is a non-blocking try,
since 0 would wait for ever). NotAvailable is a False. `release()` → `release()` (False when
it holds nothing).
"""

from __future__ import annotations

import redis
import redis_semaphore  # type: ignore[import-not-found,import-untyped]

from contend.adapters.units import check_lease

FIDELITY = (
    "stale_client_timeout is seconds = ttl_ms / 1000 (floats, compared with floats); a timeout "
    "of 0 is never passed to BLPOP, where it would mean for ever"
)


class RedisSemaphore:
    """Redis-Semaphore behind contend's semaphore protocol."""

    def __init__(self, client: redis.Redis, key: str, ttl_ms: int, limit: int = 1) -> None:
        check_lease(key, ttl_ms)
        self.sem = redis_semaphore.Semaphore(
            client, count=limit, namespace=key, stale_client_timeout=ttl_ms / 1000
        )

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        waits = blocking and (timeout is None or timeout > 0)
        self.sem.blocking = waits
        try:
            self.sem.acquire(timeout=0 if timeout is None or not waits else timeout)
        except redis_semaphore.NotAvailable:
            return False
        return True

    def release(self) -> None:
        self.sem.release()


def factory(client: redis.Redis, key: str, ttl_ms: int, limit: int = 1) -> RedisSemaphore:
    """The semaphore-protocol factory."""
    return RedisSemaphore(client, key, ttl_ms, limit)


def fidelity(client: redis.Redis, key: str) -> str:
    sem = factory(client, key, 1500, limit=2)
    assert sem.sem.stale_client_timeout == 1.5, sem.sem.stale_client_timeout
    assert sem.acquire(blocking=False) and sem.acquire(blocking=False), "two slots of two not granted"
    third = sem.acquire(blocking=True, timeout=0)
    sem.release()
    sem.release()
    assert not third, "a third slot of two was granted"
    return "ttl_ms=1500 → stale_client_timeout=1.5 s; limit=2 → count=2; timeout=0 did not wait for ever"
