"""How reliably and how fast contend catches one-defect mutants for the faults production has.

`python -m contend.benchmarks.faults --runs 20` takes each mutant of tests/fixtures/foreign and
tests/fixtures/masters (a lost reply, a stall inside an acquire, a deadline, single-flight's
runs-once, locks over several masters) and, `--runs` times, the check meant for its fault: a
state-machine search with a fresh seed each run (`schedule`), or a real-time battery check run
again (`lost-reply`, `expiry`). Per mutant: how many runs caught it, for which properties, and the
median and worst seconds to the catch. Correct locks in other styles get the same runs and must
pass every one (`--correct`). Run it from the repository's root (the fixtures are its tests').
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from hypothesis.errors import Flaky, FlakyStrategyDefinition

from contend.check.battery import run_battery
from contend.check.framework import CheckOptions
from contend.impl import catalog
from contend.machines.family import family_machine
from contend.machines.hunt import SearchStopped, run_once
from contend.schedule.scheduler import SchedulerError
from contend.servers.target import Target, open_target
from contend.subject.resolve import user_subject
from contend.subject.subject import Subject, catalog_implementation, catalog_subjects


@dataclass(frozen=True)
class Case:
    """One implementation, the check for its fault, and what it must be caught for (empty: correct)."""

    module: str
    kind: str
    check: str
    broken: frozenset[str] = frozenset()
    masters: int = 0


MUTANTS = (
    Case("foreign.retry_incr_registry", "registry", "lost-reply", frozenset({"gap-free", "tables-agree"})),
    Case("foreign.hopeful_lock", "lock", "lost-reply", frozenset({"mutual-exclusion"})),
    Case("foreign.sticky_reentrant_lock", "lock", "reacquire", frozenset({"mutual-exclusion"})),
    Case("foreign.touch_lock", "lock", "schedule", frozenset({"stale-grant", "mutual-exclusion"})),
    Case("foreign.fence_after_lock", "lock", "schedule", frozenset({"stale-grant", "mutual-exclusion"})),
    Case("foreign.patient_lock", "lock", "schedule", frozenset({"progress"})),
    Case("foreign.lease_sleeper_lock", "lock", "schedule", frozenset({"progress"})),
    Case("foreign.early_release_flight", "single_flight", "handover", frozenset({"runs-once"})),
    # Faults where they bite (issue 39): the harm falls on another client.
    Case("foreign.del_fallback_lock", "lock", "lost-reply", frozenset({"safe-release"})),
    Case("foreign.reclaim_extend_lock", "lock", "schedule", frozenset({"safe-release", "mutual-exclusion"})),
    Case("foreign.self_serving_flight", "single_flight", "schedule", frozenset({"runs-once"})),
    Case("foreign.wall_deadline_lock", "lock", "schedule", frozenset({"progress"})),
    Case("foreign.double_free_semaphore", "semaphore", "lost-reply", frozenset({"mutual-exclusion"})),
    Case("foreign.rerun_flight", "single_flight", "schedule", frozenset({"runs-once"})),
    Case("foreign.retry_log", "rate_limiter", "lost-reply", frozenset({"no-false-refusal"})),
    Case("foreign.transaction_bucket", "rate_limiter", "lost-reply", frozenset({"no-false-refusal"})),
    Case(
        "foreign.client_clock_log",
        "rate_limiter",
        "schedule",
        frozenset({"clock-skew-safe", "sliding-log", "fixed-window"}),
    ),
    Case(
        "masters.half_quorum_lock",
        "lock",
        "schedule",
        frozenset({"mutual-exclusion", "stale-grant"}),
        masters=3,
    ),
    Case(
        "masters.ageless_redlock",
        "lock",
        "schedule",
        frozenset({"stale-grant", "mutual-exclusion"}),
        masters=3,
    ),
    Case("masters.blind_release_redlock", "lock", "expiry", frozenset({"safe-release"}), masters=3),
    Case(
        "masters.any_extend_redlock",
        "lock",
        "schedule",
        frozenset({"stale-grant", "mutual-exclusion", "safe-release"}),
        masters=3,
    ),
)
CORRECT = (
    Case("foreign.raising_lock", "lock", "schedule"),
    Case("foreign.flight", "single_flight", "schedule"),
    Case("masters.fanout_redlock", "lock", "schedule", masters=3),
    Case("masters.vote_lock", "lock", "schedule", masters=3),
)
#: The module of a Case that names a catalog implementation rather than a fixture.
CATALOG = "catalog."


def every_correct() -> tuple[Case, ...]:
    """Every correct implementation: the catalog's, and tests/fixtures' foreign, async_foreign and
    masters ones (those lists are the fixtures' own)."""
    from tests.fixtures import async_foreign, foreign, masters

    cases = [
        Case(CATALOG + impl.name, impl.family, "schedule")
        for impl in [*catalog.IMPLEMENTATIONS, *catalog.ASYNC_IMPLEMENTATIONS]
        if not impl.known_bad
    ]
    cases += [Case(f"foreign.{module}", kind, "schedule") for module, kind in foreign.CORRECT]
    cases += [Case(f"async_foreign.{module}", "lock", "schedule") for module in async_foreign.CORRECT]
    cases += [Case(f"masters.{module}", "lock", "schedule", masters=3) for module in masters.CORRECT]
    return tuple(cases)


@dataclass
class Outcome:
    case: Case
    caught: int = 0
    runs: int = 0
    times: list[float] = field(default_factory=list)
    found: set[str] = field(default_factory=set)
    #: Runs whose example Hypothesis could not run again the same way (Flaky): counted, not caught.
    flaky: int = 0
    #: Runs the scheduler could not finish (a client blocked on something it does not control).
    inconclusive: int = 0

    def line(self) -> str:
        what = "caught" if self.case.broken else "passed"
        hits = self.caught if self.case.broken else self.runs - self.caught
        wrong = self.found - self.case.broken
        times = (
            f"median {statistics.median(self.times):.2f} s, worst {max(self.times):.2f} s"
            if self.times
            else "no catch"
        )
        reason = f"; for {', '.join(sorted(self.found))}" if self.found else ""
        flag = f"  (WRONG PROPERTY: {', '.join(sorted(wrong))})" if wrong else ""
        flaky = f"; {self.flaky} run(s) did not replay (Flaky)" if self.flaky else ""
        if self.inconclusive:
            flaky += f"; {self.inconclusive} run(s) inconclusive"
        return (
            f"{self.case.module:<34} {self.case.check:<10} {what} {hits}/{self.runs}, {times}{reason}{flag}"
            f"{flaky}"
        )


@contextmanager
def _target(masters: int, cluster: int | None = None) -> Iterator[Target]:
    with open_target(masters=masters, cluster=None if masters else cluster) as target:
        yield target


def _subject(case: Case, target: Target) -> Subject:
    if case.module.startswith(CATALOG):
        (subject,) = catalog_subjects([case.kind], [case.module.removeprefix(CATALOG)])
        return subject
    from tests.fixtures import foreign

    # What a foreign rate limiter declares beyond the default fixed window (a bucket, a log).
    claim, no_claim = foreign.LIMITER_CLAIMS.get(case.module.removeprefix("foreign."), ((), ()))
    return user_subject(
        f"tests.fixtures.{case.module}:make", case.kind, target, claim=claim, no_claim=no_claim
    )


def measure(
    case: Case,
    runs: int,
    max_examples: int,
    on_run: Callable[[str], None] = lambda line: None,
    cluster: int | None = None,
) -> Outcome:
    """`runs` runs of the case's check; seconds to the first failure of each. `on_run` gets a
    line per run as it ends."""
    outcome = Outcome(case)
    with _target(case.masters, cluster) as target:
        subject = _subject(case, target)
        for seed in range(runs):
            outcome.runs += 1
            started = time.perf_counter()
            try:
                seconds, found = _one(subject, target, case.check, seed, max_examples)
            except (Flaky, FlakyStrategyDefinition, SearchStopped) as exc:  # run_once says Flaky so
                outcome.flaky += 1
                why = str(exc) if isinstance(exc, SearchStopped) else type(exc).__name__
                on_run(f"{case.module} run {seed + 1}/{runs}: did not replay ({why}), {_since(started)}")
                continue
            except SchedulerError as exc:  # what the schedule check reports as inconclusive
                outcome.inconclusive += 1
                on_run(f"{case.module} run {seed + 1}/{runs}: inconclusive ({exc}), {_since(started)}")
                continue
            except Exception as exc:  # the code under test raised outside any operation (its
                # teardown read, say): the check reports it as a failure, and so does this run
                seconds, found = time.perf_counter() - started, {f"raised {type(exc).__name__}"}
                on_run(f"{case.module} run {seed + 1}/{runs}: raised {type(exc).__name__}: {exc}")
            if found:
                outcome.caught += 1
                outcome.times.append(seconds)
                outcome.found |= found
            verdict = f"caught for {', '.join(sorted(found))}" if found else "passed"
            on_run(f"{case.module} run {seed + 1}/{runs}: {verdict}, {_since(started)}")
    return outcome


def _since(started: float) -> str:
    return f"{time.perf_counter() - started:.1f} s"


def _one(
    subject: Subject, target: Target, check: str, seed: int, max_examples: int
) -> tuple[float, set[str]]:
    if check == "schedule":
        seconds, violation, _ = run_once(family_machine(subject), target, seed, max_examples, shrink=False)
        return seconds, {violation.property} if violation is not None else set()
    space = target.namespace(client=target.client())
    started = time.perf_counter()
    try:
        options = CheckOptions(seed=seed, shrink=False, check_seconds=120)
        (row,) = run_battery(target, [subject], options, space, only_checks=[check])
    finally:
        space.cleanup()
    return time.perf_counter() - started, {r.prop for r in row.failed}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m contend.benchmarks.faults", description=__doc__)
    parser.add_argument("--runs", type=int, default=20, help="runs per implementation (default 20)")
    parser.add_argument(
        "--max-examples",
        type=int,
        help="examples per search: before a mutant counts as missed (default 2000), or that a correct "
        "lock must pass (default 200)",
    )
    parser.add_argument("--correct", action="store_true", help="the correct locks instead of the mutants")
    parser.add_argument(
        "--every-correct",
        action="store_true",
        help="every correct implementation (the catalog's and the fixtures'), each must pass every run",
    )
    parser.add_argument(
        "--cluster",
        type=int,
        metavar="N",
        help="on an embedded Redis Cluster of N masters (not the masters cases)",
    )
    parser.add_argument(
        "--hogs",
        type=int,
        default=0,
        metavar="N",
        help="N CPU-bound processes beside the runs (a busy machine)",
    )
    parser.add_argument(
        "--only", action="append", help="only this module (repeatable), e.g. masters.vote_lock"
    )
    args = parser.parse_args(argv)
    pool = every_correct() if args.every_correct else CORRECT if args.correct else MUTANTS
    cases = [c for c in pool if (not args.only or c.module in args.only) and not (args.cluster and c.masters)]
    if args.cluster:
        cases = [c for c in cases if not _single_node(c)]
    started = time.perf_counter()
    bad = 0
    examples = args.max_examples or (200 if args.correct or args.every_correct else 2000)
    hogs = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(max(0, args.hogs))]
    for hog in hogs:
        hog.start()

    def progress(line: str) -> None:
        print(f"  {line}", file=sys.stderr, flush=True)

    print(
        f"{len(cases)} implementation(s), {args.runs} run(s) each, up to {examples} examples a search; "
        "a line per run on stderr",
        file=sys.stderr,
        flush=True,
    )
    try:
        for case in cases:
            outcome = measure(case, args.runs, examples, progress, args.cluster)
            print(outcome.line(), flush=True)
            if case.broken:
                bad += outcome.caught < outcome.runs or bool(outcome.found - case.broken)
            else:
                bad += outcome.caught > 0
            bad += outcome.flaky > 0 or outcome.inconclusive > 0
    finally:
        for hog in hogs:
            hog.terminate()
            hog.join()
    print(f"{len(cases)} implementation(s), {args.runs} run(s) each, {time.perf_counter() - started:.0f} s")
    return 1 if bad else 0


def _spin() -> None:
    """A CPU-bound process (until terminated)."""
    while True:
        pass


def _single_node(case: Case) -> bool:
    """Is the case's implementation documented as one server's only (several databases, or keys
    of several hash slots in one script), so that a Redis Cluster refuses it?"""
    if case.module.startswith(CATALOG):
        return bool(catalog_implementation(case.module.removeprefix(CATALOG)).single_node)
    from tests.fixtures import async_foreign, foreign

    package, _, module = case.module.partition(".")
    return module in {"foreign": foreign.SINGLE_NODE, "async_foreign": async_foreign.SINGLE_NODE}.get(
        package, []
    )


if __name__ == "__main__":
    raise SystemExit(main())
