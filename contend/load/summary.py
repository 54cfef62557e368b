"""The contend summary of one Locust run (`--contend-json FILE`), as one typed record.

The run's coordinator (contend.load.harness) writes it, once, with `RunSummary.write`; the sweep
(contend.load.sweep) and the report (contend.report.data) read it back with `read_summary`, and
nothing else reads the file. A summary written by an older contend, or by hand in a test, may
lack figures: they read as absent (None, 0 or empty), never as an error.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class LocustFigures:
    """Locust's own figures for a workload's strategy."""

    requests: int = 0
    failures: int = 0
    duration_s: float = 0.0
    #: Epoch seconds of the first and the last request: the window the rates are over.
    start_time: float | None = None
    last_request_time: float | None = None
    requests_per_s: float | None = None
    avg_ms: float | None = None
    min_ms: float | None = None
    max_ms: float | None = None
    p50_ms: float | None = None
    p90_ms: float | None = None
    p99_ms: float | None = None

    @property
    def window(self) -> tuple[float, float] | None:
        """Locust's first and last request (epoch seconds), if it made two apart."""
        start, end = self.start_time, self.last_request_time
        return (float(start), float(end)) if start and end and end > start else None


@dataclass(frozen=True)
class WorkloadSummary:
    """One workload of the run: its verdict, Locust's figures and contend's tally figures."""

    #: The invariant held and the run made progress (something committed, few enough failed).
    ok: bool = False
    invariant_ok: bool = False
    #: The end-of-run check's lines, the reason first.
    verdict: tuple[str, ...] = ()
    locust: LocustFigures = field(default_factory=LocustFigures)
    #: contend.load.metrics.Tally.summary(): commits, retries, lock wait and hold, fairness.
    contend: dict[str, Any] = field(default_factory=dict)

    @property
    def committed_per_s(self) -> float | None:
        """Committed operations per second: Locust's request rate times the share that committed."""
        rate = self.locust.requests_per_s
        if rate is None:
            return None
        requests = self.contend.get("requests") or 0
        share = (self.contend.get("commits") or 0) / requests if requests else 0.0
        return float(rate) * share

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> WorkloadSummary:
        ok = bool(doc.get("ok"))
        known = {f.name for f in fields(LocustFigures)}
        return cls(
            ok=ok,
            # Summaries written before a run could fail for lack of progress: ok was the invariant's.
            invariant_ok=bool(doc.get("invariant_ok", ok)),
            verdict=tuple(doc.get("verdict") or ()),
            locust=LocustFigures(**{k: v for k, v in (doc.get("locust") or {}).items() if k in known}),
            contend=dict(doc.get("contend") or {}),
        )


@dataclass(frozen=True)
class RunSummary:
    """What one Locust run (every process of it) did, as --contend-json writes it."""

    strategy: str = ""
    hot_keys: int = 0
    ttl_ms: int = 0
    max_failed_share: float = 0.0
    users: int | None = None
    workers: int = 0
    namespace: str = ""
    #: The server, as the run names it (a --redis-url with its password masked).
    redis: str = ""
    #: Every workload's invariant held and nothing was missing.
    ok: bool = False
    #: CPU time / wall time of each load-generating process, averaged: near 1, the client limits the rate.
    generator_cpu: float | None = None
    #: Each process whose final tally was merged: its Locust client id, commits per workload, CPU use.
    generators: list[dict[str, Any]] = field(default_factory=list)
    workloads: dict[str, WorkloadSummary] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def write(self, path: Path) -> None:
        """The one writer of a --contend-json file."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_json(), indent=2) + "\n")

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> RunSummary:
        known = {f.name for f in fields(cls)} - {"workloads"}
        workloads = {name: WorkloadSummary.from_json(w) for name, w in (doc.get("workloads") or {}).items()}
        return cls(**{k: v for k, v in doc.items() if k in known}, workloads=workloads)


def read_summary(path: Path) -> RunSummary | None:
    """The one reader of a --contend-json file: None when the run wrote none (or not a summary)."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return RunSummary.from_json(doc) if isinstance(doc, dict) else None
