"""What a linearizability check answers: the outcome, each partition's evidence, the whole verdict."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from contend.history.edn import edn_text
from contend.history.records import Call, Record, outcomes, took_no_effect
from contend.models.base import Op


class Linearizability(enum.Enum):
    """The verdict of a check, with the CLI's exit code."""

    LINEARIZABLE = "linearizable"
    NOT_LINEARIZABLE = "not linearizable"
    UNKNOWN = "unknown"

    @property
    def exit_code(self) -> int:
        return {"linearizable": 0, "not linearizable": 1, "unknown": 3}[self.value]


@dataclass
class PartitionResult:
    """One partition's verdict and evidence.

    `linearization` is the longest linearizable prefix the search found (a
    complete linearization when the partition is linearizable), `states` the
    model state after each of its operations, `culprit` the first operation
    that cannot be linearized after any such prefix.
    """

    key: Any
    outcome: Linearizability
    calls: list[Call]
    linearization: list[Call]
    states: list[str]
    culprit: Call | None
    culprit_op: Op | None
    explored: int
    seconds: float
    #: The partition's place in the history (its first call's id): results are listed in this order.
    order: int = 0

    def explain(self) -> str:
        """Two or three lines a person can act on."""
        where = "" if self.key is None else f" (key {self.key!r})"
        if self.outcome is Linearizability.LINEARIZABLE:
            return f"partition{where}: linearizable, {len(self.calls)} operations"
        if self.outcome is Linearizability.UNKNOWN:
            return (
                f"partition{where}: open after {self.seconds:.2f} s and {self.explored} steps of search "
                f"({len(self.calls)} operations) when the time budget ran out"
            )
        state = self.states[-1] if self.states else "the initial state"
        lines = [
            f"partition{where}: not linearizable; {len(self.linearization)} of {len(self.calls)} "
            f"operations linearize, then none fits",
        ]
        if self.culprit is not None:
            lines.append(
                f"  cannot linearize {self.culprit.describe()} "
                f"[{self.culprit.where()}] after the longest linearizable prefix, state {state}"
            )
        return "\n".join(lines)


@dataclass
class Verdict:
    """The whole history's verdict.

    `partitions` holds the ones that are not linearizable, then the ones left
    open when the time budget ran out; `unsearched` counts the partitions not
    searched at all because one was already proven not linearizable.
    """

    outcome: Linearizability
    model: str
    calls: list[Call]
    nemesis: list[Record]
    partitions: list[PartitionResult]
    checked: int
    operations: int
    skipped: int
    seconds: float
    timeout: float | None = None
    linearizations: dict[Any, list[Call]] = field(default_factory=dict)
    unsearched: int = 0

    @property
    def open(self) -> int:
        """Partitions whose search the time budget cut short."""
        return sum(1 for p in self.partitions if p.outcome is Linearizability.UNKNOWN)

    @property
    def decided(self) -> int:
        """Partitions with a verdict of their own."""
        return self.checked - self.open - self.unsearched

    @property
    def culprit(self) -> Call | None:
        """The first operation that cannot be linearized (earliest among failing partitions)."""
        bad = [
            p.culprit for p in self.partitions if p.outcome is Linearizability.NOT_LINEARIZABLE and p.culprit
        ]
        return min(bad, key=lambda c: (c.end if c.end is not None else c.start, c.id)) if bad else None

    @property
    def took_effect(self) -> int:
        """Operations that surely took effect (ok)."""
        return sum(1 for c in self.calls if c.status == "ok")

    def summary(self) -> str:
        """One line: the verdict, what it covers and what was left undecided."""
        if not self.calls:
            return f"{self.outcome.value}: no client operation, nothing was checked; model {self.model}"
        if not self.took_effect:
            return (
                f"{self.outcome.value}: 0 of {len(self.calls)} operations took effect; "
                f"{took_no_effect(self.calls)}; model {self.model}"
            )
        text = (
            f"{self.outcome.value}: {self.operations} operations in {self.checked} partition(s), "
            f"model {self.model}, {self.seconds:.2f} s"
        )
        if self.outcome is Linearizability.UNKNOWN:
            text += (
                f"; the {self.timeout:g} s budget ran out with {self.decided} partition(s) decided "
                f"(all linearizable) and {self.open} open"
            )
        elif self.open:
            text += f"; {self.open} partition(s) still open when the {self.timeout:g} s budget ran out"
        if self.unsearched:
            text += (
                f"; stopped at the first partition proven not linearizable, {self.unsearched} "
                "not searched (--all searches every one)"
            )
        if self.skipped:
            text += f"; {self.skipped} operation(s) outside the search (for the invariants)"
        return text

    def to_json(self) -> dict[str, Any]:
        """Everything a machine needs: outcome, counts, and each failing partition's evidence."""
        return {
            "outcome": self.outcome.value,
            "model": self.model,
            "operations": self.operations,
            "took_effect": self.took_effect,
            "outcomes": outcomes(self.calls),
            "partitions_checked": self.checked,
            "partitions_decided": self.decided,
            "partitions_open": self.open,
            "partitions_unsearched": self.unsearched,
            "skipped": self.skipped,
            "seconds": round(self.seconds, 6),
            "timeout": self.timeout,
            "culprit": call_json(self.culprit) if self.culprit else None,
            "partitions": [
                {
                    "key": _plain(p.key),
                    "outcome": p.outcome.value,
                    "operations": len(p.calls),
                    "explored": p.explored,
                    "seconds": round(p.seconds, 6),
                    "culprit": call_json(p.culprit) if p.culprit else None,
                    "longest_prefix": [
                        {**call_json(c), "state_after": s}
                        for c, s in zip(p.linearization, p.states, strict=True)
                    ],
                }
                for p in self.partitions
            ],
        }


def call_json(c: Call) -> dict[str, Any]:
    """One call as JSON: who, what, the outcome, its times and where it is in the file."""
    return {
        "id": c.id,
        "process": _plain(c.process),
        "f": c.f,
        "key": _plain(c.key),
        "value": _plain(c.value),
        "output": None if c.status == "info" else _plain(c.output),
        "type": c.status,
        "start": c.start,
        "end": c.end,
        "line": c.invoke.line,
        "index": c.invoke.index,
        "describe": c.describe(),
    }


def _plain(v: Any) -> Any:
    if isinstance(v, tuple | list):
        return [_plain(x) for x in v]
    if isinstance(v, str | int | float | bool) or v is None:
        return v
    return repr(v) if isinstance(v, dict) else edn_text(v)
