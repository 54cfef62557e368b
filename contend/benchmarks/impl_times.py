"""How long `contend check --impl` takes on correct code written elsewhere, and what it says.

`python -m contend.benchmarks.impl_times --runs 3` runs the whole command, as a user types it, on
every correct implementation of tests/fixtures/foreign, tests/fixtures/async_foreign and
tests/fixtures/masters, `--runs` times each, and prints per implementation the verdicts (every run
must pass: anything else is a false alarm), the median and worst seconds of the whole command, and
how many runs were over `--limit` seconds. Give `--contend` twice (e.g. an older checkout's
`contend` and this one's) to compare: the commands take turns run by run, so both see the same
machine, and each line ends with the ratio of the medians to the first command's. Run it from the
repository's root (the fixtures are its tests').

`--mutants` takes instead every mutant of the faults benchmark (`python -m
contend.benchmarks.faults`), run `--runs` times with the seeds 1, 2, ...: each run must catch the
mutant for a property its defect breaks, and the lines count the catches.
"""

from __future__ import annotations

import argparse
import importlib
import json
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from contend.values import family_label


@dataclass(frozen=True)
class Case:
    """One correct implementation and how the command is told about it."""

    module: str
    kind: str
    masters: int = 0
    #: What it claims beyond its kind's defaults, and what it does not (a token bucket: not
    #: fixed-window), as the test suite gives them.
    claims: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
    #: The properties its defect breaks, one of which a run must fail to catch it (empty: correct).
    broken: frozenset[str] = frozenset()

    @property
    def wanted(self) -> str:
        """The verdict every run must give: "caught" for a mutant, "pass" for a correct one."""
        return "caught" if self.broken else "pass"

    @property
    def name(self) -> str:
        return self.module.removeprefix("tests.fixtures.")

    def arguments(self) -> list[str]:
        extra = ["--masters", str(self.masters)] if self.masters else []
        extra += [arg for prop in self.claims[0] for arg in ("--claim", prop)]
        extra += [arg for prop in self.claims[1] for arg in ("--no-claim", prop)]
        return ["--impl", f"{self.module}:make", "--kind", self.kind, *extra]


def _limiter_claims() -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    sys.path.insert(0, str(Path.cwd()))
    return getattr(importlib.import_module("tests.fixtures.foreign"), "LIMITER_CLAIMS", {})


def mutant_cases() -> list[Case]:
    """Every mutant of the faults benchmark, with the properties it must be caught for."""
    from contend.benchmarks.faults import MUTANTS

    claims = _limiter_claims()
    return [
        Case(
            f"tests.fixtures.{m.module}",
            family_label(m.kind),
            masters=m.masters,
            claims=claims.get(m.module.rpartition(".")[2], ((), ())),
            broken=m.broken,
        )
        for m in MUTANTS
    ]


def correct_cases() -> list[Case]:
    """Every correct implementation the test suite names (the CORRECT lists of tests/fixtures'
    foreign, async_foreign and masters), read from the repository the command runs in."""
    claims = _limiter_claims()
    fixtures = {
        name: importlib.import_module(f"tests.fixtures.{name}")
        for name in ("foreign", "async_foreign", "masters")
    }
    return [
        *(
            Case(f"tests.fixtures.foreign.{m}", family_label(kind), claims=claims.get(m, ((), ())))
            for m, kind in fixtures["foreign"].CORRECT
        ),
        *(Case(f"tests.fixtures.async_foreign.{m}", "lock") for m in fixtures["async_foreign"].CORRECT),
        *(Case(f"tests.fixtures.masters.{m}", "lock", masters=3) for m in fixtures["masters"].CORRECT),
    ]


@dataclass
class Timing:
    """One command's runs on one implementation."""

    seconds: list[float] = field(default_factory=list)
    verdicts: list[str] = field(default_factory=list)
    refused: str = ""  # the command's own message when it cannot check this implementation at all

    @property
    def median(self) -> float:
        return statistics.median(self.seconds) if self.seconds else float("nan")

    @property
    def worst(self) -> float:
        return max(self.seconds) if self.seconds else float("nan")


def run_one(contend: list[str], case: Case, seed: int | None = None) -> tuple[float, str, str]:
    """Seconds of the whole command, its verdict ("pass", "caught" for a mutant caught for a
    property its defect breaks, or the failed checks), and its message when it refused the
    implementation (exit 2). `seed`: the command's `--seed`, or its own default."""
    seeded = ["--seed", str(seed)] if seed is not None else []
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "check.json"
        start = time.perf_counter()
        done = subprocess.run(
            [*contend, "check", *case.arguments(), *seeded, "--json", str(report), "-q"],
            capture_output=True,
            text=True,
        )
        seconds = time.perf_counter() - start
        if done.returncode == 2 or not report.exists():
            lines = (done.stderr or done.stdout).strip().splitlines()
            return seconds, "refused", lines[-1] if lines else f"exit {done.returncode}"
        return seconds, verdict(json.loads(report.read_text()), case.broken), ""


