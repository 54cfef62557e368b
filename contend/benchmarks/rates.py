"""Throughput measured as a ratio to a baseline taken in the same run.

Machines here are shared and noisy, so no absolute figure means much on its
own: every rate is printed beside the raw round-trip rate of a redis-py client
against the same server, measured moments before.
"""

from __future__ import annotations

import contextlib
import functools
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import redis

if TYPE_CHECKING:
    from contend.servers.target import Target

SLICES = 6  # alternating slices per interleaved measurement


@dataclass(frozen=True)
class Rate:
    """Operations per second over a timed window."""

    ops: int
    seconds: float

    @property
    def per_second(self) -> float:
        return self.ops / self.seconds if self.seconds else 0.0


def measure_rate(op: Callable[[int], object], seconds: float, warmup: int = 50) -> Rate:
    """Call op(i) for i = 0, 1, ... for about `seconds`; the first `warmup` calls are not timed."""
    for i in range(warmup):
        op(-1 - i)
    count = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        for _ in range(64):
            op(count)
            count += 1
        now = time.perf_counter()
        if now >= deadline:
            return Rate(count, now - start)


def measure_concurrent(ops: Sequence[Callable[[int], object]], seconds: float, warmup: int = 20) -> Rate:
    """Run each op in its own thread for about `seconds`, started together; the total rate."""
    counts = [0] * len(ops)
    errors: list[BaseException] = []
    ready = threading.Barrier(len(ops) + 1)
    stop = threading.Event()

    def worker(k: int, op: Callable[[int], object]) -> None:
        try:
            for i in range(warmup):
                op(-1 - i)
            ready.wait()
            n = 0
            while not stop.is_set():
                op(n)
                n += 1
            counts[k] = n
        except BaseException as exc:
            errors.append(exc)
            ready.abort()

    threads = [threading.Thread(target=worker, args=(k, op), daemon=True) for k, op in enumerate(ops)]
    for t in threads:
        t.start()
    with contextlib.suppress(threading.BrokenBarrierError):
        ready.wait()
    start = time.perf_counter()
    stop.wait(seconds)
    stop.set()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    if errors:
        raise errors[0]
    return Rate(sum(counts), elapsed)


def median_seconds(run: Callable[[], object], repeat: int = 5, budget: float = 2.0) -> float:
    """The median wall time of up to `repeat` calls; stops early once `budget` seconds are spent."""
    times: list[float] = []
    while len(times) < repeat and sum(times) < budget:
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def interleaved(
    base: Callable[[int], object], op: Callable[[int], object], seconds: float
) -> tuple[Rate, Rate, float]:
    """Alternate slices of `base` and `op` for `seconds` in all: both rates and the median slice ratio."""
    pairs = []
    for _ in range(SLICES):
        b = measure_rate(base, seconds / (2 * SLICES), warmup=10)
        o = measure_rate(op, seconds / (2 * SLICES), warmup=10)
        pairs.append((b, o))
    ratio = statistics.median(o.per_second / b.per_second for b, o in pairs)
    total = lambda rates: Rate(sum(r.ops for r in rates), sum(r.seconds for r in rates))  # noqa: E731
    return total([b for b, _ in pairs]), total([o for _, o in pairs]), ratio


def raw_rates(
    target: Target, clients: int, seconds: float, command: tuple[Any, ...] = ("PING",)
) -> tuple[Rate, Rate]:
    """The baseline: `command` in a loop on one client, then on `clients` clients at once."""
    conns = [target.client() for _ in range(clients)]
    try:
        one = measure_rate(lambda i: conns[0].execute_command(*command), seconds)
        many = measure_concurrent([functools.partial(_send, c, command) for c in conns], seconds)
    finally:
        for c in conns:
            c.close()
    return one, many


def _send(client: redis.Redis, command: tuple[Any, ...], i: int) -> None:
    client.execute_command(*command)
