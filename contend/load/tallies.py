"""Each load-generating process's tally, as it travels in Locust's own worker reports.

A worker attaches a cumulative `Snapshot` of its tallies to every stats report
(`events.report_to_master`); the master keeps the latest one per worker
(`events.worker_report`), so a repeated or late report changes nothing. The
invariant is checked once every worker of the run has sent its final snapshot
(the one taken after its users stopped). Nothing of this goes through Redis.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from contend.load.metrics import Tally

#: The key of a worker report's `data` that holds the snapshot.
REPORT_KEY = "contend"


@dataclass
class Snapshot:
    """One process's tallies so far in one run, and the CPU it used doing them."""

    run: str
    final: bool
    tallies: dict[str, Tally]
    cpu_s: float
    wall_s: float

    @property
    def cpu(self) -> float | None:
        """CPU time over wall time: near 1, this process kept one core busy."""
        return self.cpu_s / self.wall_s if self.wall_s > 0 else None

    def to_json(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "final": self.final,
            "tallies": {n: t.to_json() for n, t in self.tallies.items()},
            "cpu_s": self.cpu_s,
            "wall_s": self.wall_s,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Snapshot:
        return cls(
            str(data["run"]),
            bool(data["final"]),
            {str(n): Tally.from_json(t) for n, t in data["tallies"].items()},
            float(data["cpu_s"]),
            float(data["wall_s"]),
        )


@dataclass
class Merged:
    """The tallies of every process that sent its final snapshot, and what is missing."""

    tallies: dict[str, Tally]
    problems: list[str]
    generators: list[dict[str, Any]]  # per process: its id, commits and CPU use

    @property
    def generator_cpu(self) -> float | None:
        """The mean CPU use of the load-generating processes (None when none reported one)."""
        busy = [g["cpu"] for g in self.generators if g["cpu"] is not None]
        return sum(busy) / len(busy) if busy else None


@dataclass
class Collector:
    """The checker's view of one run: the latest snapshot of each process that takes part."""

    run: str = ""
    expected: set[str] = field(default_factory=set)
    latest: dict[str, Snapshot] = field(default_factory=dict)

    def begin(self, run: str, processes: Iterable[str] = ()) -> None:
        """A new run: `processes` are the workers it was started on (more may report later)."""
        self.run = run
        self.expected = set(processes)
        self.latest = {}

    def receive(self, process: str, data: Mapping[str, Any] | None) -> None:
        """Keep a process's snapshot if it belongs to this run (reports of others are ignored)."""
        if not data or data.get("run") != self.run or not self.run:
            return
        snapshot = Snapshot.from_json(data)
        known = self.latest.get(process)
        if known is not None and known.final and not snapshot.final:
            return  # a periodic report overtaken by the final one
        self.latest[process] = snapshot
        self.expected.add(process)

    def pending(self, connected: Iterable[str]) -> set[str]:
        """The processes of this run still connected whose final snapshot has not arrived."""
        return {p for p in connected if p in self.expected and not self._final(p)}

    def _final(self, process: str) -> bool:
        snapshot = self.latest.get(process)
        return snapshot is not None and snapshot.final

    def merged(self, workloads: Iterable[str], strategy: str, waited: float) -> Merged:
        """Merge the final snapshots per workload; say how many processes' tallies are missing."""
        finals = {p: s for p, s in sorted(self.latest.items()) if s.final}
        missing = self.expected - finals.keys()
        problems = []
        if not self.expected:
            problems.append("no load-generating process reported a tally")
        elif missing:
            problems.append(
                f"no final tally from {len(missing)} of {len(self.expected)} load-generating "
                f"process(es) (lost, or not within {waited:g} s); their operations are not counted"
            )
        tallies: dict[str, Tally] = {}
        generators = []
        for process, snapshot in finals.items():
            for name in workloads:
                tally = snapshot.tallies.get(name) or Tally(name, strategy)
                if name in tallies:
                    tallies[name].merge(tally)
                else:
                    tallies[name] = Tally.from_json(tally.to_json())  # a copy: merging must not alter it
            generators.append(
                {
                    "process": process,
                    "commits": {n: t.commits for n, t in snapshot.tallies.items()},
                    "cpu": snapshot.cpu,
                }
            )
        return Merged(tallies, problems, generators)
