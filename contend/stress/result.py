"""A stress run's progress while it runs (`RunProgress`) and its outcome once checked
(`StressResult`): the verdict, its exit code and its JSON."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contend.exitcodes import ExitCode
from contend.history.invariants import Violation
from contend.history.models import exit_code
from contend.history.records import Call, Record
from contend.history.verdict import Linearizability, Verdict
from contend.stress.bank_check import TransactionJudgement
from contend.stress.explain import two_holders_explained
from contend.stress.options import StressOptions
from contend.stress.workload import StressWorkload


@dataclass
class RunProgress:
    """What a progress display shows while a run is under way."""

    elapsed: float
    duration: float
    ok: int
    fail: int
    info: int
    nemesis: str
    checking: bool = False


@dataclass
class StressResult:
    """A finished run: where its files are and what the check found."""

    options: StressOptions
    workload: StressWorkload
    target: str
    run_dir: Path
    history: Path
    #: The linearizability search (None for a transaction run, judged by `judgement`).
    verdict: Verdict | None
    violations: list[Violation]
    calls: list[Call]
    nemesis: list[Record]
    seconds: float
    invariants: list[str] = field(default_factory=list)
    timeline: Path | None = None
    counts: dict[str, int] = field(default_factory=dict)
    #: Why each requested nemesis that injected no fault did not (the run then exits 3, or 1 on a
    #: violation).
    no_fault: list[str] = field(default_factory=list)
    #: A transaction run's verdict: the conflict graph of what the server ran, audits, final balances.
    judgement: TransactionJudgement | None = None

    @property
    def history_exit_code(self) -> int:
        """The history's own verdict: 0 valid, 1 a violation, 3 unknown (the search budget ran
        out before every partition was decided; for a transaction run, a property the server's
        record could not judge)."""
        if self.judgement is not None:
            return self.judgement.exit_code
        return exit_code(self.verdict, self.violations)

    @property
    def exit_code(self) -> int:
        """The history's verdict; but 3 (inconclusive) when a requested nemesis injected no fault
        that took effect and the history shows no violation: the run did not test what was
        asked. A violation found stands (1) whatever the faults did."""
        if self.no_fault and self.history_exit_code != ExitCode.FAILED:
            return ExitCode.INCONCLUSIVE
        return self.history_exit_code

    @property
    def explanation(self) -> list[str]:
        """Why an unfenced lock had two holders (a client-pause past its lease), or []."""
        if self.workload.family != "lock" or not self.violations:
            return []
        return two_holders_explained(self.violations, self.nemesis, self.options.ttl_ms, self.workload.fenced)

    @property
    def history_outcome(self) -> str:
        return {0: "valid", 1: "violation", 3: "unknown"}[self.history_exit_code]

    @property
    def outcome(self) -> str:
        """The run's verdict word: the history's, or no-fault."""
        return "no-fault" if self.no_fault else self.history_outcome

    def headline(self) -> str:
        """One line: the run's verdict (NO FAULT first if a nemesis did nothing) and its first piece of evidence."""
        if self.no_fault:
            return f"NO FAULT — {self.no_fault[0]} (the history: {self.history_headline()})"
        return self.history_headline()

    def history_headline(self) -> str:
        """One line: the history's verdict and its first piece of evidence."""
        if self.judgement is not None:
            if self.violations:
                v = self.violations[0]
                return f"VIOLATION — {v.check}: {v.message}"
            if self.judgement.unjudged:
                return f"UNKNOWN — {self.judgement.unjudged[0]}"
            return (
                f"VALID — serializable: {self.judgement.summary()}; every audit and the final balances hold"
            )
        assert self.verdict is not None
        if self.verdict.outcome is Linearizability.NOT_LINEARIZABLE:
            culprit = self.verdict.culprit
            what = f": cannot linearize {culprit.describe()}" if culprit else ""
            return f"VIOLATION — not linearizable ({self.verdict.model}){what}"
        if self.violations:
            v = self.violations[0]
            return f"VIOLATION — {v.check}: {v.message}"
        if self.history_exit_code == 3:
            return "UNKNOWN — the linearizability search ran out of time; raise --search-seconds"
        return "VALID — linearizable, and every invariant holds"

    def recheck_command(self) -> str:
        """The `contend history check` command that re-checks the kept history."""
        if self.judgement is not None:
            return (
                f"none: contend history check does not judge transactions; the server's record is kept "
                f"beside the history ({self.run_dir / 'monitor.log'})"
            )
        model, extra = self.workload.history_model, self.workload.recheck_options()
        return f"contend history check {self.history} --model {model}{extra}"

    def to_json(self) -> dict[str, Any]:
        o = self.options
        lock = self.workload.family == "lock"
        return {
            "impl": o.impl,
            "user_implementation": self.workload.user,
            "family": self.workload.family,
            "fencing": self.workload.fencing if lock else None,
            "target": self.target,
            "processes": o.procs,
            "duration": o.duration,
            "nemesis": list(o.nemeses),
            "no_fault": self.no_fault,
            "history_verdict": self.history_outcome,
            "ttl_ms": o.ttl_ms if lock else None,
            "counts": self.counts,
            "seconds": round(self.seconds, 3),
            "history": str(self.history),
            "timeline": str(self.timeline) if self.timeline else None,
            "linearizability": self.verdict.to_json() if self.verdict is not None else None,
            "serializability": self.judgement.to_json() if self.judgement is not None else None,
            "invariants": self.invariants,
            "violations": [v.to_json() for v in self.violations],
            "explanation": self.explanation,
            "nemesis_events": [{"time": r.time, "f": r.f, "value": r.value} for r in self.nemesis],
        }