def verdict(document: dict, broken: frozenset[str] = frozenset()) -> str:
    """The verdict from `contend check --json`: "pass"; "caught" when a check failed for one of
    `broken` (a mutant's properties); else the row's verdict and the checks that did not pass."""
    (row,) = document["implementations"]
    if row["verdict"] == "pass":
        return "pass"
    failed = [c for c in row["checks"] if c["status"] != "pass"]
    if any(c.get("property") in broken for c in failed):
        return "caught"
    others = [f"{c['check']} {c['status']}" for c in failed]
    return f"{row['verdict']}: {', '.join(others)}"


def measure(
    commands: list[list[str]], cases: list[Case], runs: int, seeded: bool = False
) -> dict[Case, list[Timing]]:
    """Every case `runs` times with every command, the commands taking turns; a command that
    refused a case is not asked again. `seeded`: run N gets `--seed N`. Progress goes to stderr,
    one line a run."""
    timings = {case: [Timing() for _ in commands] for case in cases}
    for run in range(runs):
        for case in cases:
            for index, command in enumerate(commands):
                timing = timings[case][index]
                if timing.refused:
                    continue
                seconds, said, message = run_one(command, case, run + 1 if seeded else None)
                if said == "refused":
                    timing.refused = message
                    print(
                        f"run {run + 1}/{runs} {case.name} [{index + 1}]: refused: {message}", file=sys.stderr
                    )
                    continue
                timing.seconds.append(seconds)
                timing.verdicts.append(said)
                print(
                    f"run {run + 1}/{runs} {case.name} [{index + 1}]: {said} in {seconds:.1f} s",
                    file=sys.stderr,
                )
    return timings


def line(case: Case, timings: list[Timing], limit: float) -> str:
    """One implementation: per command its verdicts, median, worst and runs over `limit`, then the
    ratio of each median to the first command's."""
    parts = [f"{case.name:<36}"]
    for timing in timings:
        if timing.refused:
            parts.append("refused")
            continue
        verdicts = sorted(set(timing.verdicts))
        over = sum(1 for s in timing.seconds if s > limit)
        parts.append(
            f"{'/'.join(verdicts)} {timing.verdicts.count(case.wanted)}/{len(timing.verdicts)}"
            f"  median {timing.median:5.1f} s  worst {timing.worst:5.1f} s  over {limit:g} s: {over}"
        )
    base = timings[0]
    for timing in timings[1:]:
        if base.seconds and timing.seconds:
            parts.append(f"x{timing.median / base.median:.2f}")
    return "  |  ".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m contend.benchmarks.impl_times",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    parser.add_argument(
        "--runs", type=int, default=3, help="runs of each implementation per command (default 3)"
    )
    parser.add_argument(
        "--contend",
        action="append",
        metavar="COMMAND",
        help="the contend command to time, e.g. '../old/.venv/bin/contend' (repeatable; the first is "
        "the baseline of the ratios; default: this interpreter's contend)",
    )
    parser.add_argument(
        "--only", action="append", metavar="NAME", help="only this implementation, e.g. foreign.flight"
    )
    parser.add_argument(
        "--limit", type=float, default=30.0, help="count the runs longer than this (default 30 s)"
    )
    parser.add_argument(
        "--mutants",
        action="store_true",
        help="the faults benchmark's mutants instead, run N with --seed N: each run must catch its "
        "mutant for a property its defect breaks",
    )
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error(f"--runs must be at least 1, not {args.runs}")
    if not Path("tests/fixtures/foreign").is_dir():
        parser.error("run it from the repository's root: the implementations are tests/fixtures/*")
    every = mutant_cases() if args.mutants else correct_cases()
    cases = [c for c in every if not args.only or c.name in args.only]
    unknown = sorted(set(args.only or ()) - {c.name for c in every})
    if unknown:
        parser.error(
            f"unknown implementation(s) {', '.join(unknown)}; one of: {', '.join(c.name for c in every)}"
        )
    commands = (
        [shlex.split(c) for c in args.contend] if args.contend else [[sys.executable, "-m", "contend.cli"]]
    )
    missing = [shlex.join(c) for c in commands if not c or shutil.which(c[0]) is None]
    if missing:
        parser.error(
            f"--contend {missing[0]!r}: no such program (give the path of a contend, or a command that runs one)"
        )
    started = time.perf_counter()
    timings = measure(commands, cases, args.runs, seeded=args.mutants)
    for index, command in enumerate(commands):
        print(f"[{index + 1}] {shlex.join(command)}")
    for case in cases:
        print(line(case, timings[case], args.limit))
    wrong = [case.name for case in cases for t in timings[case] if any(v != case.wanted for v in t.verdicts)]
    print(
        f"{len(cases)} implementation(s) x {args.runs} run(s) in {time.perf_counter() - started:.0f} s; "
        f"{'runs not caught' if args.mutants else 'false alarms'}: {', '.join(sorted(set(wrong))) or 'none'}"
    )
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
