"""Confirming a recorded finding a row's run did not meet: its checks again, with other seeds.

Some findings depend on what no seed fixes (the microseconds of the real clock, threads
racing in real time) or on a search larger than `--quick`'s. A run that does not meet one has
not shown the property holds: it has not looked hard enough. So the board runs the checks
that meet it (the finding's `met_by`) again, at the full board's sizes and with the seeds after
the run's, until one breaks the property or the attempts (`--confirm`, per finding) or their
real-time budget run out. Each attempt's results join the row under their own names ("model · again, seed 3"),
so the report shows what met the finding, and a failure of another property on the way counts
like any other: a verdict not as recorded is a surprise.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace

from contend.check.framework import CheckOptions, CheckResult

#: Interleavings per row of the full board (--quick: QUICK_EXAMPLES).
FULL_EXAMPLES = 200
QUICK_EXAMPLES = 25
#: Attempts at a finding a run did not meet (`contend scoreboard --confirm`), and their real-time
#: budget per finding: the attempts stop between two checks once it is spent. redis-semaphore's
#: progress, met by about one attempt in four (its model checks read the real clock's
#: microseconds), took 13 attempts in one of six boards: 40 of 2.5 s leave it about 1 in 10^5.
CONFIRM_ATTEMPTS = 40
CONFIRM_SECONDS = 150.0
#: How an attempt's results are named: the check, then this, then the seed.
AGAIN = " · again, seed "


def full_sized(options: CheckOptions, seed: int) -> CheckOptions:
    """`options` at the full board's sizes (never smaller than the run's), with `seed`."""
    full = CheckOptions()
    return replace(
        options,
        seed=seed,
        model_ops=max(options.model_ops, full.model_ops),
        burst_clients=max(options.burst_clients, full.burst_clients),
        burst_rounds=max(options.burst_rounds, full.burst_rounds),
        schedule_examples=max(options.schedule_examples, FULL_EXAMPLES),
    )


def again_name(check: str, seed: int) -> str:
    """The name an attempt's result of `check` gets in the row."""
    return f"{check}{AGAIN}{seed}"


def is_again(result: CheckResult) -> bool:
    """Is `result` one of a confirming attempt's (not of the row's own run)?"""
    return AGAIN in result.check


def confirm(
    unmet: Callable[[], list[tuple[str, tuple[str, ...]]]],
    run_again: Callable[[Sequence[str], CheckOptions], list[CheckResult]],
    options: CheckOptions,
    into: list[CheckResult],
    *,
    on_result: Callable[[CheckResult], None] = lambda r: None,
    attempts: int = CONFIRM_ATTEMPTS,
    seconds: float = CONFIRM_SECONDS,
    stop: threading.Event | None = None,
) -> None:
    """Attempt each finding `unmet()` lists (its property and the checks that meet it) until it
    is met, at most `attempts` times each. `run_again(checks, options)` runs them once, at full
    size; the row's n-th attempt has seed `options.seed + n` (a finding attempted after another
    goes on from the seeds that one took). Their results are renamed (`again_name`), appended to
    `into` (the row's results, which `unmet()` reads) and passed to `on_result` as they come.
    `unmet()` is asked again before each attempt, so one that meets two findings ends both."""
    made = 0
    for prop, _ in unmet():
        deadline = time.monotonic() + seconds
        for _ in range(attempts):
            if (stop is not None and stop.is_set()) or time.monotonic() > deadline:
                break
            checks = dict(unmet()).get(prop)
            if checks is None:
                break  # met, by this attempt or by one for another finding
            made += 1
            sized = full_sized(options, options.seed + made)
            for result in run_again(checks, sized):
                renamed = replace(result, check=again_name(result.check, sized.seed))
                into.append(renamed)
                on_result(renamed)
