"""`contend bench locks`: acquire+release cycles per second, against raw round trips.

Uncontended: one client takes and gives back a lock on its own key, as fast
as it can, in short slices alternating with slices of PING on another client,
so both see the same machine; the ratio is the median of the slices' ratios.
Contended: `clients` clients (each its own connection and thread) loop
acquire(blocking) + release on one key. Each row also shows the round trips
one uncontended cycle costs, counted on the wire.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis

from contend.benchmarks.rates import Rate, interleaved, measure_concurrent, raw_rates
from contend.impl.catalog import Implementation, family
from contend.servers.keyspace import Namespace
from contend.servers.tap import tap
from contend.servers.target import Target

TTL_MS = 10_000


@dataclass(frozen=True)
class LockFigures:
    name: str
    known_bad: bool
    round_trips: int
    one_client: Rate
    raw_alongside: Rate  # PING measured in the slices between the lock's
    ratio: float  # median over the slices of lock cycles / PINGs
    contended: Rate | None  # None when the implementation raised under contention
    #: What it raised under contention ("ExcType: message"), or "": a known-bad one may (its defect).
    contended_error: str = ""


@dataclass(frozen=True)
class LockBench:
    raw_one: Rate
    raw_many: Rate
    clients: int
    rows: list[LockFigures]


def lock_implementations() -> list[Implementation]:
    """Every catalog entry that follows the lock protocol (locks and semaphores)."""
    return family("lock") + family("semaphore")


def bench_locks(
    target: Target,
    run_ns: Namespace,
    *,
    seconds: float = 1.0,
    clients: int = 8,
    implementations: list[Implementation] | None = None,
    on_step: Callable[[str], None] = lambda s: None,
) -> LockBench:
    on_step("raw round trips")
    raw_one, raw_many = raw_rates(target, clients, seconds)
    rows = []
    for impl in implementations or lock_implementations():
        on_step(impl.name)
        rows.append(_bench_one(target, run_ns, impl, seconds, clients))
    return LockBench(raw_one, raw_many, clients, rows)


def _bench_one(
    target: Target, run_ns: Namespace, impl: Implementation, seconds: float, clients: int
) -> LockFigures:
    conns: list[redis.Redis] = [target.client() for _ in range(clients + 2)]
    try:
        ns = Namespace(run_ns.client, run_ns.child("bench", impl.name))
        counted = conns.pop()
        trips = tap(counted)
        probe = impl.factory(counted, ns.key("probe"), TTL_MS)
        _cycle(probe, 0)  # connect, load scripts
        trips.sent = 0
        _cycle(probe, 0)
        round_trips = trips.sent

        pinger = conns.pop()
        pinger.ping()
        lock = impl.factory(conns[0], ns.key("one"), TTL_MS)
        raw, one, ratio = interleaved(lambda i: pinger.ping(), functools.partial(_cycle, lock), seconds)

        key = ns.key("hot")
        locks = [impl.factory(c, key, TTL_MS) for c in conns]
        try:
            contended = measure_concurrent([functools.partial(_blocking_cycle, lk) for lk in locks], seconds)
        except Exception as exc:  # setnx_getset's SETNX retries run out under a hot loop: its livelock
            return LockFigures(
                impl.name, impl.known_bad, round_trips, one, raw, ratio, None, f"{type(exc).__name__}: {exc}"
            )
        return LockFigures(impl.name, impl.known_bad, round_trips, one, raw, ratio, contended)
    finally:
        ns.cleanup()
        for c in conns:
            c.close()


def _cycle(lock: Any, i: int) -> None:
    if not lock.acquire(blocking=False):
        raise RuntimeError(f"{lock!r}: an uncontended acquire failed")
    lock.release()


def _blocking_cycle(lock: Any, i: int) -> None:
    if not lock.acquire(blocking=True, timeout=30):
        raise RuntimeError(f"{lock!r}: acquire gave up after 30 s")
    lock.release()
