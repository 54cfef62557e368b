"""How reliably and how fast the state machines catch each known-bad implementation.

`contend hunt` runs every family's machine over every known-bad implementation,
synchronous and async (whose lock machines also cancel releases), with `runs`
different Hypothesis seeds, and reports per implementation: how many runs caught
it, the median and worst time to the first failure (generation only), and the
size of the shrunk counterexample (clients involved, round trips) from one run
with shrinking. A time budget bounds the whole hunt: a run that would pass it
stops between two examples, and what is left is reported as not run.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis.errors import Flaky, FlakyStrategyDefinition
from hypothesis.stateful import run_state_machine_as_test

from contend.impl.catalog import ASYNC_IMPLEMENTATIONS, IMPLEMENTATIONS, Implementation
from contend.machines.base import PropertyViolated, ScheduledMachine
from contend.machines.family import family_machine
from contend.machines.settings import machine_settings
from contend.servers.target import Target


class SearchStopped(Exception):
    """A run ended without a verdict: `why` is "budget" (the deadline passed) or "flaky" (Hypothesis
    saw the same example behave differently, so it can neither report nor replay it)."""

    def __init__(self, why: str, detail: str = "") -> None:
        super().__init__(detail or why)
        self.why = why


class _OutOfTime(BaseException):
    """Raised from the machine factory past the deadline: Hypothesis does not catch a BaseException."""


@dataclass
class HuntResult:
    name: str
    caught: int
    runs: int
    times: list[float]
    clients: int | None = None
    round_trips: int | None = None
    message: str = ""
    #: Runs that ended without a verdict (Hypothesis called them flaky).
    flaky: int = 0
    #: Seeds not run because the time budget ran out (the shrinking run is not counted).
    not_run: int = 0
    seconds: float = 0.0

    @property
    def median(self) -> float:
        return statistics.median(self.times) if self.times else float("nan")

    @property
    def worst(self) -> float:
        return max(self.times) if self.times else float("nan")

    @property
    def done(self) -> int:
        """Runs that gave a verdict (caught or missed)."""
        return self.runs - self.not_run - self.flaky

    def line(self) -> str:
        """One line: caught k/n, times, the shrunk size and the first property broken."""
        text = f"{self.name:<22} caught {self.caught}/{self.done}"
        if self.not_run or self.flaky:
            text += f" of {self.runs} ({self.not_run} not run: budget; {self.flaky} flaky)"
        if self.times:
            text += f"  median {self.median:.2f} s  worst {self.worst:.2f} s"
        if self.clients is not None:
            text += f"  shrunk: {self.clients} clients, {self.round_trips} round trips  ({self.message})"
        return text

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "runs": self.runs,
            "caught": self.caught,
            "missed": self.done - self.caught,
            "flaky": self.flaky,
            "not_run": self.not_run,
            "median_seconds": round(self.median, 3) if self.times else None,
            "worst_seconds": round(self.worst, 3) if self.times else None,
            "shrunk_clients": self.clients,
            "shrunk_round_trips": self.round_trips,
            "property": self.message.split(":", 1)[0] if self.message else None,
            "seconds": round(self.seconds, 3),
        }


def run_once(
    machine: type[ScheduledMachine],
    target: Target,
    seed: int,
    max_examples: int,
    shrink: bool,
    *,
    deadline: float | None = None,
) -> tuple[float, PropertyViolated | None, ScheduledMachine | None]:
    """Seconds spent, the violation (None if none), and the machine that failed last.
    SearchStopped when the `deadline` (time.monotonic()) passed or Hypothesis called it flaky."""
    last: list[ScheduledMachine] = []
    out_of_time = [False]

    def factory() -> ScheduledMachine:
        if deadline is not None and time.monotonic() > deadline:
            out_of_time[0] = True
            raise _OutOfTime
        last.append(machine(target))
        del last[:-1]
        return last[-1]

    factory._hypothesis_internal_use_seed = seed  # type: ignore[attr-defined]
    start = time.perf_counter()
    try:
        chosen = machine_settings(max_examples, shrink=shrink, derandomize=False)
        run_state_machine_as_test(factory, settings=chosen)  # type: ignore[arg-type]
    except PropertyViolated as exc:
        return time.perf_counter() - start, exc, last[-1] if last else None
    except _OutOfTime:
        raise SearchStopped("budget") from None
    except (Flaky, FlakyStrategyDefinition) as exc:
        if out_of_time[0]:  # stopping between two examples looks flaky to Hypothesis's data tree
            raise SearchStopped("budget") from None
        raise SearchStopped("flaky", f"{type(exc).__name__}: the same example behaved differently") from None
    return time.perf_counter() - start, None, None


def known_bad(only: list[str] | None = None) -> list[Implementation]:
    """The catalog's known-bad implementations, sync then async (`only` those named)."""
    every = [*IMPLEMENTATIONS, *ASYNC_IMPLEMENTATIONS]
    return [i for i in every if i.known_bad and (not only or i.name in only)]


def hunt(
    impl: Implementation,
    target: Target,
    runs: int,
    max_examples: int,
    on_run: Callable[[str], None],
    *,
    deadline: float | None = None,
    shrink: bool = True,
    on_shrink: Callable[[str], None] = lambda text: None,
) -> HuntResult:
    """`runs` seeds of the family's machine on `impl`, then one shrinking run (unless `shrink` is
    off); seeds past the `deadline` are counted as not run."""
    started = time.perf_counter()
    machine = family_machine(impl)
    result = HuntResult(impl.name, 0, runs, [])
    caught_by = 0  # the first seed that caught it: the one shrunk
    for seed in range(runs):
        try:
            seconds, violation, _ = run_once(
                machine, target, seed, max_examples, shrink=False, deadline=deadline
            )
        except SearchStopped as exc:
            if exc.why == "budget":
                result.not_run = runs - seed
                on_run(f"{impl.name} seed {seed}: the time budget ran out")
                break
            result.flaky += 1
            on_run(f"{impl.name} seed {seed}: inconclusive ({exc})")
            continue
        if violation is not None and impl.anomaly and not violation.detail.startswith(impl.anomaly):
            # A known-bad transaction is caught for its named anomaly, or not at all.
            on_run(
                f"{impl.name} seed {seed}: found {violation.property} but not {impl.anomaly}: {violation.detail}"
            )
            violation = None
        on_run(f"{impl.name} seed {seed}: {'caught' if violation else 'missed'} in {seconds:.1f} s")
        if violation is not None:
            result.caught += 1
            result.times.append(seconds)
            caught_by = seed if result.caught == 1 else caught_by
    if shrink and result.caught:
        on_shrink(f"{impl.name}: shrinking the counterexample of seed {caught_by}")
        try:
            _, violation, failed = run_once(
                machine, target, caught_by, max_examples, shrink=True, deadline=deadline
            )
        except SearchStopped:
            violation = failed = None
        if violation is not None and failed is not None:
            trace = failed.scheduler.trace
            result.clients = len({s.client for s in trace if s.sent})
            result.round_trips = sum(1 for s in trace if s.sent)
            result.message = str(violation)
    result.seconds = time.perf_counter() - started
    return result
