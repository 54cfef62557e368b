"""The battery runner behind `contend check`: implementation × check, one verdict each.

A subject is one row: a catalog implementation or the user's `--impl`, with
the properties it claims and the capabilities it was found to have. What is
checked follows the claims: a user's lock claims mutual exclusion, safe
release, crash liveness and clock-skew safety by default, fencing as soon as
it exposes a token; `--claim`/`--no-claim` add or drop one.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace

from contend.check.async_faults import ASYNC_CRASH, ASYNC_EXPIRY
from contend.check.async_lost_reply import (
    ASYNC_LOCK_LOST_REPLY,
    ASYNC_REGISTRY_LOST_REPLY,
    ASYNC_TRANSACTION_LOST_REPLY,
)
from contend.check.bad_input import LOCK_BAD_INPUT, REGISTRY_BAD_INPUT
from contend.check.cancel import CANCEL
from contend.check.framework import (
    FAIL,
    INCONCLUSIVE,
    Check,
    CheckContext,
    CheckOptions,
    CheckResult,
    run_check,
)
from contend.check.limiter_lost_reply import LIMITER_LOST_REPLY
from contend.check.locks import ASYNC_BURST, LOCK_CHECKS
from contend.check.lost_reply import (
    FLIGHT_LOST_REPLY,
    LOCK_LOST_REPLY,
    LOCK_REACQUIRE,
    REGISTRY_LOST_REPLY,
    TRANSACTION_LOST_REPLY,
)
from contend.check.queue import QUEUE_CHECKS
from contend.check.rate_limiter import RATE_LIMITER_CHECKS
from contend.check.registry import ASYNC_BURST_ONE_NAME
from contend.check.registry import CHECKS as REGISTRY_CHECKS
from contend.check.schedule import SCHEDULE
from contend.check.semaphore import SEMAPHORE_CHECKS
from contend.check.single_flight import SINGLE_FLIGHT_CHECKS
from contend.check.transactions import TRANSACTION_CHECKS
from contend.servers.keyspace import Namespace
from contend.servers.tap import watching_servers
from contend.servers.target import Target
from contend.subject.resolve import with_capabilities
from contend.subject.subject import Subject

BATTERIES: dict[str, list[Check]] = {
    "registry": [*REGISTRY_CHECKS, REGISTRY_LOST_REPLY, SCHEDULE],
    "lock": [*LOCK_CHECKS, LOCK_LOST_REPLY, LOCK_REACQUIRE, SCHEDULE],
    "semaphore": [*SEMAPHORE_CHECKS, LOCK_LOST_REPLY, SCHEDULE],
    "single_flight": [*SINGLE_FLIGHT_CHECKS, FLIGHT_LOST_REPLY, SCHEDULE],
    "transaction": [*TRANSACTION_CHECKS, TRANSACTION_LOST_REPLY, SCHEDULE],
    # Crashes, lost replies and lapsed leases: the state machine's, on the server's virtual clock.
    "queue": [*QUEUE_CHECKS, SCHEDULE],
    # A user's own primitive: the scheduler's faults, judged against its sequential specification.
    "operations": [SCHEDULE],
    # Lost replies with one unit left (the tap); crashes, lost replies, stalls, windows running
    # out and skewed clocks: the state machine's.
    "rate_limiter": [*RATE_LIMITER_CHECKS, LIMITER_LOST_REPLY, SCHEDULE],
}
#: The checks of async implementations (coroutine methods on redis.asyncio clients): bursts of tasks,
#: cancellation, bad input, and the family's state machine with async clients (which cancels
#: acquires, extends, releases and registrations too, and judges clock skew and a fencing token
#: there). Locks also get expiry and crashes (the holder's task held or killed at a round trip).
#: Single-flight has only the state machine so far. Banks get the synchronous battery's checks,
#: written for both (model, burst, bad input), lost replies on the scheduler, and the machine;
#: rate limiters the same, their lost replies being the machine's.
ASYNC_BATTERIES: dict[str, list[Check]] = {
    "registry": [ASYNC_BURST_ONE_NAME, REGISTRY_BAD_INPUT, ASYNC_REGISTRY_LOST_REPLY, SCHEDULE],
    "lock": [
        ASYNC_BURST,
        ASYNC_EXPIRY,
        ASYNC_CRASH,
        CANCEL,
        LOCK_BAD_INPUT,
        ASYNC_LOCK_LOST_REPLY,
        SCHEDULE,
    ],
    "semaphore": [CANCEL, LOCK_BAD_INPUT, ASYNC_LOCK_LOST_REPLY, SCHEDULE],
    "single_flight": [SCHEDULE],
    "transaction": [*TRANSACTION_CHECKS, ASYNC_TRANSACTION_LOST_REPLY, SCHEDULE],
    # Queues: the synchronous battery's checks, written for both (model, burst, acks of ids never
    # handed out, a stale holder, bad input), and the machine with async clients.
    "queue": [*QUEUE_CHECKS, SCHEDULE],
    # Rate limiters: the synchronous battery's checks, written for both (model, burst, bad input),
    # and the machine with async clients (crashes, lost replies, stalls, waits, skewed clocks).
    "rate_limiter": [*RATE_LIMITER_CHECKS, SCHEDULE],
    # A user's own primitive: the machine with async clients, its re-run specification async too.
    "operations": [SCHEDULE],
}


def judges(check: Check, subject: Subject) -> bool:
    """Can `check` catch what the known-bad `subject` breaks? (The schedule judges every property.)"""
    return not check.prop or check.prop in subject.violates


def unjudged(subject: Subject, only: Iterable[str]) -> tuple[str, ...]:
    """With a narrowed check list: the family's checks that judge what the known-bad `subject`
    breaks, when none of them is in `only` (empty when one is, or for a correct subject)."""
    wanted = set(only)
    if not wanted or not subject.known_bad:
        return ()
    judging = [c for c in checks_for(subject) if judges(c, subject)]
    if any(c.name in wanted for c in judging):
        return ()
    return tuple(c.name for c in judging) or ("none of its family's checks",)


def checks_for(subject: Subject, only: Iterable[str] = ()) -> list[Check]:
    """The family's checks that apply to `subject` (some need a claim or a capability)."""
    wanted = set(only)
    probe = replace(subject, claims=subject.claims | subject.violates)
    battery = ASYNC_BATTERIES if subject.asynchronous else BATTERIES
    return [
        check
        for check in battery[subject.family]
        if check.applies(probe) and (not wanted or check.name in wanted)
    ]


