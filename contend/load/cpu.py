"""CPU use during a load run, sampled from outside it: the machine's cores and the Redis server.

A `CpuSampler` thread reads /proc/stat (Linux; elsewhere the machine figure is
None) and the server's INFO cpu every half second while Locust runs, so the
share of each can be read over exactly the window Locust measured (its first
to its last request) rather than over Locust's start-up and the end-of-run check.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

import redis

#: Seconds between two samples.
INTERVAL = 0.5
PROC_STAT = Path("/proc/stat")


@dataclass(frozen=True)
class Sample:
    at: float  # time.time()
    machine_busy: float | None  # jiffies of every core not idle nor waiting on I/O
    machine_total: float | None
    server_cpu_s: float | None  # used_cpu_user + used_cpu_sys


def machine_jiffies() -> tuple[float, float] | None:
    """(busy, total) jiffies of all cores since boot, from /proc/stat; None where there is none."""
    try:
        first = PROC_STAT.read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return None
    if not first or first[0] != "cpu":
        return None
    values = [float(v) for v in first[1:9]]  # user nice system idle iowait irq softirq steal
    total = sum(values)
    return total - values[3] - values[4], total


def server_cpu_seconds(client: redis.Redis) -> float | None:
    """The server's CPU time so far (every thread), or None when INFO cpu does not say."""
    try:
        info = client.info("cpu")
        return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])
    except (redis.RedisError, KeyError, TypeError, ValueError):
        return None


@dataclass
class CpuSampler:
    """Samples in a thread from `with` entry to exit (both ends included); `shares(start, end)`
    reads the window."""

    url: str
    samples: list[Sample] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> CpuSampler:
        self._thread = threading.Thread(target=self._run, name="contend-cpu-sampler", daemon=True)
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _run(self) -> None:
        client = redis.Redis.from_url(self.url, socket_connect_timeout=2, socket_timeout=2)
        try:
            while True:
                stopping = self._stop.is_set()  # one last sample after the stop, then out
                jiffies = machine_jiffies()
                self.samples.append(
                    Sample(
                        time.time(),
                        jiffies[0] if jiffies else None,
                        jiffies[1] if jiffies else None,
                        server_cpu_seconds(client),
                    )
                )
                if stopping:
                    break
                self._stop.wait(INTERVAL)
        finally:
            client.close()

    def shares(self, start: float, end: float) -> tuple[float | None, float | None]:
        """(machine, server) over [start, end] as sampled (from the first to the last sample inside,
        or from the last one before to the first one after when fewer than two fall inside): the
        machine's busy share of all its cores (anyone's processes), and the server's CPU seconds
        per second (1.0: one core)."""
        inside = [s for s in self.samples if start <= s.at <= end]
        if len(inside) >= 2:
            a, b = inside[0], inside[-1]
        else:  # a short window, or a late sampler: the samples just around it
            before = [s for s in self.samples if s.at <= start]
            after = [s for s in self.samples if s.at >= end]
            if not before or not after:
                return None, None
            a, b = before[-1], after[0]
        machine = server = None
        if None not in (a.machine_busy, b.machine_busy, a.machine_total, b.machine_total):
            busy = b.machine_busy - a.machine_busy  # type: ignore[operator]
            total = b.machine_total - a.machine_total  # type: ignore[operator]
            machine = busy / total if total > 0 else None
        if a.server_cpu_s is not None and b.server_cpu_s is not None and b.at > a.at:
            server = (b.server_cpu_s - a.server_cpu_s) / (b.at - a.at)
        return machine, server
