"""What a load run counts besides Locust's own stats, and how counts from many processes merge.

Every figure here is a plain JSON-able value, so a Locust worker can hand its
tally over in its stats reports to the master (contend.load.tallies) and the
process that checks the invariant can merge them in any order.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: A load run fails when more than this share of its finished operations failed or raised (the
#: default of --max-failed-share): its rate would measure the code's errors, not its throughput.
MAX_FAILED_SHARE = 0.5
#: Commits are also counted per window of this many seconds of wall time, so a run's commit rate
#: has a spread (one sample per full window) and two strategies' rates can be told apart from noise.
WINDOW = 0.2
#: Student's t at 97.5 % for n - 1 degrees of freedom (n samples), n = 2 .. 30; 1.96 beyond.
_T975 = (12.71, 4.30, 3.18, 2.78, 2.57, 2.45, 2.36, 2.31, 2.26, 2.23, 2.20, 2.18, 2.16, 2.14, 2.13,
         2.12, 2.11, 2.10, 2.09, 2.09, 2.08, 2.07, 2.07, 2.06, 2.06, 2.06, 2.05, 2.05, 2.05)  # fmt: skip


def rate_spread(windows: Mapping[int, int]) -> tuple[float, int] | None:
    """The relative half-width of the 95 % interval of a commit rate, from the commits counted in
    each WINDOW (the first and last, partial, left out; an empty window between counts as 0), and
    the number of windows it rests on; None with fewer than 3 full windows or no commit in them.
    Windows of one run are not independent: the interval says how steady the rate was, not how a
    rerun at another moment would come out."""
    if len(windows) < 2:
        return None
    first, last = min(windows), max(windows)
    samples = [windows.get(k, 0) for k in range(first + 1, last)]
    if len(samples) < 3 or not sum(samples):
        return None
    n = len(samples)
    t = _T975[n - 2] if n - 2 < len(_T975) else 1.96
    return t * statistics.stdev(samples) / math.sqrt(n) / statistics.fmean(samples), n


def bucket_ms(response_time: float) -> float:
    """A response time in ms rounded to 3 significant digits, never finer than 1 µs.

    Locust's default rounds everything under 100 ms to whole milliseconds, which
    turns a 120 µs Redis round trip into 0; this keeps sub-millisecond
    percentiles while bounding how many distinct keys a histogram holds.
    """
    if response_time <= 0:
        return 0.0
    digits = 2 - math.floor(math.log10(response_time))
    return round(response_time, min(digits, 3))


def percentile(histogram: Mapping[float, int], fraction: float) -> float:
    """The smallest bucket value at or below which `fraction` of the samples fall (0 when empty)."""
    total = sum(histogram.values())
    if not total:
        return 0.0
    rank = max(1, math.ceil(fraction * total))
    seen = 0
    for value in sorted(histogram):
        seen += histogram[value]
        if seen >= rank:
            return float(value)
    return float(max(histogram))


def jain_index(values: Iterable[float]) -> float | None:
    """Jain's fairness index (Σx)² / (n·Σx²): 1 when all equal, 1/n when one gets everything."""
    xs = [float(v) for v in values]
    squares = sum(x * x for x in xs)
    if not xs or not squares:
        return None
    return sum(xs) ** 2 / (len(xs) * squares)


