"""The raw ceiling: how many round trips per second the server answers at a given client count.

Measured in the same run as the strategies, so every rate can be read as a
fraction of it: with redis-benchmark (C, pipelining off) when one is found
next to the server or on PATH, else with redis-py PING loops: one gevent
greenlet per client, as Locust runs its users, in as many processes as the
load generator uses.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from contend.errors import ContendError


class CeilingError(ContendError):
    """The raw ceiling could not be measured."""


@dataclass(frozen=True)
class Ceiling:
    """Round trips per second at `clients` concurrent clients, and how they were measured."""

    clients: int
    per_second: float
    method: str


def find_redis_benchmark(server_binary: Path | None = None) -> Path | None:
    """redis-benchmark beside the server binary, else on PATH, else None."""
    if server_binary is not None:
        for name in ("redis-benchmark", "valkey-benchmark"):
            candidate = server_binary.parent / name
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return candidate
    found = shutil.which("redis-benchmark") or shutil.which("valkey-benchmark")
    return Path(found) if found else None


def measure_ceiling(
    url: str,
    clients: int,
    seconds: float,
    *,
    processes: int = 1,
    benchmark: Path | None = None,
    op: str = "ping",
    key: str = "",
) -> Ceiling:
    """The raw round-trip rate at `clients` clients: redis-benchmark if given and usable, else redis-py.

    `op="lpush-rpop"` measures a work queue's ceiling instead: LPUSH then RPOP on `key` (under the
    run's namespace) per loop step, with redis-py always; the rate is of pairs, one job each."""
    if op == "lpush-rpop":
        if not key:
            raise CeilingError("the LPUSH/RPOP ceiling needs a key")
        pairs = _redis_py(url, clients, seconds, processes, (op, key))
        return Ceiling(clients, pairs, _redis_py_method(clients, processes, "LPUSH+RPOP"))
    if op != "ping":
        raise CeilingError(f"unknown ceiling {op!r}: ping or lpush-rpop")
    if benchmark is not None and urlsplit(url).scheme == "redis":
        rate = _redis_benchmark(benchmark, url, clients, seconds)
        if rate is not None:
            return Ceiling(clients, rate, f"{benchmark.name} PING, {clients} clients")
    return Ceiling(clients, _redis_py(url, clients, seconds, processes), _redis_py_method(clients, processes))


def _redis_py_method(clients: int, processes: int, what: str = "PING") -> str:
    processes = max(1, min(processes, clients))
    where = f" in {processes} processes" if processes > 1 else ""
    return f"redis-py {what} loops, {clients} gevent clients{where}"


def _redis_benchmark(binary: Path, url: str, clients: int, seconds: float) -> float | None:
    parts = urlsplit(url)
    args = [str(binary), "-h", parts.hostname or "127.0.0.1", "-p", str(parts.port or 6379)]
    if parts.password:
        args += ["-a", unquote(parts.password)]
        if parts.username:
            args += ["--user", unquote(parts.username)]
    requests = max(10_000, int(seconds * 100_000))
    args += ["-c", str(clients), "-n", str(requests), "-t", "ping", "-q", "--csv"]
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=max(60.0, seconds * 20))
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return parse_benchmark_csv(done.stdout)


def parse_benchmark_csv(text: str) -> float | None:
    """Requests per second of the PING test in redis-benchmark --csv output (RESP PING preferred)."""
    rates: dict[str, float] = {}
    for row in csv.reader(io.StringIO(text)):
        if len(row) >= 2 and row[0].upper().startswith("PING"):
            try:
                rates[row[0].upper()] = float(row[1])
            except ValueError:
                continue
    for name in ("PING_MBULK", "PING_BULK", "PING_INLINE"):
        if name in rates:
            return rates[name]
    return None


def _redis_py(
    url: str, clients: int, seconds: float, processes: int, op: tuple[str, str] | None = None
) -> float:
    """PING loops (or `op`: ("lpush-rpop", key)), one greenlet per client, split over `processes`
    processes run at once (each on a key of its own)."""
    processes = max(1, min(processes, clients))
    shares = [clients // processes + (1 if i < clients % processes else 0) for i in range(processes)]
    runs = [
        subprocess.Popen(
            [sys.executable, "-m", "contend.load.pingloop", url, str(n), f"{seconds:g}"]
            + ([op[0], f"{op[1]}:{i}"] if op else []),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i, n in enumerate(shares)
    ]
    total = 0.0
    for run in runs:
        out, err = run.communicate(timeout=seconds + 60)
        if run.returncode != 0:
            reason = (err.strip().splitlines() or ["no output"])[-1]
            raise CeilingError(f"the raw ceiling's PING loop failed: {reason}")
        result = json.loads(out)
        total += result["ops"] / result["seconds"]
    return total
