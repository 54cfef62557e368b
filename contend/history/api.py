"""The front door of `contend.history`: check a history file against a model named in the table.

`check_file` is what `contend history check` runs for each FILE: read, pair,
refuse operations the model does not know (or skip them, leniently), search
and run the model's invariants. To check calls against a model object of your
own, `contend.history.check_calls`; to read a file only, `read_history`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from contend.history.formats import read_history
from contend.history.invariants import Violation
from contend.history.models import HISTORY_MODELS, HistoryCheck, Options, exit_code
from contend.history.records import NEMESIS, Call, HistoryError, pair
from contend.history.verdict import Verdict


@dataclass
class Checked:
    """One history's answer: the linearizability verdict (None when only the invariants ran),
    the invariants' violations, their names, and the operations skipped as unknown (lenient)."""

    verdict: Verdict | None
    violations: list[Violation] = field(default_factory=list)
    invariants: list[str] = field(default_factory=list)
    lenient_skipped: dict[str, int] = field(default_factory=dict)
    #: Said on stderr beside the verdict: the history held no client operation, so nothing was checked.
    warning: str | None = None

    @property
    def exit_code(self) -> int:
        """0 linearizable and every invariant holds, 1 not, 3 unknown (contend.exitcodes)."""
        return exit_code(self.verdict, self.violations)


def check_file(
    path: str | Path,
    model: str,
    *,
    fmt: str | None = None,
    timeout: float | None = 60.0,
    lenient: bool = False,
    all_partitions: bool = False,
    linear_only: bool = False,
    require_ops: bool = False,
    options: Options | None = None,
) -> Checked:
    """Read, pair and check the history at `path` against the model named `model` (a key of
    HISTORY_MODELS); `fmt` jsonl, edn or log (default: guessed). Raises HistoryError, naming the
    file and the line, for bad input.

    As Jepsen's checkers and Porcupine have it, a history in which no operation took effect is
    linearizable, and so is one with no client operation at all (an empty file, nemesis events
    only), with a warning that nothing was checked; `require_ops` makes that an error."""
    path = Path(path)
    options = options or Options()
    records = read_history(path, fmt)
    try:
        paired = pair(records)
    except HistoryError as exc:
        raise HistoryError(named(path, str(exc))) from None
    entry = HISTORY_MODELS[model]
    unknown = entry.unknown_operations(paired.calls)
    calls: list[Call] = paired.calls
    if unknown and not lenient:
        raise HistoryError(
            f"{path}: the {entry.name} model does not know the operation(s) {counted(unknown)}; it "
            f"accepts {', '.join(entry.operations)}. Rename them, choose another --model, or pass "
            "--lenient to skip them"
        )
    warning = None
    if not paired.calls:
        nemesis = f" (only {len(paired.nemesis)} nemesis event(s))" if paired.nemesis else ""
        if require_ops:
            raise HistoryError(
                f"{path}: no client operation to check{nemesis}, and --require-ops refuses a history "
                "that checks nothing"
            )
        warning = (
            f"{path}: no client operation{nemesis}: nothing was checked (--require-ops makes this exit 2)"
        )
    if unknown:
        calls = [c for c in calls if c.f in entry.operations]
    if not calls and paired.calls:
        raise HistoryError(
            f"{path}: nothing to check: none of its {len(paired.calls)} operation(s) is one the "
            f"{entry.name} model accepts ({', '.join(entry.operations)})"
        )
    if options.ttl_ms is not None and not all(r.time is not None for r in records if r.process != NEMESIS):
        raise HistoryError(
            f"{path}: --ttl-ms compares lease lengths with the records' times, and its records have "
            "none: give every record a time in nanoseconds, or leave --ttl-ms out"
        )
    check: HistoryCheck = entry.build(calls, options)
    if linear_only and not check.invariants:
        raise HistoryError(
            f"--linear-only runs only the invariants, and the {entry.name} model has none: "
            "leave --linear-only out"
        )
    try:
        verdict, violations = check.run(
            calls,
            nemesis=paired.nemesis,
            timeout=timeout,
            all_partitions=all_partitions,
            search=not linear_only,
            require_effect=False,
        )
    except HistoryError as exc:
        raise HistoryError(named(path, str(exc))) from None
    return Checked(verdict, violations, check.invariant_names, unknown, warning)


def counted(names: dict[str, int]) -> str:
    """`'lock' ×2, 'unlock' ×1`: names by how many, most first."""
    return ", ".join(f"{name!r} ×{n}" for name, n in sorted(names.items(), key=lambda kv: (-kv[1], kv[0])))


def named(path: Path, message: str) -> str:
    """`message`, prefixed with the file unless it names it already."""
    return message if str(path) in message else f"{path}: {message}"
