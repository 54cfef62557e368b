"""pottery's `Redlock` (pottery/redlock.py), with one master and with three.

What it claims: "This algorithm safely and reliably provides a
mutually-exclusive locking primitive to protect a resource shared across
threads, processes, and even machines, without a single point of failure"
(Redlock: `SET NX PX` with a random value on every master, held when a
majority answered within the lease's validity; released with a Lua script
that checks the value). Its README advises "to instantiate a new `Redlock`
object every time you need to protect your resource and to not share `Redlock`
instances". No fencing token (pottery's NextID is a separate primitive).
contend takes it to claim mutual exclusion, safe release, crash liveness
(`auto_release_time`) and clock-skew safety.

Mapping: `ttl_ms` → `auto_release_time` in seconds, exactly (pottery sends
`int(t * 1000)` ms, which truncates, so the seconds are nudged up).
`acquire(blocking, timeout)` → `acquire(blocking=..., timeout=...)` with
`timeout=-1` (pottery's "forever") for None; between tries pottery sleeps a
random 0-0.2 s (its own back-off). `release()` → `release()`
(ReleaseUnlockedLock on a lost lease). No `extend`: pottery's extends the
lease by its own `auto_release_time` only, at most `num_extensions` times, so
contend's extend(ttl_ms) has no counterpart. With three masters, the second
and third are other embedded servers; every lock object gets connections of
its own to them, and the masters hash by rank so that pottery (which keeps them
in a frozenset) contacts them in the same order on every run. pottery sends
each master's command from a worker thread of a thread pool; under contend's
scheduler that work runs in the client's own thread, one master after the other.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import redis
from pottery import Redlock  # type: ignore[import-not-found,import-untyped]

from contend.adapters.fidelity import lease_probe
from contend.adapters.units import check_lease, seconds_truncated_to


class PotteryRedlock:
    """pottery's Redlock behind contend's lock protocol."""

    def __init__(self, masters: set[redis.Redis], key: str, ttl_ms: int) -> None:
        check_lease(key, ttl_ms)
        self.lock = Redlock(key=key, masters=masters, auto_release_time=seconds_truncated_to(ttl_ms))

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        if not blocking:
            return bool(self.lock.acquire(blocking=False))
        return bool(self.lock.acquire(blocking=True, timeout=-1 if timeout is None else timeout))

    def release(self) -> None:
        self.lock.release()


class Master(redis.Redis):
    """A Redis client whose hash is its rank among the masters.

    pottery keeps its masters in a frozenset and contacts them in its
    iteration order; with id-based hashes that order changes from run to run,
    and a replayed schedule would send its round trips to other servers. Ranks
    0, 1, 2 iterate in that order: the client's own server first.
    """

    def __init__(self, rank: int, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.rank = rank

    def __hash__(self) -> int:
        return self.rank

    def __eq__(self, other: object) -> bool:
        return self is other


def factory(client: redis.Redis, key: str, ttl_ms: int) -> PotteryRedlock:
    """The lock-protocol factory: Redlock on one master, the client's server."""
    return PotteryRedlock({client}, key, ttl_ms)


def three_masters(other_urls: Sequence[str]) -> Callable[[redis.Redis, str, int], PotteryRedlock]:
    """A lock-protocol factory for Redlock on three masters: the client's server and two others."""
    if len(other_urls) != 2:
        raise ValueError(f"three masters need two other servers, got {len(other_urls)}")
    factory = over_masters(other_urls)
    factory.__name__ = "three_masters"
    return factory


def over_masters(other_urls: Sequence[str]) -> Callable[[redis.Redis, str, int], PotteryRedlock]:
    """A lock-protocol factory for Redlock on the client's server and the servers at `other_urls`."""

    def factory(client: redis.Redis, key: str, ttl_ms: int) -> PotteryRedlock:
        masters: set[redis.Redis] = {Master(0, connection_pool=client.connection_pool)}
        for rank, url in enumerate(other_urls, 1):
            pool = redis.ConnectionPool.from_url(url, socket_connect_timeout=5)
            masters.add(Master(rank, connection_pool=pool))
        return PotteryRedlock(masters, key, ttl_ms)

    factory.__name__ = f"pottery_over_{1 + len(other_urls)}_masters"
    return factory


FIDELITY = "auto_release_time is seconds sent as int(t * 1000) ms, and the seconds given truncate back to ttl_ms exactly"


def fidelity(client: redis.Redis, key: str) -> str:
    """What the library left on the server for a lease taken through the adapter."""
    return lease_probe(factory, client, key, 1501, f"redlock:{key}")