#: The sizes and budgets of a user's implementation (`contend check --impl`, contend.testing): more
#: interleavings than the catalog's, whose verdicts are known; real-time budgets of one check and
#: of the whole run, since code we did not write may hang.
USER_SCHEDULE_EXAMPLES = 200
USER_CHECK_SECONDS = 30.0
USER_RUN_SECONDS = 110.0


@dataclass
class ResultRow:
    subject: Subject
    results: list[CheckResult] = field(default_factory=list)
    #: Why its checks did not run here (a single-node implementation on a Redis Cluster).
    skipped: str = ""
    #: A narrowed run (--check): the names of the family's checks that judge what a known-bad
    #: implementation breaks, none of which ran ("not run" rather than NOT CAUGHT); empty otherwise.
    unjudged_by: tuple[str, ...] = ()

    @property
    def failed(self) -> list[CheckResult]:
        return [r for r in self.results if r.status == FAIL]

    @property
    def inconclusive(self) -> list[CheckResult]:
        return [r for r in self.results if r.status == INCONCLUSIVE]

    @property
    def verdict(self) -> str:
        if self.skipped:
            return "skipped"
        if self.subject.known_bad:
            if self.failed:
                return "caught"
            return "not run" if self.unjudged_by else "NOT CAUGHT"
        if self.failed:
            kinds = sorted({r.kind for r in self.failed})
            return f"FAIL ({', '.join(kinds)})"
        return "inconclusive" if self.inconclusive or not self.results else "pass"

    @property
    def as_expected(self) -> bool:
        return self.verdict in ("pass", "caught", "skipped", "not run")


@watching_servers  # a round trip to a server outside the target stops the run (exit 2)
def run_battery(
    target: Target,
    subjects: Sequence[Subject],
    options: CheckOptions,
    run_namespace: Namespace,
    on_result: Callable[[Subject, CheckResult], None] = lambda s, r: None,
    *,
    only_checks: Sequence[str] = (),
    stop: threading.Event | None = None,
    rows: list[ResultRow] | None = None,
    on_start: Callable[[Subject, str], None] = lambda s, name: None,
) -> list[ResultRow]:
    """Run each subject's family battery, one fresh namespace per check, cleaned after it.

    Rows are appended to `rows` as they fill, so an interrupted run still has the results so
    far; once `stop` is set, the check under way is abandoned and no other one starts.
    `on_start` hears of each check as it starts (the subject has its capabilities by then, so
    `checks_for(subject)` is the list that will run), `on_result` as it ends.
    """
    rows = [] if rows is None else rows
    run_deadline = None if options.run_seconds is None else time.monotonic() + options.run_seconds
    for subject in subjects:
        if stop is not None and stop.is_set():
            break
        if target.cluster and subject.single_node:
            rows.append(ResultRow(subject, skipped=subject.single_node))
            continue
        subject = with_capabilities(subject, target, run_namespace)
        row = ResultRow(subject, unjudged_by=unjudged(subject, only_checks))
        rows.append(row)
        for check in checks_for(subject, only_checks):
            if stop is not None and stop.is_set():
                break
            on_start(subject, check.name)
            left = None if run_deadline is None else run_deadline - time.monotonic()
            if left is not None and left < 1:
                result = CheckResult(
                    check.name, INCONCLUSIVE, "inconclusive (not run: the run's time budget was spent)", 0.0
                )
                row.results.append(result)
                on_result(subject, result)
                continue
            ns = Namespace(
                run_namespace.client,
                run_namespace.child(subject.name, check.name),
                dbs=subject.dbs,
                other_urls=run_namespace.other_urls,
            )
            sized = options
            if subject.asynchronous and row.failed:
                # Already caught (by the cancel check, say): no long hunt by the state machine,
                # which has no cancellation rule and cannot find what cancellation breaks.
                sized = replace(options, hunt_examples=options.schedule_examples)
            ctx = CheckContext(target, ns, subject.factory, sized, subject.dbs, subject)
            try:
                result = run_check(check, ctx, stop, left)
            except BaseException:  # interrupted: the row says so
                row.results.append(
                    CheckResult(check.name, INCONCLUSIVE, "inconclusive (the run was interrupted)", 0.0)
                )
                raise
            finally:
                gc.collect()  # finalizers of the check's objects (a lock released in __del__) run now
                ns.cleanup()
            row.results.append(result)
            on_result(subject, result)
    return rows