@dataclass
class Distribution:
    """Durations in seconds: count, sum, max and a histogram of bucketed milliseconds."""

    count: int = 0
    total: float = 0.0
    max: float = 0.0
    histogram: dict[float, int] = field(default_factory=dict)

    def add(self, seconds: float) -> None:
        self.count += 1
        self.total += seconds
        self.max = max(self.max, seconds)
        key = bucket_ms(seconds * 1000)
        self.histogram[key] = self.histogram.get(key, 0) + 1

    def merge(self, other: Distribution) -> None:
        self.count += other.count
        self.total += other.total
        self.max = max(self.max, other.max)
        for key, n in other.histogram.items():
            self.histogram[key] = self.histogram.get(key, 0) + n

    @property
    def mean(self) -> float:
        return self.total / self.count if self.count else 0.0

    def percentile_ms(self, fraction: float) -> float:
        return percentile(self.histogram, fraction)

    def to_json(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "total": self.total,
            "max": self.max,
            "histogram": [[k, n] for k, n in sorted(self.histogram.items())],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Distribution:
        return cls(
            int(data["count"]),
            float(data["total"]),
            float(data["max"]),
            {float(k): int(n) for k, n in data["histogram"]},
        )


@dataclass
class OperationMetrics:
    """What one operation did: filled in by the operation as it goes.

    `keys` are set before the first round trip, so an operation cut short (its
    user killed, its connection lost) still says which keys it may have changed.
    """

    keys: tuple[str, ...] = ()
    committed: bool = False
    declined: bool = False
    retries: int = 0
    round_trips: int = 0
    lock_wait: float | None = None
    lock_hold: float | None = None
    deltas: dict[str, int] = field(default_factory=dict)
    #: End-to-end latency of the job this operation completed, in seconds (the jobs workload).
    latency: float | None = None
    #: Per-item counters this operation adds to the tally's ledger, whatever its outcome (the
    #: queue workload: job -> LEDGER columns), so a cut-short operation still says what it did.
    ledger: dict[str, list[int]] = field(default_factory=dict)


#: The columns of a ledger entry (the jobs workload): puts that returned, puts whose outcome
#: is unknown, deliveries (takes that returned the job), acks that returned within the taker's lease
#: (completions), acks that returned after it or were refused, acks that raised or were cut short.
LEDGER = ("put", "put_unknown", "delivered", "completed", "ack_late", "ack_unknown")


def ledger_add(ledger: dict[str, list[int]], item: str, column: str, n: int = 1) -> None:
    """Add `n` to one column of `item`'s ledger entry."""
    entry = ledger.setdefault(item, [0] * len(LEDGER))
    entry[LEDGER.index(column)] += n


def merge_ledger(into: dict[str, list[int]], other: Mapping[str, list[int]]) -> None:
    """Sum `other`'s ledger entries into `into`, column by column."""
    for item, counts in other.items():
        entry = into.setdefault(item, [0] * len(LEDGER))
        for i, n in enumerate(counts):
            entry[i] += n


def redeliveries(ledger: Mapping[str, list[int]]) -> tuple[int, int]:
    """(jobs delivered at least once, deliveries beyond each job's first) of a ledger."""
    at = LEDGER.index("delivered")
    delivered = [e[at] for e in ledger.values() if e[at]]
    return len(delivered), sum(n - 1 for n in delivered)


@dataclass
class Tally:
    """One workload's counts from one or more processes.

    `per_key` maps a key to [sum of committed deltas, operations whose outcome
    is unknown]; an unknown one may or may not have taken effect.
    """

    workload: str
    strategy: str
    requests: int = 0
    commits: int = 0
    declined: int = 0
    failed: int = 0
    unknown: int = 0
    cut_short: int = 0  # of the unknown: cut short by the end of the run, not failed by the code
    retries: int = 0
    round_trips: int = 0
    lock_wait: Distribution = field(default_factory=Distribution)
    lock_hold: Distribution = field(default_factory=Distribution)
    per_user: dict[str, int] = field(default_factory=dict)
    per_key: dict[str, list[int]] = field(default_factory=dict)
    processes: int = 1
    #: Commits per WINDOW of wall time (epoch seconds // WINDOW), summed over processes.
    windows: dict[int, int] = field(default_factory=dict)
    #: End-to-end latency of the jobs completed (the jobs workload; empty elsewhere).
    latency: Distribution = field(default_factory=Distribution)
    #: Per-item counters (LEDGER columns; the queue workload's jobs, empty elsewhere).
    ledger: dict[str, list[int]] = field(default_factory=dict)

    def user(self, user_id: str) -> None:
        """Count a user that took part, even if it never commits."""
        self.per_user.setdefault(user_id, 0)

    def record(
        self,
        user_id: str,
        step: OperationMetrics,
        *,
        failed: bool = False,
        unknown: bool = False,
        cut_short: bool = False,
    ) -> None:
        """Add one finished operation: committed, `failed` (no effect), `unknown` (it raised and may
        have taken effect), or `cut_short` (stopped mid-way by the end of the run; unknown too)."""
        self.requests += 1
        if cut_short:
            self.cut_short += 1
            unknown = True
        self.retries += step.retries
        self.round_trips += step.round_trips
        if step.lock_wait is not None:
            self.lock_wait.add(step.lock_wait)
        if step.lock_hold is not None:
            self.lock_hold.add(step.lock_hold)
        if step.latency is not None:
            self.latency.add(step.latency)
        merge_ledger(self.ledger, step.ledger)
        if step.committed:
            self.commits += 1
            window = int(time.time() // WINDOW)
            self.windows[window] = self.windows.get(window, 0) + 1
            self.per_user[user_id] = self.per_user.get(user_id, 0) + 1
            for key, delta in step.deltas.items():
                self.per_key.setdefault(key, [0, 0])[0] += delta
        elif unknown:
            self.unknown += 1
            for key in step.keys:
                self.per_key.setdefault(key, [0, 0])[1] += 1
        elif step.declined:
            self.declined += 1
        elif failed:
            self.failed += 1

    def merge(self, other: Tally) -> None:
        for name in (
            "requests",
            "commits",
            "declined",
            "failed",
            "unknown",
            "cut_short",
            "retries",
            "round_trips",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.processes += other.processes
        self.lock_wait.merge(other.lock_wait)
        self.lock_hold.merge(other.lock_hold)
        self.latency.merge(other.latency)
        merge_ledger(self.ledger, other.ledger)
        for user, n in other.per_user.items():
            self.per_user[user] = self.per_user.get(user, 0) + n
        for window, n in other.windows.items():
            self.windows[window] = self.windows.get(window, 0) + n
        for key, (ok, maybe) in other.per_key.items():
            entry = self.per_key.setdefault(key, [0, 0])
            entry[0] += ok
            entry[1] += maybe

    @property
    def failed_share(self) -> float | None:
        """The share of finished operations that failed or raised (cut-short ones left out);
        None when none finished."""
        finished = self.requests - self.cut_short
        return (self.failed + self.unknown - self.cut_short) / finished if finished > 0 else None

    def progress_problems(self, max_failed_share: float) -> list[str]:
        """Why the run measured nothing worth a figure: no commit at all, or more than
        `max_failed_share` of the operations failed (empty when neither)."""
        failing = self.failed + self.unknown - self.cut_short
        counts = f"{self.requests} operation(s): {self.failed} failed, {self.unknown - self.cut_short} raised"
        if self.cut_short:
            counts += f", {self.cut_short} cut short at the end"
        share = self.failed_share
        if self.commits == 0:
            return [f"no operation committed ({counts}); a run that commits nothing measures nothing"]
        if share is not None and share > max_failed_share:
            return [
                f"{failing} of {self.requests - self.cut_short} operations failed ({share:.0%}, more than "
                f"the {max_failed_share:.0%} allowed by --max-failed-share; {counts})"
            ]
        return []

    def key_counts(self, key: str) -> tuple[int, int]:
        """(committed delta, unknown operations) of one key."""
        ok, maybe = self.per_key.get(key, (0, 0))
        return ok, maybe

    def to_json(self) -> dict[str, Any]:
        return {
            "workload": self.workload,
            "strategy": self.strategy,
            "requests": self.requests,
            "commits": self.commits,
            "declined": self.declined,
            "failed": self.failed,
            "unknown": self.unknown,
            "cut_short": self.cut_short,
            "retries": self.retries,
            "round_trips": self.round_trips,
            "lock_wait": self.lock_wait.to_json(),
            "lock_hold": self.lock_hold.to_json(),
            "per_user": dict(sorted(self.per_user.items())),
            "per_key": self.per_key,
            "processes": self.processes,
            "windows": {str(k): n for k, n in sorted(self.windows.items())},
            "latency": self.latency.to_json(),
            "ledger": self.ledger,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Tally:
        return cls(
            workload=str(data["workload"]),
            strategy=str(data["strategy"]),
            requests=int(data["requests"]),
            commits=int(data["commits"]),
            declined=int(data["declined"]),
            failed=int(data["failed"]),
            unknown=int(data["unknown"]),
            cut_short=int(data.get("cut_short", 0)),
            retries=int(data["retries"]),
            round_trips=int(data["round_trips"]),
            lock_wait=Distribution.from_json(data["lock_wait"]),
            lock_hold=Distribution.from_json(data["lock_hold"]),
            per_user={str(k): int(v) for k, v in data["per_user"].items()},
            per_key={str(k): [int(v[0]), int(v[1])] for k, v in data["per_key"].items()},
            processes=int(data.get("processes", 1)),
            windows={int(k): int(n) for k, n in data.get("windows", {}).items()},
            latency=Distribution.from_json(data["latency"]) if "latency" in data else Distribution(),
            ledger={str(k): [int(n) for n in v] for k, v in data.get("ledger", {}).items()},
        )

    def summary(self) -> dict[str, Any]:
        """The figures a report plots, without the per-key detail."""
        jobs, again = redeliveries(self.ledger)
        return {
            "requests": self.requests,
            "commits": self.commits,
            "declined": self.declined,
            "failed": self.failed,
            "unknown": self.unknown,
            "cut_short": self.cut_short,
            "failed_share": self.failed_share,
            "retries": self.retries,
            "round_trips": self.round_trips,
            "retries_per_commit": self.retries / self.commits if self.commits else None,
            "round_trips_per_commit": self.round_trips / self.commits if self.commits else None,
            "lock_wait_mean_ms": self.lock_wait.mean * 1000 if self.lock_wait.count else None,
            "lock_wait_p99_ms": self.lock_wait.percentile_ms(0.99) if self.lock_wait.count else None,
            "lock_hold_mean_ms": self.lock_hold.mean * 1000 if self.lock_hold.count else None,
            "lock_hold_p99_ms": self.lock_hold.percentile_ms(0.99) if self.lock_hold.count else None,
            "users": len(self.per_user),
            "jain_index": jain_index(self.per_user.values()),
            "per_user_commits": dict(sorted(self.per_user.items())),
            "processes": self.processes,
            # The commit rate's 95 % interval, relative to the rate, and the windows it rests on.
            "commit_rate_spread": spread[0] if (spread := rate_spread(self.windows)) else None,
            "commit_windows": spread[1] if spread else 0,
            # The jobs workload: end-to-end latency of completed jobs, and redeliveries.
            "latency_mean_ms": self.latency.mean * 1000 if self.latency.count else None,
            "latency_p50_ms": self.latency.percentile_ms(0.5) if self.latency.count else None,
            "latency_p99_ms": self.latency.percentile_ms(0.99) if self.latency.count else None,
            "latency_max_ms": self.latency.max * 1000 if self.latency.count else None,
            "jobs_delivered": jobs if self.ledger else None,
            "redeliveries": again if self.ledger else None,
            "redeliveries_per_job": again / jobs if jobs else None,
        }
