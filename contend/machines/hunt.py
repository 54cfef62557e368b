"""How reliably and how fast the state machines catch each known-bad implementation.

`python -m contend.machines.hunt` runs every family's machine over every known-bad
implementation, synchronous and async (whose lock machines also cancel releases),
with `--runs` different Hypothesis seeds and reports, per
implementation: how many runs caught it, the median and worst time to the
first failure (generation only), and the size of the shrunk counterexample
(clients involved, round trips) from one run with shrinking.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis.stateful import run_state_machine_as_test

from contend.impl.catalog import ASYNC_IMPLEMENTATIONS, IMPLEMENTATIONS, Implementation
from contend.machines.base import PropertyViolated, ScheduledMachine
from contend.machines.family import family_machine
from contend.machines.settings import machine_settings
from contend.servers.target import Target, open_target


@dataclass
class HuntResult:
    name: str
    caught: int
    runs: int
    times: list[float]
    clients: int | None = None
    round_trips: int | None = None
    message: str = ""

    @property
    def median(self) -> float:
        return statistics.median(self.times) if self.times else float("nan")

    @property
    def worst(self) -> float:
        return max(self.times) if self.times else float("nan")


def run_once(
    machine: type[ScheduledMachine], target: Target, seed: int, max_examples: int, shrink: bool
) -> tuple[float, PropertyViolated | None, ScheduledMachine | None]:
    """Seconds spent, the violation (None if none), and the machine that failed last."""
    last: list[ScheduledMachine] = []

    def factory() -> ScheduledMachine:
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
    return time.perf_counter() - start, None, None


def hunt(
    impl: Implementation, target: Target, runs: int, max_examples: int, on_run: Callable[[str], None]
) -> HuntResult:
    machine = family_machine(impl)
    result = HuntResult(impl.name, 0, runs, [])
    for seed in range(runs):
        seconds, violation, _ = run_once(machine, target, seed, max_examples, shrink=False)
        on_run(f"{impl.name} seed {seed}: {'caught' if violation else 'missed'} in {seconds:.1f} s")
        if violation is not None:
            result.caught += 1
            result.times.append(seconds)
    _, violation, failed = run_once(machine, target, 0, max_examples, shrink=True)
    if violation is not None and failed is not None:
        trace = failed.scheduler.trace
        result.clients = len({s.client for s in trace if s.sent})
        result.round_trips = sum(1 for s in trace if s.sent)
        result.message = str(violation)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m contend.machines.hunt", description=__doc__)
    parser.add_argument("--runs", type=int, default=20, help="seeds per implementation (default 20)")
    parser.add_argument("--max-examples", type=int, default=2000, help="examples per run before giving up")
    parser.add_argument("--only", action="append", help="only this implementation (repeatable)")
    args = parser.parse_args(argv)
    every = [*IMPLEMENTATIONS, *ASYNC_IMPLEMENTATIONS]
    chosen: list[Any] = [i for i in every if i.known_bad and (not args.only or i.name in args.only)]
    with open_target() as target:
        print(f"hunting on {target.description}")
        for impl in chosen:
            r = hunt(impl, target, args.runs, args.max_examples, on_run=lambda line: None)
            print(
                f"{r.name:<18} caught {r.caught}/{r.runs}  median {r.median:.2f} s  worst {r.worst:.2f} s  "
                f"shrunk: {r.clients} clients, {r.round_trips} round trips  ({r.message})",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
