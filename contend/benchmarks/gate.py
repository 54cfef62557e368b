"""What the scheduler's gate costs per round trip, for synchronous and for asyncio clients.

Four PING loops against the same server, in alternating slices so the machine's noise
falls on all of them alike: a redis-py client alone, the same under the scheduler
(each PING one step the controller grants), a redis.asyncio client alone, and the
same under the scheduler (contend.schedule.async_gate). The figures are seconds per
round trip and the ratios: each gated loop to its raw one, and the async gate's
overhead (gated minus raw) to the sync gate's.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import redis
import redis.asyncio

from contend.schedule.scheduler import Scheduler
from contend.servers.target import Target

#: Round trips per slice, and slices per kind (alternating).
PER_SLICE = 400
SLICES = 5


@dataclass
class GateBench:
    """Median seconds per round trip of each loop, over alternating slices."""

    sync_raw: list[float] = field(default_factory=list)
    sync_gated: list[float] = field(default_factory=list)
    async_raw: list[float] = field(default_factory=list)
    async_gated: list[float] = field(default_factory=list)

    def median(self, kind: str) -> float:
        values: list[float] = getattr(self, kind)
        return statistics.median(values)

    @property
    def sync_overhead(self) -> float:
        """Seconds the sync gate adds to one round trip."""
        return self.median("sync_gated") - self.median("sync_raw")

    @property
    def async_overhead(self) -> float:
        return self.median("async_gated") - self.median("async_raw")

    def ratios(self) -> dict[str, float]:
        return {
            "sync gated / sync raw": self.median("sync_gated") / self.median("sync_raw"),
            "async gated / async raw": self.median("async_gated") / self.median("async_raw"),
            "async gate overhead / sync gate overhead": self.async_overhead / self.sync_overhead
            if self.sync_overhead > 0
            else float("nan"),
        }


def bench_gate(
    target: Target,
    *,
    per_slice: int = PER_SLICE,
    slices: int = SLICES,
    on_step: Callable[[str], None] = lambda s: None,
) -> GateBench:
    """Measure the four loops, `slices` times each in turn, `per_slice` round trips a time."""
    result = GateBench()
    sync_client = target.client()
    sync_client.ping()
    try:
        for i in range(slices):
            on_step(f"slice {i + 1} of {slices}")
            result.sync_raw.append(_timed(lambda: _pings(sync_client, per_slice)) / per_slice)
            result.sync_gated.append(_sync_gated(target, per_slice) / per_slice)
            result.async_raw.append(asyncio.run(_async_raw(target.url, per_slice)) / per_slice)
            result.async_gated.append(_async_gated(target, per_slice) / per_slice)
    finally:
        sync_client.close()
    return result


def _timed(run: Callable[[], object]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def _pings(client: redis.Redis, n: int) -> None:
    for _ in range(n):
        client.ping()


async def _ping_loop(conn: redis.asyncio.Redis, n: int) -> None:
    for _ in range(n):
        await conn.ping()


async def _async_raw(url: str, n: int) -> float:
    """Seconds for n PINGs of a connected redis.asyncio client (the connection is not timed)."""
    conn = redis.asyncio.Redis.from_url(url)
    try:
        await conn.ping()
        start = time.perf_counter()
        await _ping_loop(conn, n)
        return time.perf_counter() - start
    finally:
        await conn.aclose()


def _sync_gated(target: Target, n: int) -> float:
    client = target.client()
    client.ping()
    try:
        with Scheduler(clock=target.clock) as s:
            s.add_client(connection=client)
            s.start(0, lambda: _pings(client, n), "pings")
            return _timed(lambda: _step_to_end(s))
    finally:
        client.close()


def _async_gated(target: Target, n: int) -> float:
    with Scheduler(clock=target.clock) as s:
        conn = redis.asyncio.Redis.from_url(target.url)
        s.add_client(connection=conn)
        s.start(0, lambda: conn.ping(), "connect")  # the connection and its handshake: not timed
        _step_to_end(s)
        s.start(0, lambda: _ping_loop(conn, n), "pings")
        return _timed(lambda: _step_to_end(s))


def _step_to_end(s: Scheduler) -> None:
    while not s.idle(0):
        s.step(0)
